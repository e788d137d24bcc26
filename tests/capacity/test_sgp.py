"""SecurityGroupPolicy matching against the VPC resource controller's own test cases, and the rules
of docs/design.md failure 3 that those cases do not pin down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capacity.selectors import (
    SelectorError,
    label_key_errors,
    label_selector,
    label_value_errors,
    node_selector_map,
    node_selector_terms,
)
from capacity.sgp import compile_policy, matching_groups, pod_has_eni_request
from webhook.cluster import ServiceAccountNotFound, from_objects

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance"
CASES_FILE = CONFORMANCE / "vpc-resource-controller-pod-webhook.json"


def _cases(group: str) -> list[Any]:
    if not CASES_FILE.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CASES_FILE} is absent"))]
    cases = [c for c in json.loads(CASES_FILE.read_text()) if c["group"] == group]
    return [pytest.param(c, id=f"{c['id']}-{c['source'].get('case') or c['source']['test']}") for c in cases]


def _labels(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def policy(spec: dict[str, Any], namespace: str = "ns", name: str = "p") -> Any:
    return compile_policy({"metadata": {"namespace": namespace, "name": name}, "spec": spec})


@pytest.mark.parametrize("case", _cases("sgp_matching"))
def test_upstream_sgp_matching_case(case: dict[str, Any]) -> None:
    """Each upstream case gives the same groups: filterPodSecurityGroups cases through
    matching_groups over the same list, GetMatchingSecurityGroupForPods cases through the webhook's
    cluster view (the pod's namespace only, and an error when its ServiceAccount is missing)."""
    pod = case["pod"]
    expected = case["expected"]
    if case["function"].startswith("SecurityGroupForPods.filterPodSecurityGroups"):
        policies = [compile_policy(p) for p in case["security_group_policies"]]
        groups = matching_groups(policies, _labels(pod), _labels(case["service_account"]))
    else:
        objects = [
            *case["security_group_policies"],
            *([case["service_account"]] if case["service_account"] else []),
        ]
        view = from_objects(objects)
        if expected["error"]:
            with pytest.raises(ServiceAccountNotFound, match="test_sa"):
                view.security_groups(pod["metadata"]["namespace"], pod)
            return
        groups = view.security_groups(pod["metadata"]["namespace"], pod)
    assert groups == expected["security_groups"]
    assert bool(groups) is expected["would_inject_pod_eni"]


@pytest.mark.parametrize("case", _cases("pod_has_eni_request"))
def test_upstream_pod_has_eni_request_case(case: dict[str, Any]) -> None:
    """PodHasENIRequest: any container naming pod-eni in its requests, nil pods included."""
    assert pod_has_eni_request(case["pod"]) is case["expected"]["result"]


def test_both_selectors_must_match() -> None:
    """A policy with both selectors needs both: the pod's labels and its ServiceAccount's."""
    p = policy(
        {
            "podSelector": {"matchLabels": {"app": "db"}},
            "serviceAccountSelector": {"matchLabels": {"t": "x"}},
            "securityGroups": {"groupIds": ["sg-a"]},
        }
    )
    assert matching_groups([p], {"app": "db"}, {"t": "x"}) == ["sg-a"]
    assert matching_groups([p], {"app": "db"}, {}) == []
    assert matching_groups([p], {}, {"t": "x"}) == []


def test_policy_without_selector_or_groups_is_ignored() -> None:
    """No selector at all, or no group ids: the policy is invalid and never matches."""
    no_selector = policy({"securityGroups": {"groupIds": ["sg-a"]}})
    no_groups = policy({"podSelector": {}, "securityGroups": {"groupIds": []}})
    no_groups_key = policy({"podSelector": {}})
    assert not no_selector.valid and not no_groups.valid and not no_groups_key.valid
    assert matching_groups([no_selector, no_groups, no_groups_key], {"a": "b"}, {"a": "b"}) == []


def test_empty_selector_matches_everything() -> None:
    """An empty (set, not null) selector matches any labels, none included."""
    p = policy({"serviceAccountSelector": {}, "securityGroups": {"groupIds": ["sg-a"]}})
    assert matching_groups([p], {}, {}) == ["sg-a"]


def test_policies_or_and_groups_deduplicated_in_first_seen_order() -> None:
    """Several matching policies contribute their groups in order, each group once."""
    first = policy({"podSelector": {}, "securityGroups": {"groupIds": ["sg-b", "sg-a"]}}, name="1")
    second = policy({"podSelector": {}, "securityGroups": {"groupIds": ["sg-a", "sg-c", "sg-b"]}}, name="2")
    unmatched = policy({"podSelector": {"matchLabels": {"x": "y"}}, "securityGroups": {"groupIds": ["sg-z"]}})
    assert matching_groups([first, unmatched, second], {}, {}) == ["sg-b", "sg-a", "sg-c"]


def test_selector_that_does_not_compile_never_matches() -> None:
    """An unknown operator makes the selector match nothing (upstream logs and skips), and the
    reason is kept for /snapshotz."""
    p = policy({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]},
                "securityGroups": {"groupIds": ["sg-a"]}})  # fmt: skip
    assert matching_groups([p], {"a": "b"}, {}) == []
    assert "Near" in p.to_object()["error"]


def test_policies_of_other_namespaces_are_not_considered() -> None:
    """The cluster view looks only at the pod's namespace."""
    view = from_objects(
        [
            {"kind": "SecurityGroupPolicy", "metadata": {"namespace": "other", "name": "p"},
             "spec": {"podSelector": {}, "securityGroups": {"groupIds": ["sg-a"]}}},
            {"kind": "ServiceAccount", "metadata": {"namespace": "mine", "name": "default"}},
        ]
    )  # fmt: skip
    assert view.security_groups("mine", {"metadata": {"labels": {}}, "spec": {}}) == []


def test_a_selector_label_selector_as_selector_rejects_keeps_every_reason() -> None:
    """A rejected selector matches nothing and /snapshotz shows why, every reason at once as
    upstream's aggregated error does: here a bad key, an In without values, a bad value."""
    p = policy({"podSelector": {"matchExpressions": [{"key": "a b", "operator": "In"}]},
                "serviceAccountSelector": {"matchLabels": {"team": "x y"}},
                "securityGroups": {"groupIds": ["sg-a"]}})  # fmt: skip
    assert matching_groups([p], {"a b": "c"}, {"team": "x y"}) == []
    assert p.to_object()["error"] == (
        "spec.podSelector.matchExpressions[0]: label key 'a b': the name must be alphanumerics, '-', '_' "
        "or '.', starting and ending with an alphanumeric; In needs at least one value; "
        "spec.serviceAccountSelector.matchLabels: label value 'x y': must be empty or alphanumerics, "
        "'-', '_' or '.', starting and ending with an alphanumeric"
    )


# -- whole answers (the mutation run of capacity/selectors.py and capacity/sgp.py, docs/testing.md) --

_NAME_RULE = "the name must be alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
_VALUE_RULE = "must be empty or alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"


@pytest.mark.parametrize(
    ("key", "errors"),
    [
        ("app", []),
        ("a", []),
        ("a.b-c_d", []),
        ("example.com/app", []),
        ("a/" + "n" * 63, []),
        ("a." * 126 + "a/n", []),  # a 253-character prefix
        ("a/b/c", ["label key 'a/b/c': at most one '/'"]),
        ("/app", ["label key '/app': the prefix must not be empty"]),
        (
            "a." * 126 + "ab/n",
            ["label key '" + "a." * 126 + "ab/n': the prefix is longer than 253"],
        ),
        ("Example.com/app", ["label key 'Example.com/app': the prefix is not a DNS-1123 subdomain"]),
        ("-a.com/app", ["label key '-a.com/app': the prefix is not a DNS-1123 subdomain"]),
        (
            "a.com/",
            [
                "label key 'a.com/': the name must not be empty",
                f"label key 'a.com/': {_NAME_RULE}",
            ],
        ),
        ("", ["label key '': the name must not be empty", f"label key '': {_NAME_RULE}"]),
        ("n" * 64, [f"label key '{'n' * 64}': the name is longer than 63"]),
        ("n" * 63, []),
        ("é", [f"label key 'é': {_NAME_RULE}"]),
        ("_a", [f"label key '_a': {_NAME_RULE}"]),
        ("a-", [f"label key 'a-': {_NAME_RULE}"]),
    ],
)
def test_label_key_errors_are_the_upstream_qualified_name_rules(key: str, errors: list[str]) -> None:
    """validation.IsQualifiedName: one optional DNS-1123 prefix (at most 253) and a name of at most
    63 alphanumerics, '-', '_', '.'; every reason, whole."""
    assert label_key_errors(key) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("", []),
        ("v", []),
        ("a.b-c_d", []),
        ("v" * 63, []),
        ("v" * 64, [f"label value '{'v' * 64}': longer than 63"]),
        ("é" * 32, [f"label value '{'é' * 32}': longer than 63", f"label value '{'é' * 32}': {_VALUE_RULE}"]),
        ("-v", [f"label value '-v': {_VALUE_RULE}"]),
        ("a b", [f"label value 'a b': {_VALUE_RULE}"]),
    ],
)
def test_label_value_errors_are_the_upstream_label_value_rules(value: str, errors: list[str]) -> None:
    """validation.IsValidLabelValue: empty, or at most 63 bytes of the qualified-name characters."""
    assert label_value_errors(value) == errors


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("x", "sel: expected a map"),
        ({"matchLabels": ["a"]}, "sel.matchLabels: expected a map"),
        ({"matchLabels": {"a": 1}}, "sel.matchLabels: expected a map of strings"),
        ({"matchLabels": {1: "a"}}, "sel.matchLabels: expected a map of strings"),
        ({"matchExpressions": {"key": "a"}}, "sel.matchExpressions: expected a list"),
        ({"matchExpressions": ["a"]}, "sel.matchExpressions[0]: expected {key, operator, values}"),
        ({"matchExpressions": [{"key": 1}]}, "sel.matchExpressions[0]: expected {key, operator, values}"),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "b"}]},
            "sel.matchExpressions[0].values: expected a list of strings",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
            "sel.matchExpressions[0].values: expected a list of strings",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "sel.matchExpressions[0]: In needs at least one value",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]},
            "sel.matchExpressions[0]: NotIn needs at least one value",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]},
            "sel.matchExpressions[0]: Exists takes no values",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["b"]}]},
            "sel.matchExpressions[0]: DoesNotExist takes no values",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            "sel.matchExpressions[0]: unknown operator 'Gt'",
        ),
        ({"matchExpressions": [{"key": "a"}]}, "sel.matchExpressions[0]: unknown operator 'None'"),
        (
            {"matchExpressions": [{"key": "ok", "operator": "Exists"}, {"key": "a b", "operator": "Exists"}]},
            f"sel.matchExpressions[1]: label key 'a b': {_NAME_RULE}",
        ),
        ({"matchLabels": {"a": "b c"}}, f"sel.matchLabels: label value 'b c': {_VALUE_RULE}"),
    ],
)
def test_a_label_selector_the_api_rejects_says_why_whole(selector: object, message: str) -> None:
    """Each malformed or rejected LabelSelector raises SelectorError with the field and the reason."""
    with pytest.raises(SelectorError) as raised:
        label_selector(selector, "sel")  # type: ignore[arg-type]
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, {}, True),
        (None, {"a": "b"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "b", "c": "d"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "c"}, False),
        ({"matchLabels": {"a": "b"}}, {}, False),
        ({"matchLabels": {"a": "b", "c": "d"}}, {"a": "b"}, False),
        ({"matchLabels": {"a": "b", "c": "d"}}, {"a": "b", "c": "d"}, True),
        (
            {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]},
            {"a": "b"},
            False,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["b", "c"]}]}, {"a": "c"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}, {"a": "b"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
    ],
)
def test_label_selector_matching(selector: Any, labels: dict[str, str], matches: bool) -> None:
    """matchLabels and matchExpressions ANDed; an empty or absent selector matches everything."""
    assert label_selector(selector)(labels) is matches


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ({"a": 1}, "t: expected a list of terms"),
        (["x"], "t[0]: expected a map"),
        (
            [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1", "2"]}]}],
            "t[0].matchExpressions[0]: Gt takes exactly one value",
        ),
        (
            [{"matchExpressions": [{"key": "a", "operator": "Lt"}]}],
            "t[0].matchExpressions[0]: Lt takes exactly one value",
        ),
        (
            [{"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["x"]}]}],
            "t[0].matchExpressions[0]: Lt value 'x' is not an integer",
        ),
        (
            [{}, {"matchExpressions": [{"key": "a", "operator": "Near"}]}],
            "t[1].matchExpressions[0]: unknown operator 'Near'",
        ),
    ],
)
def test_a_node_selector_the_api_rejects_says_why_whole(terms: object, message: str) -> None:
    """Required node affinity terms: whole messages naming the term and expression."""
    with pytest.raises(SelectorError) as raised:
        node_selector_terms(terms, "t")
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("terms", "labels", "matches"),
    [
        ([], {"a": "1"}, False),
        ([{}], {"a": "1"}, False),
        ([{"matchExpressions": []}], {}, False),
        ([{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}], {"a": "2"}, True),
        ([{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}], {"a": "1"}, False),
        ([{"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["1"]}]}], {"a": "0"}, True),
        ([{"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["1"]}]}], {"a": "1"}, False),
        ([{"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["1"]}]}], {}, False),
        ([{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["-1"]}]}], {"a": "x"}, False),
        (
            [
                {
                    "matchExpressions": [{"key": "a", "operator": "Exists"}],
                    "matchFields": [{"key": "metadata.name"}],
                }
            ],
            {"a": "1"},
            False,
        ),
        (
            [{"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}],
            {"a": "1"},
            False,
        ),
        (
            [
                {
                    "matchExpressions": [
                        {"key": "a", "operator": "Exists"},
                        {"key": "b", "operator": "Exists"},
                    ]
                },
                {"matchExpressions": [{"key": "c", "operator": "In", "values": ["1"]}]},
            ],
            {"a": "1", "c": "1"},
            True,
        ),
        ([{"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}], {"a": "1"}, True),
    ],
)
def test_node_selector_terms_matching(terms: list[Any], labels: dict[str, str], matches: bool) -> None:
    """Terms ORed, expressions ANDed; an empty term or a matchFields term matches no future node;
    Gt/Lt compare integers strictly and fail on a missing or non-integer label."""
    assert node_selector_terms(terms, "t")(labels) is matches


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (None, {}, True),
        ({}, {"a": "b"}, True),
        ({"a": "b"}, {"a": "b", "c": "d"}, True),
        ({"a": "b"}, {"a": "c"}, False),
        ({"a": "b", "c": "d"}, {"a": "b"}, False),
    ],
)
def test_node_selector_map_matching(selector: Any, labels: dict[str, str], matches: bool) -> None:
    """spec.nodeSelector: every key present with exactly that value."""
    assert node_selector_map(selector)(labels) is matches


def test_a_compiled_policy_is_reported_whole() -> None:
    """to_object: namespace, name, validity, group ids and the spec as written; the error only
    when a selector was rejected, every reason joined."""
    spec = {"podSelector": {"matchLabels": {"app": "web"}}, "securityGroups": {"groupIds": ["sg-1", 7]}}
    assert policy(spec, "team", "web").to_object() == {
        "namespace": "team",
        "name": "web",
        "valid": True,
        "groupIds": ["sg-1", "7"],
        "spec": spec,
    }
    bad = {"podSelector": "x", "serviceAccountSelector": ["y"], "securityGroups": {"groupIds": "sg-1"}}
    assert compile_policy({"spec": bad}).to_object() == {
        "namespace": "",
        "name": "",
        "valid": False,
        "groupIds": [],
        "spec": bad,
        "error": "spec.podSelector: expected a map; spec.serviceAccountSelector: expected a map; "
        "spec.securityGroups.groupIds: expected a list",
    }


@pytest.mark.parametrize(
    ("spec", "pod", "sa", "groups"),
    [
        ({"podSelector": {}, "securityGroups": {"groupIds": ["sg-1"]}}, {}, {}, ["sg-1"]),
        ({"serviceAccountSelector": {}, "securityGroups": {"groupIds": ["sg-1"]}}, {}, {}, ["sg-1"]),
        ({"securityGroups": {"groupIds": ["sg-1"]}}, {}, {}, []),
        ({"podSelector": {}, "securityGroups": {"groupIds": []}}, {}, {}, []),
        ({"podSelector": {}, "securityGroups": "x"}, {}, {}, []),
        ({"podSelector": {}}, {}, {}, []),
        (
            {"podSelector": {"matchLabels": {"a": "b"}}, "securityGroups": {"groupIds": ["sg-1"]}},
            {"a": "c"},
            {},
            [],
        ),
        (
            {"serviceAccountSelector": {"matchLabels": {"a": "b"}}, "securityGroups": {"groupIds": ["sg-1"]}},
            {"a": "b"},
            {},
            [],
        ),
        (
            {"serviceAccountSelector": {"matchLabels": {"a": "b"}}, "securityGroups": {"groupIds": ["sg-1"]}},
            {},
            {"a": "b"},
            ["sg-1"],
        ),
        (
            {
                "podSelector": {"matchLabels": {"a": "b"}},
                "serviceAccountSelector": {},
                "securityGroups": {"groupIds": ["sg-1"]},
            },
            {"a": "b"},
            {},
            ["sg-1"],
        ),
        ({"podSelector": "x", "securityGroups": {"groupIds": ["sg-1"]}}, {}, {}, []),
    ],
)
def test_one_policy_against_one_pod(spec: dict[str, Any], pod: dict, sa: dict, groups: list[str]) -> None:
    """A policy needs a selector and group ids; each selector set must match its labels (pod
    labels for podSelector, the ServiceAccount's for serviceAccountSelector); a malformed one never."""
    assert matching_groups([policy(spec)], pod, sa) == groups


def test_a_policy_object_that_is_not_one_is_refused() -> None:
    """metadata or spec that is not a map raises TypeError with the whole message."""
    for obj in ({"metadata": ["x"], "spec": {}}, {"metadata": {}, "spec": "x"}):
        with pytest.raises(TypeError) as raised:
            compile_policy(obj)
        assert str(raised.value) == "metadata and spec must be maps"


@pytest.mark.parametrize(
    ("pod", "wanted"),
    [
        (None, False),
        ({}, False),
        ({"spec": "x"}, False),
        ({"spec": {"containers": {}}}, False),
        ({"spec": {"containers": ["x", {"resources": "y"}, {"resources": {"requests": []}}]}}, False),
        ({"spec": {"containers": [{"resources": {"limits": {"vpc.amazonaws.com/pod-eni": "1"}}}]}}, False),
        (
            {"spec": {"containers": [{}, {"resources": {"requests": {"vpc.amazonaws.com/pod-eni": "1"}}}]}},
            True,
        ),
    ],
)
def test_which_pods_request_a_branch_eni(pod: Any, wanted: bool) -> None:
    """utils.PodHasENIRequest: any container naming pod-eni in its requests (limits do not count)."""
    assert pod_has_eni_request(pod) is wanted


def test_a_label_selector_error_names_the_selector_by_default() -> None:
    """Without a field name the message starts with `selector`."""
    with pytest.raises(SelectorError) as raised:
        label_selector("x")  # type: ignore[arg-type]
    assert str(raised.value) == "selector: expected a map"
