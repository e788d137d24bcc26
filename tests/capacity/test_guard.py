"""The exhausted-node guard's pure rule (capacity/guard.py): only held ENIs earn the label; a group
whose every ready node is labelled, with guarded pods pending on it for node affinity, is scaled by
fitguard (`--scaling=on`) or has its label lifted after the grace; other pending pods lift nothing;
a Karpenter NodePool's nodes keep their labels, since Karpenter builds new nodes from the NodePool."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capacity.autoscaler_readiness import is_template_candidate
from capacity.guard import (
    BLIND,
    CLEAR,
    GRACE,
    KARPENTER,
    LAST_NODE,
    LIFTED,
    SCALING,
    GuardNode,
    GuardState,
    decide,
    is_guarded,
    nodepool_message,
    pending_pod,
    spared_message,
)
from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI, parse_resources
from capacity.taints import Taint
from capacity.template import View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
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
        "1 held by finished or deleted pods of 3 branch ENIs; the scheduler sees 1 free, but it is held: "
        "none is free"
    )
    assert (
        decision.reasons["n3"]
        == "1 leaked of 3 branch ENIs; the scheduler sees 1 free, but it is leaked: none is free"
    )
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
    """Each group on its own; a node no label groups is a group of one, so it is spared as the last
    ready node of whatever group cluster-autoscaler knows it by."""
    nodes = [*blind_group(), node("m1", group="ng-other", in_use=1), node("solo", group="", in_use=2, held=1)]
    decision = decide(nodes, [guarded()], GuardState(), NOW, grace=0.0)
    assert {k: v.state for k, v in decision.groups.items()} == {
        "ng-other": CLEAR,
        "ng-sg": LIFTED,
        "node/solo": LAST_NODE,  # alone, so its group's last ready node: never labelled
    }
    assert decision.labels == {"n1": False, "n2": False, "m1": False, "solo": False}


# What a node may be going through, as the property generates it: conditions and taints that make
# cluster-autoscaler read it as not ready, or not a template candidate, or that its template drops.
STATES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "ready": ([], []),
    "not-ready": ([{"type": "Ready", "status": "False"}], []),
    "disk-pressure": (
        [{"type": "DiskPressure", "status": "True"}],
        [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}],
    ),
    "network-unavailable": ([{"type": "NetworkUnavailable", "status": "True"}], []),
    "network-unavailable-taint": (
        [],
        [{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}],
    ),
    "recently-ready": (
        [{"type": "NetworkUnavailable", "status": "False", "lastTransitionTime": "2023-11-14T22:13:00Z"}],
        [],
    ),
    "startup-taint": (
        [],
        [{"key": "startup-taint.cluster-autoscaler.kubernetes.io/cni", "effect": "NoSchedule"}],
    ),
    "to-be-deleted": (
        [],
        [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000", "effect": "NoSchedule"}],
    ),
    "impaired-volumes": ([], [{"key": "NodeWithImpairedVolumes", "value": "true", "effect": "NoSchedule"}]),
    "cordoned": ([], []),
}


def raw_node(name: str, state: str, labelled: bool) -> dict[str, Any]:
    """A node of ng-sg in `state`, with fitguard's label when `labelled`."""
    conditions, taints = STATES[state]
    ready = [c for c in conditions if c["type"] == "Ready"] or [{"type": "Ready", "status": "True"}]
    labels = {"eks.amazonaws.com/nodegroup": "ng-sg", "kubernetes.io/hostname": name}
    return {
        "metadata": {"name": name, "labels": {**labels, **({EXHAUSTED_LABEL: "true"} if labelled else {})}},
        "spec": {"taints": taints, "unschedulable": state == "cordoned"},
        "status": {
            "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29", POD_ENI: "3"},
            "conditions": ready + [c for c in conditions if c["type"] != "Ready"],
        },
    }


def guard_nodes(books: list[tuple[int, int, int, str]]) -> list[GuardNode]:
    """The guard's nodes as controller/books.py builds them (capacity/guard_nodes.py's rule)."""
    result = []
    for i, (in_use, held, leaked, state) in enumerate(books):
        raw = raw_node(f"n{i}", state, False)
        view = View(
            parse_resources(raw["status"]["allocatable"], "a"),
            raw["metadata"]["labels"],
            tuple(Taint.from_object(t) for t in raw["spec"]["taints"]),
        )
        candidate = is_template_candidate(raw, NOW)
        result.append(GuardNode(f"n{i}", "ng-sg", 3, in_use, held, leaked, candidate, view))
    return result


GUARDED_SPEC = {
    "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", POD_ENI: "1"}}}],
    "affinity": GUARD,
}
BOOKS = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 1), st.sampled_from(sorted(STATES))),
    min_size=1,
    max_size=4,
)


@settings(max_examples=examples(300))
@given(books=BOOKS, scaling=st.booleans(), pending=st.booleans())
def test_once_settled_the_guard_never_blinds_cluster_autoscaler(
    books: list[tuple[int, int, int, str]], scaling: bool, pending: bool
) -> None:
    """Whatever the books and the conditions and taints of a group's nodes, once the grace has
    passed a pending guarded pod fits some template cluster-autoscaler may build from a candidate
    node of the group (tests/autoscaler_template.py, its own restatement of the readiness rule and
    of SanitizeTaints) whenever it would fit one without fitguard, unless fitguard scales the group
    itself; and the guard's candidates are the model's."""
    nodes = guard_nodes(books)
    raws = [raw_node(n.name, state, False) for n, (_, _, _, state) in zip(nodes, books, strict=True)]
    assert [n.candidate for n in nodes] == [autoscaler_template._candidate(r, NOW) for r in raws]
    pods = [pending_pod("default", "web-0", "u", AFFINITY_MESSAGE, GUARDED_SPEC)] if pending else []
    covered = frozenset({"ng-sg"}) if scaling else frozenset()
    first = decide(nodes, pods, GuardState(), NOW, grace=GRACE_S, scaled_groups=covered)
    settled = decide(nodes, pods, first.state, NOW + GRACE_S, grace=GRACE_S, scaled_groups=covered)
    if settled.groups["ng-sg"].state == SCALING:
        assert scaling and pending
        return
    written = [
        raw_node(n.name, state, settled.labels[n.name])
        for n, (_, _, _, state) in zip(nodes, books, strict=True)
    ]
    blinded_pods = autoscaler_template.blinded(written, "ng-sg", [GUARDED_SPEC], NOW + GRACE_S)
    assert blinded_pods == [] or not pending
    # held ENIs alone earn the label, whatever else happened
    for n in nodes:
        if settled.labels[n.name]:
            assert n.held + n.leaked > 0 and (n.true_free or 0) <= 0


@settings(max_examples=examples(200))
@given(books=BOOKS, order=st.randoms(use_true_random=False), scaling=st.booleans())
def test_a_group_whose_nodes_go_one_by_one_is_never_remembered_with_the_label(
    books: list[tuple[int, int, int, str]], order: Any, scaling: bool
) -> None:
    """The group's nodes go one at a time (spot loss, scale-in), the guard passing after each
    change and cluster-autoscaler's loop after it: the template cluster-autoscaler caches last, from
    whichever candidate it then sees, never carries fitguard's label unless fitguard scales the
    group itself (then fitguard's memory record keeps the label and its planner serves the pods)."""
    nodes = guard_nodes(books)
    states = {n.name: state for n, (_, _, _, state) in zip(nodes, books, strict=True)}
    covered = frozenset({"ng-sg"}) if scaling else frozenset()
    remaining = list(nodes)
    order.shuffle(remaining)
    cached: list[View] = []
    while remaining:
        decision = decide(remaining, [], GuardState(), NOW, scaled_groups=covered)
        written = [raw_node(n.name, states[n.name], decision.labels[n.name]) for n in remaining]
        cached = autoscaler_template.templates(written, "ng-sg", NOW) or cached
        remaining.pop()
    assert scaling or all(EXHAUSTED_LABEL not in view.labels for view in cached)


# -- whole answers (the mutation run of capacity/guard.py, docs/testing.md) -------------------------


def _guard_expr(key: str = EXHAUSTED_LABEL, operator: str = "DoesNotExist") -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                    {"matchExpressions": [{"key": key, "operator": operator}]},
                ]
            }
        }
    }


@pytest.mark.parametrize(
    ("spec", "guarded_pod"),
    [
        ({"affinity": _guard_expr()}, True),  # in the second term: any term counts
        ({"affinity": _guard_expr(key="other")}, False),
        ({"affinity": _guard_expr(operator="Exists")}, False),
        ({}, False),
        ({"affinity": "x"}, False),
        ({"affinity": {"nodeAffinity": "x"}}, False),
        ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}}, False),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": {}}
                    }
                }
            },
            False,
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                "x",
                                {"matchExpressions": None},
                                {"matchExpressions": ["y"]},
                            ]
                        }
                    }
                }
            },
            False,
        ),
    ],
)
def test_which_pods_carry_the_guard_affinity(spec: dict[str, Any], guarded_pod: bool) -> None:
    """Only a required `fitguard.io/branch-eni-exhausted DoesNotExist` expression, in any term,
    makes a pod guarded; malformed parts are simply not the guard."""
    assert is_guarded(spec) is guarded_pod


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (AFFINITY_MESSAGE, True),
        ("0/3 nodes are available: 3 node(s) didn't satisfy node affinity.", True),
        (CPU_MESSAGE, False),
        ("", False),
    ],
)
def test_which_scheduler_messages_name_node_affinity(message: str, named: bool) -> None:
    """The scheduler's nodeaffinity words in either form count; other reasons do not."""
    assert pending_pod("ns", "p", "u", message, {"containers": []}).affinity_named is named


@pytest.mark.parametrize(
    ("guard_node", "labelled", "reason"),
    [
        (GuardNode("a", "g", None, held=2), False, "no branch ENIs"),
        (GuardNode("a", "g", 0, held=2), False, "no branch ENIs"),
        (GuardNode("a", "g", 3, 1), False, "2 of 3 branch ENIs are free"),
        (
            GuardNode("a", "g", 3, 3),
            False,
            "all 3 branch ENIs in use by running pods: the scheduler counts them",
        ),
        (
            GuardNode("a", "g", 3, 4),
            False,
            "all 3 branch ENIs in use by running pods: the scheduler counts them",
        ),
        (GuardNode("a", "g", 3, 1, 1), False, "1 of 3 branch ENIs are free"),
        (
            GuardNode("a", "g", 3, 1, 2),
            True,
            "2 held by finished or deleted pods of 3 branch ENIs; "
            "the scheduler sees 2 free, but those 2 are held: none is free",
        ),
        (
            GuardNode("a", "g", 3, 1, 2, 1),
            True,
            "2 held by finished or deleted pods and 1 leaked of 3 branch ENIs; "
            "the scheduler sees 2 free, but those 2 are held or leaked: none is free",
        ),
        (
            GuardNode("a", "g", 3, 3, 0, 1),
            True,
            "1 leaked of 3 branch ENIs; the scheduler sees none free",
        ),
    ],
)
def test_each_node_is_labelled_or_not_with_its_reason(
    guard_node: GuardNode, labelled: bool, reason: str
) -> None:
    """The label and the whole reason for one node: unknown or no capacity, free ENIs, all in use by
    running pods, held and leaked ones (never shown below zero free). The group is one fitguard
    scales, so its only node is not spared for cluster-autoscaler's memory."""
    decision = decide([guard_node], [], GuardState(), NOW, scaled_groups=frozenset({"g"}))
    assert (decision.labels, decision.reasons) == ({"a": labelled}, {"a": reason})


def test_the_verdicts_of_every_group_are_reported_whole() -> None:
    """One pass over five groups: clear (a ready unlabelled node), clear with no ready node, a
    grace starting now, a grace running since earlier, and scaled; nodes sorted by name, only the
    pods that fit listed; each verdict whole as the report shows it."""
    pod = guarded("web-1")
    nodes = [
        node("a1", group="ng-a", in_use=1),
        node("b1", group="ng-b", in_use=2, held=1, ready=False),
        node("c2", group="ng-c", in_use=2, held=1),
        node("c1", group="ng-c", in_use=1, held=2),
        *[node(n, group="ng-d", in_use=2, held=1) for n in ("d1", "d2")],
        node("e1", group="ng-e", in_use=2, held=1),
    ]
    big = guarded("big", cpu="16")  # fits no node of any group: never among the pods
    decision = decide(
        nodes,
        [pod, big],
        GuardState(blind_since={"ng-d": NOW - 10}),
        NOW,
        grace=GRACE_S,
        scaled_groups=frozenset({"ng-e"}),
    )
    assert {k: v.to_json() for k, v in decision.groups.items()} == {
        "ng-a": {
            "state": CLEAR,
            "reason": "a ready node is not labelled",
            "nodes": ["a1"],
            "pods": [],
            "since": None,
        },
        "ng-b": {
            "state": LAST_NODE,
            "reason": spared_message("ng-b"),
            "nodes": ["b1"],
            "pods": [],
            "since": None,
        },
        "ng-c": {
            "state": GRACE,
            "reason": "every ready node is labelled and 1 guarded pods pend on it: grace period",
            "nodes": ["c1", "c2"],
            "pods": ["default/web-1"],
            "since": NOW,
        },
        "ng-d": {
            "state": GRACE,
            "reason": "every ready node is labelled and 1 guarded pods pend on it: grace period",
            "nodes": ["d1", "d2"],
            "pods": ["default/web-1"],
            "since": NOW - 10,
        },
        "ng-e": {
            "state": SCALING,
            "reason": "every ready node is labelled and 1 guarded pods pend on it: --scaling=on scales it",
            "nodes": ["e1"],
            "pods": ["default/web-1"],
            "since": None,
        },
    }
    assert decision.state == GuardState(blind_since={"ng-c": NOW, "ng-d": NOW - 10})
    assert [(key, verdict.group) for key, verdict in decision.groups.items()] == [
        ("ng-a", "ng-a"),
        ("ng-b", "ng-b"),
        ("ng-c", "ng-c"),
        ("ng-d", "ng-d"),
        ("ng-e", "ng-e"),
    ]
    assert (decision.lifted_now, decision.restored_now) == ((), ())


def test_a_blind_group_without_pods_and_the_first_cycle_verdicts() -> None:
    """Blind with no guarded pod pending, and blind with pods before the scaling coverage is known."""
    blind = decide(blind_group(), [], GuardState(), NOW)
    assert blind.groups["ng-sg"].to_json() == {
        "state": BLIND,
        "reason": "every ready node is labelled; no guarded pod is pending for node affinity on it",
        "nodes": ["n1", "n2"],
        "pods": [],
        "since": None,
    }
    unknown = decide(blind_group(), [guarded(), guarded("web-2")], GuardState(), NOW, scaled_groups=None)
    assert unknown.groups["ng-sg"].to_json() == {
        "state": SCALING,
        "reason": (
            "every ready node is labelled and 2 guarded pods pend on it: the first scaling cycle decides"
        ),
        "nodes": ["n1", "n2"],
        "pods": ["default/web-0", "default/web-2"],
        "since": None,
    }
    assert unknown.state == GuardState()


def test_a_lift_is_reported_whole_on_the_nodes_and_the_group() -> None:
    """Lifted at the end of the grace: each node's reason names the lift, the verdict carries the
    whole event text, the pods and since when; a lift already in force keeps its time."""
    message = (
        "every ready node of ng-sg carries fitguard.io/branch-eni-exhausted (branch ENIs held) and 1 "
        "guarded pods pend on it: the guard steps aside (label lifted from the group's nodes) so that "
        "cluster-autoscaler, which copies a ready node's labels into the group's template, can scale "
        "it up; with --scaling=on fitguard would scale the group itself and keep the label"
    )
    lifted = decide(blind_group(), [guarded()], GuardState(blind_since={"ng-sg": NOW - 30}), NOW, grace=30.0)
    expected = {
        "state": LIFTED,
        "reason": message,
        "nodes": ["n1", "n2"],
        "pods": ["default/web-0"],
        "since": NOW,
    }
    assert lifted.groups["ng-sg"].to_json() == expected
    assert [v.to_json() for v in lifted.lifted_now] == [expected]
    assert lifted.reasons == {
        "n1": f"guard lifted for ng-sg: {message}",
        "n2": f"guard lifted for ng-sg: {message}",
    }
    kept = decide(blind_group(), [guarded()], GuardState(lifted={"ng-sg": NOW - 500}), NOW, grace=30.0)
    assert kept.groups["ng-sg"].to_json() == {**expected, "since": NOW - 500}
    assert kept.lifted_now == ()
    assert (lifted.groups["ng-sg"].group, kept.groups["ng-sg"].group) == ("ng-sg", "ng-sg")
    assert kept.state == GuardState(lifted={"ng-sg": NOW - 500})


def test_a_pod_fits_a_labelled_node_only_with_the_guard_label_set_aside() -> None:
    """The label itself is set aside when judging whether the group would take the pod; any other
    label the pod selects on still counts; a node without a view takes nothing."""
    labelled = node("n1", in_use=2, held=1)
    assert labelled.view is not None
    with_label = GuardNode(
        "n1",
        "ng-sg",
        3,
        2,
        1,
        view=View(labelled.view.allocatable, {**labelled.view.labels, EXHAUSTED_LABEL: "true"}),
    )
    pod = guarded()
    twin = node("n2", in_use=2, held=1)
    assert decide([with_label, twin], [pod], GuardState(), NOW).groups["ng-sg"].state == GRACE
    blank = GuardNode("n1", "ng-sg", 3, 2, 1)
    assert (
        decide([blank, GuardNode("n2", "ng-sg", 3, 2, 1)], [pod], GuardState(), NOW).groups["ng-sg"].state
        == BLIND
    )
    selective = pending_pod(
        "default",
        "sel",
        "u",
        AFFINITY_MESSAGE,
        {"containers": [], "affinity": GUARD, "nodeSelector": {"kubernetes.io/hostname": "other"}},
    )
    assert decide([with_label, twin], [selective], GuardState(), NOW).groups["ng-sg"].state == BLIND


def test_a_node_without_a_group_is_keyed_by_its_name() -> None:
    """An ungrouped node is its own group `node/<name>`; a grouped node is keyed by its group."""
    assert GuardNode("n", "", 1).group_key == "node/n"
    assert GuardNode("n", "ng", 1).group_key == "ng"
    assert GuardNode("n", "ng", None).true_free is None
    assert GuardNode("n", "ng", 5, 1, 1, 1).true_free == 2


def test_the_grace_defaults_to_thirty_seconds() -> None:
    """Without a grace argument a group is lifted 30 s after it went blind, not before."""
    assert (
        decide(blind_group(), [guarded()], GuardState(blind_since={"ng-sg": NOW - 29}), NOW)
        .groups["ng-sg"]
        .state
        == GRACE
    )
    assert (
        decide(blind_group(), [guarded()], GuardState(blind_since={"ng-sg": NOW - 30}), NOW)
        .groups["ng-sg"]
        .state
        == LIFTED
    )
    assert decide(blind_group(), [guarded()], GuardState(), NOW).groups["ng-sg"].state == GRACE


def test_a_pending_pod_keeps_what_it_was_given() -> None:
    """pending_pod: namespace, name, uid, the scheduler's message, the compiled needs, guarded."""
    pod = pending_pod("team", "web-0", "uid-1", AFFINITY_MESSAGE, GUARDED_SPEC)
    assert (pod.namespace, pod.name, pod.uid, pod.message, pod.guarded, pod.key) == (
        "team",
        "web-0",
        "uid-1",
        AFFINITY_MESSAGE,
        True,
        "team/web-0",
    )
    assert pod.needs.requests == {"cpu": 100, POD_ENI: 1000}


def tainted_pair(*taints: Taint) -> list[GuardNode]:
    """Two labelled nodes of ng-sg (so neither is the group's last ready node) carrying `taints`."""
    result = []
    for name in ("n1", "n2"):
        plain = node(name, in_use=2, held=1)
        assert plain.view is not None
        result.append(
            GuardNode(name, "ng-sg", 3, 2, 1, view=View(plain.view.allocatable, plain.view.labels, taints))
        )
    return result


def test_a_taint_the_pod_does_not_tolerate_keeps_it_off_the_group() -> None:
    """The node's taints stay when its label is set aside: a pod that does not tolerate them would
    not fit the group's template anyway, so the guard has nothing to step aside for."""
    dedicated = Taint("dedicated", "gpu", "NoSchedule")
    assert decide(tainted_pair(dedicated), [guarded()], GuardState(), NOW).groups["ng-sg"].state == BLIND
    assert decide(tainted_pair(), [guarded()], GuardState(), NOW).groups["ng-sg"].state == GRACE


@pytest.mark.parametrize(
    ("taint", "options", "state"),
    [
        (Taint("NodeWithImpairedVolumes", "true", "NoSchedule"), DEFAULT_TAINT_CONFIG, GRACE),
        (Taint("node.kubernetes.io/disk-pressure", "", "NoSchedule"), DEFAULT_TAINT_CONFIG, GRACE),
        (Taint("example.com/booting", "", "NoSchedule"), DEFAULT_TAINT_CONFIG, BLIND),
        (
            Taint("example.com/booting", "", "NoSchedule"),
            TaintOptions(frozenset({"example.com/booting"})),
            GRACE,
        ),
        (
            Taint("example.com/health", "", "NoExecute"),
            TaintOptions(status_taints=frozenset({"example.com/health"})),
            GRACE,
        ),
    ],
    ids=["impaired-volumes", "condition-taint", "custom-kept", "startup-flag", "status-flag"],
)
def test_would_fit_without_the_guard_is_judged_on_the_sanitised_copy(
    taint: Taint, options: TaintOptions, state: str
) -> None:
    """cluster-autoscaler's template of an exhausted node leaves out the taints SanitizeTaints drops
    (node-condition taints such as AWS's NodeWithImpairedVolumes, its own, the startup and status
    taints its flags name), so a pod that tolerates none of them still fits it: the guard must see
    the group as blinding it (grace, then lift), not as a group the pod fits nowhere."""
    decision = decide(tainted_pair(taint), [guarded()], GuardState(), NOW, taint_options=options)
    assert decision.groups["ng-sg"].to_json() == {
        "state": state,
        "reason": (
            "every ready node is labelled and 1 guarded pods pend on it: grace period"
            if state == GRACE
            else "every ready node is labelled; no guarded pod is pending for node affinity on it"
        ),
        "nodes": ["n1", "n2"],
        "pods": ["default/web-0"] if state == GRACE else [],
        "since": NOW if state == GRACE else None,
    }


def karpenter_node(name: str, *, in_use: int = 0, held: int = 0, ready: bool = True) -> GuardNode:
    """A node of NodePool "general" as capacity/guard_nodes.py builds it: not cluster-autoscaler's."""
    allocatable = parse_resources({"cpu": "2", "memory": "8Gi", "pods": "29", POD_ENI: "3"}, "a")
    labels = {"karpenter.sh/nodepool": "general", "kubernetes.io/hostname": name}
    view = View(allocatable, labels)
    return GuardNode(name, "general", 3, in_use, held, 0, ready, view, autoscaled=False)


def test_a_nodepools_labels_stay_past_the_grace_with_guarded_pods_pending() -> None:
    """Every ready node of a NodePool held and labelled, a guarded pod pending on it for node
    affinity: Karpenter builds its new node from the NodePool (nodeclaimtemplate.go
    `NewNodeClaimTemplate`), where the label is not, so nothing is blinded: the labels stay at the
    grace's end and long after, nothing is lifted or remembered, and the verdict says why, whole."""
    nodes = [karpenter_node("k1", in_use=2, held=1), karpenter_node("k2", in_use=1, held=2)]
    pods = [guarded()]
    for at in (NOW, NOW + GRACE_S, NOW + 600):
        decision = decide(nodes, pods, GuardState(blind_since={"general": NOW}), at, grace=GRACE_S)
        assert decision.labels == {"k1": True, "k2": True}
        assert {k: v.to_json() for k, v in decision.groups.items()} == {
            "general": {
                "state": KARPENTER,
                "reason": (
                    "every ready node is labelled and 1 guarded pods pend on it; Karpenter builds "
                    "NodePool general's new nodes from the NodePool, never from a live node, so the "
                    "label hides no new node from it: kept"
                ),
                "nodes": ["k1", "k2"],
                "pods": ["default/web-0"],
                "since": None,
            }
        }
        assert (decision.lifted_now, decision.restored_now, decision.state) == ((), (), GuardState())
    quiet = decide(nodes, [], GuardState(), NOW, grace=GRACE_S)
    assert quiet.groups["general"].reason == nodepool_message("general", ())
    assert "no guarded pod pends on it" in quiet.groups["general"].reason


def test_a_nodepools_last_ready_node_is_labelled_and_a_former_lift_ends() -> None:
    """Karpenter remembers no live node as a template, so a NodePool's only ready node with held
    ENIs is labelled (not spared as cluster-autoscaler's last node would be), with the whole held
    reason; a lift recorded for the group before (a group that was mixed) ends, and is told."""
    alone = [karpenter_node("k1", in_use=2, held=1), karpenter_node("k2", in_use=1, held=2, ready=False)]
    decision = decide(alone, [guarded()], GuardState(lifted={"general": NOW - 60}), NOW, grace=0.0)
    assert (decision.labels, decision.reasons) == (
        {"k1": True, "k2": True},
        {
            "k1": "1 held by finished or deleted pods of 3 branch ENIs; the scheduler sees 1 free, "
            "but it is held: none is free",
            "k2": "2 held by finished or deleted pods of 3 branch ENIs; the scheduler sees 2 free, "
            "but those 2 are held: none is free",
        },
    )
    assert decision.groups["general"].state == KARPENTER
    assert [(v.group, v.state) for v in decision.restored_now] == [("general", KARPENTER)]
    assert decision.state == GuardState()


def test_a_group_with_one_node_cluster_autoscaler_may_scale_keeps_its_rules() -> None:
    """A group name shared by a NodePool's node and a node of another kind (a NodePool named like a
    node group) is judged as cluster-autoscaler's: lifted after the grace, its last node spared."""
    mixed = [karpenter_node("k1", in_use=2, held=1), node("n1", in_use=1, held=2, group="general")]
    lifted = decide(mixed, [guarded()], GuardState(), NOW, grace=0.0)
    assert (lifted.groups["general"].state, lifted.labels) == (LIFTED, {"k1": False, "n1": False})
    one = [karpenter_node("k1", in_use=2, held=1), node("n1", in_use=1, held=2, group="general", ready=False)]
    spared = decide(one, [], GuardState(), NOW)
    assert (spared.groups["general"].state, spared.labels) == (LAST_NODE, {"k1": False, "n1": False})


@settings(max_examples=examples(200))
@given(
    books=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans()), min_size=1, max_size=4),
    pending=st.booleans(),
    scaling=st.sampled_from([frozenset(), frozenset({"general"}), None]),
    since=st.sampled_from([None, NOW - 3600]),
)
def test_a_nodepools_nodes_are_labelled_exactly_when_their_enis_are_held(
    books: list[tuple[int, int, bool]],
    pending: bool,
    scaling: frozenset[str] | None,
    since: float | None,
) -> None:
    """Whatever the books, readiness, pending pods, scaling coverage and time: a NodePool's node
    carries the label exactly when branch ENIs are held on it and none is truly free (the rule
    stated again here), since no lift or spare applies to Karpenter; nothing is remembered."""
    nodes = [karpenter_node(f"k{i}", in_use=u, held=h, ready=r) for i, (u, h, r) in enumerate(books)]
    state = GuardState(lifted={"general": since}) if since is not None else GuardState()
    decision = decide(nodes, [guarded()] if pending else [], state, NOW, grace=0.0, scaled_groups=scaling)
    assert decision.labels == {n.name: n.held > 0 and 3 - n.in_use - n.held <= 0 for n in nodes}
    assert decision.groups["general"].state in (CLEAR, KARPENTER)
    assert (decision.lifted_now, decision.state) == ((), GuardState())
