"""The fit check speaks the scheduler's language: resources, node affinity, taints."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capacity.fit import AFFINITY_MISMATCH, TOO_MANY_PODS, PodNeeds, check_fit, fits
from capacity.quantity import canonical_quantity, parse_quantity
from capacity.selectors import SelectorError
from capacity.taints import Taint
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
