"""What cluster-autoscaler's least-waste expander scores, and how fitguard decides what it leaves to
chance (kubernetes-sigs/cluster-autoscaler 33c3f97b):

- expander/waste/waste.go `resourcesForNode` reads the node's `Status.Capacity` cpu and memory, not
  its allocatable: the planner scores a new node of a group by its view's capacity (the live node's
  `status.capacity`, or the instance type's vCPUs and memory for an estimate), falling back to the
  allocatable where a view names no capacity (as a node built from tags has: allocatable = capacity);
- expander/factory/chain.go `BestOption` ends in the random expander among the options left equal:
  fitguard takes the fewest nodes, then the most pods, then the group's name, and says so in the plan;
- the planner's fluid estimate only ranks the groups worth packing exactly: groups it scores equal at
  the shortlist's cut are all packed, so an exact fit is not cut out by an optimistic estimate.

Expected values are written out here, never computed by the code under test."""

from __future__ import annotations

from typing import Any

from capacity.autoscaler_view import InstanceShape
from capacity.demand import PodRef, PodShape
from capacity.expander import LEAST_WASTE, PRIORITY, Choice, Option, choose, parse_priorities
from capacity.fit import PodNeeds
from capacity.instances import lookup
from capacity.planner import plan
from capacity.template import NodeGroupTemplate, View, instance_capacity, live_capacity
from controller.aws.records import AwsNodeGroup
from controller.discovery import actual_view

NOW = 1_700_000_000.0
GI = 2**30 * 1000  # milli-units
RULE = (
    "fitguard takes fewest nodes, then most pods, then the group's name "
    "where cluster-autoscaler picks at random"
)


def view_group(name: str, view: dict[str, Any], max_size: int = 10) -> NodeGroupTemplate:
    spec = {"provider": "aws-asg", "maxSize": max_size, "actual": view}
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def pods(name: str, count: int, requests: dict[str, str]) -> PodShape:
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    return PodShape(name, PodNeeds.from_spec(spec), [PodRef("default", f"{name}-{i}") for i in range(count)])


def grown(p: Any) -> list[dict[str, Any]]:
    return [s.to_json() for s in p.scale_ups]


def up(name: str, to: int, names: list[str], max_size: int = 10, **extra: str) -> dict[str, Any]:
    return {
        "nodeGroup": name,
        "from": 0,
        "to": to,
        "maxSize": max_size,
        "pods": names,
        "reasons": ["pods"],
        **extra,
    }


# -- least-waste scores capacity ---------------------------------------------------------------


def test_least_waste_scores_the_nodes_capacity_not_its_allocatable() -> None:
    """A 2-cpu, 4Gi pod. ng-reserved offers exactly that as allocatable but its nodes have 4 cpu and
    8Gi of capacity (half wasted of each: 1.0); ng-plain offers 3 cpu and 6Gi, allocatable as
    capacity (a third of each: 0.667). On allocatable ng-reserved would waste nothing and win;
    cluster-autoscaler scores capacity, so ng-plain grows."""
    reserved = view_group(
        "ng-reserved",
        {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "29"},
            "capacity": {"cpu": "4", "memory": "8Gi"},
        },
    )
    plain = view_group("ng-plain", {"allocatable": {"cpu": "3", "memory": "6Gi", "pods": "29"}})
    p = plan([pods("p", 1, {"cpu": "2", "memory": "4Gi"})], [reserved, plain], now=NOW)
    assert grown(p) == [up("ng-plain", 1, ["default/p-0"])]


def test_a_view_without_the_capacity_of_one_resource_is_scored_on_its_allocatable_of_it() -> None:
    """ng-half names only its cpu capacity (4, twice its allocatable: half wasted); its memory is
    scored on the allocatable 4Gi (nothing wasted): 0.5 in all. ng-other, 3 cpu and 5Gi of
    allocatable, wastes a third of its cpu and a fifth of its memory: 0.533. ng-half grows."""
    half = view_group(
        "ng-half",
        {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "29"}, "capacity": {"cpu": "4"}},
    )
    other = view_group("ng-other", {"allocatable": {"cpu": "3", "memory": "5Gi", "pods": "29"}})
    p = plan([pods("p", 1, {"cpu": "2", "memory": "4Gi"})], [half, other], now=NOW)
    assert grown(p) == [up("ng-half", 1, ["default/p-0"])]
    assert (half.actual.capacity_of("cpu"), half.actual.capacity_of("memory")) == (4000, 4 * GI)


def test_the_capacity_is_published_and_read_back_whole() -> None:
    """`capacity` sits beside `allocatable` in the published view, and a view without one
    publishes none."""
    raw = {
        "source": "live-node",
        "allocatable": {"cpu": "1930m", "memory": "7220Mi"},
        "capacity": {"cpu": "2", "memory": "7934Mi"},
        "labels": {},
        "taints": [],
    }
    view = View.from_object(raw, "spec.actual", "manual")
    assert view.capacity == {"cpu": 2000, "memory": 7934 * 2**20 * 1000}
    assert view.to_object() == raw
    bare = View.from_object({"allocatable": {"cpu": "1"}}, "spec.actual", "manual")
    assert bare.to_object() == {"source": "manual", "allocatable": {"cpu": "1"}, "labels": {}, "taints": []}


def test_a_live_nodes_capacity_is_its_status_capacity_cpu_and_memory() -> None:
    """Only cpu and memory are kept (what least-waste reads), as the node reports them."""
    node = {
        "status": {
            "capacity": {"cpu": "2", "memory": "7934568Ki", "pods": "29", "ephemeral-storage": "20Gi"},
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
        }
    }
    assert live_capacity(node) == {"cpu": 2000, "memory": 7934568 * 1024 * 1000}
    assert live_capacity({"status": {}}) == {}


def test_an_estimated_nodes_capacity_is_its_instance_types_vcpus_and_memory() -> None:
    """m5.large: 2 vCPUs and 8192 MiB, as cluster-autoscaler's buildNodeFromTemplate sets them."""
    assert instance_capacity(2, 8192) == {"cpu": 2000, "memory": 8 * GI}


def test_discovery_gives_the_live_nodes_capacity_to_the_actual_view() -> None:
    """The actual view taken from a live node carries that node's capacity beside its allocatable."""
    node = {
        "metadata": {"name": "n1", "labels": {"node.kubernetes.io/instance-type": "m5.large"}},
        "status": {
            "capacity": {"cpu": "2", "memory": "7934568Ki", "pods": "29"},
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
        },
    }
    group = AwsNodeGroup("ng", "asg-ng", "aws-asg", instance_types=("m5.large",))
    view = actual_view(group, [node], lookup)
    assert view.to_object() == {
        "source": "live-node",
        "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
        "capacity": {"cpu": "2", "memory": "7934568Ki"},
        "labels": {"node.kubernetes.io/instance-type": "m5.large"},
        "taints": [],
    }


def test_discovery_gives_an_estimated_view_its_instance_types_capacity() -> None:
    """No live node: the estimate's capacity is the type's 2 vCPUs and 8192 MiB."""
    shape = InstanceShape("m5.large", 2, 8192, 0, "amd64")
    group = AwsNodeGroup("ng", "asg-ng", "aws-asg", availability_zones=("us-east-1a",), shape=shape)
    view = actual_view(group, [], lookup)
    assert (view.source, view.capacity) == ("launch-template", {"cpu": 2000, "memory": 8 * GI})


# -- ties ------------------------------------------------------------------------------------------


def option(group: str, nodes: int = 1, pods: int = 1, cpu: int = 1000) -> Option:
    return Option(group, nodes, pods, cpu, GI, 2000, 2 * GI)


def test_a_tie_is_decided_by_fewest_nodes_then_most_pods_then_name_and_says_so() -> None:
    """Four options of equal waste (half of cpu and memory: 1.0): ng-two-nodes needs more nodes, ng-b
    and ng-c take two pods where ng-a takes one, and ng-b comes before ng-c by name."""
    options = [
        option("ng-c", pods=2),
        Option("ng-two-nodes", 2, 2, 2000, 2 * GI, 2000, 2 * GI),
        option("ng-a"),
        option("ng-b", pods=2),
    ]
    choice = choose(options, (LEAST_WASTE,), {})
    assert choice == Choice(option("ng-b", pods=2), True, ("ng-a", "ng-c", "ng-two-nodes"))
    assert choice.explain() == f"tied with ng-a, ng-c, ng-two-nodes at least-waste 1.000: {RULE}"


def test_no_tie_means_no_tie_break_and_no_explanation() -> None:
    """ng-snug wastes nothing of its cpu, ng-loose half: least waste alone decides."""
    snug = option("ng-snug", cpu=2000)
    choice = choose([option("ng-loose"), snug], (LEAST_WASTE,), {})
    assert choice == Choice(snug, True, ())
    assert choice.explain() == ""


def test_a_tie_the_priority_expander_left_carries_no_waste_score() -> None:
    """Priority alone leaves ng-a and ng-b (both priority 5): the tie is named without a score."""
    priorities = parse_priorities("5: [ng-]\n")
    choice = choose([option("ng-b"), option("ng-a")], (PRIORITY,), priorities)
    assert choice == Choice(option("ng-a"), False, ("ng-b",))
    assert choice.explain() == f"tied with ng-b: {RULE}"


def test_a_plan_that_broke_a_tie_says_which_rule_it_used() -> None:
    """Two equal groups and one pod: ng-a grows, and the plan names ng-b and the rule."""
    offer = {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "29"}}
    templates = [view_group(name, offer) for name in ("ng-b", "ng-a")]
    p = plan([pods("p", 1, {"cpu": "1", "memory": "1Gi"})], templates, now=NOW)
    tie = f"tied with ng-b at least-waste 1.250: {RULE}"
    assert grown(p) == [up("ng-a", 1, ["default/p-0"], tieBreak=tie)]


# -- the shortlist's cut -----------------------------------------------------------------------


def test_groups_the_estimate_ties_at_the_cut_are_all_packed_so_the_exact_fit_wins() -> None:
    """Four pods of 1.5 cpu. Eight 2-cpu groups of max size 2, named first, are estimated (fluid) at
    two nodes using all their cpu, as is ng-exact (1.5 cpu) at four: the same estimated waste, and
    the capped groups need fewer nodes, so ranking alone would cut ng-exact (the ninth). Packed
    exactly, a 2-cpu node holds one pod (a quarter of its cpu wasted), ng-exact's nodes none: all
    tied at the cut are packed, and ng-exact takes the four pods."""
    capped = [
        view_group(f"ng-a{i}", {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "29"}}, max_size=2)
        for i in range(8)
    ]
    exact = view_group("ng-exact", {"allocatable": {"cpu": "1500m", "memory": "4Gi", "pods": "29"}})
    p = plan([pods("p", 4, {"cpu": "1500m"})], [*capped, exact], now=NOW)
    assert grown(p) == [up("ng-exact", 4, [f"default/p-{i}" for i in range(4)])]
