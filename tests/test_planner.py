"""The pure scale-up planner: FFD onto true free capacity, nodes on their way, then new nodes chosen
by the expander, within max size, max nodes per scale-up, cooldown and one unfinished scale-up; the
headroom; and cluster-autoscaler's words for every pod it does not help."""

from __future__ import annotations

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
from capacity.resources import POD_ENI
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
