"""Issue 26: fitguard denies a pod only when it knows every place the pod could run and none serves
it; otherwise it admits, says why it could not judge, and counts it.

Each case is one named input judged through /validate (the Flask app the webhook serves, with its
audit annotation and metric) and through `fitguard check --state` (the console script over a state
file), against the demo cluster (examples/cluster.yaml: ng-batch m5.large at zero, ng-burst two
t3.large nodes of 1930m, ng-general two m5.xlarge nodes of 3920m labelled workload=general, each
new node running 200m of DaemonSets) with the extra objects the case names.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY

from kube.statefile import load_state
from tests import objects
from tests.objects import node_groups_only
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import WebhookOptions
from webhook.validate import review as validate_review

ROOT = Path(__file__).resolve().parents[2]
DEMO = node_groups_only(load_state(ROOT / "examples" / "cluster.yaml"))
FITGUARD = str(Path(sys.executable).with_name("fitguard"))
GENERAL_NODE = "ip-10-0-2-21.ec2.internal"  # ng-general, m5.xlarge, 3920m cpu allocatable
BURST_NODE = "ip-10-0-1-11.ec2.internal"  # ng-burst, t3.large, 1930m
Obj = dict[str, Any]


def pod(name: str, cpu: str, **spec: Any) -> Obj:
    return objects.pod(name, {"cpu": cpu}, image="x", **spec)


# pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations
DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def pinned_by_daemonset(name: str, node: str, cpu: str) -> Obj:
    """A pod as the DaemonSet controller makes it: its node in a required matchFields term, the
    controller's tolerations added."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    made = pod(
        name,
        cpu,
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        },
        tolerations=DAEMON_TOLERATIONS,
    )
    made["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": True}
    ]
    return made


def hostname_in(name: str, hostnames: list[str], cpu: str, operator: str = "In") -> Obj:
    expr: Obj = {"key": "kubernetes.io/hostname", "operator": operator}
    if operator == "In":
        expr["values"] = hostnames
    term = {"matchExpressions": [expr]}
    return pod(
        name,
        cpu,
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        },
    )


def daemonset(name: str, cpu: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}],
                    **spec,
                },
            },
        },
    }


def node(name: str, cpu: str, labels: Mapping[str, str] | None = None, **spec: Any) -> Obj:
    """A live node of no known group unless its labels name one, without conditions."""
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110", "ephemeral-storage": "50Gi"}
    hostname = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    return objects.node(name, allocatable, labels=hostname, ready=None, **spec)


NODE_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [],
            }
        }
    },
}


def karpenter_pool(
    name: str, types: list[str], daemonsets: Mapping[str, int] | None = None, *, ready: bool = True
) -> tuple[Obj, ...]:
    """NodePool `name` of `types` on AL2023, listed, and the NodeGroupTemplate the controller
    publishes for it (built by the controller's own code), whose DaemonSets take `daemonsets`
    (milli-units) on every type; its Ready condition False unless `ready`."""
    from capacity.karpenter.nodeclass import KarpenterOptions
    from capacity.karpenter.published import PROVIDER, published
    from capacity.template import NodeGroupTemplate

    requirement = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name}
    pool = {
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": [requirement]}}},
    }
    if not ready:
        pool["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "NodeClassNotReady"}]}
    nodeclass = {"spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r"}}
    record, _ = published(pool, nodeclass, KarpenterOptions(), {}, lambda offer: dict(daemonsets or {}))
    template = NodeGroupTemplate(name, provider=PROVIDER, karpenter=record).to_object()
    return template, {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **pool}


def karpenter_node(name: str, pool: str, instance_type: str, cpu: str) -> Obj:
    """A node Karpenter launched for `pool`: no node group label, its NodePool's."""
    return node(name, cpu, {"karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": instance_type})


@dataclass(frozen=True)
class Case:
    id: str
    obj: Obj
    verdict: str  # admitted, denied, unjudged
    extra: tuple[Obj, ...] = ()
    says: str = ""  # a line the message or a warning holds
    warning: str = ""  # the one warning, whole
    abstained: str = ""
    operation: str = "CREATE"
    old: Obj | None = None
    drop: tuple[str, ...] = field(default=())


def state(case: Case) -> list[Obj]:
    return [
        *(copy.deepcopy(o) for o in DEMO if o["metadata"]["name"] not in case.drop),
        *copy.deepcopy(case.extra),
    ]


def demo_node(name: str) -> Obj:
    return copy.deepcopy(next(o for o in DEMO if o["kind"] == "Node" and o["metadata"]["name"] == name))


def with_taint(name: str, taint: Obj) -> Obj:
    found = demo_node(name)
    found["spec"]["taints"] = [taint]
    return found


def cordoned(name: str) -> Obj:
    """`kubectl cordon`: spec.unschedulable (the node controller's taint may not be there yet)."""
    found = demo_node(name)
    found["spec"]["unschedulable"] = True
    return found


def small_group_state() -> tuple[Obj, ...]:
    """One group of 2000m nodes, one live, whose DaemonSets (the agent at 1200m) take 1200m."""
    template = {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-small"},
        "spec": {
            "provider": "manual",
            "maxSize": 3,
            "nodes": 1,
            "nodeNames": ["small-1"],
            "actual": {
                "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                "labels": {"kubernetes.io/os": "linux"},
            },
            "daemonSetOverhead": {"cpu": "1200m", "pods": "1"},
        },
    }
    return (template, node("small-1", "2"))


NO_EXECUTE = {"key": "dedicated", "value": "x", "effect": "NoExecute"}
NO_SCHEDULE = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
# the demo's groups and nodes, dropped where a case brings its own capacity
DEMO_CAPACITY = tuple(o["metadata"]["name"] for o in DEMO if o["kind"] in ("Node", "NodeGroupTemplate"))


CASES = [
    # bound by spec.nodeName: the kubelet's checks against that node alone
    Case("node-name-fits-its-node", pod("n", "3", nodeName=GENERAL_NODE), "admitted"),
    Case(
        "node-name-over-its-node",
        pod("n", "3", nodeName=BURST_NODE),
        "denied",
        says=f"node {BURST_NODE}: Insufficient cpu: requests 3, the node has 1930m allocatable: request less",
    ),
    Case(
        "node-name-no-schedule-taint-is-not-the-kubelets",
        pod("n", "1", nodeName=GENERAL_NODE),
        "admitted",
        extra=(with_taint(GENERAL_NODE, NO_SCHEDULE),),
        drop=(GENERAL_NODE,),
    ),
    Case(
        "node-name-no-execute-taint-refuses",
        pod("n", "1", nodeName=GENERAL_NODE),
        "denied",
        extra=(with_taint(GENERAL_NODE, NO_EXECUTE),),
        drop=(GENERAL_NODE,),
        says="add a toleration for dedicated=x:NoExecute",
    ),
    Case(
        "node-name-unknown",
        pod("n", "300", nodeName="ip-10-9-9-9.ec2.internal"),
        "unjudged",
        abstained="unknown-node",
        says="it is pinned to a node fitguard does not know (ip-10-9-9-9.ec2.internal)",
    ),
    # pinned by the DaemonSet controller's matchFields term: the scheduler's checks on that node
    Case("daemonset-pod-fits-its-node", pinned_by_daemonset("ds-1", BURST_NODE, "100m"), "admitted"),
    Case(
        "daemonset-pod-fits-a-cordoned-node-it-tolerates",
        pinned_by_daemonset("ds-1", BURST_NODE, "100m"),
        "admitted",
        extra=(cordoned(BURST_NODE),),
        drop=(BURST_NODE,),
    ),
    Case(
        "hostname-pinned-to-a-cordoned-node",
        hostname_in("h", [BURST_NODE], "100m"),
        "denied",
        extra=(cordoned(BURST_NODE),),
        drop=(BURST_NODE,),
        says="add a toleration for node.kubernetes.io/unschedulable:NoSchedule",
    ),
    Case(
        "daemonset-pod-over-its-node",
        pinned_by_daemonset("ds-1", BURST_NODE, "2"),
        "denied",
        says=f"node {BURST_NODE}: Insufficient cpu: requests 2, the node has 1930m allocatable: request less",
    ),
    Case(
        "daemonset-pod-of-an-unknown-node",
        pinned_by_daemonset("ds-1", "ip-10-7-7-7.ec2.internal", "100m"),
        "unjudged",
        abstained="unknown-node",
    ),
    # kubernetes.io/hostname: In names nodes; Exists fits a template as cluster-autoscaler's does
    Case("hostname-in-fits", hostname_in("h", [GENERAL_NODE], "3"), "admitted"),
    Case(
        "hostname-in-over",
        hostname_in("h", [BURST_NODE], "3"),
        "denied",
        says=f"node {BURST_NODE}: Insufficient cpu",
    ),
    Case("hostname-in-unknown", hostname_in("h", ["nowhere"], "3"), "unjudged", abstained="unknown-node"),
    Case("hostname-exists-fits-a-template", hostname_in("h", [], "1", operator="Exists"), "admitted"),
    # capacity fitguard does not model
    Case(
        "self-managed-node-could-take-it",
        pod("big", "300"),
        "unjudged",
        extra=(node("ip-10-5-5-5.ec2.internal", "8"),),
        abstained="unmodeled-nodes",
        says="it could run on nodes of no node group fitguard knows (ip-10-5-5-5.ec2.internal)",
    ),
    Case(
        "self-managed-node-that-fits-serves-it",
        pod("big", "6"),
        "admitted",
        extra=(node("ip-10-5-5-5.ec2.internal", "8"),),
    ),
    Case(
        "hybrid-node-excluded-by-the-pods-selector",
        pod("big", "300", nodeSelector={"workload": "general"}),
        "denied",
        extra=(node("mi-0123", "8", {"eks.amazonaws.com/compute-type": "hybrid"}),),
    ),
    Case(
        "virtual-node-tainted-the-pod-does-not-tolerate",
        pod("big", "300"),
        "denied",
        extra=(
            node(
                "virtual-kubelet",
                "1000",
                {"type": "virtual-kubelet"},
                taints=[{"key": "virtual-kubelet.io/provider", "value": "aws", "effect": "NoSchedule"}],
            ),
        ),
    ),
    Case(
        "karpenter-nodepool",
        pod("big", "300"),
        "unjudged",
        extra=(NODE_POOL,),
        abstained="karpenter-nodepools",
        warning="fitguard did not check this pod: Karpenter NodePools may launch a node for it, and fitguard"
        " does not model them (default)",
    ),
    Case(
        "another-scheduler",
        pod("big", "300", schedulerName="volcano"),
        "unjudged",
        abstained="other-scheduler",
        warning="fitguard did not check this pod: another scheduler places it",
    ),
    Case(
        "static-pod-mirror",
        {
            **pod("kube-proxy-x", "300", nodeName=GENERAL_NODE),
            "metadata": {
                "name": "m",
                "namespace": "default",
                "annotations": {"kubernetes.io/config.mirror": "abc"},
            },
        },
        "unjudged",
        abstained="static-pod",
    ),
    # a Karpenter node of a NodePool fitguard judges is known capacity, like a node group's
    Case(
        "karpenter-node-of-a-judged-nodepool-takes-it",
        pod("big", "6"),
        "admitted",  # an m5.2xlarge launched before the NodePool was narrowed: its room decides
        extra=(
            *karpenter_pool("kp", ["m5.large"]),
            karpenter_node("ip-10-0-9-1.ec2.internal", "kp", "m5.2xlarge", "7910m"),
        ),
    ),
    Case(
        "karpenter-node-less-its-nodepools-daemonsets-and-the-nodepool-too-small",
        pod("big", "6"),
        "denied",
        extra=(
            *karpenter_pool("kp", ["m5.large"], {"cpu": 2000}),
            karpenter_node("ip-10-0-9-1.ec2.internal", "kp", "m5.2xlarge", "7910m"),
        ),
        says="judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 5 live nodes,"
        " 1 Karpenter NodePool",
    ),
    Case(
        "karpenter-node-of-a-nodepool-not-ready",
        pod("big", "6"),
        "unjudged",  # its node is known, but Karpenter launches nothing for the NodePool until Ready
        extra=(
            *karpenter_pool("kp", ["m5.large"], ready=False),
            karpenter_node("ip-10-0-9-1.ec2.internal", "kp", "m5.large", "1930m"),
        ),
        abstained="karpenter-nodepools",
    ),
    Case(
        "karpenter-node-of-a-nodepool-fitguard-cannot-judge",
        pod("big", "6"),
        "unjudged",
        extra=(NODE_POOL, karpenter_node("ip-10-0-9-1.ec2.internal", "default", "m5.large", "1930m")),
        abstained="unmodeled-nodes",
    ),
    # DaemonSets: judged against what they select, their own old revision no overhead
    Case(
        "daemonset-selecting-nothing",
        daemonset("gpu-agent", "100m", nodeSelector={"gpu": "true"}),
        "admitted",
    ),
    Case(
        "daemonset-too-big-for-every-node-it-selects",
        daemonset("hog", "5"),
        "denied",
        says="DaemonSet hog does not fit any node group",
    ),
    Case("daemonset-fits-the-larger-nodes", daemonset("agent", "3"), "admitted"),
    Case(
        "daemonset-update-does-not-count-its-old-revision",
        daemonset("agent", "1300m"),
        "admitted",
        extra=small_group_state(),
        drop=DEMO_CAPACITY,
        operation="UPDATE",
        old=daemonset("agent", "1200m"),
    ),
    Case(
        "another-daemonset-does-count",
        daemonset("other", "1300m"),
        "denied",
        extra=small_group_state(),
        drop=DEMO_CAPACITY,
        says="ng-small: Insufficient cpu",
    ),
    # what is denied stays denied: the README's example, in a cluster of ASGs only
    Case(
        "readme-scratch-build",
        {
            **pod("scratch-build", "500m"),
            "spec": {
                "containers": [
                    {
                        "name": "b",
                        "image": "x",
                        "resources": {
                            "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "30Gi"}
                        },
                    }
                ]
            },
        },
        "denied",
        says="judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 4 live nodes,"
        " no Karpenter NodePools",
    ),
]


def review(obj: Obj, operation: str = "CREATE", old: Obj | None = None) -> Obj:
    return objects.review(obj, "u-26", operation, oldObject=old)


def unchecked(why: str) -> float:
    """fitguard_admission_unchecked_total{why} now (the in-process registry of the test's app)."""
    return REGISTRY.get_sample_value("fitguard_admission_unchecked_total", {"why": why}) or 0.0


def validate(objects: list[Obj], obj: Obj, operation: str = "CREATE", old: Obj | None = None) -> Obj:
    app = create_app(from_objects(objects), WebhookOptions(mode="enforce"))
    answer = app.test_client().post("/validate", json=review(obj, operation, old))
    assert answer.status_code == 200
    response: Obj = answer.get_json()["response"]
    assert response["uid"] == "u-26"
    return response


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate_denies_only_what_nothing_could_run(case: Case) -> None:
    """/validate: each input's verdict; an unjudged one is allowed with a warning saying why, an
    audit annotation naming the reason, and one more count of that reason in
    fitguard_admission_unchecked_total; a denial names what it judged."""
    counted = unchecked(case.abstained) if case.abstained else 0.0
    response = validate(state(case), case.obj, case.operation, case.old)
    if case.abstained:
        assert unchecked(case.abstained) == counted + 1
    message = (response.get("status") or {}).get("message", "")
    warnings = response.get("warnings") or []
    expected_allowed = case.verdict != "denied"
    assert response["allowed"] is expected_allowed, message or warnings
    if case.verdict == "unjudged":
        assert response["auditAnnotations"] == {"abstained": case.abstained}
        assert len(warnings) == 1 and warnings[0].startswith("fitguard did not check this ")
        if case.warning:
            assert warnings == [case.warning]
    else:
        assert "auditAnnotations" not in response
    if case.verdict == "admitted":
        assert not message and not warnings
    if case.says:
        assert any(case.says in text for text in [message, *warnings]), (message, warnings)


def test_check_gives_the_same_verdicts_from_a_state_file(tmp_path: Path) -> None:
    """`fitguard check --state`: each case's object judged in its own state as /validate judged it
    (one run per distinct state); `-o json` says `unjudged` with the reason, the summary counts
    abstentions by reason, and the exit status is 1 exactly where something is denied."""
    by_state: dict[str, list[Case]] = {}
    for case in CASES:
        if case.operation == "CREATE":
            by_state.setdefault(json.dumps(state(case), sort_keys=True), []).append(case)
    got = {}
    for i, (text, cases) in enumerate(by_state.items()):
        (tmp_path / f"state-{i}.json").write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": json.loads(text)})
        )
        (tmp_path / f"objects-{i}.yaml").write_text(yaml.safe_dump_all([c.obj for c in cases]))
        run = subprocess.run(
            [
                FITGUARD,
                "check",
                "--state",
                str(tmp_path / f"state-{i}.json"),
                "-f",
                str(tmp_path / f"objects-{i}.yaml"),
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        body = json.loads(run.stdout)
        denied = any(c.verdict == "denied" for c in cases)
        assert run.returncode == (1 if denied else 0), run.stderr
        expected_abstentions: dict[str, int] = {}
        for case, result in zip(cases, body["results"], strict=True):
            verdict = result["verdict"] if result["verdict"] in ("denied", "unjudged") else "admitted"
            got[case.id] = (verdict, result["abstained"])
            if case.abstained:
                expected_abstentions[case.abstained] = expected_abstentions.get(case.abstained, 0) + 1
        assert body["abstentions"] == dict(sorted(expected_abstentions.items()))
    assert got == {c.id: (c.verdict, c.abstained or None) for c in CASES if c.operation == "CREATE"}


def test_a_daemonset_update_and_a_create_of_the_same_shape_each_get_their_own_words() -> None:
    """An update is judged without its own old revision, apart from the memo: the same shape
    refused on update (nothing of its own on the node) and then on create (its 1200m counted)
    is told each its own figures, whichever comes first."""
    view = from_objects(
        [
            *copy.deepcopy(list(small_group_state())),
            *(o for o in DEMO if o["kind"] in ("Namespace", "ServiceAccount")),
        ]
    )
    config = WebhookOptions(mode="enforce")
    update = review(daemonset("agent", "2100m"), "UPDATE", daemonset("agent", "1200m"))["request"]
    create = review(daemonset("agent", "2100m"))["request"]
    updated = validate_review(update, view, config)
    created = validate_review(create, view, config)
    assert not updated.allowed and not created.allowed
    assert "ng-small: Insufficient cpu: requests 2100m; a node offers 2: request less" in updated.message
    assert "a node offers 800m after 1200m of DaemonSets" in created.message


def test_a_nodepools_node_is_known_again_once_its_node_class_is_current_again() -> None:
    """What the live nodes say of a pod shape is remembered per generation of every store that
    decides which NodePools are judged, node classes included: while kp's EC2NodeClass as listed
    differs from the one its template was built from, kp is not judged and its node is capacity
    fitguard does not model (unjudged); once the class as listed matches again (the watch
    carries it), the same pod on the same view is judged again and denied, naming kp."""
    template, listed = karpenter_pool("kp", ["m5.large"])
    spec = {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r"}
    current = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "kp"},
        "spec": spec,
    }
    changed = copy.deepcopy(current)
    changed["spec"]["role"] = "another"
    kp_node = karpenter_node("ip-10-0-9-1.ec2.internal", "kp", "m5.large", "1930m")
    view = from_objects([*copy.deepcopy(DEMO), template, listed, changed, kp_node])
    config = WebhookOptions(mode="enforce")
    request = review(pod("big", "6"))["request"]
    stale = validate_review(request, view, config)
    assert (stale.allowed, stale.abstained and stale.abstained.value) == (True, "unmodeled-nodes")
    view.ec2_node_classes.apply("MODIFIED", current)
    judged = validate_review(request, view, config)
    assert judged.allowed is False and "NodePool kp: " in judged.message
