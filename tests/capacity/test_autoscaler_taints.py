"""cluster-autoscaler's taint flags from its pod to the templates, in process: the flags read from
the pod the Helm chart runs, the newest process's flags, both views of a group built with them, the
DaemonSets on the template judged by the sanitised taints, the remembered node sanitised as the
process cached it, no tag-sync churn for a taint both views drop. Whole values compared."""

from __future__ import annotations

from typing import Any

from capacity.autoscaler_memory import (
    AutoscalerProcess,
    next_memory,
    parse_time,
    process_of,
    running_autoscaler,
)
from capacity.autoscaler_view import InstanceShape
from capacity.instances import lookup
from capacity.taints import Taint
from capacity.template import AutoscalerMemory, View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.aws.records import AwsNodeGroup
from controller.discovery import build_templates, group_nodes
from controller.memory import live_template
from controller.tagsync import plan_tag_sync

T0 = parse_time("2026-11-30T12:00:00Z")
TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/"
CILIUM = "node.cilium.io/agent-not-ready"
EBS = "ebs.csi.aws.com/agent-not-ready"
CHART_COMMAND = [
    "./cluster-autoscaler",
    "--cloud-provider=aws",
    "--namespace=kube-system",
    "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/demo",
    "--logtostderr=true",
    # extraArgs `startup-taint_1` and `startup-taint_2`: the chart cuts the key at the first `_`
    f"--startup-taint={CILIUM}",
    f"--startup-taint={EBS}",
    "--stderrthreshold=info",
    "--v=4",
]
OPTIONS = TaintOptions(
    startup_taints=frozenset({CILIUM, EBS, "legacy"}),
    startup_taint_prefixes=("readiness.k8s.io/",),
    status_taints=frozenset({"maintenance"}),
)


def ca_pod(name: str, started: str, command: list[str], args: list[str]) -> dict[str, Any]:
    """A cluster-autoscaler pod as the chart renders it: flags in `command`, `customArgs` in `args`."""
    return {
        "metadata": {"namespace": "kube-system", "name": name},
        "spec": {
            "containers": [
                {"name": "aws-cluster-autoscaler", "command": command, "args": args},
            ]
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "aws-cluster-autoscaler", "state": {"running": {"startedAt": started}}}
            ],
        },
    }


def test_the_chart_pods_taint_flags_are_read_from_command_and_args() -> None:
    """The chart's repeated extraArgs and its customArgs (a flag and its value as two words): the
    process carries the whole taint options, --ignore-taint merged into the startup taints."""
    args = [
        "--ignore-taint",
        "legacy",
        "--status-taint=maintenance",
        "--startup-taint-prefix",
        "readiness.k8s.io/",
    ]
    found = process_of(ca_pod("ca-1", "2026-11-30T12:00:00Z", CHART_COMMAND, args))
    assert found == AutoscalerProcess("kube-system/ca-1", T0, "87600h", 315_360_000.0, "", 10.0, OPTIONS)


def test_the_newest_process_gives_the_flags_and_a_pod_without_them_gives_none() -> None:
    """Of several replicas, the flags of the one that started last (the one the memory trusts too);
    a cluster-autoscaler run without taint flags drops only what every cluster-autoscaler drops."""
    old = ca_pod("ca-old", "2026-11-30T12:00:00Z", ["./cluster-autoscaler", "--status-taint=old"], [])
    new = ca_pod("ca-new", "2026-11-30T13:00:00Z", CHART_COMMAND, [])
    found = running_autoscaler([old, new])
    assert found is not None and found.taint_options == TaintOptions(startup_taints=frozenset({CILIUM, EBS}))
    alone = running_autoscaler([ca_pod("ca-1", "2026-11-30T12:00:00Z", ["./cluster-autoscaler"], [])])
    assert alone is not None and alone.taint_options == DEFAULT_TAINT_CONFIG


# Not tests.objects.node: the Ready condition's transition time and the taints as (key, value,
# effect) are what the templates are built from here.
def node(name: str, taints: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"eks.amazonaws.com/nodegroup": "ng-a"}},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T10:00:00Z"}],
        },
    }


def group(tags: tuple[tuple[str, str], ...]) -> AwsNodeGroup:
    return AwsNodeGroup(
        name="ng-a",
        asg_name="ng-a",
        provider="aws-asg",
        max_size=10,
        availability_zones=("us-east-1a",),
        tags=tags,
        instance_types=("m5.large",),
        shape=InstanceShape("m5.large", 2, 8192, 0, "amd64"),
        root_volume_gib=50,
    )


TAGS = ((TAINT_TAG + CILIUM, "true:NoExecute"), (TAINT_TAG + "dedicated", "ml:NoSchedule"))
# a DaemonSet that tolerates `dedicated` but not the CNI's startup taint (the CNI agent's own would)
DAEMONSET = {
    "metadata": {"namespace": "kube-system", "name": "log-agent"},
    "spec": {
        "template": {
            "spec": {
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "50m"}}}],
            }
        }
    },
}


def test_both_views_drop_the_taints_the_flags_name_and_the_template_runs_the_daemonsets_it_now_can() -> None:
    """With the running cluster-autoscaler's --startup-taint, the autoscaler view built from the
    taint tags and the estimate both lose that taint and keep `dedicated`; the DaemonSet that does
    not tolerate the CNI's taint now runs on the template (podsExpectedOnFreshNode places them after
    sanitising). Without the flags the taint stays and the DaemonSet is not on the template."""
    with_flags = build_templates([group(TAGS)], {}, [DAEMONSET], {}, facts=lookup, taint_options=OPTIONS)
    template = with_flags[0].template
    assert template is not None and template.autoscaler is not None and template.actual is not None
    assert template.autoscaler.taints == (Taint("dedicated", "ml", "NoSchedule"),)
    assert template.actual.taints == (Taint("dedicated", "ml", "NoSchedule"),)
    assert (template.autoscaler_overhead, template.autoscaler_overhead_pods) == ({"cpu": 150}, 2)

    without = build_templates([group(TAGS)], {}, [DAEMONSET], {}, facts=lookup)[0].template
    assert without is not None and without.autoscaler is not None
    assert without.autoscaler.taints == (
        Taint(CILIUM, "true", "NoExecute"),
        Taint("dedicated", "ml", "NoSchedule"),
    )
    assert (without.autoscaler_overhead, without.autoscaler_overhead_pods) == ({"cpu": 100}, 1)


def test_a_live_node_with_a_startup_taint_is_not_cached_and_a_status_taint_is_left_out() -> None:
    """The node cluster-autoscaler would cache: one still carrying a startup taint is none (it is
    NotReady to cluster-autoscaler); one carrying a status taint is cached without it."""
    booting = node("ip-1", [(CILIUM, "true", "NoExecute")])
    assert live_template(group(()), [booting], T0, OPTIONS) is None
    assert live_template(group(()), [booting], T0) is not None  # no flag: an ordinary taint
    busy = node("ip-2", [("maintenance", "", "NoSchedule"), ("dedicated", "ml", "NoSchedule")])
    assert live_template(group(()), [busy], T0, OPTIONS) == View(
        {"cpu": 1930, "memory": 7220 * 2**20 * 1000, "pods": 29000},
        # the cached copy carries the marker SanitizedTemplateNodeInfoFromNodeInfo adds
        {"eks.amazonaws.com/nodegroup": "ng-a", "cluster-autoscaler.kubernetes.io/template-node": "true"},
        (Taint("dedicated", "ml", "NoSchedule"),),
        "live-node",
    )


def test_a_remembered_node_recorded_before_the_flags_were_known_loses_the_taints_they_name() -> None:
    """A record written while no cluster-autoscaler was found kept a status taint; the process now
    found (started before the sighting) cached the node without it, so the record drops it."""
    view = View(
        {"cpu": 1930}, {}, (Taint("maintenance", "", "NoSchedule"), Taint("a", "", "NoSchedule")), "live-node"
    )
    before = AutoscalerMemory(False, "no running cluster-autoscaler found", view, "2026-11-30T13:00:00Z")
    process = AutoscalerProcess("kube-system/ca-1", T0, "87600h", 315_360_000.0, "", 10.0, OPTIONS)
    after = next_memory(before, None, process, T0 + 7200, "pods x")
    kept = View({"cpu": 1930}, {}, (Taint("a", "", "NoSchedule"),), "live-node")
    assert after == AutoscalerMemory(
        True,
        "cluster-autoscaler kube-system/ca-1 (started 2026-11-30T12:00:00Z) saw a live node of the group at "
        "2026-11-30T13:00:00Z and builds the group's next node from it until it restarts or until "
        "2036-11-27T13:00:00Z",
        kept,
        "2026-11-30T13:00:00Z",
        "kube-system/ca-1",
        "2026-11-30T12:00:00Z",
        "2036-11-27T13:00:00Z",
    )


def test_a_taint_both_views_drop_is_never_synced_to_a_tag() -> None:
    """--sync-autoscaler-label-tags: a live node's status taint named by the flags is in neither
    view, so no taint/* tag is planned for it (and none would be planned again every cycle)."""
    live = node("ip-2", [("maintenance", "", "NoSchedule"), ("dedicated", "ml", "NoSchedule")])
    tagged = group(((TAINT_TAG + "dedicated", "ml:NoSchedule"),))
    outcome = build_templates(
        [tagged], group_nodes([live], [tagged]), [], {}, facts=lookup, taint_options=OPTIONS
    )[0]
    assert outcome.template is not None
    assert plan_tag_sync([tagged], {"ng-a": outcome.template}, labels_and_taints=True) == []
    unflagged = build_templates([tagged], group_nodes([live], [tagged]), [], {}, facts=lookup)[0].template
    assert unflagged is not None
    planned = plan_tag_sync([tagged], {"ng-a": unflagged}, labels_and_taints=True)
    assert [(c.key, c.value) for c in planned] == [(TAINT_TAG + "maintenance", ":NoSchedule")]
