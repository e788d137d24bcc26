"""/validate's whole answers for what issue 26 added (no wrong denials), in process: the memo of the
places beyond the groups, nodes of no known group, pods pinned to nodes, DaemonSets and the
tolerations their controller adds, and the SecurityGroupPolicy named for an injected pod-eni.
tests/webhook/test_validate_no_wrong_denials.py judges the same inputs through the Flask app and
`fitguard check`; these compare whole Verdicts (allowed, message, warnings, finding, abstention)."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from capacity.fit import Reason
from capacity.placement import Abstention
from capacity.serve import GroupVerdict
from tests.objects import pod, review
from tests.webhook.test_validate import cluster, ngt, payments_worker
from tests.webhook.test_validate_no_wrong_denials import BURST_NODE, daemonset, hostname_in, node
from webhook.cluster import ClusterView
from webhook.review import Verdict, WebhookOptions
from webhook.validate import review as validate_review
from webhook.validate import selects, with_daemon_tolerations

Obj = dict[str, Any]
ENFORCE = WebhookOptions(mode="enforce")
NOT_CHECKED = "fitguard did not check this pod: "
JUDGED_DEMO = (
    "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 4 live nodes,"
    " no Karpenter NodePools"
)


def judge(obj: Obj, view: ClusterView, config: WebhookOptions = ENFORCE) -> Verdict:
    return validate_review(review(obj)["request"], view, config)


def unchecked(why: str) -> float:
    return REGISTRY.get_sample_value("fitguard_admission_unchecked_total", {"why": why}) or 0.0


def cpu_denial(cpu: str) -> str:
    """The demo cluster's denial of a pod requesting `cpu` (more than any of its nodes has)."""
    return "\n".join(
        (
            "pod does not fit any node group",
            f"ng-batch: Insufficient cpu: requests {cpu}; an m5.large node would offer 1730m, and"
            " cluster-autoscaler sees 1700m while the group has 0 nodes: request less or use a larger type",
            f"ng-burst: Insufficient cpu: requests {cpu}; a t3.large node offers 1730m after 200m of"
            " DaemonSets: request less or use a larger type",
            f"ng-general: Insufficient cpu: requests {cpu}; an m5.xlarge node offers 3720m after 200m of"
            " DaemonSets: request less or use a larger type",
            JUDGED_DEMO,
        )
    )


def test_nodes_of_no_known_group_decide_by_shape_each_remembered_apart() -> None:
    """Five self-managed 8-cpu nodes: a 6-cpu pod one of them serves is admitted, a 300-cpu pod
    they might serve unseen is admitted unjudged naming three of them and counting the rest; each
    shape keeps its own answer when asked again in either order."""
    view = cluster(*(node(f"ip-10-5-5-{i}.ec2.internal", "8") for i in range(5)))
    names = "ip-10-5-5-0.ec2.internal, ip-10-5-5-1.ec2.internal, ip-10-5-5-2.ec2.internal and 2 more"
    unjudged = Verdict(
        warnings=[f"{NOT_CHECKED}it could run on nodes of no node group fitguard knows ({names})"],
        abstained=Abstention.UNMODELED_NODES,
    )
    before = unchecked("unmodeled-nodes")
    for cpu, answer in (("6", Verdict()), ("300", unjudged), ("6", Verdict()), ("300", unjudged)):
        assert judge(pod("big", {"cpu": cpu}), view) == answer, cpu
    assert unchecked("unmodeled-nodes") == before + 2


def test_each_denied_shape_is_told_its_own_figures_from_the_memo() -> None:
    """Two shapes denied one after the other, then again: each denial is its own whole text."""
    view = cluster()
    for cpu in ("300", "16", "300", "16"):
        assert judge(pod("big", {"cpu": cpu}), view) == Verdict.deny(cpu_denial(cpu)), cpu


def test_a_node_added_since_a_denial_admits_the_same_pod() -> None:
    """The memo holds for one generation of nodes: a self-managed node that serves the pod, added
    after its denial, admits it on the next review."""
    view = cluster()
    assert judge(pod("big", {"cpu": "6"}), view) == Verdict.deny(cpu_denial("6"))
    view.nodes.apply("ADDED", node("ip-10-5-5-5.ec2.internal", "8"))
    assert judge(pod("big", {"cpu": "6"}), view) == Verdict()


def test_a_pod_pinned_to_unknown_hostnames_names_three_and_counts_the_rest() -> None:
    before = unchecked("unknown-node")
    verdict = judge(hostname_in("h", [f"h{i}" for i in range(5)], "1"), cluster())
    assert verdict == Verdict(
        warnings=[f"{NOT_CHECKED}it is pinned to a node fitguard does not know (h0, h1, h2 and 2 more)"],
        abstained=Abstention.UNKNOWN_NODE,
    )
    assert unchecked("unknown-node") == before + 1


def test_a_workload_pinned_to_a_node_too_small_is_warned_line_by_line() -> None:
    """warn mode: a Deployment whose template names a t3.large node by spec.nodeName: the finding
    is the whole denial, the one warning its node's line."""
    template = {
        "metadata": {},
        "spec": {
            "nodeName": BURST_NODE,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "9Gi"}}}],
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "pinned", "namespace": "default"},
        "spec": {"template": template},
    }
    line = (
        f"node {BURST_NODE}: Insufficient cpu: requests 3, the node has 1930m allocatable: request less;"
        " Insufficient memory: requests 9Gi, the node has 7Gi allocatable: request less"
    )
    verdict = judge(deployment, cluster(), WebhookOptions(mode="warn"))
    assert verdict == Verdict(
        warnings=[line],
        finding=f"Deployment pinned does not fit the node it is bound to\n{line}",
        finding_mode="warn",
    )


def test_an_empty_scheduler_name_is_the_default_scheduler() -> None:
    """schedulerName "" is defaulted to default-scheduler by the API server: judged, not left."""
    assert judge(pod("big", {"cpu": "300"}, schedulerName=""), cluster()) == Verdict.deny(cpu_denial("300"))


def test_a_daemonset_is_judged_with_the_tolerations_its_controller_adds() -> None:
    """The one group, at zero nodes, taints its nodes node.kubernetes.io/unschedulable: the
    DaemonSet's pods tolerate it (the DaemonSet controller adds the toleration), so the group is
    one the DaemonSet selects and its size refuses: denied, as without the taint."""
    tainted = ngt("ng-batch").to_object()
    taints = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    tainted["spec"]["actual"]["taints"] = taints
    tainted["spec"]["autoscaler"]["taints"] = taints
    denial = "\n".join(
        (
            "DaemonSet hog does not fit any node group",
            "ng-batch: Insufficient cpu: requests 3; an m5.large node would offer 1730m, and"
            " cluster-autoscaler sees 1700m while the group has 0 nodes: request less or use a larger type",
            "fields to edit: spec.template.spec.containers[0].resources.requests.cpu",
            "judged every place it could run: 1 node group (ng-batch), 0 live nodes, no Karpenter NodePools",
        )
    )
    alone = cluster(tainted, drop=("ng-batch", "ng-burst", "ng-general"))
    assert judge(daemonset("hog", "3"), alone) == Verdict.deny(denial)
    assert judge(daemonset("hog", "3"), cluster(drop=("ng-burst", "ng-general"))) == Verdict.deny(denial)


def test_the_daemonset_controllers_tolerations_are_added_to_the_templates_own() -> None:
    """Its own tolerations first, then the controller's (NoExecute for not-ready and unreachable,
    NoSchedule for the pressures and unschedulable); a tolerations field that is not a list is left
    for the fit check to name."""
    added = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
    ]
    own = {"key": "dedicated", "operator": "Exists"}
    containers = [{"name": "c"}]
    assert with_daemon_tolerations({"containers": containers}) == {
        "containers": containers,
        "tolerations": added,
    }
    assert with_daemon_tolerations({"containers": containers, "tolerations": [own]}) == {
        "containers": containers,
        "tolerations": [own, *added],
    }
    malformed = {"containers": containers, "tolerations": "all"}
    assert with_daemon_tolerations(malformed) is malformed


def test_a_closed_group_is_never_one_a_daemonset_selects() -> None:
    """A group that cannot add a node (max size 0) is not selected, whatever refused the pod;
    refused for its size alone it is."""
    size = Reason("Insufficient cpu", resource="cpu")
    assert not selects(GroupVerdict("g", False, (size,), why_closed="its max size is 0"))
    assert selects(GroupVerdict("g", False, (size,)))


def test_a_group_refusing_only_the_injected_pod_eni_names_the_policy() -> None:
    """The payments worker's pods match payments-db-access; ng-burst (t3.large) refuses them for
    the pod-eni /mutate injects and nothing else: the field to edit is that policy."""
    worker = payments_worker({"app": "payments-api"})
    del worker["spec"]["template"]["spec"]["nodeSelector"]
    denial = "\n".join(
        (
            "Deployment payments-worker does not fit any node group",
            "ng-burst: Insufficient vpc.amazonaws.com/pod-eni: requests 1; t3.large supports no branch"
            " ENIs (not trunking-compatible): run pods with security groups on a Nitro type such as m5",
            "fields to edit: SecurityGroupPolicy payments/payments-db-access"
            " (it injects vpc.amazonaws.com/pod-eni)",
            "judged every place it could run: 1 node group (ng-burst), 2 live nodes, no Karpenter NodePools",
        )
    )
    assert judge(worker, cluster(drop=("ng-batch", "ng-general"))) == Verdict.deny(denial)


def test_a_deployments_old_template_is_no_daemonset_overhead_for_its_update() -> None:
    """Only a DaemonSet's update is judged without its own old revision: a Deployment raised from
    100m to 3800m is denied on update as on create (ng-general offers 3720m after its 200m of
    DaemonSets; the Deployment's old 100m is none of them)."""

    def deployment(cpu: str) -> Obj:
        template = {
            "metadata": {},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        }
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"template": template},
        }

    denial = (
        cpu_denial("3800m")
        .replace("pod does not fit", "Deployment web does not fit")
        .replace(
            "\njudged every",
            "\nfields to edit: spec.template.spec.containers[0].resources.requests.cpu\njudged every",
        )
    )
    update = review(deployment("3800m"), "u-1", "UPDATE", oldObject=deployment("100m"))["request"]
    assert validate_review(update, cluster(), ENFORCE) == Verdict.deny(denial)
    assert judge(deployment("3800m"), cluster()) == Verdict.deny(denial)
