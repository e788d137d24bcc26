"""The pods on cluster-autoscaler's template of a group (capacity/fresh_node.py, capacity/node_pods.py):
on the node it builds from the ASG's tags, the DaemonSets are chosen on its labels before the
template-node marker and the deprecated twins; on the node it remembers, the record holds the node's
own DaemonSet and mirror pods and the missing DaemonSets it adds (system-node-critical preempting
ones, or all with `--force-ds`), frozen once the node is gone, as its cache keeps it. Whole values
compared: the templates' overheads, the memory record, the fit it decides."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from capacity.autoscaler_flags import bool_flag
from capacity.autoscaler_memory import parse_time, process_of
from capacity.autoscaler_view import InstanceShape
from capacity.daemonsets import without_daemonset
from capacity.fit import PodNeeds, check_fit
from capacity.instances import lookup
from capacity.node_pods import DaemonSetRef, NodePods, RememberedPods, TemplatePods
from capacity.template import AutoscalerMemory, NodeGroupTemplate
from controller.aws.records import AwsNodeGroup
from controller.discovery import GroupOutcome, build_template, group_nodes
from controller.memory import Observed, remember
from kube.client import KubeError

T0 = parse_time("2026-11-30T12:00:00Z")
GROUP = AwsNodeGroup(
    name="ng-a",
    asg_name="ng-a",
    provider="aws-asg",
    max_size=10,
    availability_zones=("us-east-1a",),
    instance_types=("m5.large",),
    shape=InstanceShape("m5.large", 2, 8192, 0, "amd64"),
    root_volume_gib=50,
)
NODE = "ip-10-0-1-1.ec2.internal"


def selecting(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    """A whole DaemonSet (UID `uid-<name>`) whose pods ask `cpu`, with `spec` in its pod template."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"namespace": "kube-system", "name": name, "uid": f"uid-{name}"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": name, "image": "i", "resources": {"requests": {"cpu": cpu}}}],
                    **spec,
                },
            },
        },
    }


def hostname_exists() -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    return selecting("per-host", "40m", affinity={"nodeAffinity": required})


BETA = selecting("beta-typed", "10m", nodeSelector={"beta.kubernetes.io/instance-type": "m5.large"})
MARKED = selecting(
    "template-only", "20m", nodeSelector={"cluster-autoscaler.kubernetes.io/template-node": "true"}
)


def test_a_tag_built_template_gets_daemonsets_by_its_labels_before_the_marker_and_the_twins() -> None:
    """Three whole DaemonSets on a group at zero: one selecting the beta instance-type label and one
    the template-node marker are not on cluster-autoscaler's template (it adds those labels after
    choosing the pods), though its published labels carry both; one selecting the hostname with
    Exists is."""
    template = build_template(GROUP, [], [BETA, MARKED, hostname_exists()], lookup)
    assert template.autoscaler is not None and template.actual is not None
    assert template.autoscaler.labels["beta.kubernetes.io/instance-type"] == "m5.large"
    assert template.autoscaler.labels["cluster-autoscaler.kubernetes.io/template-node"] == "true"
    # kube-proxy's 100m mirror pod and the per-host DaemonSet's 40m
    assert (template.autoscaler_overhead, template.autoscaler_overhead_pods) == ({"cpu": 140}, 2)


def test_an_update_of_a_daemonset_counted_by_the_hostname_takes_its_old_pod_off_the_template() -> None:
    """The per-host DaemonSet's new revision: its old pod leaves cluster-autoscaler's tag-built
    template (only kube-proxy stays), though the published view has no hostname label."""
    per_host = hostname_exists()
    template = build_template(GROUP, [], [per_host], lookup)
    updated = without_daemonset(template, per_host["spec"]["template"]["spec"])
    assert (updated.autoscaler_overhead, updated.autoscaler_overhead_pods) == ({"cpu": 100}, 1)


def live_node() -> dict[str, Any]:
    return {
        "metadata": {
            "name": NODE,
            "labels": {"eks.amazonaws.com/nodegroup": "ng-a", "kubernetes.io/hostname": "ip-10-0-1-1"},
        },
        "spec": {"providerID": "aws:///us-east-1a/i-0123456789abcdef0"},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T10:00:00Z"}],
        },
    }


def on_node(name: str, cpu: str, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "kube-system", "name": name, **meta},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": "Running"},
    }


def owned_by(ds: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds, "uid": f"uid-{ds}", "controller": True}
    ]


FLUENT = selecting("fluent-bit", "500m")
CRITICAL = selecting("ebs-csi-node", "300m", priorityClassName="system-node-critical")
ORDINARY = selecting("node-exporter", "400m")
POD_ON_NODE = [
    on_node("fluent-bit-x1", "500m", ownerReferences=owned_by("fluent-bit")),
    on_node("kube-proxy-ip-10-0-1-1", "100m", annotations={"kubernetes.io/config.mirror": "abc"}),
    # the DaemonSet's old pod, being deleted: neither counted nor marking it running
    on_node(
        "node-exporter-old",
        "400m",
        ownerReferences=owned_by("node-exporter"),
        deletionTimestamp="2026-11-30T11:59:00Z",
    ),
    on_node(
        "coredns-1", "100m", ownerReferences=[{"kind": "ReplicaSet", "name": "coredns", "controller": True}]
    ),
]
# the fluent-bit and kube-proxy pods
NODE_PODS = NodePods(
    TemplatePods({"cpu": 600}, 2), (DaemonSetRef("kube-system", "fluent-bit", "uid-fluent-bit"),)
)


def ca_pod(*flags: str) -> dict[str, Any]:
    started = "2026-11-30T08:00:00Z"
    return {
        "metadata": {"namespace": "kube-system", "name": "ca-1"},
        "spec": {
            "containers": [
                {"name": "ca", "command": ["./cluster-autoscaler", "--cloud-provider=aws", *flags]}
            ]
        },
        "status": {"phase": "Running", "startTime": started},
    }


def cycle(
    nodes: list[dict[str, Any]],
    daemonsets: list[dict[str, Any]],
    previous: Mapping[str, NodeGroupTemplate],
    *flags: str,
    pods_on: Any = None,
    at: float = T0,
) -> NodeGroupTemplate:
    """One controller cycle's template of ng-a with its memory record (controller/memory.py)."""
    template = build_template(GROUP, nodes, daemonsets, lookup)
    listed: list[str] = []

    def pods(name: str) -> Iterable[Mapping[str, Any]]:
        listed.append(name)
        return [p for p in POD_ON_NODE if p["spec"]["nodeName"] == name]

    observed = Observed(process_of(ca_pod(*flags)), "pods", daemonsets, pods_on or pods)
    [outcome] = remember(
        [GroupOutcome("ng-a", template)],
        [GROUP],
        group_nodes(nodes, [GROUP]),
        previous,
        observed=observed,
        now=at,
    )
    assert outcome.template is not None
    assert listed == ([NODE] if nodes and pods_on is None else [])
    return outcome.template


def test_the_remembered_template_runs_the_node_pods_and_the_daemonsets_cluster_autoscaler_adds() -> None:
    """The record of the live node: its DaemonSet and kube-proxy mirror pods (not the one being
    deleted, not coredns), the DaemonSets running there, and on the template those plus the missing
    system-node-critical DaemonSet; with --force-ds the ordinary one too. Once the node is gone the
    record stays as it was, a DaemonSet created since included nowhere (cluster-autoscaler's
    cache keeps the pods it chose then), and the remembered node is judged with that overhead."""
    daemonsets = [FLUENT, CRITICAL, ORDINARY]
    live = cycle([live_node()], daemonsets, {})
    assert live.memory is not None and live.memory.remembers
    assert live.memory.pods == RememberedPods(NODE_PODS, TemplatePods({"cpu": 900}, 3))
    forced = cycle([live_node()], daemonsets, {}, "--force-ds")
    assert forced.memory is not None
    assert forced.memory.pods == RememberedPods(NODE_PODS, TemplatePods({"cpu": 1300}, 4))

    later = [*daemonsets, selecting("new-agent", "200m", priorityClassName="system-node-critical")]
    gone = cycle([], later, {"ng-a": live}, at=T0 + 600)
    assert gone.memory is not None and gone.memory.pods == live.memory.pods
    assert gone.memory.last_seen == live.memory.last_seen
    view, why = gone.judged_view()
    assert view is gone.remembered and why.startswith("no nodes: cluster-autoscaler remembers")
    assert gone.overhead_of(view) == ({"cpu": 900}, 3)
    # 1930m less 900m leaves 1000m; the group's DaemonSets (1400m) would leave 530m
    needs = PodNeeds.from_spec({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1000m"}}}]})
    assert check_fit(needs, view, *gone.overhead_of(view)) == []
    assert gone.daemonset_overhead == {"cpu": 1400}


def test_a_record_without_pods_judges_the_remembered_node_by_the_groups_daemonsets() -> None:
    """A record written before fitguard kept the pods (or by a cycle that could not list them):
    the remembered node's overhead is the group's DaemonSet overhead, as before."""
    live = cycle([live_node()], [FLUENT, ORDINARY], {})
    assert live.memory is not None
    old = dataclasses.replace(live, memory=dataclasses.replace(live.memory, pods=None))
    assert old.remembered is not None
    assert old.overhead_of(old.remembered) == ({"cpu": 900}, 2)


def test_pods_that_cannot_be_listed_keep_the_last_record() -> None:
    """The API refuses the node's pods: the record of the last cycle stands (no empty overhead)."""
    first = cycle([live_node()], [FLUENT, CRITICAL], {})
    assert first.memory is not None and first.memory.pods is not None

    def refused(name: str) -> list[dict[str, Any]]:
        raise KubeError(503, "Service Unavailable", f"pods on {name}")

    again = cycle([live_node()], [FLUENT, CRITICAL], {"ng-a": first}, pods_on=refused, at=T0 + 60)
    assert again.memory is not None and again.memory.pods == first.memory.pods


def test_the_record_round_trips_and_a_malformed_one_is_refused_naming_the_field() -> None:
    """spec.autoscalerMemory with the pods record reads back whole and passes the CRD's schema; a
    count that is no whole number and a list that is no list are refused with the field named (the
    list by the schema too)."""
    live = cycle([live_node()], [FLUENT, CRITICAL], {})
    obj = live.to_object()
    assert obj["spec"]["autoscalerMemory"]["nodePods"] == {"cpu": "600m", "pods": "2"}
    assert obj["spec"]["autoscalerMemory"]["runningDaemonSets"] == [
        {"namespace": "kube-system", "name": "fluent-bit", "uid": "uid-fluent-bit"}
    ]
    assert obj["spec"]["autoscalerMemory"]["overhead"] == {"cpu": "900m", "pods": "3"}
    assert NodeGroupTemplate.from_object(obj).memory == live.memory
    crd = yaml.safe_load((Path(__file__).parents[2] / "manifests/crds/nodegrouptemplates.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    jsonschema.validate(obj, schema)
    listless = copy.deepcopy(obj)
    listless["spec"]["autoscalerMemory"]["runningDaemonSets"] = "fluent-bit"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(listless, schema)
    bad = {**obj["spec"]["autoscalerMemory"], "overhead": {"cpu": "1", "pods": "-1"}}
    with pytest.raises(ValueError, match=r"spec.autoscalerMemory.overhead.pods: expected a whole count"):
        AutoscalerMemory.from_object(bad, "spec.autoscalerMemory")
    bad = {**obj["spec"]["autoscalerMemory"], "runningDaemonSets": "fluent-bit"}
    with pytest.raises(TypeError, match=r"spec.autoscalerMemory.runningDaemonSets: expected a list"):
        AutoscalerMemory.from_object(bad, "spec.autoscalerMemory")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], None),
        (["--force-ds"], True),
        (["--force-ds=true"], True),
        (["--force_ds=1"], True),
        (["--force-ds=false"], False),
        (["--force-ds", "false"], True),  # a pflag boolean takes no next word
        (["--force-ds=maybe"], None),  # pflag refuses it; fitguard takes it as not given
        (["--force-ds", "--force-ds=F"], False),  # the last one wins
        (["--", "--force-ds"], None),
    ],
)
def test_force_ds_is_read_as_pflag_reads_a_boolean(argv: list[str], expected: bool | None) -> None:
    """cluster-autoscaler's `--force-ds` (pkg/config/flags/flags.go, a pflag BoolVar)."""
    assert bool_flag(["./cluster-autoscaler", *argv], "force-ds") is expected
    process = process_of(ca_pod(*argv))
    assert process is not None and process.force_daemonsets is (expected is True)


def test_new_pods_on_the_live_node_renew_the_record_and_its_sighting() -> None:
    """Ten minutes on, the same node runs a second DaemonSet's pod: the record is rewritten with
    it, and the sighting with it (cluster-autoscaler recached the node at its last loop too)."""
    first = cycle([live_node()], [FLUENT, ORDINARY], {})
    added = [*POD_ON_NODE, on_node("node-exporter-y2", "400m", ownerReferences=owned_by("node-exporter"))]
    again = cycle([live_node()], [FLUENT, ORDINARY], {"ng-a": first}, pods_on=lambda name: added, at=T0 + 600)
    assert first.memory is not None and again.memory is not None
    running = (*NODE_PODS.daemonsets, DaemonSetRef("kube-system", "node-exporter", "uid-node-exporter"))
    assert again.memory.pods == RememberedPods(
        NodePods(TemplatePods({"cpu": 1000}, 3), running), TemplatePods({"cpu": 1000}, 3)
    )
    assert (first.memory.last_seen, again.memory.last_seen) == (
        "2026-11-30T12:00:00Z",
        "2026-11-30T12:10:00Z",
    )
