"""The pure scale-up planner: FFD onto true free capacity, nodes on their way, then new nodes chosen
by the expander, within max size, max nodes per scale-up, cooldown and one unfinished scale-up; the
headroom; and cluster-autoscaler's words for every pod it does not help."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.demand import PodRef, PodShape, pending_shapes
from capacity.expander import (
    LEAST_WASTE,
    PRIORITY,
    Option,
    best_option,
    parse_expanders,
    parse_priorities,
    priority_of,
    usable,
)
from capacity.fit import PodNeeds, check_fit
from capacity.packing import Bin, Shape, first_fit, nonzero_indices, pack_new_nodes
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
from capacity.template import NodeGroupTemplate, View

NOW = 1_700_000_000.0
GI = 2**30 * 1000  # milli-units of one GiB


def group(
    name: str,
    *,
    cpu: str = "1930m",
    memory: str = "7220Mi",
    storage: str = "0",
    pod_eni: str = "9",
    pods: str = "29",
    desired: int = 0,
    nodes: int = 0,
    max_size: int = 10,
    labels: dict[str, str] | None = None,
    overhead: dict[str, str] | None = None,
) -> NodeGroupTemplate:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, POD_ENI: pod_eni, "ephemeral-storage": storage}
    spec: dict[str, Any] = {
        "provider": "aws-asg",
        "maxSize": max_size,
        "desiredSize": desired,
        "nodes": nodes,
        "actual": {"allocatable": allocatable, "labels": labels or {}},
        "autoscaler": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
        "daemonSetOverhead": overhead or {},
    }
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def shape(name: str, count: int = 1, **requests: str) -> PodShape:
    reqs = {k.replace("_", "-").replace("pod-eni", POD_ENI): v for k, v in requests.items()}
    spec = {"containers": [{"name": "c", "resources": {"requests": reqs}}]}
    return PodShape(name, PodNeeds.from_spec(spec), [PodRef("default", f"{name}-{i}") for i in range(count)])


def node(name: str, group_name: str, **free: str) -> NodeFree:
    values = {k.replace("_", "-").replace("pod-eni", POD_ENI): parse_quantity(v) for k, v in free.items()}
    return NodeFree(name, group_name, values)


def sizes(p: Any) -> dict[str, tuple[int, int]]:
    return {s.node_group: (s.from_size, s.to_size) for s in p.scale_ups}


def test_least_waste_picks_the_group_that_wastes_least_cpu_and_memory() -> None:
    """2 pods of 1.5 cpu / 6Gi: an m5.large (2 cpu, 8Gi) each wastes less than one m5.4xlarge."""
    templates = [
        group("ng-large", cpu="2", memory="8Gi"),
        group("ng-4xlarge", cpu="16", memory="64Gi"),
    ]
    p = plan([shape("web", 2, cpu="1500m", memory="6Gi")], templates, now=NOW)
    assert sizes(p) == {"ng-large": (0, 2)}
    assert [r.key for r in p.scale_ups[0].pods] == ["default/web-0", "default/web-1"]
    assert p.scale_ups[0].info() == "{ng-large 0->2 (max: 10)}"


def test_least_waste_ties_break_by_name_so_replicas_agree() -> None:
    templates = [group("ng-b"), group("ng-a")]
    assert sizes(plan([shape("p", 1, cpu="1")], templates, now=NOW)) == {"ng-a": (0, 1)}


def test_priority_expander_prefers_the_highest_matching_regex_and_drops_unmatched_groups() -> None:
    priorities = parse_priorities("10:\n  - .*-large$\n50:\n  - ^ng-spot-.*\n")
    config = PlannerOptions(expanders=(PRIORITY, "least-waste"), priorities=priorities)
    templates = [group("ng-large"), group("ng-spot-a", cpu="16", memory="64Gi"), group("ng-other")]
    p = plan([shape("p", 1, cpu="1")], templates, now=NOW, config=config)
    assert sizes(p) == {"ng-spot-a": (0, 1)}
    assert p.skipped_groups == {"ng-other": "not in the priority expander's configuration"}


def test_priority_config_errors_are_refused() -> None:
    with pytest.raises(ValueError, match="not an integer"):
        parse_priorities("high:\n  - .*\n")
    with pytest.raises(ValueError, match="bad regular expression"):
        parse_priorities("10:\n  - '('\n")


def test_max_size_caps_the_scale_up_and_the_rest_get_the_reason() -> None:
    templates = [group("ng", max_size=2, desired=0)]
    p = plan([shape("big", 5, cpu="1500m")], templates, now=NOW)
    assert sizes(p) == {"ng": (0, 2)}
    assert len(p.scale_ups[0].pods) == 2
    [rest] = p.not_helped
    assert len(rest.pods) == 3
    assert rest.message() == f"pod didn't trigger scale-up: 1 {MAX_SIZE_REACHED}"


def test_max_nodes_per_scale_up_caps_one_group() -> None:
    p = plan(
        [shape("big", 5, cpu="1500m")],
        [group("ng")],
        now=NOW,
        config=PlannerOptions(max_nodes_per_scale_up=3),
    )
    assert sizes(p) == {"ng": (0, 3)}
    assert p.not_helped[0].reasons == {"ng": ("max nodes per scale-up reached",)}


def test_cooldown_keeps_a_recently_grown_group_still() -> None:
    templates = [group("ng", desired=1, nodes=1)]
    shapes = [shape("p", 1, cpu="1500m")]
    config = PlannerOptions(cooldown=300.0)
    cooling = plan(shapes, templates, now=NOW, last_scale_up={"ng": NOW - 100}, config=config)
    assert cooling.scale_ups == ()
    assert cooling.not_helped[0].message() == f"pod didn't trigger scale-up: 1 {COOLDOWN}"
    later = plan(shapes, templates, now=NOW, last_scale_up={"ng": NOW - 301}, config=config)
    assert sizes(later) == {"ng": (1, 2)}


def test_an_unfinished_scale_up_takes_its_pods_and_is_not_repeated() -> None:
    """desired 2, 0 nodes joined: the 2 pods already planned onto the nodes on their way stay there."""
    templates = [group("ng", desired=2, nodes=0)]
    p = plan([shape("p", 2, cpu="1500m")], templates, now=NOW, last_scale_up={"ng": NOW - 60})
    assert p.scale_ups == ()
    assert [r.key for r in p.on_the_way["ng"]] == ["default/p-0", "default/p-1"]
    more = plan([shape("p", 3, cpu="1500m")], templates, now=NOW, last_scale_up={"ng": NOW - 60})
    assert more.scale_ups == ()
    assert more.not_helped[0].reasons == {"ng": (IN_PROGRESS,)}


def test_nodes_that_never_joined_put_the_group_in_backoff() -> None:
    templates = [group("ng", desired=2, nodes=0)]
    p = plan([shape("p", 1, cpu="1")], templates, now=NOW, last_scale_up={"ng": NOW - 3600})
    assert p.scale_ups == () and p.on_the_way == {}
    assert p.not_helped[0].reasons == {"ng": (BACKOFF,)}


def test_existing_true_free_capacity_is_used_first_largest_pods_first() -> None:
    """FFD: the 1.5-cpu pod is placed first, on the first node it fits (n1); the 0.7s then fill n2."""
    nodes = [node("n1", "ng", cpu="1500m", pods="10"), node("n2", "ng", cpu="1600m", pods="10")]
    shapes = [shape("small", 2, cpu="700m"), shape("large", 1, cpu="1500m")]
    p = plan(shapes, [group("ng", desired=2, nodes=2)], nodes, now=NOW)
    assert p.scale_ups == ()
    assert {n: [r.key for r in pods] for n, pods in p.on_existing.items()} == {
        "n1": ["default/large-0"],
        "n2": ["default/small-0", "default/small-1"],
    }


def test_held_branch_enis_are_not_free_capacity() -> None:
    """A node whose true free pod-eni is 0 (held by finished pods) takes no pod-eni pod."""
    nodes = [node("n1", "ng", cpu="1", pods="10", pod_eni="0")]
    p = plan([shape("sg", 1, cpu="100m", pod_eni="1")], [group("ng", desired=1, nodes=1)], nodes, now=NOW)
    assert sizes(p) == {"ng": (1, 2)}


def test_reasons_are_counted_per_group_in_cluster_autoscalers_words() -> None:
    templates = [
        group("ng-full", storage="100Gi", max_size=1, desired=1, nodes=1),
        group("ng-a", storage="20Gi"),
        group("ng-b", storage="20Gi"),
    ]
    p = plan([shape("scratch", 1, cpu="100m", ephemeral_storage="30Gi")], templates, now=NOW)
    assert p.scale_ups == ()
    assert p.not_helped[0].message() == (
        "pod didn't trigger scale-up: 1 max node group size reached, 2 Insufficient ephemeral-storage"
    )


def test_identical_pods_are_one_shape() -> None:
    pod = {
        "metadata": {"namespace": "default", "name": "x"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    }
    other = {**pod, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}
    pods = [{**pod, "metadata": {"namespace": "default", "name": f"x-{i}"}} for i in range(50)] + [other]
    shapes, malformed = pending_shapes(pods)
    assert malformed == []
    assert sorted(len(s.pods) for s in shapes) == [1, 50]


def test_headroom_scales_ahead_of_demand_from_true_free_capacity() -> None:
    """9 pod-eni wanted free; the one node has 9 but 6 are held (true free 3): one more node."""
    nodes = [node("n1", "ng", cpu="1", pods="20", pod_eni="3")]
    config = PlannerOptions(headroom=tuple(parse_headroom("ng:pod-eni=9")))
    p = plan([], [group("ng", desired=1, nodes=1)], nodes, now=NOW, config=config)
    assert sizes(p) == {"ng": (1, 2)}
    assert p.scale_ups[0].pods == ()
    reason = "headroom: keep 9 vpc.amazonaws.com/pod-eni free in ng, 3 is; 1 node(s) added"
    assert p.headroom == (HeadroomLine("ng", POD_ENI, "9", added=1, free="3", reason=reason),)
    assert p.headroom[0].to_json() == {
        "nodeGroup": "ng",
        "resource": POD_ENI,
        "want": "9",
        "added": 1,
        "free": "3",
        "reason": reason,
    }
    satisfied = plan(
        [], [group("ng", desired=2, nodes=1)], nodes, now=NOW, last_scale_up={"ng": NOW}, config=config
    )
    assert satisfied.scale_ups == ()  # the node on its way counts: nothing added twice


def test_headroom_parsing() -> None:
    assert parse_headroom("ng:pod-eni=9,memory=1Gi") == [
        Headroom("ng", POD_ENI, 9000),
        Headroom("ng", "memory", GI),
    ]
    with pytest.raises(ValueError, match="RESOURCE=AMOUNT"):
        parse_headroom("ng:gpu=1")


def test_ten_thousand_pods_over_five_hundred_groups_are_all_planned_as_shapes() -> None:
    """The benchmark's load (timed outside the tests): every pod lands in a scale-up, none twice."""
    templates = [
        group(
            f"ng-{i:03}",
            cpu=f"{2 + i % 7}",
            memory=f"{8 + i % 5}Gi",
            storage=f"{20 + i % 30}Gi",
            max_size=200,
        )
        for i in range(500)
    ]
    shapes = [shape(f"app-{j}", 200, cpu=f"{100 + 37 * j}m", memory=f"{128 + 64 * j}Mi") for j in range(50)]
    p = plan(shapes, templates, now=NOW)
    planned = [ref.key for s in p.scale_ups for ref in s.pods]
    assert len(planned) == len(set(planned)) == 10_000
    assert all(s.to_size <= s.max_size for s in p.scale_ups)


@given(
    counts=st.lists(st.integers(1, 30), min_size=1, max_size=4),
    cpus=st.lists(st.integers(100, 4000), min_size=4, max_size=4),
    max_sizes=st.lists(st.integers(0, 6), min_size=3, max_size=3),
    desired=st.lists(st.integers(0, 6), min_size=3, max_size=3),
)
def test_no_plan_exceeds_a_max_size_and_every_planned_pod_fits_its_group(
    counts: list[int], cpus: list[int], max_sizes: list[int], desired: list[int]
) -> None:
    templates = [
        group(f"ng-{i}", cpu=f"{1 + i}", max_size=m, desired=min(d, m), nodes=min(d, m))
        for i, (m, d) in enumerate(zip(max_sizes, desired, strict=True))
    ]
    shapes = [shape(f"s{i}", n, cpu=f"{cpus[i]}m") for i, n in enumerate(counts)]
    needs = {f"default/s{i}-{k}": s.needs for i, s in enumerate(shapes) for k in range(counts[i])}
    p = plan(shapes, templates, now=NOW)
    by_name = {t.name: t for t in templates}
    for s in p.scale_ups:
        t = by_name[s.node_group]
        assert s.from_size == t.desired_size < s.to_size <= t.max_size
        assert t.actual is not None
        for ref in s.pods:
            assert not check_fit(needs[ref.key], t.actual, t.daemonset_overhead, t.daemonset_pods)
    planned = sum(len(s.pods) for s in p.scale_ups) + sum(len(n.pods) for n in p.not_helped)
    assert planned == sum(counts)


def test_view_without_template_says_so() -> None:
    t = NodeGroupTemplate(name="ng", provider="aws-asg", max_size=3, actual=None, autoscaler=View({}))
    p = plan([shape("p", 1, cpu="1")], [t], now=NOW)
    assert p.not_helped[0].reasons == {"ng": ("no node template",)}


GI = 2**30 * 1000  # one GiB of memory in milli-units


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("least-waste", ("least-waste",)),
        (" priority , least-waste ", ("priority", "least-waste")),
        ("priority,,least-waste,", ("priority", "least-waste")),
    ],
)
def test_an_expander_chain_is_read_in_order(text: str, names: tuple[str, ...]) -> None:
    """--expander: names split at commas, trimmed, empty items dropped, order kept."""
    assert parse_expanders(text) == names


@pytest.mark.parametrize("text", ["", " , ", "random", "least-waste,random", "Priority"])
def test_an_unknown_or_empty_expander_chain_is_refused_whole(text: str) -> None:
    """Anything but a non-empty list of the two known names gets one whole message."""
    with pytest.raises(ValueError) as raised:
        parse_expanders(text)
    assert (
        str(raised.value) == f"expander must be a comma-separated list of least-waste, priority, not {text!r}"
    )


@pytest.mark.parametrize(
    ("text", "patterns"),
    [
        (None, {}),
        ("", {}),
        ("  \n ", {}),
        ("10: ^ng-.*\n", {10: ["^ng-.*"]}),
        ("'20':\n  - a\n  - b\n-5: [7]\n", {20: ["a", "b"], -5: ["7"]}),
    ],
)
def test_the_priorities_configuration_is_read_whole(text: str | None, patterns: dict[int, list[str]]) -> None:
    """expander/priority/priority.go's ConfigMap value: integer keys (quoted too), a single expression
    or a list, each compiled; nothing configured is no configuration."""
    assert {p: [rx.pattern for rx in listed] for p, listed in parse_priorities(text).items()} == patterns


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a\n- b\n", "priorities: expected a map of priority to a list of regular expressions"),
        ("high: [a]\n", "priorities: 'high' is not an integer"),
        ("~: [a]\n", "priorities: None is not an integer"),
        ("10: {a: b}\n", "priorities.10: expected a list of regular expressions"),
        (
            "10: ['(']\n",
            "priorities.10: bad regular expression: missing ), unterminated subpattern at position 0",
        ),
    ],
)
def test_a_priorities_configuration_cluster_autoscaler_refuses_is_refused_whole(
    text: str, message: str
) -> None:
    """Each refusal names where in the configuration it is and why, in one whole message."""
    with pytest.raises(ValueError) as raised:
        parse_priorities(text)
    assert str(raised.value) == message


def test_priorities_that_are_not_yaml_are_refused() -> None:
    """A YAML syntax error is a ValueError saying so, not a yaml exception."""
    with pytest.raises(ValueError, match=r"^priorities: not YAML: ") as raised:
        parse_priorities("10: [a\n")
    assert raised.value.__cause__ is None


def test_a_group_takes_the_highest_priority_whose_expression_it_contains() -> None:
    """Expressions are searched in the name (not anchored); the highest matching priority wins."""
    priorities = parse_priorities("10: [ng-]\n50: [spot]\n")
    assert [priority_of(g, priorities) for g in ("ng-a", "ng-spot", "my-spot-x", "other")] == [
        10,
        50,
        50,
        None,
    ]
    assert priority_of("ng-a", {}) is None


def test_which_groups_the_expander_chain_may_ever_choose() -> None:
    """Only a configured priority expander drops a group its expressions do not match."""
    priorities = parse_priorities("10: [^ng-]\n")
    assert [
        usable("other", (LEAST_WASTE,), priorities),
        usable("other", (PRIORITY, LEAST_WASTE), {}),
        usable("other", (PRIORITY, LEAST_WASTE), priorities),
        usable("ng-a", (PRIORITY,), priorities),
    ] == [True, True, False, True]


def option(
    group: str,
    *,
    nodes: int = 1,
    pods: int = 1,
    cpu: int = 1000,
    memory: int = GI,
    node_cpu: int = 2000,
    node_memory: int = 2 * GI,
) -> Option:
    return Option(group, nodes, pods, cpu, memory, node_cpu, node_memory)


@pytest.mark.parametrize(
    ("chosen", "waste"),
    [
        (option("g", nodes=2, cpu=3000, memory=12 * GI, node_cpu=2000, node_memory=8 * GI), 0.5),
        (option("g", cpu=1000, memory=GI, node_cpu=1000, node_memory=4 * GI), 0.75),
        (option("g", cpu=1, memory=1, node_cpu=1, node_memory=1), 0.0),
        (option("g", cpu=0, memory=GI, node_cpu=0, node_memory=2 * GI), 1.5),
        (option("g", nodes=0), 2.0),
    ],
)
def test_an_options_waste_is_its_unrequested_cpu_and_memory_fractions_summed(
    chosen: Option, waste: float
) -> None:
    """expander/waste/waste.go: (offered - requested) / offered for cpu plus the same for memory; a
    resource the new nodes do not offer at all wastes all of it (1.0) rather than dividing by zero."""
    assert chosen.waste == waste


def test_the_best_option_through_each_expander_chain() -> None:
    """Priority keeps the highest matched priority and drops unmatched groups; least-waste keeps the
    least waste; ties go to fewer nodes, then more pods, then the name; the order of the chain counts."""
    snug = option("ng-snug", cpu=2000, memory=2 * GI)  # waste 0
    loose = option("spot-loose", cpu=1000, memory=GI)  # waste 1.0
    other = option("other", cpu=2000, memory=2 * GI)  # waste 0, matches no priority
    priorities = parse_priorities("10: [^ng-]\n50: [^spot-]\n")
    assert best_option([], (PRIORITY, LEAST_WASTE), priorities) is None
    assert best_option([other], (PRIORITY, LEAST_WASTE), priorities) == other
    assert best_option([snug, loose, other], (LEAST_WASTE,), priorities) == snug
    assert best_option([snug, loose, other], (PRIORITY, LEAST_WASTE), priorities) == loose
    assert best_option([snug, other], (PRIORITY, LEAST_WASTE), priorities) == snug
    assert best_option([loose, other], (PRIORITY,), priorities) == loose
    assert best_option([loose, other], (PRIORITY,), {}) == other
    assert best_option([option("x"), option("y")], (PRIORITY,), parse_priorities("10: [z]")) is None
    assert best_option([loose, snug, other], (LEAST_WASTE, PRIORITY), priorities) == snug
    fewer = option("b", nodes=1, pods=1)
    more_pods = option("c", nodes=1, pods=2)
    more_nodes = option("a", nodes=2, pods=2, node_cpu=1000, node_memory=GI)
    assert [fewer.waste, more_pods.waste, more_nodes.waste] == [1.0, 1.0, 1.0]
    assert best_option([more_nodes, fewer, more_pods], (LEAST_WASTE,), {}) == more_pods
    assert best_option([option("b"), option("a")], (LEAST_WASTE,), {}) == option("a")
    a_loose = option("a-loose", cpu=1000, memory=GI)
    assert best_option([snug, a_loose], (), {}) == a_loose  # no expander: only the tie-break


def packed(empty: list[int], limit: int, reqs: list[tuple[tuple[int, ...], int]]) -> str:
    """pack_new_nodes of one shape per (request vector, pod count), its whole answer as text (so an
    int turned float, `2.0` nodes, shows too)."""
    fitting = [Shape(i, shape(f"s{i}", count), req) for i, (req, count) in enumerate(reqs)]
    return repr(pack_new_nodes(empty, limit, fitting))


def test_new_nodes_take_later_shapes_into_the_room_earlier_ones_left() -> None:
    """A second shape first fits into the new node the first one opened before opening another."""
    assert packed([10, 10], 5, [((6, 2), 1), ((4, 8), 1)]) == "(1, [([0, 0], 1)], [(0, 1), (1, 1)], [])"
    # one of three pods into the room left, two onto one more node: all three counted placed
    assert packed([10], 5, [((6,), 1), ((4,), 3)]) == "(2, [([0], 1), ([2], 1)], [(0, 1), (1, 3)], [])"


def test_only_the_newest_bins_of_new_nodes_are_searched() -> None:
    """First fit among the NEW_BIN_WINDOW (32) newest node classes only: the room the first shape
    left on the oldest of 33 nodes is not searched, so the last shape opens a 34th node."""
    reqs = [((6,), 1)] + [((10,), 1)] * 32 + [((4,), 1)]
    assert packed([10], 100, reqs) == repr(
        (34, [([4], 1)] + [([0], 1)] * 32 + [([6], 1)], [(i, 1) for i in range(34)], [])
    )


def test_a_shape_no_new_node_can_take_opens_none() -> None:
    """A pod larger than an empty node: no node opened, nothing placed, nothing capped."""
    assert packed([10], 5, [((11,), 3)]) == "(0, [], [], [])"


@pytest.mark.parametrize(
    ("limit", "answer"),
    [
        (5, "(2, [([0], 1), ([2], 1)], [(0, 3)], [])"),
        (2, "(2, [([0], 1), ([2], 1)], [(0, 3)], [])"),
        (1, "(1, [([0], 1)], [(0, 2)], [0])"),
        (0, "(0, [], [], [0])"),
    ],
)
def test_pods_split_over_full_nodes_and_one_partial_node_up_to_the_limit(limit: int, answer: str) -> None:
    """3 pods, 2 per node: one full node and one with room for one more, in whole node counts; a
    limit below the two nodes needed caps the shape."""
    assert packed([4], limit, [((2,), 3)]) == answer


def test_several_full_new_nodes_are_one_class_counted_whole() -> None:
    """5 pods, 2 per node: two full nodes as one class of count 2, then the partial one."""
    assert packed([4], 5, [((2,), 5)]) == "(3, [([0], 2), ([2], 1)], [(0, 5)], [])"


def test_first_fit_passes_over_bins_refused_or_full_and_splits_the_last_class() -> None:
    """first_fit in bin order: a bin whose target the pod refuses and a bin without room are passed
    over (neither listed), the next bins take what they can, and a class of three nodes taking 3 pods
    each is split where the pods run out: one full node, one with one pod, one untouched."""
    bins = [Bin("full", [1]), Bin("refused", [10]), Bin("n1", [4]), Bin("group", [6], 3)]
    placed = first_fit(bins, (2,), (0,), 6, lambda target: target != "refused")
    assert placed == (6, [("n1", 2), ("group", 4)])
    assert [(b.target, b.free, b.count) for b in bins] == [
        ("full", [1], 1),
        ("refused", [10], 1),
        ("n1", [0], 1),
        ("group", [0], 1),
        ("group", [4], 1),
        ("group", [6], 1),
    ]
    # 7 pods into a class of four such nodes: two full nodes as one class, one with one pod, one untouched
    bins = [Bin("group", [6], 4)]
    assert first_fit(bins, (2,), (0,), 7, lambda _target: True) == (7, [("group", 7)])
    assert [(b.target, b.free, b.count) for b in bins] == [
        ("group", [0], 2),
        ("group", [4], 1),
        ("group", [6], 1),
    ]
    # 6 pods into four such nodes: two full nodes, no partial one, two untouched
    bins = [Bin("group", [6], 4)]
    assert first_fit(bins, (2,), (0,), 6, lambda _target: True) == (6, [("group", 6)])
    assert [(b.target, b.free, b.count) for b in bins] == [("group", [0], 2), ("group", [6], 2)]


def test_every_resource_a_pod_requests_is_packed_even_one_milli_unit() -> None:
    """nonzero_indices: the positions of the request vector above zero, a single milli-unit too."""
    assert nonzero_indices((0, 1, 2000, 0)) == (1, 2)


# --------------------------------------------------------------------------------------------------
# The planner's decisions checked as whole plans (`Plan.to_json`): each phase's output, every
# group's reason, the limits at their boundaries (provision timeout, cooldown, max size, max nodes per
# scale-up), a new node's free capacity after DaemonSets, and each answer a headroom rule can give.
# Expected values are written out here, never computed by the planner.
# The builders with the `whole_` prefix differ from those above on purpose: `whole_group` leaves
# ephemeral-storage out of allocatable and `whole_shape` asks for cpu only, so the whole plans below
# hold exactly the fields they were written with.


PER_SCALE_UP = "max nodes per scale-up reached"
RULE = (
    "fitguard takes fewest nodes, then most pods, then the group's name "
    "where cluster-autoscaler picks at random"
)


def whole_group(
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


def whole_shape(name: str, count: int, cpu: str) -> PodShape:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    return PodShape(name, PodNeeds.from_spec(spec), [PodRef("default", f"{name}-{i}") for i in range(count)])


def whole_node(name: str, group_name: str, **free: str) -> NodeFree:
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
        whole_group("ng-a", desired=1, nodes=1, max_size=3),
        whole_group("ng-way", desired=2, nodes=1),
        whole_group("ng-full", desired=2, nodes=2, max_size=2),
        NodeGroupTemplate(name="ng-manual", provider="manual", max_size=5),  # not scalable: not a group
    ]
    shapes = [whole_shape("tiny", 1, "500m"), whole_shape("big", 4, "1500m")]
    nodes = [whole_node("n1", "ng-a", cpu="1", pods="5")]
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
    t = whole_group("ng", desired=desired, nodes=nodes, max_size=10)
    p = plan([whole_shape("p", 1, "1500m")], [t], now=NOW, last_scale_up=last, config=config)
    assert p.to_json() == _one_pod(skip, sizes, way)


def test_every_node_on_its_way_takes_pods() -> None:
    """desired 3 with 1 node joined: 2 empty nodes on their way take 2 pods; the third waits."""
    p = plan([whole_shape("p", 3, "1500m")], [whole_group("ng", desired=3, nodes=1)], now=NOW)
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
    p = plan([whole_shape("p", 5, "1500m")], [whole_group("ng", max_size=3)], now=NOW, config=config)
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
    p = plan([whole_shape("p", 1, "1500m")], [whole_group("ng")], now=NOW, config=config)
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
    p = plan([whole_shape("p", 2, "1")], [], now=NOW)
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
    t = whole_group("ng", cpu=cpu, pods=pods, overhead=overhead)
    p = plan([whole_shape("p", 3, "500m")], [t], now=NOW)
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
        whole_group("ng-even", desired=1, nodes=1),
        whole_group("ng-none", pod_eni="0", desired=1, nodes=1),
        whole_group("ng-cool", desired=1, nodes=1),
        whole_group("ng-capped", desired=1, nodes=1, max_size=2),
    ]
    nodes = [
        whole_node("n-even", "ng-even", pod_eni="9"),
        whole_node("n-none", "ng-none", pod_eni="0"),
        whole_node("n-cool", "ng-cool", pod_eni="0"),
        whole_node("n-capped", "ng-capped", pod_eni="0"),
    ]
    rules = "ghost:cpu=1;ng-even:pod-eni=9;ng-none:pod-eni=1;ng-cool:pod-eni=9;ng-capped:pod-eni=20"
    shapes = [whole_shape("p", 1, "1500m")]  # grows ng-capped to its max (least waste, name order)
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
        whole_node("n1", "ng", pod_eni="3"),
        whole_node("n2", "ng", pod_eni="-2"),
        whole_node("n3", "other", pod_eni="9"),
    ]
    templates = [whole_group("ng", desired=2, nodes=2), whole_group("other", desired=1, nodes=1)]
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
    p = headroom_of(
        "ng:pod-eni=20", [whole_group("ng", desired=desired, nodes=1)], [whole_node("n1", "ng", pod_eni="3")]
    )
    assert p.headroom == (HeadroomLine("ng", POD_ENI, "20", free=free, reason=reason),)
    assert p.scale_ups == ()


def test_headroom_adds_to_a_scale_up_for_pods_and_says_both() -> None:
    """The pod grows ng by one node (9 pod-eni free on it); the rule wants 12, so one more."""
    p = headroom_of("ng:pod-eni=12", [whole_group("ng")], [], shapes=[whole_shape("p", 1, "1500m")])
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
    templates = [whole_group(f"ng-a{i}", cpu="1") for i in range(8)] + [whole_group("ng-z", cpu="16")]
    p = plan([whole_shape("p", 1, "1500m")], templates, now=NOW)
    assert _grown(p) == [
        {"nodeGroup": "ng-z", "from": 0, "to": 1, "maxSize": 10, "pods": ["default/p-0"], "reasons": ["pods"]}
    ]


def test_among_many_groups_the_least_wasteful_estimate_is_shortlisted() -> None:
    """Nine groups: eight 16-cpu groups named first, one 2-cpu group named last; least waste picks the
    2-cpu group (max size 1: no room beyond the one node it needs, which must not count as a
    better estimate), which the estimate must have ranked into the shortlist."""
    templates = [whole_group(f"ng-big-{i}", cpu="16") for i in range(8)] + [
        whole_group("ng-z", cpu="2", max_size=1)
    ]
    p = plan([whole_shape("p", 1, "1500m")], templates, now=NOW)
    assert _grown(p) == [
        {"nodeGroup": "ng-z", "from": 0, "to": 1, "maxSize": 1, "pods": ["default/p-0"], "reasons": ["pods"]}
    ]


def test_among_many_groups_the_highest_priority_is_shortlisted() -> None:
    """Nine equal groups: by waste and name ng-8 ranks ninth, but the priority expander prefers it,
    so the shortlist is ordered by priority first."""
    priorities = parse_priorities("10:\n  - .*\n50:\n  - ^ng-8$\n")
    config = PlannerOptions(expanders=(PRIORITY, "least-waste"), priorities=priorities)
    templates = [whole_group(f"ng-{i}") for i in range(9)]
    p = plan([whole_shape("p", 1, "1500m")], templates, now=NOW, config=config)
    assert _grown(p) == [
        {"nodeGroup": "ng-8", "from": 0, "to": 1, "maxSize": 10, "pods": ["default/p-0"], "reasons": ["pods"]}
    ]


def test_reasons_counted_alike_are_in_name_order() -> None:
    """One group at its max size, one in cooldown (named so, its reason is met second): each reason
    counted once, and the counts alike ordered by the reason's words."""
    templates = [whole_group("ng-a", desired=10, nodes=10), whole_group("ng-b", desired=1, nodes=1)]
    p = plan([whole_shape("p", 1, "1500m")], templates, now=NOW, last_scale_up={"ng-b": NOW - 1})
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
    templates = [whole_group(f"ng-a{i}", cpu="2") for i in range(8)] + [whole_group("ng-z", cpu="1500m")]
    p = plan([whole_shape("p", 1, "1500m")], templates, now=NOW)
    assert _grown(p) == one_scale_up("ng-z", 1, ["default/p-0"])


def test_among_many_groups_those_that_refuse_every_pod_are_not_estimated() -> None:
    """A pod requesting only a branch ENI wastes all cpu and memory anywhere; eight groups named first
    offer no branch ENI: left out of the estimate, they cannot crowd out the one group that helps."""
    templates = [whole_group(f"ng-a{i}", pod_eni="0") for i in range(8)] + [whole_group("ng-z")]
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
    p = plan([pod], [whole_group("ng")], now=NOW)
    assert p.to_json() == _not_helped_only("node(s) didn't match Pod's node affinity/selector")


def test_headroom_counts_every_new_node_of_a_scale_up() -> None:
    """Two pods grow ng by two alike nodes (9 pod-eni free on each): 18 free, enough for the rule."""
    p = headroom_of("ng:pod-eni=18", [whole_group("ng")], [], shapes=[whole_shape("p", 2, "1500m")])
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
    p = plan([ssd, whole_shape("plain", 1, "1")], [whole_group("ng", desired=3, nodes=3)], nodes, now=NOW)
    assert p.to_json() == empty_plan(
        onExistingNodes={"n-plain": ["default/plain-0"], "n-ssd": ["default/ssd-0"]}
    )


# -- headroom at its boundaries (third round: each case is one the earlier tests let through) -------


def test_headroom_in_memory_writes_every_figure_in_binary_units_and_reads_rules_after_a_capped_one() -> None:
    """Memory rules: the wanted, free and short figures are written as memory (`Gi`/`Mi`, not bytes),
    whether the group grows, is cooling down or is at its max size; a rule after one that hit a
    limit is still read."""
    templates = [
        whole_group("ng-capped", desired=1, nodes=1, max_size=1),
        whole_group("ng-cool", desired=1, nodes=1),
        whole_group("ng-grow", desired=1, nodes=1),
    ]
    nodes = [
        whole_node("n-capped", "ng-capped", memory="1Gi"),
        whole_node("n-cool", "ng-cool", memory="1Gi"),
        whole_node("n-grow", "ng-grow", memory="1Gi"),
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
    p = headroom_of("ng:cpu=1", [whole_group("ng", desired=1, nodes=1)], [whole_node("n1", "ng", cpu="999m")])
    reason = "headroom: keep 1 cpu free in ng, 999m is; 1 node(s) added"
    assert p.headroom == (HeadroomLine("ng", "cpu", "1", added=1, free="999m", reason=reason),)


def test_headroom_grows_a_group_whose_new_node_offers_one_milli_unit() -> None:
    """DaemonSets leave 1m of cpu on a new node: a rule of 2m adds two nodes (not "offers no cpu")."""
    templates = [whole_group("ng", overhead={"cpu": "1929m"})]
    p = headroom_of("ng:cpu=2m", templates, [])
    reason = "headroom: keep 2m cpu free in ng, 0 is; 2 node(s) added"
    assert p.headroom == (HeadroomLine("ng", "cpu", "2m", added=2, free="0", reason=reason),)


def test_headroom_counts_nothing_free_on_a_node_on_its_way_that_offers_none() -> None:
    """A node on its way of a group whose nodes offer no pod-eni adds 0 free, not 1."""
    templates = [whole_group("ng", pod_eni="0", desired=2, nodes=1)]
    p = headroom_of("ng:pod-eni=1", templates, [whole_node("n1", "ng", pod_eni="0")])
    assert p.headroom == (
        HeadroomLine("ng", POD_ENI, "1", free="0", reason=f"a new node of ng offers no {POD_ENI}"),
    )


def test_headroom_counts_nothing_free_on_a_new_node_the_pods_filled() -> None:
    """The pod takes all 1930m of the new node: 0 cpu is free on it, so a rule of 1 cpu adds one more."""
    p = headroom_of("ng:cpu=1", [whole_group("ng")], [], shapes=[whole_shape("p", 1, "1930m")])
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
    p = headroom_of("ng:pod-eni=20;ng:cpu=3", [whole_group("ng")], [])
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
    p = plan([whole_shape("p", 1, "1500m")], [whole_group("ng-a", cpu="1"), whole_group("ng-b")], now=NOW)
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
    templates = [whole_group(f"ng-a{i}", cpu="1500m", max_size=2) for i in range(1, 9)] + [
        whole_group("ng-z", cpu="4")
    ]
    p = plan([whole_shape("p", 3, "1")], templates, now=NOW)
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
    templates = [whole_group(f"ng-p{i}", cpu="4") for i in range(1, 9)] + [whole_group("ng-best", cpu="1")]
    config = PlannerOptions(priorities=parse_priorities("5:\n  - ng-p.*\n"))
    p = plan([whole_shape("p", 1, "1")], templates, now=NOW, config=config)
    assert _grown(p) == one_scale_up("ng-best", 1, ["default/p-0"])


def test_a_group_of_priority_zero_is_shortlisted_after_those_of_priority_one() -> None:
    """The priority expander alone: ng-a..ng-h have priority 1, ng-zero 0. ng-zero wastes least and
    ng-a most, but the shortlist ranks priority first, so all eight of priority 1 are packed and the
    expander's tie among them goes to the first by name, ng-a."""
    templates = [whole_group("ng-a", cpu="4")] + [whole_group(f"ng-{c}", cpu="2") for c in "bcdefgh"]
    templates.append(whole_group("ng-zero", cpu="1"))
    config = PlannerOptions(
        expanders=(PRIORITY,), priorities=parse_priorities("1:\n  - ng-[a-h]\n0:\n  - ng-zero\n")
    )
    p = plan([whole_shape("p", 1, "1")], templates, now=NOW, config=config)
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
    p = plan([whole_shape("p", 1, "1500m")], [whole_group("ng", overhead=overhead)], now=NOW)
    assert p.to_json() == _not_helped_only(reason)


def test_pods_are_placed_largest_first_by_their_share_of_the_largest_node() -> None:
    """Shares of the largest node (1930m, 7220Mi): cpu-heavy (1900m, 1Mi) is 0.98 of it, memory-heavy
    (100m, 4Gi) 0.62, so cpu-heavy is placed first and takes n1; by raw milli-units memory would
    weigh millions of times more and memory-heavy would go first."""
    cpu_heavy = needing("cpu-heavy", 1, cpu="1900m", memory="1Mi")
    memory_heavy = needing("memory-heavy", 1, cpu="100m", memory="4Gi")
    nodes = [whole_node("n1", "ng", cpu="2", memory="4Gi", pods="10")]
    p = plan([memory_heavy, cpu_heavy], [whole_group("ng", desired=1, nodes=1, max_size=1)], nodes, now=NOW)
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
    templates = [whole_group("ng", max_size=1)]
    p = headroom_of("ng:memory=16Gi;ng:cpu=1", templates, [], shapes=[whole_shape("p", 1, "1500m")])
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
