"""The planner's decisions checked as whole plans (`Plan.to_json`): each phase's output, every
group's reason, the limits at their boundaries (provision timeout, cooldown, max size, max nodes per
scale-up), a new node's free capacity after DaemonSets, and each answer a headroom rule can give.
Expected values are written out here, never computed by the planner."""

from __future__ import annotations

import re
from typing import Any

import pytest

from capacity.demand import PodRef, PodShape
from capacity.expander import PRIORITY, parse_priorities
from capacity.fit import PodNeeds
from capacity.planner import (
    BACKOFF,
    COOLDOWN,
    IN_PROGRESS,
    MAX_SIZE_REACHED,
    Headroom,
    HeadroomLine,
    NodeFree,
    PlannerOptions,
    parse_headroom,
    plan,
)
from capacity.quantity import parse_quantity
from capacity.quantity_grammar import FORMAT_WRONG
from capacity.resources import POD_ENI
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate

NOW = 1_700_000_000.0
PER_SCALE_UP = "max nodes per scale-up reached"
RULE = (
    "fitguard takes fewest nodes, then most pods, then the group's name "
    "where cluster-autoscaler picks at random"
)


def group(
    name: str,
    *,
    cpu: str = "1930m",
    pods: str = "29",
    pod_eni: str = "9",
    desired: int = 0,
    nodes: int = 0,
    max_size: int = 10,
    overhead: dict[str, str] | None = None,
) -> NodeGroupTemplate:
    allocatable = {"cpu": cpu, "memory": "7220Mi", "pods": pods, POD_ENI: pod_eni}
    spec: dict[str, Any] = {
        "provider": "aws-asg",
        "maxSize": max_size,
        "desiredSize": desired,
        "nodes": nodes,
        "actual": {"allocatable": allocatable, "labels": {}},
        "autoscaler": {"allocatable": {"cpu": cpu, "memory": "7220Mi", "pods": "110"}},
        "daemonSetOverhead": overhead or {},
    }
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def shape(name: str, count: int, cpu: str) -> PodShape:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    return PodShape(name, PodNeeds.from_spec(spec), [PodRef("default", f"{name}-{i}") for i in range(count)])


def node(name: str, group_name: str, **free: str) -> NodeFree:
    values = {k.replace("pod_eni", POD_ENI): parse_quantity(v) for k, v in free.items()}
    return NodeFree(name, group_name, values)


def empty_plan(**changes: Any) -> dict[str, Any]:
    """Plan.to_json of a plan that did nothing, with `changes` (keys as in the JSON)."""
    whole: dict[str, Any] = {
        "scaleUps": [],
        "onExistingNodes": {},
        "onNodesOnTheirWay": {},
        "notTriggerScaleUp": [],
        "skippedGroups": {},
        "headroom": [],
    }
    return {**whole, **changes}


def test_one_plan_through_every_phase_is_whole() -> None:
    """The small pod takes the existing node, one large pod the node on its way, two more a new
    scale-up of the only group that may grow (up to its max size), and the last large pod is not
    helped: every group's reason is given and counted, and the groups that cannot grow are named."""
    templates = [
        group("ng-a", desired=1, nodes=1, max_size=3),
        group("ng-way", desired=2, nodes=1),
        group("ng-full", desired=2, nodes=2, max_size=2),
        NodeGroupTemplate(name="ng-manual", provider="manual", max_size=5),  # not scalable: not a group
    ]
    shapes = [shape("tiny", 1, "500m"), shape("big", 4, "1500m")]
    nodes = [node("n1", "ng-a", cpu="1", pods="5")]
    p = plan(shapes, templates, nodes, now=NOW)
    assert p.to_json() == {
        "scaleUps": [
            {
                "nodeGroup": "ng-a",
                "from": 1,
                "to": 3,
                "maxSize": 3,
                "pods": ["default/big-1", "default/big-2"],
                "reasons": ["pods"],
            }
        ],
        "onExistingNodes": {"n1": ["default/tiny-0"]},
        "onNodesOnTheirWay": {"ng-way": ["default/big-0"]},
        "notTriggerScaleUp": [
            {
                "pods": ["default/big-3"],
                "message": (
                    "pod didn't trigger scale-up: 1 scale-up in progress, 2 max node group size reached"
                ),
                "reasons": {
                    "ng-a": [MAX_SIZE_REACHED],
                    "ng-full": [MAX_SIZE_REACHED],
                    "ng-way": [IN_PROGRESS],
                },
            }
        ],
        "skippedGroups": {"ng-full": MAX_SIZE_REACHED, "ng-way": IN_PROGRESS},
        "headroom": [],
    }
    assert [s.info() for s in p.scale_ups] == ["{ng-a 1->3 (max: 3)}"]


def _one_pod(skip: str | None, sizes: tuple[int, int] | None, way: bool) -> dict[str, Any]:
    """The whole plan of one 1.5-cpu pod `p-0` against one group `ng` of max size 10."""
    scale_ups = (
        [
            {
                "nodeGroup": "ng",
                "from": sizes[0],
                "to": sizes[1],
                "maxSize": 10,
                "pods": ["default/p-0"],
                "reasons": ["pods"],
            }
        ]
        if sizes
        else []
    )
    not_helped = (
        [
            {
                "pods": ["default/p-0"],
                "message": f"pod didn't trigger scale-up: 1 {skip}",
                "reasons": {"ng": [skip]},
            }
        ]
        if skip and not way
        else []
    )
    return empty_plan(
        scaleUps=scale_ups,
        onNodesOnTheirWay={"ng": ["default/p-0"]} if way else {},
        notTriggerScaleUp=not_helped,
        skippedGroups={"ng": skip} if skip else {},
    )


# (desired, nodes, seconds since the last scale-up or None, skip reason, scale-up sizes, on its way)
LIMITS = [
    pytest.param(2, 0, None, IN_PROGRESS, None, True, id="unfinished-never-recorded-is-on-its-way"),
    pytest.param(2, 0, 900.0, IN_PROGRESS, None, True, id="unfinished-at-the-provision-timeout"),
    pytest.param(2, 0, 901.0, BACKOFF, None, False, id="unfinished-past-the-provision-timeout"),
    pytest.param(1, 1, 3600.0, None, (1, 2), False, id="finished-long-ago-grows"),
    pytest.param(1, 1, 300.0, None, (1, 2), False, id="cooldown-just-over"),
    pytest.param(1, 1, 299.0, COOLDOWN, None, False, id="in-cooldown"),
    pytest.param(1, 1, -60.0, COOLDOWN, None, False, id="last-scale-up-in-the-future"),
    pytest.param(10, 10, None, MAX_SIZE_REACHED, None, False, id="at-max-size"),
    pytest.param(12, 12, None, MAX_SIZE_REACHED, None, False, id="above-max-size"),
    pytest.param(0, 0, None, None, (0, 1), False, id="empty-group-grows"),
]


@pytest.mark.parametrize(("desired", "nodes", "ago", "skip", "sizes", "way"), LIMITS)
def test_the_limits_of_a_group_at_their_boundaries(
    *, desired: int, nodes: int, ago: float | None, skip: str | None, sizes: tuple[int, int] | None, way: bool
) -> None:
    """Provision timeout 900 s (strictly past it: backoff), cooldown 300 s (strictly inside it:
    still), max size 10: what one pod's plan is at and beside each boundary."""
    config = PlannerOptions(cooldown=300.0, provision_timeout=900.0)
    last = {} if ago is None else {"ng": NOW - ago}
    t = group("ng", desired=desired, nodes=nodes, max_size=10)
    p = plan([shape("p", 1, "1500m")], [t], now=NOW, last_scale_up=last, config=config)
    assert p.to_json() == _one_pod(skip, sizes, way)


def test_every_node_on_its_way_takes_pods() -> None:
    """desired 3 with 1 node joined: 2 empty nodes on their way take 2 pods; the third waits."""
    p = plan([shape("p", 3, "1500m")], [group("ng", desired=3, nodes=1)], now=NOW)
    assert p.to_json() == empty_plan(
        onNodesOnTheirWay={"ng": ["default/p-0", "default/p-1"]},
        notTriggerScaleUp=[
            {
                "pods": ["default/p-2"],
                "message": f"pod didn't trigger scale-up: 1 {IN_PROGRESS}",
                "reasons": {"ng": [IN_PROGRESS]},
            }
        ],
        skippedGroups={"ng": IN_PROGRESS},
    )


@pytest.mark.parametrize(
    ("per_scale_up", "to", "reason"),
    [(3, 3, MAX_SIZE_REACHED), (4, 3, MAX_SIZE_REACHED), (2, 2, PER_SCALE_UP)],
    ids=["equal-limits-say-max-size", "max-size-is-the-tighter", "per-scale-up-is-the-tighter"],
)
def test_which_limit_the_left_out_pods_are_told(per_scale_up: int, to: int, reason: str) -> None:
    """Room 3 (max 3, desired 0) against max nodes per scale-up: the tighter names the reason; when
    they are equal it is the max size."""
    config = PlannerOptions(max_nodes_per_scale_up=per_scale_up)
    p = plan([shape("p", 5, "1500m")], [group("ng", max_size=3)], now=NOW, config=config)
    placed = [f"default/p-{i}" for i in range(to)]
    left = [f"default/p-{i}" for i in range(to, 5)]
    assert p.to_json() == empty_plan(
        scaleUps=[
            {"nodeGroup": "ng", "from": 0, "to": to, "maxSize": 3, "pods": placed, "reasons": ["pods"]}
        ],
        notTriggerScaleUp=[
            {"pods": left, "message": f"pod didn't trigger scale-up: 1 {reason}", "reasons": {"ng": [reason]}}
        ],
    )


def test_no_nodes_per_scale_up_grows_nothing_and_says_why() -> None:
    """max nodes per scale-up 0: the group is not skipped, but it cannot add a node."""
    config = PlannerOptions(max_nodes_per_scale_up=0)
    p = plan([shape("p", 1, "1500m")], [group("ng")], now=NOW, config=config)
    assert p.to_json() == empty_plan(
        notTriggerScaleUp=[
            {
                "pods": ["default/p-0"],
                "message": f"pod didn't trigger scale-up: 1 {PER_SCALE_UP}",
                "reasons": {"ng": [PER_SCALE_UP]},
            }
        ]
    )


def test_without_any_group_the_pod_is_told_none_can_be_scaled() -> None:
    p = plan([shape("p", 2, "1")], [], now=NOW)
    assert p.to_json() == empty_plan(
        notTriggerScaleUp=[
            {
                "pods": ["default/p-0", "default/p-1"],
                "message": "pod didn't trigger scale-up: no node group can be scaled",
                "reasons": {},
            }
        ]
    )


@pytest.mark.parametrize(
    ("cpu", "pods", "overhead", "to"),
    [
        ("1930m", "29", {"cpu": "930m"}, 2),  # 1 cpu left: two 500m pods a node
        ("1930m", "29", {}, 1),  # three 500m pods on one 1930m node
        ("16", "3", {"pods": "1"}, 2),  # 2 pod slots left: two pods a node
        ("16", "3", {}, 1),
    ],
    ids=["cpu-overhead", "no-cpu-overhead", "daemonset-pod-slots", "no-daemonset-pods"],
)
def test_a_new_node_offers_its_allocatable_less_the_daemonsets(
    cpu: str, pods: str, overhead: dict[str, str], to: int
) -> None:
    """Three 500m pods: how many new nodes they need once DaemonSets take their cpu or pod slots."""
    t = group("ng", cpu=cpu, pods=pods, overhead=overhead)
    p = plan([shape("p", 3, "500m")], [t], now=NOW)
    assert p.to_json() == empty_plan(
        scaleUps=[
            {
                "nodeGroup": "ng",
                "from": 0,
                "to": to,
                "maxSize": 10,
                "pods": ["default/p-0", "default/p-1", "default/p-2"],
                "reasons": ["pods"],
            }
        ]
    )


def headroom_of(rules: str, templates: list[NodeGroupTemplate], nodes: list[NodeFree], **kw: Any) -> Any:
    config = PlannerOptions(headroom=tuple(r for text in rules.split(";") for r in parse_headroom(text)))
    return plan(kw.pop("shapes", []), templates, nodes, now=NOW, config=config, **kw)


def test_headroom_answers_for_each_case() -> None:
    """Each headroom rule's whole line: no such group, enough free (exactly the amount), a new node
    offering none of the resource, a group that cannot grow now, and a group at its limit."""
    templates = [
        group("ng-even", desired=1, nodes=1),
        group("ng-none", pod_eni="0", desired=1, nodes=1),
        group("ng-cool", desired=1, nodes=1),
        group("ng-capped", desired=1, nodes=1, max_size=2),
    ]
    nodes = [
        node("n-even", "ng-even", pod_eni="9"),
        node("n-none", "ng-none", pod_eni="0"),
        node("n-cool", "ng-cool", pod_eni="0"),
        node("n-capped", "ng-capped", pod_eni="0"),
    ]
    rules = "ghost:cpu=1;ng-even:pod-eni=9;ng-none:pod-eni=1;ng-cool:pod-eni=9;ng-capped:pod-eni=20"
    shapes = [shape("p", 1, "1500m")]  # grows ng-capped to its max (least waste, name order)
    p = headroom_of(rules, templates, nodes, shapes=shapes, last_scale_up={"ng-cool": NOW - 10})
    assert p.headroom == (
        HeadroomLine("ghost", "cpu", "1", reason="no such scalable node group"),
        HeadroomLine("ng-even", POD_ENI, "9", free="9", reason="enough is free"),
        HeadroomLine("ng-none", POD_ENI, "1", free="0", reason=f"a new node of ng-none offers no {POD_ENI}"),
        HeadroomLine("ng-cool", POD_ENI, "9", free="0", reason=f"short by 9, {COOLDOWN}"),
        HeadroomLine("ng-capped", POD_ENI, "20", free="9", reason=f"short by 11, {MAX_SIZE_REACHED}"),
    )
    assert [s.to_json() for s in p.scale_ups] == [
        {
            "nodeGroup": "ng-capped",
            "from": 1,
            "to": 2,
            "maxSize": 2,
            "pods": ["default/p-0"],
            "reasons": ["pods"],
            "tieBreak": f"tied with ng-even, ng-none at least-waste 1.223: {RULE}",
        }
    ]


def test_headroom_counts_only_its_groups_free_capacity_never_below_zero() -> None:
    """ng's free pod-eni: 3 on n1, an over-committed n2 counts 0 (not -2), another group's n3 not at
    all: 3 of 20 is 17 short, two new nodes of 9 each."""
    nodes = [
        node("n1", "ng", pod_eni="3"),
        node("n2", "ng", pod_eni="-2"),
        node("n3", "other", pod_eni="9"),
    ]
    templates = [group("ng", desired=2, nodes=2), group("other", desired=1, nodes=1)]
    p = headroom_of("ng:pod-eni=20", templates, nodes)
    reason = f"headroom: keep 20 {POD_ENI} free in ng, 3 is; 2 node(s) added"
    assert p.to_json() == empty_plan(
        scaleUps=[{"nodeGroup": "ng", "from": 2, "to": 4, "maxSize": 10, "pods": [], "reasons": [reason]}],
        headroom=[
            {"nodeGroup": "ng", "resource": POD_ENI, "want": "20", "added": 2, "free": "3", "reason": reason}
        ],
    )


@pytest.mark.parametrize(
    ("desired", "free", "reason"),
    [(2, "12", f"short by 8, {IN_PROGRESS}"), (3, "21", "enough is free")],
    ids=["one-node-on-its-way", "two-nodes-on-their-way"],
)
def test_headroom_counts_every_node_on_its_way(desired: int, free: str, reason: str) -> None:
    """1 node joined with 3 pod-eni free; each node on its way adds 9."""
    p = headroom_of("ng:pod-eni=20", [group("ng", desired=desired, nodes=1)], [node("n1", "ng", pod_eni="3")])
    assert p.headroom == (HeadroomLine("ng", POD_ENI, "20", free=free, reason=reason),)
    assert p.scale_ups == ()


def test_headroom_adds_to_a_scale_up_for_pods_and_says_both() -> None:
    """The pod grows ng by one node (9 pod-eni free on it); the rule wants 12, so one more."""
    p = headroom_of("ng:pod-eni=12", [group("ng")], [], shapes=[shape("p", 1, "1500m")])
    reason = f"headroom: keep 12 {POD_ENI} free in ng, 9 is; 1 node(s) added"
    assert p.to_json() == empty_plan(
        scaleUps=[
            {
                "nodeGroup": "ng",
                "from": 0,
                "to": 2,
                "maxSize": 10,
                "pods": ["default/p-0"],
                "reasons": ["pods", reason],
            }
        ],
        headroom=[
            {"nodeGroup": "ng", "resource": POD_ENI, "want": "12", "added": 1, "free": "9", "reason": reason}
        ],
    )


def test_headroom_rules_are_parsed_whole() -> None:
    """Every headroom resource by its short name, spaces around items ignored, quantities in milli-units."""
    assert parse_headroom("ng: pod-eni=9 , cpu=4,memory=1Ki,ephemeral-storage=0") == [
        Headroom("ng", POD_ENI, 9000),
        Headroom("ng", "cpu", 4000),
        Headroom("ng", "memory", 1024000),
        Headroom("ng", "ephemeral-storage", 0),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ng", "headroom 'ng': expected GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT]"),
        (":cpu=1", "headroom ':cpu=1': expected GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT]"),
        ("ng:", "headroom 'ng:': expected GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT]"),
        (
            "ng:cpu",
            "headroom 'ng:cpu': 'cpu' is not RESOURCE=AMOUNT with RESOURCE one of "
            "pod-eni, cpu, memory, ephemeral-storage",
        ),
        (
            "ng:cpu=1,gpu=1",
            "headroom 'ng:cpu=1,gpu=1': 'gpu=1' is not RESOURCE=AMOUNT with RESOURCE one of "
            "pod-eni, cpu, memory, ephemeral-storage",
        ),
        ("ng:cpu=-1", "headroom 'ng:cpu=-1': cpu must not be negative"),
        ("ng:cpu=lots", "headroom.cpu: invalid quantity 'lots' (" + FORMAT_WRONG + ")"),
        ("ng:cpu=1=2", "headroom.cpu: invalid quantity '1=2' (" + FORMAT_WRONG + ")"),
        (
            "a:b:cpu=1",
            "headroom 'a:b:cpu=1': 'b:cpu=1' is not RESOURCE=AMOUNT with RESOURCE one of "
            "pod-eni, cpu, memory, ephemeral-storage",
        ),
    ],
)
def test_a_bad_headroom_rule_is_refused_with_the_whole_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parse_headroom(text)


def _grown(p: Any) -> list[dict[str, Any]]:
    return [s.to_json() for s in p.scale_ups]


def test_among_many_groups_those_that_cannot_take_the_pod_are_not_shortlisted() -> None:
    """Nine groups (more than are packed exactly): the eight 1-cpu groups would waste least but cannot
    take a 1.5-cpu pod, so the estimate leaves them out and the 16-cpu group is packed and grown."""
    templates = [group(f"ng-a{i}", cpu="1") for i in range(8)] + [group("ng-z", cpu="16")]
    p = plan([shape("p", 1, "1500m")], templates, now=NOW)
    assert _grown(p) == [
        {"nodeGroup": "ng-z", "from": 0, "to": 1, "maxSize": 10, "pods": ["default/p-0"], "reasons": ["pods"]}
    ]


def test_among_many_groups_the_least_wasteful_estimate_is_shortlisted() -> None:
    """Nine groups: eight 16-cpu groups named first, one 2-cpu group named last; least waste picks the
    2-cpu group (max size 1: no room beyond the one node it needs, which must not count as a
    better estimate), which the estimate must have ranked into the shortlist."""
    templates = [group(f"ng-big-{i}", cpu="16") for i in range(8)] + [group("ng-z", cpu="2", max_size=1)]
    p = plan([shape("p", 1, "1500m")], templates, now=NOW)
    assert _grown(p) == [
        {"nodeGroup": "ng-z", "from": 0, "to": 1, "maxSize": 1, "pods": ["default/p-0"], "reasons": ["pods"]}
    ]


def test_among_many_groups_the_highest_priority_is_shortlisted() -> None:
    """Nine equal groups: by waste and name ng-8 ranks ninth, but the priority expander prefers it,
    so the shortlist is ordered by priority first."""
    priorities = parse_priorities("10:\n  - .*\n50:\n  - ^ng-8$\n")
    config = PlannerOptions(expanders=(PRIORITY, "least-waste"), priorities=priorities)
    templates = [group(f"ng-{i}") for i in range(9)]
    p = plan([shape("p", 1, "1500m")], templates, now=NOW, config=config)
    assert _grown(p) == [
        {"nodeGroup": "ng-8", "from": 0, "to": 1, "maxSize": 10, "pods": ["default/p-0"], "reasons": ["pods"]}
    ]


def test_reasons_counted_alike_are_in_name_order() -> None:
    """One group at its max size, one in cooldown (named so, its reason is met second): each reason
    counted once, and the counts alike ordered by the reason's words."""
    templates = [group("ng-a", desired=10, nodes=10), group("ng-b", desired=1, nodes=1)]
    p = plan([shape("p", 1, "1500m")], templates, now=NOW, last_scale_up={"ng-b": NOW - 1})
    assert [n.message() for n in p.not_helped] == [
        f"pod didn't trigger scale-up: 1 {COOLDOWN}, 1 {MAX_SIZE_REACHED}"
    ]


def test_a_headroom_rule_for_no_group_has_no_free_figure() -> None:
    p = headroom_of("ghost:memory=1Gi", [], [])
    assert [h.to_json() for h in p.headroom] == [
        {
            "nodeGroup": "ghost",
            "resource": "memory",
            "want": "1Gi",
            "added": 0,
            "reason": "no such scalable node group",
        }
    ]


def raw_group(name: str, allocatable: dict[str, str], max_size: int = 10) -> NodeGroupTemplate:
    """A group whose new node advertises exactly `allocatable`."""
    spec = {"provider": "aws-asg", "maxSize": max_size, "actual": {"allocatable": allocatable}}
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def raw_shape(name: str, count: int, requests: dict[str, str]) -> PodShape:
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    return PodShape(name, PodNeeds.from_spec(spec), [PodRef("default", f"{name}-{i}") for i in range(count)])


def one_scale_up(
    name: str, to: int, pods: list[str], max_size: int = 10, tie_break: str = ""
) -> list[dict[str, Any]]:
    """The plan's one scale-up, from zero; `tie_break`: the tie the choice broke, if any."""
    up = {"nodeGroup": name, "from": 0, "to": to, "maxSize": max_size, "pods": pods, "reasons": ["pods"]}
    return [{**up, "tieBreak": tie_break} if tie_break else up]


@pytest.mark.parametrize(
    ("allocatable", "requests"),
    [({"cpu": "2", "pods": "29"}, {"cpu": "1"}), ({"memory": "1Gi", "pods": "29"}, {"memory": "1Mi"})],
    ids=["no-memory", "no-cpu"],
)
def test_a_group_whose_node_offers_no_cpu_or_no_memory_still_grows(
    allocatable: dict[str, str], requests: dict[str, str]
) -> None:
    """The expander counts a resource the node does not offer as all wasted; nothing crashes."""
    p = plan([raw_shape("p", 1, requests)], [raw_group("ng", allocatable)], now=NOW)
    assert _grown(p) == one_scale_up("ng", 1, ["default/p-0"])


def test_least_waste_weighs_memory_as_well_as_cpu() -> None:
    """Equal cpu; 6Gi of an 8Gi node wastes less than 6Gi of a 64Gi one, whatever the names."""
    templates = [
        raw_group("ng-a", {"cpu": "2", "memory": "64Gi", "pods": "29"}),
        raw_group("ng-b", {"cpu": "2", "memory": "8Gi", "pods": "29"}),
    ]
    p = plan([raw_shape("p", 1, {"cpu": "1", "memory": "6Gi"})], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-b", 1, ["default/p-0"])


def test_among_many_groups_an_exact_fit_is_estimated_exactly() -> None:
    """Eight 2-cpu groups named first and a 1.5-cpu group: the 1.5-cpu pod fills the last exactly
    (one node, nothing wasted), so it ranks first in the estimate and least waste grows it."""
    templates = [group(f"ng-a{i}", cpu="2") for i in range(8)] + [group("ng-z", cpu="1500m")]
    p = plan([shape("p", 1, "1500m")], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-z", 1, ["default/p-0"])


def test_among_many_groups_those_that_refuse_every_pod_are_not_estimated() -> None:
    """A pod requesting only a branch ENI wastes all cpu and memory anywhere; eight groups named first
    offer no branch ENI: left out of the estimate, they cannot crowd out the one group that helps."""
    templates = [group(f"ng-a{i}", pod_eni="0") for i in range(8)] + [group("ng-z")]
    p = plan([raw_shape("p", 1, {POD_ENI: "1"})], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-z", 1, ["default/p-0"])


def test_a_group_limited_below_its_need_is_estimated_for_the_pods_it_can_take() -> None:
    """Four pods of 1.5 cpu and 1Gi. Eight 4-cpu/4Gi groups of max size 1 can take two of them (a
    quarter of the cpu and half the memory wasted), however many are waiting; the 1.5-cpu/1Gi group
    takes all four, wasting nothing. Estimated only for what they can take, the capped groups do not
    crowd it out of the shortlist, and it grows by four."""
    capped = [
        raw_group(f"ng-c{i}", {"cpu": "4", "memory": "4Gi", "pods": "29"}, max_size=1) for i in range(8)
    ]
    templates = [*capped, raw_group("ng-x", {"cpu": "1500m", "memory": "1Gi", "pods": "29"})]
    p = plan([raw_shape("p", 4, {"cpu": "1500m", "memory": "1Gi"})], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-x", 4, [f"default/p-{i}" for i in range(4)])


def _not_helped_only(reason: str) -> dict[str, Any]:
    return empty_plan(
        notTriggerScaleUp=[
            {
                "pods": ["default/p-0"],
                "message": f"pod didn't trigger scale-up: 1 {reason}",
                "reasons": {"ng": [reason]},
            }
        ]
    )


def test_a_group_whose_node_advertises_no_pod_slots_takes_no_pod() -> None:
    """No `pods` in the allocatable: no slot, the scheduler's own words, and no crash."""
    p = plan([raw_shape("p", 1, {"cpu": "1"})], [raw_group("ng", {"cpu": "2"})], now=NOW)
    assert p.to_json() == _not_helped_only("Too many pods")


def test_a_pod_its_only_group_refuses_by_selector_grows_nothing() -> None:
    """The group has room, but its nodes lack the pod's node selector: no new node is packed for it."""
    spec = {
        "nodeSelector": {"disk": "ssd"},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    }
    pod = PodShape("p", PodNeeds.from_spec(spec), [PodRef("default", "p-0")])
    p = plan([pod], [group("ng")], now=NOW)
    assert p.to_json() == _not_helped_only("node(s) didn't match Pod's node affinity/selector")


def test_headroom_counts_every_new_node_of_a_scale_up() -> None:
    """Two pods grow ng by two alike nodes (9 pod-eni free on each): 18 free, enough for the rule."""
    p = headroom_of("ng:pod-eni=18", [group("ng")], [], shapes=[shape("p", 2, "1500m")])
    assert p.headroom == (HeadroomLine("ng", POD_ENI, "18", free="18", reason="enough is free"),)
    assert _grown(p) == one_scale_up("ng", 2, ["default/p-0", "default/p-1"])


def test_an_existing_node_takes_only_pods_that_accept_its_labels_and_taints() -> None:
    """n-tainted (NoSchedule, not tolerated) and n-plain (no disk=ssd label) refuse the selector pod;
    only n-ssd takes it. The plain pod goes to n-plain, never to the tainted node listed first."""
    nodes = [
        NodeFree(
            "n-tainted", "ng", {"cpu": 4000, "pods": 10000}, {"disk": "ssd"}, (Taint("d", "x", "NoSchedule"),)
        ),
        NodeFree("n-plain", "ng", {"cpu": 4000, "pods": 10000}),
        NodeFree("n-ssd", "ng", {"cpu": 4000, "pods": 10000}, {"disk": "ssd"}),
    ]
    spec = {
        "nodeSelector": {"disk": "ssd"},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
    }
    ssd = PodShape("ssd", PodNeeds.from_spec(spec), [PodRef("default", "ssd-0")])
    p = plan([ssd, shape("plain", 1, "1")], [group("ng", desired=3, nodes=3)], nodes, now=NOW)
    assert p.to_json() == empty_plan(
        onExistingNodes={"n-plain": ["default/plain-0"], "n-ssd": ["default/ssd-0"]}
    )


# -- headroom at its boundaries (third round: each case is one the earlier tests let through) -------


def test_headroom_in_memory_writes_every_figure_in_binary_units_and_reads_rules_after_a_capped_one() -> None:
    """Memory rules: the wanted, free and short figures are written as memory (`Gi`/`Mi`, not bytes),
    whether the group grows, is cooling down or is at its max size; a rule after one that hit a
    limit is still read."""
    templates = [
        group("ng-capped", desired=1, nodes=1, max_size=1),
        group("ng-cool", desired=1, nodes=1),
        group("ng-grow", desired=1, nodes=1),
    ]
    nodes = [
        node("n-capped", "ng-capped", memory="1Gi"),
        node("n-cool", "ng-cool", memory="1Gi"),
        node("n-grow", "ng-grow", memory="1Gi"),
    ]
    rules = "ng-capped:memory=8Gi;ng-cool:memory=8Gi;ng-grow:memory=8Gi"
    p = headroom_of(rules, templates, nodes, last_scale_up={"ng-cool": NOW - 10})
    grew = "headroom: keep 8Gi memory free in ng-grow, 1Gi is; 1 node(s) added"
    assert p.headroom == (
        HeadroomLine("ng-capped", "memory", "8Gi", free="1Gi", reason=f"short by 7Gi, {MAX_SIZE_REACHED}"),
        HeadroomLine("ng-cool", "memory", "8Gi", free="1Gi", reason=f"short by 7Gi, {COOLDOWN}"),
        HeadroomLine("ng-grow", "memory", "8Gi", added=1, free="1Gi", reason=grew),
    )
    assert _grown(p) == [
        {"nodeGroup": "ng-grow", "from": 1, "to": 2, "maxSize": 10, "pods": [], "reasons": [grew]}
    ]


def test_headroom_short_by_one_milli_unit_grows() -> None:
    """999m of cpu free against a rule of 1: one milli-unit short is short (one node added)."""
    p = headroom_of("ng:cpu=1", [group("ng", desired=1, nodes=1)], [node("n1", "ng", cpu="999m")])
    reason = "headroom: keep 1 cpu free in ng, 999m is; 1 node(s) added"
    assert p.headroom == (HeadroomLine("ng", "cpu", "1", added=1, free="999m", reason=reason),)


def test_headroom_grows_a_group_whose_new_node_offers_one_milli_unit() -> None:
    """DaemonSets leave 1m of cpu on a new node: a rule of 2m adds two nodes (not "offers no cpu")."""
    templates = [group("ng", overhead={"cpu": "1929m"})]
    p = headroom_of("ng:cpu=2m", templates, [])
    reason = "headroom: keep 2m cpu free in ng, 0 is; 2 node(s) added"
    assert p.headroom == (HeadroomLine("ng", "cpu", "2m", added=2, free="0", reason=reason),)


def test_headroom_counts_nothing_free_on_a_node_on_its_way_that_offers_none() -> None:
    """A node on its way of a group whose nodes offer no pod-eni adds 0 free, not 1."""
    templates = [group("ng", pod_eni="0", desired=2, nodes=1)]
    p = headroom_of("ng:pod-eni=1", templates, [node("n1", "ng", pod_eni="0")])
    assert p.headroom == (
        HeadroomLine("ng", POD_ENI, "1", free="0", reason=f"a new node of ng offers no {POD_ENI}"),
    )


def test_headroom_counts_nothing_free_on_a_new_node_the_pods_filled() -> None:
    """The pod takes all 1930m of the new node: 0 cpu is free on it, so a rule of 1 cpu adds one more."""
    p = headroom_of("ng:cpu=1", [group("ng")], [], shapes=[shape("p", 1, "1930m")])
    reason = "headroom: keep 1 cpu free in ng, 0 is; 1 node(s) added"
    assert p.headroom == (HeadroomLine("ng", "cpu", "1", added=1, free="0", reason=reason),)
    assert _grown(p) == [
        {
            "nodeGroup": "ng",
            "from": 0,
            "to": 2,
            "maxSize": 10,
            "pods": ["default/p-0"],
            "reasons": ["pods", reason],
        }
    ]


def test_a_second_rule_counts_every_node_the_first_rule_added() -> None:
    """The pod-eni rule adds three nodes (9 each for 20); the cpu rule then finds their 3 x 1930m free."""
    p = headroom_of("ng:pod-eni=20;ng:cpu=3", [group("ng")], [])
    first = f"headroom: keep 20 {POD_ENI} free in ng, 0 is; 3 node(s) added"
    assert p.headroom == (
        HeadroomLine("ng", POD_ENI, "20", added=3, free="0", reason=first),
        HeadroomLine("ng", "cpu", "3", free="5790m", reason="enough is free"),
    )
    assert _grown(p) == [
        {"nodeGroup": "ng", "from": 0, "to": 3, "maxSize": 10, "pods": [], "reasons": [first]}
    ]


# -- choosing among groups: what the estimate and the exact options weigh (third round) -------------


def sized(
    name: str,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    max_size: int = 10,
    overhead: dict[str, str] | None = None,
) -> NodeGroupTemplate:
    """A group whose new node offers only the cpu and memory given (and 29 pod slots), less the
    DaemonSets' `overhead`."""
    allocatable = {"pods": "29"}
    allocatable.update({k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None})
    spec: dict[str, Any] = {
        "provider": "aws-asg",
        "maxSize": max_size,
        "desiredSize": 0,
        "nodes": 0,
        "actual": {"allocatable": allocatable, "labels": {}},
        "autoscaler": {"allocatable": dict(allocatable)},
        "daemonSetOverhead": overhead or {},
    }
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def needing(name: str, count: int, **requests: str) -> PodShape:
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    return PodShape(name, PodNeeds.from_spec(spec), [PodRef("default", f"{name}-{i}") for i in range(count)])


def test_a_group_that_cannot_take_the_pod_does_not_end_the_search() -> None:
    """ng-a (1 cpu) is asked first and offers nothing for a 1.5-cpu pod; ng-b, asked after it, grows."""
    p = plan([shape("p", 1, "1500m")], [group("ng-a", cpu="1"), group("ng-b")], now=NOW)
    assert _grown(p) == one_scale_up("ng-b", 1, ["default/p-0"])


@pytest.mark.parametrize(
    ("templates", "requests", "first"),
    [
        (
            [sized("ng-a", cpu="2200m", memory="8Gi"), sized("ng-b", cpu="1500m", memory="8Gi", max_size=1)],
            {"cpu": "1"},
            "ng-a",
        ),
        (
            [sized("ng-a", cpu="4", memory="2200Mi"), sized("ng-b", cpu="4", memory="1500Mi", max_size=1)],
            {"memory": "1000Mi"},
            "ng-a",
        ),
    ],
    ids=["cpu", "memory"],
)
def test_least_waste_weighs_every_pod_an_option_takes(
    templates: list[NodeGroupTemplate], requests: dict[str, str], first: str
) -> None:
    """Two pods: ng-a's one node takes both (little of it left), ng-b (max size 1) takes one and
    leaves a third of its node: ng-a wastes least only when both pods' requests are counted, so it
    takes both and ng-b grows not at all."""
    p = plan([needing("p", 2, **requests)], templates, now=NOW)
    assert _grown(p) == one_scale_up(first, 1, ["default/p-0", "default/p-1"])


@pytest.mark.parametrize(
    ("templates", "requests", "score"),
    [
        (
            [sized("ng-a", cpu="4", memory="8Gi"), sized("ng-b", cpu="2", memory="8Gi")],
            {"memory": "1Gi"},
            "1.875",
        ),
        (
            [sized("ng-a", cpu="4", memory="8Gi"), sized("ng-b", cpu="4", memory="4Gi")],
            {"cpu": "1"},
            "1.750",
        ),
    ],
    ids=["no-cpu-requested", "no-memory-requested"],
)
def test_a_resource_the_pod_does_not_request_wastes_all_of_it_in_every_group(
    templates: list[NodeGroupTemplate], requests: dict[str, str], score: str
) -> None:
    """The pod requests none of one resource: every group wastes all of it (not all but one
    milli-unit a pod, which would favour the smaller node), so the groups tie, the first by name
    grows and the plan says the tie was broken."""
    p = plan([needing("p", 1, **requests)], templates, now=NOW)
    tie = f"tied with ng-b at least-waste {score}: {RULE}"
    assert _grown(p) == one_scale_up("ng-a", 1, ["default/p-0"], tie_break=tie)


@pytest.mark.parametrize(
    ("templates", "requests"),
    [
        ([sized("ng-a", memory="8Gi"), sized("ng-b", memory="4Gi")], {"memory": "1Gi"}),
        ([sized("ng-a", cpu="4"), sized("ng-b", cpu="2")], {"cpu": "1"}),
    ],
    ids=["nodes-offer-no-cpu", "nodes-offer-no-memory"],
)
def test_among_groups_offering_none_of_a_resource_the_least_wasteful_grows(
    templates: list[NodeGroupTemplate], requests: dict[str, str]
) -> None:
    """Two groups whose nodes offer no cpu (or no memory): that resource is all waste in both, and
    the other resource chooses: ng-b, the smaller node, wastes least."""
    p = plan([needing("p", 1, **requests)], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-b", 1, ["default/p-0"])


def test_the_estimate_counts_no_more_than_the_pods_a_limited_group_holds() -> None:
    """Nine groups, three 1-cpu pods. The eight 1.5-cpu groups (max size 2) are estimated at two
    nodes using all their cpu; ng-z (4 cpu, room for 10) at one node with a quarter left, so it is
    the ninth and not packed, although packed exactly it would take all three pods on one node. The
    estimate's share of the pods never exceeds one: ng-z's room for ten nodes does not make its one
    node look fuller. ng-a1 grows to its max (two pods), then ng-a2 takes the third."""
    templates = [group(f"ng-a{i}", cpu="1500m", max_size=2) for i in range(1, 9)] + [group("ng-z", cpu="4")]
    p = plan([shape("p", 3, "1")], templates, now=NOW)
    assert _grown(p) == [
        {
            "nodeGroup": "ng-a1",
            "from": 0,
            "to": 2,
            "maxSize": 2,
            "pods": ["default/p-0", "default/p-1"],
            "reasons": ["pods"],
            "tieBreak": (
                f"tied with ng-a2, ng-a3, ng-a4, ng-a5, ng-a6, ng-a7, ng-a8 at least-waste 1.333: {RULE}"
            ),
        },
        {
            "nodeGroup": "ng-a2",
            "from": 0,
            "to": 1,
            "maxSize": 2,
            "pods": ["default/p-2"],
            "reasons": ["pods"],
            "tieBreak": f"tied with ng-a3, ng-a4, ng-a5, ng-a6, ng-a7, ng-a8 at least-waste 1.333: {RULE}",
        },
    ]


def test_priorities_order_the_shortlist_only_when_the_priority_expander_is_used() -> None:
    """Least-waste alone, with a priorities map present: the eight prioritised 4-cpu groups are not
    put before ng-best (1 cpu, no waste), which is shortlisted and grows."""
    templates = [group(f"ng-p{i}", cpu="4") for i in range(1, 9)] + [group("ng-best", cpu="1")]
    config = PlannerOptions(priorities=parse_priorities("5:\n  - ng-p.*\n"))
    p = plan([shape("p", 1, "1")], templates, now=NOW, config=config)
    assert _grown(p) == one_scale_up("ng-best", 1, ["default/p-0"])


def test_a_group_of_priority_zero_is_shortlisted_after_those_of_priority_one() -> None:
    """The priority expander alone: ng-a..ng-h have priority 1, ng-zero 0. ng-zero wastes least and
    ng-a most, but the shortlist ranks priority first, so all eight of priority 1 are packed and the
    expander's tie among them goes to the first by name, ng-a."""
    templates = [group("ng-a", cpu="4")] + [group(f"ng-{c}", cpu="2") for c in "bcdefgh"]
    templates.append(group("ng-zero", cpu="1"))
    config = PlannerOptions(
        expanders=(PRIORITY,), priorities=parse_priorities("1:\n  - ng-[a-h]\n0:\n  - ng-zero\n")
    )
    p = plan([shape("p", 1, "1")], templates, now=NOW, config=config)
    tie = f"tied with ng-b, ng-c, ng-d, ng-e, ng-f, ng-g, ng-h: {RULE}"  # no least-waste score
    assert _grown(p) == one_scale_up("ng-a", 1, ["default/p-0"], tie_break=tie)


@pytest.mark.parametrize(
    ("overhead", "reason"),
    [({"cpu": "1"}, "Insufficient cpu"), ({"pods": "29"}, "Too many pods")],
    ids=["daemonset-cpu", "daemonset-pods"],
)
def test_a_pod_that_fits_a_node_only_without_its_daemonsets_is_refused_with_the_reason(
    overhead: dict[str, str], reason: str
) -> None:
    """The group's node has 1930m and 29 slots; its DaemonSets take 1 cpu (so a 1.5-cpu pod no longer
    fits) or every slot: the group refuses the pod with the scheduler's words, not "no scale-up
    chosen"."""
    p = plan([shape("p", 1, "1500m")], [group("ng", overhead=overhead)], now=NOW)
    assert p.to_json() == _not_helped_only(reason)


def test_pods_are_placed_largest_first_by_their_share_of_the_largest_node() -> None:
    """Shares of the largest node (1930m, 7220Mi): cpu-heavy (1900m, 1Mi) is 0.98 of it, memory-heavy
    (100m, 4Gi) 0.62, so cpu-heavy is placed first and takes n1; by raw milli-units memory would
    weigh millions of times more and memory-heavy would go first."""
    cpu_heavy = needing("cpu-heavy", 1, cpu="1900m", memory="1Mi")
    memory_heavy = needing("memory-heavy", 1, cpu="100m", memory="4Gi")
    nodes = [node("n1", "ng", cpu="2", memory="4Gi", pods="10")]
    p = plan([memory_heavy, cpu_heavy], [group("ng", desired=1, nodes=1, max_size=1)], nodes, now=NOW)
    assert p.to_json() == empty_plan(
        onExistingNodes={"n1": ["default/cpu-heavy-0"]},
        notTriggerScaleUp=[
            {
                "pods": ["default/memory-heavy-0"],
                "message": f"pod didn't trigger scale-up: 1 {MAX_SIZE_REACHED}",
                "reasons": {"ng": [MAX_SIZE_REACHED]},
            }
        ],
        skippedGroups={"ng": MAX_SIZE_REACHED},
    )


def test_headroom_for_a_group_the_pods_grew_to_its_max_says_how_short_in_each_resource() -> None:
    """The pod grows ng to its max size (1); both rules are then short and cannot add a node: the
    memory rule's shortfall is written as memory (16Gi - 7220Mi = 8.9Gi), and the cpu rule after it
    is still answered (1 - 430m = 570m)."""
    templates = [group("ng", max_size=1)]
    p = headroom_of("ng:memory=16Gi;ng:cpu=1", templates, [], shapes=[shape("p", 1, "1500m")])
    assert p.headroom == (
        HeadroomLine("ng", "memory", "16Gi", free="7.1Gi", reason=f"short by 8.9Gi, {MAX_SIZE_REACHED}"),
        HeadroomLine("ng", "cpu", "1", free="430m", reason=f"short by 570m, {MAX_SIZE_REACHED}"),
    )
    assert _grown(p) == one_scale_up("ng", 1, ["default/p-0"], max_size=1)


def test_the_estimate_counts_a_resource_a_new_node_offers_one_milli_unit_of() -> None:
    """Three pods of 1m cpu and 1Gi. ng-t's DaemonSets leave 1m cpu on a node, so its estimate is
    three nodes (one pod each) and it ranks ninth, behind the seven 1.5Gi groups (estimated at two
    nodes, full) and ng-w (one 3.2Gi node). Packed exactly, each 1.5Gi group needs three nodes and
    ng-w one, so ng-w wastes least and takes all three pods. Were ng-t's 1m of cpu ignored, its
    estimate would be one 3.1Gi node, it would push ng-w out of the shortlist and a 1.5Gi group
    would grow by three."""
    templates = [sized(f"ng-f{i}", cpu="1930m", memory="1536Mi") for i in range(1, 8)]
    templates.append(sized("ng-w", cpu="1930m", memory="3276Mi"))
    templates.append(sized("ng-t", cpu="1930m", memory="3174Mi", overhead={"cpu": "1929m"}))
    p = plan([needing("p", 3, cpu="1m", memory="1Gi")], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-w", 1, ["default/p-0", "default/p-1", "default/p-2"])
