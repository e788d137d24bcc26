"""The fit check speaks the scheduler's language: resources, node affinity, taints."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capacity.fit import (
    AFFINITY_MISMATCH,
    MEMO_SIZE,
    TOO_MANY_PODS,
    Offer,
    PodNeeds,
    Reason,
    check_fit,
    fits,
    is_scheduled_resource,
    offer_of,
)
from capacity.quantity import canonical_quantity, parse_quantity
from capacity.selectors import SelectorError
from capacity.taints import Taint, Toleration, first_untolerated, parse_tolerations
from capacity.template import View
from tests.budget import examples

M5_LARGE = View(
    allocatable={
        "cpu": parse_quantity("1930m"),
        "memory": parse_quantity("7220Mi"),
        "ephemeral-storage": parse_quantity("19136439364"),
        "pods": parse_quantity("29"),
        "vpc.amazonaws.com/pod-eni": parse_quantity("9"),
    },
    labels={"node.kubernetes.io/instance-type": "m5.large", "kubernetes.io/os": "linux", "tier": "2"},
)


def pod(requests: dict[str, str] | None = None, **spec: object) -> PodNeeds:
    return PodNeeds.from_spec(
        {"containers": [{"name": "a", "resources": {"requests": requests or {}}}], **spec}
    )


def messages(needs: PodNeeds, view: View = M5_LARGE, **kw: object) -> list[str]:
    return [r.message for r in check_fit(needs, view, **kw)]  # type: ignore[arg-type]


def test_a_small_pod_fits() -> None:
    assert messages(pod({"cpu": "1", "memory": "1Gi"})) == []


def test_insufficient_resources_use_the_scheduler_words_and_carry_figures() -> None:
    reasons = check_fit(pod({"ephemeral-storage": "30Gi", "cpu": "4"}), M5_LARGE)
    assert [r.message for r in reasons] == ["Insufficient cpu", "Insufficient ephemeral-storage"]
    storage = reasons[1]
    assert storage.requested == parse_quantity("30Gi")
    assert storage.available == parse_quantity("19136439364")


def test_a_missing_allocatable_key_counts_as_zero() -> None:
    t3 = View({"cpu": 2000, "memory": parse_quantity("8Gi"), "pods": 35_000})
    assert messages(pod({"vpc.amazonaws.com/pod-eni": "1"}), t3) == ["Insufficient vpc.amazonaws.com/pod-eni"]
    assert messages(pod(), View({"cpu": 2000})) == [TOO_MANY_PODS]


def test_daemonset_overhead_can_tip_a_pod_over() -> None:
    needs = pod({"cpu": "1800m"})
    assert fits(needs, M5_LARGE)
    assert messages(needs, overhead={"cpu": 200}) == ["Insufficient cpu"]


def test_daemonset_pods_count_against_allocatable_pods() -> None:
    assert messages(pod(), overhead_pods=29) == [TOO_MANY_PODS]
    assert messages(pod(), overhead_pods=28) == []


def test_memory_is_compared_in_whole_units_rounded_up() -> None:
    view = View({"memory": 1000, "pods": 10_000})  # 1 byte
    assert fits(pod({"memory": "1"}), view)
    assert not fits(pod({"memory": "1001m"}), view)  # rounds up to 2 bytes


def test_unscheduled_resource_names_are_ignored_like_the_scheduler_does() -> None:
    assert fits(pod({"storage": "1Ti"}), M5_LARGE)


@pytest.mark.parametrize(
    ("operator", "values", "matches"),
    [
        ("In", ["m5.large", "m5.xlarge"], True),
        ("In", ["c5.large"], False),
        ("NotIn", ["c5.large"], True),
        ("NotIn", ["m5.large"], False),
        ("Exists", [], True),
        ("DoesNotExist", [], False),
    ],
)
def test_node_affinity_operators_on_a_present_label(operator: str, values: list[str], matches: bool) -> None:
    expr = {"key": "node.kubernetes.io/instance-type", "operator": operator, "values": values}
    needs = pod(affinity=_required([[expr]]))
    assert (messages(needs) == []) is matches


@pytest.mark.parametrize(
    ("operator", "values", "matches"),
    [("NotIn", ["x"], True), ("DoesNotExist", [], True), ("In", ["x"], False), ("Exists", [], False)],
)
def test_node_affinity_operators_on_an_absent_label(operator: str, values: list[str], matches: bool) -> None:
    needs = pod(affinity=_required([[{"key": "absent", "operator": operator, "values": values}]]))
    assert (messages(needs) == []) is matches


@pytest.mark.parametrize(
    ("operator", "bound", "matches"),
    [("Gt", "1", True), ("Gt", "2", False), ("Lt", "3", True), ("Lt", "2", False)],
)
def test_gt_and_lt_compare_label_values_as_integers(operator: str, bound: str, matches: bool) -> None:
    needs = pod(affinity=_required([[{"key": "tier", "operator": operator, "values": [bound]}]]))
    assert fits(needs, M5_LARGE) is matches


def test_gt_on_a_non_integer_label_does_not_match() -> None:
    needs = pod(affinity=_required([[{"key": "kubernetes.io/os", "operator": "Gt", "values": ["1"]}]]))
    assert not fits(needs, M5_LARGE)


def test_terms_are_ored_and_expressions_anded() -> None:
    ok = {"key": "tier", "operator": "In", "values": ["2"]}
    bad = {"key": "tier", "operator": "In", "values": ["3"]}
    assert fits(pod(affinity=_required([[bad], [ok]])), M5_LARGE)
    assert not fits(pod(affinity=_required([[ok, bad]])), M5_LARGE)


def test_an_empty_term_matches_nothing_and_match_fields_never_match_a_future_node() -> None:
    assert not fits(pod(affinity=_required([[]])), M5_LARGE)
    fields_term = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]
    }
    assert not fits(
        pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": fields_term}}),
        M5_LARGE,
    )


def test_node_selector_and_affinity_must_both_match() -> None:
    ok = {"key": "tier", "operator": "Exists"}
    assert messages(pod(nodeSelector={"tier": "9"}, affinity=_required([[ok]]))) == [AFFINITY_MISMATCH]
    assert messages(pod(nodeSelector={"tier": "2"}, affinity=_required([[ok]]))) == []


def test_invalid_operator_is_a_clear_error() -> None:
    with pytest.raises(SelectorError, match="unknown operator 'Near'"):
        pod(affinity=_required([[{"key": "a", "operator": "Near", "values": []}]]))


TAINTED = View(dict(M5_LARGE.allocatable), M5_LARGE.labels, (Taint("dedicated", "batch", "NoSchedule"),))


@pytest.mark.parametrize(
    ("tolerations", "tolerated"),
    [
        ([], False),
        ([{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}], True),
        ([{"key": "dedicated", "value": "batch"}], True),  # operator defaults to Equal, any effect
        ([{"key": "dedicated", "operator": "Equal", "value": "web"}], False),
        ([{"key": "dedicated", "operator": "Exists"}], True),
        ([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], False),
        ([{"operator": "Exists"}], True),  # empty key with Exists tolerates everything
        ([{"key": "other", "operator": "Exists"}], False),
    ],
)
def test_toleration_forms(tolerations: list[dict], tolerated: bool) -> None:
    got = messages(pod(tolerations=tolerations), TAINTED)
    assert got == ([] if tolerated else ["node(s) had untolerated taint {dedicated: batch}"])


@pytest.mark.parametrize(
    ("effect", "filters"), [("NoSchedule", True), ("NoExecute", True), ("PreferNoSchedule", False)]
)
def test_only_noschedule_and_noexecute_taints_filter(effect: str, filters: bool) -> None:
    view = View(dict(M5_LARGE.allocatable), {}, (Taint("k", "v", effect),))
    assert (not fits(pod(), view)) is filters


def _required(terms: list[list[dict]]) -> dict:
    node_terms = [{"matchExpressions": exprs} for exprs in terms]
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_terms}}
    }


# --- properties -------------------------------------------------------------------------------

RESOURCES = ["cpu", "memory", "ephemeral-storage", "vpc.amazonaws.com/pod-eni", "nvidia.com/gpu"]
quantities = st.integers(min_value=0, max_value=10**15).map(canonical_quantity)
resource_maps = st.dictionaries(st.sampled_from(RESOURCES), quantities, max_size=4)
label_keys = st.sampled_from(["a", "b", "tier", "kubernetes.io/os"])
label_values = st.sampled_from(["1", "2", "x", "linux"])
expressions = st.one_of(
    st.fixed_dictionaries(
        {
            "key": label_keys,
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(label_values, max_size=3),
        }
    ),
    st.fixed_dictionaries({"key": label_keys, "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
    st.fixed_dictionaries(
        {
            "key": label_keys,
            "operator": st.sampled_from(["Gt", "Lt"]),
            "values": st.integers(-5, 5).map(lambda i: [str(i)]),
        }
    ),
)
tolerations = st.fixed_dictionaries(
    {},
    optional={
        "key": label_keys,
        "operator": st.sampled_from(["Equal", "Exists"]),
        "value": label_values,
        "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
    },
)
containers = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.just("c"),
            "resources": st.fixed_dictionaries({"requests": resource_maps, "limits": resource_maps}),
        }
    ),
    min_size=1,
    max_size=3,
)
init_containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.just("i"), "resources": st.fixed_dictionaries({"requests": resource_maps})},
        optional={"restartPolicy": st.just("Always")},
    ),
    max_size=3,
)
pod_specs = st.fixed_dictionaries(
    {"containers": containers},
    optional={
        "initContainers": init_containers,
        "overhead": resource_maps,
        "nodeSelector": st.dictionaries(label_keys, label_values, max_size=2),
        "tolerations": st.lists(tolerations, max_size=3),
        "affinity": st.lists(st.lists(expressions, min_size=1, max_size=3), min_size=1, max_size=3).map(
            _required
        ),
    },
)
views = st.builds(
    View,
    allocatable=st.dictionaries(st.sampled_from([*RESOURCES, "pods"]), st.integers(0, 10**16), max_size=6),
    labels=st.dictionaries(label_keys, label_values, max_size=4),
    taints=st.lists(
        st.builds(
            Taint, label_keys, label_values, st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])
        ),
        max_size=2,
    ).map(tuple),
)


@settings(max_examples=examples(300))
@given(pod_specs, views)
def test_fit_check_never_raises_on_a_pod_the_api_would_accept(spec: dict, view: View) -> None:
    reasons = check_fit(PodNeeds.from_spec(spec), view)
    assert all(r.message for r in reasons)


@settings(max_examples=examples(300))
@given(pod_specs, views, st.dictionaries(st.sampled_from([*RESOURCES, "pods"]), st.integers(0, 10**16)))
def test_more_allocatable_never_turns_a_fit_into_a_non_fit(
    spec: dict, view: View, extra: dict[str, int]
) -> None:
    needs = PodNeeds.from_spec(spec)
    bigger = View(
        {k: view.allocatable.get(k, 0) + extra.get(k, 0) for k in {*view.allocatable, *extra}},
        view.labels,
        view.taints,
    )
    if fits(needs, view):
        assert fits(needs, bigger)


# --- whole answers (the mutation run of capacity/fit.py, docs/testing.md) ---------------------------
# Every Reason with its figures, what a pod's needs compile to, the scheduler's units per resource
# and the per-view memo of offers, each expected value written out.

GIB = 2**30

NODE = View(
    allocatable={"cpu": 2000, "memory": 4 * GIB * 1000, "pods": 3000, "vpc.amazonaws.com/pod-eni": 2000},
    labels={"tier": "2", "zone": "a"},
)


def needs(requests: dict[str, str] | None = None, **spec: object) -> PodNeeds:
    return PodNeeds.from_spec(
        {"containers": [{"name": "c", "resources": {"requests": requests or {}}}], **spec}
    )


def required(*exprs: dict) -> dict:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
            }
        }
    }


@pytest.mark.parametrize(
    ("name", "scheduled"),
    [
        ("cpu", True),
        ("memory", True),
        ("ephemeral-storage", True),
        ("vpc.amazonaws.com/pod-eni", True),
        ("hugepages-2Mi", True),
        ("attachable-volumes-aws-ebs", True),
        ("pods", False),
        ("storage", False),
        ("HUGEPAGES-2Mi", False),
        ("xhugepages-2Mi", False),
    ],
)
def test_which_resources_the_fit_filter_compares(name: str, scheduled: bool) -> None:
    """Native, extended (`a/b`), hugepages-* and attachable-volumes-* are compared; others are not."""
    assert is_scheduled_resource(name) is scheduled


def test_hugepages_and_volume_requests_are_checked_against_allocatable() -> None:
    """A hugepages or attachable-volumes request the node lacks is `Insufficient <name>`."""
    pod = needs({"hugepages-2Mi": "4Mi", "attachable-volumes-aws-ebs": "1"})
    assert check_fit(pod, NODE) == [
        Reason("Insufficient attachable-volumes-aws-ebs", "attachable-volumes-aws-ebs", 1000, 0, 0),
        Reason("Insufficient hugepages-2Mi", "hugepages-2Mi", 4 * 2**20 * 1000, 0, 0),
    ]


def test_every_reason_is_reported_whole_with_its_figures() -> None:
    """Taint, affinity, pod count and each insufficient resource, in that order, with the
    request, the free amount after DaemonSet overhead and the allocatable before it."""
    taint = Taint("dedicated", "batch", "NoExecute")
    view = View(
        {"cpu": 2000, "memory": 4 * GIB * 1000, "pods": 3000},
        {"tier": "2"},
        (Taint("soft", "x", "PreferNoSchedule"), taint),
    )
    pod = needs({"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "1"}, nodeSelector={"tier": "3"})
    got = check_fit(pod, view, {"cpu": 600, "memory": 1000, "nvidia.com/gpu": 500}, 3)
    assert got == [
        Reason("node(s) had untolerated taint {dedicated: batch}", taint=taint),
        Reason(AFFINITY_MISMATCH),
        Reason(TOO_MANY_PODS, "pods", 1000, 0, 3000),
        Reason("Insufficient cpu", "cpu", 1500, 1400, 2000),
        Reason("Insufficient memory", "memory", 4 * GIB * 1000, 4 * GIB * 1000 - 1000, 4 * GIB * 1000),
        Reason("Insufficient nvidia.com/gpu", "nvidia.com/gpu", 1000, -500, 0),
    ]


def test_too_many_pods_carries_the_pod_figures() -> None:
    """`Too many pods` names the pods resource: one wanted, free and allocatable in milli-units."""
    view = View({"cpu": 2000, "pods": 2000})
    assert check_fit(needs(), view, None, 4) == [Reason(TOO_MANY_PODS, "pods", 1000, -2000, 2000)]
    assert check_fit(needs(), View({"cpu": 2000})) == [Reason(TOO_MANY_PODS, "pods", 1000, 0, 0)]


def test_cpu_is_compared_in_milli_units_and_the_rest_in_whole_units_rounded_up() -> None:
    """1.5 bytes of allocatable memory is 2 bytes to the scheduler, so 1.8 bytes fit; 1.5 cpu is
    not rounded, so 1501m does not; an overhead absent from allocatable leaves a negative free."""
    view = View({"cpu": 1500, "memory": 1500, "pods": 1000})
    assert check_fit(needs({"memory": "1800m", "cpu": "1500m"}), view) == []
    assert check_fit(needs({"memory": "2001m"}), view) == [
        Reason("Insufficient memory", "memory", 2001, 1500, 1500)
    ]
    assert check_fit(needs({"cpu": "1501m"}), view) == [Reason("Insufficient cpu", "cpu", 1501, 1500, 1500)]
    assert check_fit(needs({"cpu": "1500m"}), view, {"cpu": 1}) == [
        Reason("Insufficient cpu", "cpu", 1500, 1499, 1500)
    ]
    assert check_fit(needs({"memory": "1"}), view, {"memory": 1}) == []  # 1499m still rounds up to 2


def test_a_resource_in_allocatable_only_is_free_whole_without_overhead() -> None:
    """Without overhead every allocatable resource is free in full: exactly 2 cpu fits 2 cpu."""
    view = View({"cpu": 2000, "pods": 1000})
    assert fits(needs({"cpu": "2"}), view)
    assert fits(needs({"cpu": "2"}), view, {})
    assert check_fit(needs({"cpu": "2"}), view, {"memory": 5}) == []


def test_fits_passes_the_overhead_and_pod_count_on() -> None:
    """`fits` judges with the given DaemonSet overhead and pod count, and without any by default."""
    one_pod = View({"cpu": 1000, "pods": 1000})
    pod = needs({"cpu": "1"})
    assert fits(pod, one_pod) is True
    assert fits(pod, one_pod, {"cpu": 1}) is False
    assert fits(pod, one_pod, None, 1) is False
    assert fits(pod, one_pod, {}, 0) is True


def test_the_pod_count_overhead_defaults_to_none_everywhere() -> None:
    """A view allowing one pod takes a pod when no DaemonSet pod count is given."""
    one_pod = View({"cpu": 1000, "pods": 1000})
    assert check_fit(needs(), one_pod) == []
    assert offer_of(one_pod).pods_free == 1


def test_an_offer_holds_the_free_amounts_in_both_units() -> None:
    """The offer of a view: milli-units after overhead (every resource allocatable or used), the
    scheduler's units, pods allowed and free, and only the filtering taints."""
    hard = Taint("a", "1", "NoSchedule")
    view = View(
        {"cpu": 1500, "memory": 2500, "pods": 5000},
        {},
        (Taint("b", "2", "PreferNoSchedule"), hard, Taint("c", "", "NoExecute")),
    )
    offer = offer_of(view, {"cpu": 100, "nvidia.com/gpu": 1000}, 2)
    assert offer.view is view
    assert offer.free == {"cpu": 1400, "memory": 2500, "pods": 5000, "nvidia.com/gpu": -1000}
    assert offer.comparable_free == {"cpu": 1400, "memory": 3, "pods": 5, "nvidia.com/gpu": -1}
    assert (offer.pods_allowed, offer.pods_free) == (5, 3)
    assert offer.taints == (hard, Taint("c", "", "NoExecute"))


def test_offers_are_kept_per_overhead_object_and_pod_count() -> None:
    """The same overhead object and pod count reuse the offer; another pod count, an equal but
    different overhead object, or no overhead make new ones; past MEMO_SIZE the memo starts over."""
    view = View({"cpu": 1000, "pods": 4000})
    overhead = {"cpu": 100}
    first = offer_of(view, overhead, 1)
    assert offer_of(view, overhead, 1) is first
    other_count = offer_of(view, overhead, 2)
    assert other_count is not first
    assert other_count.pods_free == 2
    assert offer_of(view, overhead, 2) is other_count  # replaced the entry of that overhead
    assert offer_of(view, {"cpu": 100}, 2).free == {"cpu": 900, "pods": 4000}
    bare = offer_of(view)
    assert bare.free == {"cpu": 1000, "pods": 4000}
    assert offer_of(view) is bare
    keep = [{"cpu": i} for i in range(MEMO_SIZE)]
    assert MEMO_SIZE == 8
    view2 = View({"cpu": 1000, "pods": 4000})
    offers = [offer_of(view2, o) for o in keep]
    assert len(view2.memo) == MEMO_SIZE
    assert [offer_of(view2, o) for o in keep] == offers  # all kept: none recompiled differently
    assert all(offer_of(view2, o) is offers[i] for i, o in enumerate(keep))
    ninth = {"cpu": 8}
    offer_of(view2, ninth)
    assert len(view2.memo) == 1
    assert offer_of(view2, keep[0]) is not offers[0]


def test_what_a_pod_compiles_to() -> None:
    """Requests, the checked (resource, scheduler units) pairs of scheduled non-zero requests, the
    tolerations, the positive selector keys (deduplicated, selector first) and the workload key."""
    spec = {
        "containers": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "250m", "memory": "1500m", "storage": "1", "x/y": "0"}},
            }
        ],
        "nodeSelector": {"zone": "a", "tier": "2"},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": required(
            {"key": "pool", "operator": "In", "values": ["2"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "size", "operator": "Gt", "values": ["1"]},
            {"key": "age", "operator": "Lt", "values": ["9"]},
            {"key": "old", "operator": "NotIn", "values": ["x"]},
            {"key": "bad", "operator": "DoesNotExist"},
        ),
    }
    pod = PodNeeds.from_spec(spec)
    assert pod.requests == {"cpu": 250, "memory": 1500, "storage": 1000, "x/y": 0}
    assert pod.checked == (("cpu", 250), ("memory", 2))
    assert pod.tolerations == (Toleration("k", "Exists", "", "NoSchedule"),)
    assert pod.selector_keys == ("zone", "tier", "pool", "gpu", "size", "age")
    placement = (
        '[{"tier": "2", "zone": "a"}, {"nodeSelectorTerms": [{"matchExpressions": ['
        '{"key": "pool", "operator": "In", "values": ["2"]}, {"key": "gpu", "operator": "Exists"}, '
        '{"key": "size", "operator": "Gt", "values": ["1"]}, '
        '{"key": "age", "operator": "Lt", "values": ["9"]}, '
        '{"key": "old", "operator": "NotIn", "values": ["x"]}, '
        '{"key": "bad", "operator": "DoesNotExist"}]}]}]'
    )
    assert pod.key == (
        (("cpu", 250), ("memory", 2)),
        (Toleration("k", "Exists", "", "NoSchedule"),),
        placement,
    )


def test_a_pod_without_placement_compiles_to_empty_keys() -> None:
    """No selector, no affinity, no tolerations: nothing to explain and a `[null, null]` placement."""
    pod = needs({"cpu": "1"})
    assert pod.selector_keys == ()
    assert pod.tolerations == ()
    assert pod.key == ((("cpu", 1000),), (), "[null, null]")
    assert pod.node_match({}) is True


@pytest.mark.parametrize(
    ("labels", "matches"),
    [
        ({"zone": "a", "tier": "2"}, True),
        ({"zone": "b", "tier": "2"}, False),  # selector fails, affinity holds
        ({"zone": "a", "tier": "3"}, False),  # selector holds, affinity fails
        ({"zone": "a"}, False),
    ],
)
def test_selector_and_affinity_are_anded(labels: dict[str, str], matches: bool) -> None:
    """The pod matches a node only when both its nodeSelector and its required affinity do."""
    pod = needs(
        nodeSelector={"zone": "a"}, affinity=required({"key": "tier", "operator": "In", "values": ["2"]})
    )
    assert pod.node_match(labels) is matches


def test_affinity_alone_is_the_match() -> None:
    """With no nodeSelector the required affinity decides alone."""
    pod = needs(affinity=required({"key": "tier", "operator": "In", "values": ["2"]}))
    assert pod.node_match({"tier": "2"}) is True
    assert pod.node_match({"tier": "1"}) is False


def test_affinity_without_a_required_part_matches_every_node() -> None:
    """An affinity with only preferences (or no nodeAffinity) does not restrict the node."""
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    assert needs(affinity=preferred).node_match({}) is True
    assert needs(affinity={}).node_match({}) is True
    assert needs(affinity={"podAffinity": {}}).key == ((), (), "[null, null]")


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ({"nodeSelector": "a=b"}, TypeError, "spec.nodeSelector: expected a map"),
        ({"affinity": ["x"]}, TypeError, "spec.affinity: expected a map"),
        ({"affinity": {"nodeAffinity": 1}}, TypeError, "spec.affinity.nodeAffinity: expected a map"),
        (
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}},
            TypeError,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: expected a map",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}
                    }
                }
            },
            ValueError,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms:"
            " expected a list of terms",
        ),
        (
            {"affinity": required({"key": "a", "operator": "Near"})},
            ValueError,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
            ".matchExpressions[0]: unknown operator 'Near'",
        ),
        ({"tolerations": {"key": "a"}}, TypeError, "spec.tolerations: expected a list of tolerations"),
    ],
)
def test_a_malformed_spec_names_the_field(spec: dict, error: type[Exception], message: str) -> None:
    """Every malformed part of the spec raises with the whole message naming its field."""
    with pytest.raises(error) as raised:
        PodNeeds.from_spec({"containers": [], **spec})
    assert str(raised.value) == message


def test_the_field_prefix_is_the_callers() -> None:
    """Errors name the field the caller passed (a workload's template, say)."""
    with pytest.raises(TypeError) as raised:
        PodNeeds.from_spec({"containers": [], "affinity": {"nodeAffinity": 1}}, "spec.template.spec")
    assert str(raised.value) == "spec.template.spec.affinity.nodeAffinity: expected a map"
    with pytest.raises(TypeError) as raised:
        PodNeeds.from_spec({"containers": [], "tolerations": 1}, "t")
    assert str(raised.value) == "t.tolerations: expected a list of tolerations"
    with pytest.raises(ValueError) as raised:
        PodNeeds.from_spec({"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}, "t")
    assert str(raised.value) == "t.containers[0].resources.requests.cpu: must not be negative"


# -- taints and tolerations whole (the mutation run of capacity/taints.py) ---------------------


@pytest.mark.parametrize(
    ("raw", "taint", "back"),
    [
        (
            {"key": "k", "value": "v", "effect": "NoExecute"},
            Taint("k", "v", "NoExecute"),
            {"key": "k", "value": "v", "effect": "NoExecute"},
        ),
        (
            {"key": "k", "effect": "NoSchedule"},
            Taint("k", "", "NoSchedule"),
            {"key": "k", "effect": "NoSchedule"},
        ),
        (
            {"key": "k", "value": None, "effect": "NoSchedule"},
            Taint("k", "", "NoSchedule"),
            {"key": "k", "effect": "NoSchedule"},
        ),
        ({}, Taint("", "", ""), {"key": "", "effect": ""}),
    ],
)
def test_a_taint_reads_and_writes_its_api_form(raw: dict, taint: Taint, back: dict) -> None:
    """Taint.from_object and to_object: an empty value is left out of the API form."""
    assert Taint.from_object(raw) == taint
    assert taint.to_object() == back


def test_a_taint_defaults_to_no_value_and_no_schedule() -> None:
    """Taint("k") is `k:NoSchedule` with no value."""
    assert Taint("k") == Taint("k", "", "NoSchedule")


@pytest.mark.parametrize(
    ("raw", "toleration"),
    [
        ({}, Toleration("", "Equal", "", "")),
        ({"key": None, "operator": None, "value": None, "effect": None}, Toleration("", "Equal", "", "")),
        (
            {"key": "k", "operator": "Exists", "value": "v", "effect": "NoExecute"},
            Toleration("k", "Exists", "v", "NoExecute"),
        ),
    ],
)
def test_a_toleration_reads_its_api_form(raw: dict, toleration: Toleration) -> None:
    """Missing or null fields: no key, operator Equal, no value, any effect."""
    assert Toleration.from_object(raw) == toleration
    assert Toleration() == Toleration("", "Equal", "", "")


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        (Toleration("k", "Equal", "v", ""), Taint("k", "v", "NoSchedule"), True),
        (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoExecute"), False),
        (Toleration("k", "Equal", "v", "NoExecute"), Taint("k", "v", "NoExecute"), True),
        (Toleration("k", "Equal", "w", ""), Taint("k", "v", "NoSchedule"), False),
        (Toleration("k", "Equal", "", ""), Taint("k", "", "NoSchedule"), True),
        (Toleration("j", "Exists", "", ""), Taint("k", "v", "NoSchedule"), False),
        (Toleration("", "Exists", "", ""), Taint("k", "v", "NoExecute"), True),
        (Toleration("", "Equal", "v", ""), Taint("k", "v", "NoSchedule"), True),  # empty key: any key
        (Toleration("k", "Near", "v", ""), Taint("k", "v", "NoSchedule"), False),
    ],
)
def test_which_toleration_tolerates_which_taint(
    toleration: Toleration, taint: Taint, tolerated: bool
) -> None:
    """v1.Toleration.ToleratesTaint: the effect (when set) and the key (when set) must agree; Exists
    tolerates any value, Equal only its own, any other operator nothing."""
    assert toleration.tolerates(taint) is tolerated


def test_the_first_untolerated_filtering_taint_is_reported() -> None:
    """PreferNoSchedule never filters; the first NoSchedule/NoExecute taint not tolerated is the one."""
    soft, a, b = (
        Taint("s", "", "PreferNoSchedule"),
        Taint("a", "1", "NoSchedule"),
        Taint("b", "2", "NoExecute"),
    )
    assert first_untolerated([soft, a, b], ()) == a
    assert first_untolerated([soft, a, b], (Toleration("a", "Exists"),)) == b
    assert first_untolerated([soft, a, b], (Toleration("a", "Exists"), Toleration("b", "Equal", "2"))) is None
    assert first_untolerated([soft], ()) is None
    assert first_untolerated([], ()) is None


@pytest.mark.parametrize("raw", [{"key": "a"}, [{"key": "a"}, "b"], "x"])
def test_tolerations_that_are_not_a_list_of_maps_are_refused(raw: object) -> None:
    """parse_tolerations names the field and says what it expected."""
    with pytest.raises(TypeError) as raised:
        parse_tolerations(raw, "f")
    assert str(raised.value) == "f: expected a list of tolerations"
    assert parse_tolerations(None, "f") == ()
    assert parse_tolerations([], "f") == ()
    assert parse_tolerations([{"key": "a"}], "f") == (Toleration("a", "Equal", "", ""),)


def test_an_offer_made_directly_counts_no_overhead_by_default() -> None:
    """Offer.of without overhead arguments: everything allocatable is free, every pod slot too."""
    view = View({"cpu": 1000, "pods": 2000})
    offer = Offer.of(view)
    assert (offer.free, offer.comparable_free, offer.pods_allowed, offer.pods_free) == (
        {"cpu": 1000, "pods": 2000},
        {"cpu": 1000, "pods": 2},
        2,
        2,
    )


def test_a_key_both_selected_and_required_is_named_once() -> None:
    """selector_keys drops a repeated key, keeping its first place."""
    pod = needs(
        nodeSelector={"zone": "a"}, affinity=required({"key": "zone", "operator": "In", "values": ["a"]})
    )
    assert pod.selector_keys == ("zone",)


def test_the_smallest_request_is_checked() -> None:
    """One milli-cpu is a request: checked, and insufficient on a node offering none."""
    pod = needs({"cpu": "1m"})
    assert pod.checked == (("cpu", 1),)
    assert check_fit(pod, View({"pods": 1000})) == [Reason("Insufficient cpu", "cpu", 1, 0, 0)]


def test_a_placement_value_json_cannot_hold_is_keyed_by_its_text() -> None:
    """A YAML manifest may carry a date where a string belongs (an unquoted label value): the
    workload key holds its text instead of failing."""
    pod = needs(nodeSelector={"since": date(2024, 5, 1)})
    assert pod.key == ((), (), '[{"since": "2024-05-01"}, null]')
