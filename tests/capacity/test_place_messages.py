"""capacity/place_messages.py: the words of a pinned pod's denial and of the judged-set line, whole."""

from __future__ import annotations

from capacity.fit import AFFINITY_MISMATCH, TOO_MANY_PODS, PodNeeds, Reason
from capacity.place_messages import explain_node, judged_line, names, pinned_denial
from capacity.placement import NodeVerdict
from capacity.taints import Taint

NEEDS = PodNeeds.from_spec(
    {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]}
)
CPU = Reason("Insufficient cpu", "cpu", 3000, 1930, 1930)
TAINT = Reason("node(s) had untolerated taint {dedicated: x}", taint=Taint("dedicated", "x", "NoExecute"))
BARE_TAINT = Reason("node(s) had untolerated taint {gone: }", taint=Taint("gone", "", "NoSchedule"))


def test_names_are_listed_up_to_the_limit_and_the_rest_counted() -> None:
    """At the limit every name is shown; one over, the last is counted instead."""
    assert names(["a", "b", "c"], 3) == "a, b, c"
    assert names(["a", "b", "c", "d"], 3) == "a, b, c and 1 more"
    assert names([]) == ""
    assert names([f"n{i}" for i in range(13)]) == ", ".join(f"n{i}" for i in range(12)) + " and 1 more"


def test_each_reason_on_a_node_says_what_to_do() -> None:
    """A taint names the toleration (with its value, or without one); a selector says the labels do
    not match; pods say how many the node allows; a resource gives the request and the node's
    allocatable."""
    reasons = (
        TAINT,
        BARE_TAINT,
        Reason(AFFINITY_MISMATCH),
        Reason(TOO_MANY_PODS, "pods", 1000, 0, 29000),
        CPU,
        Reason("Insufficient memory", "memory", 2**30 * 1000, 0, 512 * 2**20 * 1000),
    )
    assert explain_node(NodeVerdict("n-1", reasons), NEEDS) == (
        "node n-1: node(s) had untolerated taint {dedicated: x}: add a toleration for dedicated=x:NoExecute; "
        "node(s) had untolerated taint {gone: }: add a toleration for gone:NoSchedule; "
        "node(s) didn't match Pod's node affinity/selector: its labels do not match the pod's node selector "
        "or affinity; "
        "Too many pods: it allows 29 pods; "
        "Insufficient cpu: requests 3, the node has 1930m allocatable: request less; "
        "Insufficient memory: requests 1Gi, the node has 512Mi allocatable: request less"
    )


def test_a_pinned_denial_names_its_node_or_counts_its_nodes() -> None:
    """One node: 'the node it is bound to'; several: how many, one line each, past twelve counted."""
    one = pinned_denial([NodeVerdict("n-1", (CPU,))], NEEDS)
    assert one == (
        "pod does not fit the node it is bound to\n"
        "node n-1: Insufficient cpu: requests 3, the node has 1930m allocatable: request less"
    )
    many = [NodeVerdict(f"n-{i:02}", (CPU,)) for i in range(14)]
    lines = pinned_denial(many, NEEDS, "Pod web").splitlines()
    assert lines[0] == "Pod web does not fit any of the 14 nodes it is bound to"
    assert lines[1:13] == [explain_node(v, NEEDS) for v in many[:12]]
    assert lines[13:] == ["and 2 more nodes"]
    twelve = pinned_denial(many[:12], NEEDS).splitlines()
    assert len(twelve) == 13 and twelve[-1] == explain_node(many[11], NEEDS)


def test_the_judged_line_counts_one_as_one() -> None:
    """Groups by name, nodes and NodePools counted, singular for one, 'no' for none."""
    assert judged_line(["ng-a"], 1, 1) == (
        "judged every place it could run: 1 node group (ng-a), 1 live node, 1 Karpenter NodePool"
    )
    assert judged_line(["ng-a", "ng-b"], 0) == (
        "judged every place it could run: 2 node groups (ng-a, ng-b), 0 live nodes, no Karpenter NodePools"
    )
    assert judged_line([], 2, 3) == (
        "judged every place it could run: no node groups, 2 live nodes, 3 Karpenter NodePools"
    )
