"""The exhausted-node guard's pure rule (capacity/guard.py): only held ENIs earn the label; a group
whose every ready node is labelled, with guarded pods pending on it for node affinity, is scaled by
fitguard (`--scaling=on`) or has its label lifted after the grace; other pending pods lift nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capacity.guard import (
    BLIND,
    CLEAR,
    GRACE,
    LIFTED,
    SCALING,
    GuardNode,
    GuardState,
    decide,
    pending_pod,
)
from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI, parse_resources
from capacity.template import View
from tests import autoscaler_template
from tests.budget import examples

NOW = 1_700_000_000.0
GRACE_S = 30.0
AFFINITY_MESSAGE = (
    "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)

CPU_MESSAGE = "0/2 nodes are available: 2 Insufficient cpu."
GUARD = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]}
            ]
        }
    }
}


def node(
    name: str, *, in_use: int = 0, held: int = 0, leaked: int = 0, group: str = "ng-sg", ready: bool = True
) -> GuardNode:
    allocatable = parse_resources({"cpu": "2", "memory": "8Gi", "pods": "29", POD_ENI: "3"}, "a")
    labels = {"eks.amazonaws.com/nodegroup": group, "kubernetes.io/hostname": name}
    return GuardNode(name, group, 3, in_use, held, leaked, ready, View(allocatable, labels))


def guarded(name: str = "web-0", message: str = AFFINITY_MESSAGE, cpu: str = "100m") -> Any:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, POD_ENI: "1"}}}],
        "affinity": GUARD,
    }
    return pending_pod("default", name, f"uid-{name}", message, spec)


def test_a_group_full_of_running_pods_is_not_labelled() -> None:
    """Every branch ENI used by running pods, none held: the scheduler sees it all, no label."""
    decision = decide([node("n1", in_use=3), node("n2", in_use=3)], [guarded()], GuardState(), NOW)
    assert decision.labels == {"n1": False, "n2": False}
    assert decision.reasons == {
        "n1": "all 3 branch ENIs in use by running pods: the scheduler counts them",
        "n2": "all 3 branch ENIs in use by running pods: the scheduler counts them",
    }
    assert decision.groups["ng-sg"].state == CLEAR
    assert decision.state == GuardState()


def test_only_nodes_with_held_enis_and_nothing_free_are_labelled() -> None:
    """n1: 1 held, 0 truly free; n2: 1 held but 1 free; n3: a leaked ENI fills it; n4: free."""
    nodes = [
        node("n1", in_use=2, held=1),
        node("n2", in_use=1, held=1),
        node("n3", in_use=2, leaked=1),
        node("n4", in_use=1),
    ]
    decision = decide(nodes, [guarded()], GuardState(), NOW, grace=GRACE_S)
    assert decision.labels == {"n1": True, "n2": False, "n3": True, "n4": False}
    assert decision.reasons["n1"] == (
        "1 held by finished or deleted pods of 3 branch ENIs; the scheduler sees 1 free, 0 are"
    )
    assert decision.reasons["n3"] == "1 leaked of 3 branch ENIs; the scheduler sees 1 free, 0 are"
    assert decision.groups["ng-sg"].state == CLEAR  # n2 and n4 are ready and unlabelled
    assert (decision.lifted_now, decision.state) == ((), GuardState())


def blind_group() -> list[GuardNode]:
    return [node("n1", in_use=2, held=1), node("n2", in_use=1, held=2)]


def test_a_blind_group_with_guarded_pods_pending_is_lifted_after_the_grace() -> None:
    """Within the grace the labels stay; once it has passed they are lifted from every node of the
    group, in one pass that names the group and the pods; the lift holds while nothing changes."""
    pods = [guarded()]
    first = decide(blind_group(), pods, GuardState(), NOW, grace=GRACE_S)
    assert first.labels == {"n1": True, "n2": True}
    assert first.groups["ng-sg"].state == GRACE
    assert first.state == GuardState(blind_since={"ng-sg": NOW})

    still = decide(blind_group(), pods, first.state, NOW + GRACE_S - 1, grace=GRACE_S)
    assert (still.labels, still.groups["ng-sg"].state) == ({"n1": True, "n2": True}, GRACE)

    lifted = decide(blind_group(), pods, still.state, NOW + GRACE_S, grace=GRACE_S)
    assert lifted.labels == {"n1": False, "n2": False}
    assert lifted.state == GuardState(lifted={"ng-sg": NOW + GRACE_S})
    assert [(v.group, v.state, [p.key for p in v.pods]) for v in lifted.lifted_now] == [
        ("ng-sg", LIFTED, ["default/web-0"])
    ]
    assert "--scaling=on" in lifted.lifted_now[0].reason

    later = decide(blind_group(), pods, lifted.state, NOW + 300, grace=GRACE_S)
    assert later.labels == {"n1": False, "n2": False}
    assert (later.lifted_now, later.restored_now) == ((), ())
    assert later.state == lifted.state


def test_with_scaling_on_the_group_keeps_its_labels_and_is_scaled() -> None:
    pods = [guarded()]
    first = decide(blind_group(), pods, GuardState(), NOW, grace=GRACE_S, scaled_groups=frozenset({"ng-sg"}))
    later = decide(
        blind_group(), pods, first.state, NOW + 600, grace=GRACE_S, scaled_groups=frozenset({"ng-sg"})
    )
    for decision in (first, later):
        assert decision.labels == {"n1": True, "n2": True}
        assert decision.groups["ng-sg"].state == SCALING
        assert (decision.lifted_now, decision.state) == ((), GuardState())


def test_nothing_is_lifted_before_the_scaling_coverage_is_known() -> None:
    decision = decide(
        blind_group(), [guarded()], GuardState(blind_since={"ng-sg": NOW}), NOW + 600, scaled_groups=None
    )
    assert decision.labels == {"n1": True, "n2": True}
    assert decision.groups["ng-sg"].state == SCALING


@pytest.mark.parametrize(
    "pod",
    [
        guarded(message=CPU_MESSAGE),  # the scheduler names cpu, not node affinity
        guarded(cpu="16"),  # no node of the group could take it even without the label
        pending_pod(
            "default",
            "plain",
            "u",
            AFFINITY_MESSAGE,
            {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                "nodeSelector": {"x": "y"},
            },
        ),  # not guarded: its own selector keeps it away
    ],
    ids=["other-reason", "too-big-anyway", "not-guarded"],
)
def test_pods_pending_for_another_reason_lift_nothing(pod: Any) -> None:
    state = GuardState(blind_since={"ng-sg": NOW - 600})
    decision = decide(blind_group(), [pod], state, NOW, grace=GRACE_S)
    assert decision.labels == {"n1": True, "n2": True}
    assert decision.groups["ng-sg"].state == BLIND
    assert (decision.lifted_now, decision.state) == ((), GuardState())


def test_a_ready_unlabelled_node_means_the_group_is_not_blind_but_an_unready_one_does_not() -> None:
    """cluster-autoscaler builds the template from a ready, schedulable node only."""
    nodes = [*blind_group(), node("n3", ready=False)]
    decision = decide(nodes, [guarded()], GuardState(), NOW, grace=0.0)
    assert decision.groups["ng-sg"].state == LIFTED
    nodes = [*blind_group(), node("n3")]
    decision = decide(nodes, [guarded()], GuardState(), NOW, grace=0.0)
    assert (decision.groups["ng-sg"].state, decision.labels) == (CLEAR, {"n1": True, "n2": True, "n3": False})


def test_the_labels_come_back_once_a_branch_eni_is_free_or_the_pods_have_left() -> None:
    lifted = GuardState(lifted={"ng-sg": NOW})
    freed = [node("n1", in_use=2, held=1), node("n2", in_use=1, held=1)]  # n2 has one free now
    decision = decide(freed, [guarded()], lifted, NOW + 5, grace=GRACE_S)
    assert decision.labels == {"n1": True, "n2": False}
    assert [v.group for v in decision.restored_now] == ["ng-sg"]
    assert decision.state == GuardState()

    gone = decide(blind_group(), [], lifted, NOW + 5, grace=GRACE_S)
    assert gone.labels == {"n1": True, "n2": True}
    assert [v.group for v in gone.restored_now] == ["ng-sg"]
    assert gone.state == GuardState()


def test_groups_are_judged_apart_and_an_ungrouped_node_alone() -> None:
    nodes = [*blind_group(), node("m1", group="ng-other", in_use=1), node("solo", group="", in_use=2, held=1)]
    decision = decide(nodes, [guarded()], GuardState(), NOW, grace=0.0)
    assert {k: v.state for k, v in decision.groups.items()} == {
        "ng-other": CLEAR,
        "ng-sg": LIFTED,
        "node/solo": LIFTED,
    }
    assert decision.labels == {"n1": False, "n2": False, "m1": False, "solo": False}


def raw_nodes(nodes: list[GuardNode], labelled: dict[str, bool]) -> list[dict[str, Any]]:
    """The nodes as the API would show them once the decision's labels are written."""
    result = []
    for n in nodes:
        assert n.view is not None
        labels = {**n.view.labels, **({EXHAUSTED_LABEL: "true"} if labelled[n.name] else {})}
        ready = "True" if n.candidate else "False"
        result.append(
            {
                "metadata": {"name": n.name, "labels": labels},
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29", POD_ENI: "3"},
                    "conditions": [{"type": "Ready", "status": ready}],
                },
            }
        )
    return result


GUARDED_SPEC = {
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", POD_ENI: "1"}}}],
    "affinity": GUARD,
}


@settings(max_examples=examples(300))
@given(
    books=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 1), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    scaling=st.booleans(),
    pending=st.booleans(),
)
def test_once_settled_the_guard_never_blinds_cluster_autoscaler(
    books: list[tuple[int, int, int, bool]], scaling: bool, pending: bool
) -> None:
    """Whatever the books of a group, once the grace has passed a pending guarded pod fits some
    template cluster-autoscaler may build from a ready node of the group (tests/autoscaler_template.py)
    whenever it would fit one without fitguard, unless fitguard scales the group itself."""
    nodes = [
        node(f"n{i}", in_use=in_use, held=held, leaked=leaked, ready=ready)
        for i, (in_use, held, leaked, ready) in enumerate(books)
    ]
    pods = [pending_pod("default", "web-0", "u", AFFINITY_MESSAGE, GUARDED_SPEC)] if pending else []
    covered = frozenset({"ng-sg"}) if scaling else frozenset()
    first = decide(nodes, pods, GuardState(), NOW, grace=GRACE_S, scaled_groups=covered)
    settled = decide(nodes, pods, first.state, NOW + GRACE_S, grace=GRACE_S, scaled_groups=covered)
    if settled.groups["ng-sg"].state == SCALING:
        assert scaling and pending
        return
    blinded_pods = autoscaler_template.blinded(raw_nodes(nodes, settled.labels), "ng-sg", [GUARDED_SPEC])
    assert blinded_pods == [] or not pending
    # held ENIs alone earn the label, whatever else happened
    for n in nodes:
        if settled.labels[n.name]:
            assert n.held + n.leaked > 0 and (n.true_free or 0) <= 0
