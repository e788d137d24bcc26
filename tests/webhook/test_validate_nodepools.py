"""/validate's judgement of Karpenter NodePools, in process: a pod no node group and no live node
serves is judged by each NodePool's published template (the NodeGroupTemplate the controller writes,
capacity/karpenter/published.py), and the answer is whole: admitted, denied naming every group and
NodePool with the field to change, or admitted unjudged naming the NodePools it could not judge.
tests/e2e/test_karpenter_once.py judges the same through `fitguard check` in a subprocess."""

from __future__ import annotations

import copy
import functools
from typing import Any

from prometheus_client import REGISTRY

from capacity.karpenter.published import PROVIDER, published
from capacity.placement import Abstention
from capacity.template import NodeGroupTemplate
from tests.capacity.karpenter.test_published import NODECLASS, POOL, SETTINGS
from tests.objects import review
from tests.webhook.test_validate import cluster
from webhook.cluster import ClusterView
from webhook.review import Verdict, WebhookOptions
from webhook.validate import review as validate_review
from webhook.validate import whole_warning

Obj = dict[str, Any]
ENFORCE = WebhookOptions(mode="enforce")
# POOL allows m5.large and t3.large (two vCPUs each) and taints its nodes dedicated=x:NoSchedule
SMALL_TYPES = ("m5.large", "t3.large")
CPU_LINE = (
    "NodePool {}: no allowed instance type offers enough of a resource (cpu: needs 16 with the"
    " DaemonSets, the allowed types offer at most 1930m): change NodePool spec.template.spec.requirements"
)
# the demo cluster's three groups refusing 16 cpu (examples/cluster.yaml)
GROUP_LINES = (
    "ng-batch: Insufficient cpu: requests 16; an m5.large node would offer 1730m, and"
    " cluster-autoscaler sees 1700m while the group has 0 nodes: request less or use a larger type",
    "ng-burst: Insufficient cpu: requests 16; a t3.large node offers 1730m after 200m of DaemonSets:"
    " request less or use a larger type",
    "ng-general: Insufficient cpu: requests 16; an m5.xlarge node offers 3720m after 200m of DaemonSets:"
    " request less or use a larger type",
)
NOT_MODELED = "Karpenter NodePools may launch a node for it, and fitguard does not model them"


def nodepool(name: str, types: tuple[str, ...] = SMALL_TYPES) -> Obj:
    """test_published's NodePool under another name, allowing `types`."""
    pool = copy.deepcopy(POOL)
    pool["metadata"]["name"] = name
    pool["spec"]["template"]["spec"]["requirements"][0]["values"] = list(types)
    return pool


def published_template(name: str, types: tuple[str, ...] = SMALL_TYPES) -> Obj:
    """The NodeGroupTemplate the controller publishes for the NodePool (no DaemonSets), a copy."""
    return copy.deepcopy(_published(name, types))


@functools.cache
def _published(name: str, types: tuple[str, ...]) -> Obj:
    # built once per process: a build reads every instance type Karpenter knows
    record, _ = published(nodepool(name, types), NODECLASS, SETTINGS, {}, lambda offer: {})
    return NodeGroupTemplate(name, provider=PROVIDER, karpenter=record).to_object()


def listed(name: str) -> Obj:
    """The NodePool as the API lists it, with no published template (not judged)."""
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **nodepool(name)}


def pod(cpu: str, *, tolerates: bool = True, name: str = "big") -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
    if tolerates:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def workload(kind: str, cpu: str) -> Obj:
    template = {"metadata": {"labels": {"app": "big"}}, "spec": pod(cpu)["spec"]}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "big"}}, "template": template},
    }


def only(*objects: Obj) -> ClusterView:
    """The demo cluster's namespaces and accounts with `objects`, and no node group or node."""
    return cluster(*objects, drop=("ng-batch", "ng-burst", "ng-general"))


def judge(obj: Obj, view: ClusterView, config: WebhookOptions = ENFORCE) -> Verdict:
    return validate_review(review(obj)["request"], view, config)


def unchecked(why: str) -> float:
    return REGISTRY.get_sample_value("fitguard_admission_unchecked_total", {"why": why}) or 0.0


def test_a_pod_every_group_node_and_nodepool_refuses_is_denied_naming_each() -> None:
    """The demo's three groups and four nodes refuse 16 cpu, and so do both NodePools: one denial
    with each group's line, each NodePool's line with the field to change, and what was judged."""
    view = cluster(published_template("b"), published_template("a"))
    message = "\n".join(
        (
            "pod does not fit any node group",
            *GROUP_LINES,
            CPU_LINE.format("a"),
            CPU_LINE.format("b"),
            "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general),"
            " 4 live nodes, 2 Karpenter NodePools",
        )
    )
    assert judge(pod("16"), view) == Verdict.deny(message)


def test_without_node_groups_the_denial_names_the_nodepools_alone() -> None:
    """No node group at all: the first line says no NodePool fits, for a pod and for a Deployment
    by its name; a NodePool whose taint the pod does not tolerate names the pod's tolerations."""
    view = only(published_template("a"))
    judged = "judged every place it could run: no node groups, 0 live nodes, 1 Karpenter NodePool"
    assert judge(pod("16"), view) == Verdict.deny(
        "\n".join(("pod does not fit any Karpenter NodePool", CPU_LINE.format("a"), judged))
    )
    assert judge(workload("Deployment", "16"), view) == Verdict.deny(
        "\n".join(("Deployment big does not fit any Karpenter NodePool", CPU_LINE.format("a"), judged))
    )
    taint = "NodePool a: taint not tolerated (dedicated=x:NoSchedule): change pod spec.tolerations"
    assert judge(pod("1", tolerates=False), view) == Verdict.deny(
        "\n".join(("pod does not fit any Karpenter NodePool", taint, judged))
    )


def test_warn_and_audit_answer_a_nodepool_denial_with_a_finding() -> None:
    """warn: allowed, warned of each NodePool's refusal (the message is the finding); audit:
    allowed with the message."""
    view = only(published_template("a"))
    message = "\n".join(
        (
            "pod does not fit any Karpenter NodePool",
            CPU_LINE.format("a"),
            "judged every place it could run: no node groups, 0 live nodes, 1 Karpenter NodePool",
        )
    )
    warned = judge(pod("16"), view, WebhookOptions(mode="warn"))
    warning = whole_warning(CPU_LINE.format("a"))
    assert warned == Verdict(warnings=[warning], finding=message, finding_mode="warn")
    audited = judge(pod("16"), view, WebhookOptions(mode="audit"))
    assert audited == Verdict(message=message, finding=message, finding_mode="audit")


def test_one_nodepool_that_takes_the_pod_admits_it() -> None:
    """NodePool a refuses 8 cpu, NodePool c (m5.4xlarge, 16 vCPUs) takes it: admitted, nothing said;
    without the toleration NodePool c's taint refuses it too."""
    view = cluster(published_template("a"), published_template("c", ("m5.4xlarge",)))
    assert judge(pod("8"), view) == Verdict()
    refused = judge(pod("8", tolerates=False), view)
    assert not refused.allowed and refused.message.splitlines()[-3:] == [
        "NodePool a: taint not tolerated (dedicated=x:NoSchedule): change pod spec.tolerations",
        "NodePool c: taint not tolerated (dedicated=x:NoSchedule): change pod spec.tolerations",
        "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general),"
        " 4 live nodes, 2 Karpenter NodePools",
    ]


def test_nodepools_without_a_published_template_leave_the_pod_unjudged() -> None:
    """Five NodePools listed, none published yet: admitted unjudged, the first three named and the
    rest counted, the audit annotation's reason, one more count of it; one published NodePool that
    refuses does not make the others judged."""
    view = cluster(*(listed(name) for name in "fedcb"), published_template("a"))
    before = unchecked("karpenter-nodepools")
    assert judge(pod("16"), view) == Verdict(
        warnings=[f"fitguard did not check this pod: {NOT_MODELED} (b, c, d and 2 more)"],
        abstained=Abstention.NODEPOOLS,
    )
    assert unchecked("karpenter-nodepools") == before + 1


def test_a_daemonset_is_never_judged_by_a_nodepool() -> None:
    """A DaemonSet that a node group selects but no node serves: NodePools launch no node for a
    DaemonSet's pods, so it is admitted unjudged naming the NodePools, published or not, even when
    each published template would refuse it."""
    view = cluster(published_template("a"), published_template("b"), *(listed(name) for name in "cde"))
    before = unchecked("karpenter-nodepools")
    assert judge(workload("DaemonSet", "16"), view) == Verdict(
        warnings=[f"fitguard did not check this DaemonSet big: {NOT_MODELED} (a, b, c and 2 more)"],
        abstained=Abstention.NODEPOOLS,
    )
    assert unchecked("karpenter-nodepools") == before + 1


def test_a_pod_selecting_labels_nobody_offers_is_told_each_groups_labels_and_the_nodepools_field() -> None:
    """A node selector no group, node or NodePool satisfies: each group's line names the labels its
    nodes lack or carry otherwise, the NodePool's line the pod's field to change."""
    selecting = pod("1")
    selecting["spec"]["nodeSelector"] = {"beta.kubernetes.io/os": "linux", "workload": "batch"}
    selector = (
        "node(s) didn't match Pod's node affinity/selector: its nodes have no beta.kubernetes.io/os label"
    )
    message = "\n".join(
        (
            "pod does not fit any node group",
            f"ng-batch: {selector}, no workload label",
            f"ng-burst: {selector}, no workload label",
            f"ng-general: {selector}, workload=general",
            "NodePool a: node selector or affinity incompatible with the NodePool (workload: label has no"
            " known values): change pod spec.nodeSelector / spec.affinity",
            "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general),"
            " 4 live nodes, 1 Karpenter NodePool",
        )
    )
    assert judge(selecting, cluster(published_template("a"))) == Verdict.deny(message)
