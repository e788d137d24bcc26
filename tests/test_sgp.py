"""SecurityGroupPolicy matching against the VPC resource controller's own test cases, and the rules
of docs/design.md failure 3 that those cases do not pin down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capacity.sgp import compile_policy, matching_groups, pod_has_eni_request
from webhook.cluster import ServiceAccountNotFound, from_objects

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"
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
