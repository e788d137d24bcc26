"""SecurityGroupPolicy matching, as a case table.

Restated from aws/amazon-vpc-resource-controller-k8s at b8d425119bdba371202882b808f202c6073a46cc,
pkg/utils/helper.go: GetMatchingSecurityGroupForPods (the policies of the pod's namespace, in the
order the cache lists them, and the labels of the pod's ServiceAccount) and filterPodSecurityGroups
(a policy without any selector or without group ids is skipped; every selector that is set must
match; an empty selector matches everything; the groups of every matching policy are concatenated
and de-duplicated in first-seen order, RemoveDuplicatedSg). Each selector goes through
metav1.LabelSelectorAsSelector (k8s.io/apimachinery v0.33.0, the version upstream's go.mod pins:
pkg/apis/meta/v1/helpers.go, pkg/labels/selector.go NewRequirement, pkg/util/validation/
validation.go IsQualifiedName and IsValidLabelValue); when it returns an error, upstream logs it and
the selector counts as not matching, so the policy is skipped for the pod.

Each case: the pod's labels, its ServiceAccount's labels, the policies' specs in listing order (each
gets its group ids), and the whole list of groups the pod gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HELPER = "pkg/utils/helper.go: filterPodSecurityGroups"
AS_SELECTOR = "apimachinery pkg/apis/meta/v1/helpers.go: LabelSelectorAsSelector"
REQUIREMENT = "apimachinery pkg/labels/selector.go: NewRequirement"
KEY = "apimachinery pkg/util/validation/validation.go: IsQualifiedName"
VALUE = "apimachinery pkg/util/validation/validation.go: IsValidLabelValue"
MATCHES = "apimachinery pkg/labels/selector.go: Requirement.Matches"


@dataclass(frozen=True)
class MatchCase:
    id: str
    source: str
    pod_labels: dict[str, str]
    sa_labels: dict[str, str]
    policies: list[tuple[dict[str, Any], list[str]]]  # (spec without securityGroups, group ids)
    groups: list[str]  # what the pod gets, in order


def expr(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        e["values"] = values
    return e


def pods_where(*expressions: dict[str, Any], **labels: str) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if labels:
        selector["matchLabels"] = labels
    if expressions:
        selector["matchExpressions"] = list(expressions)
    return {"podSelector": selector}


WEB = {"app": "web", "tier": "front"}
TEAM = {"team": "a"}
A = ["sg-a"]


def _cases() -> list[MatchCase]:
    cases: list[MatchCase] = []

    def add(
        case_id: str,
        source: str,
        policies: list[tuple[dict[str, Any], list[str]]],
        groups: list[str],
        *,
        pod: dict[str, str] = WEB,
        sa: dict[str, str] = TEAM,
    ) -> None:
        cases.append(MatchCase(case_id, source, dict(pod), dict(sa), policies, groups))

    # pod selector
    add("pod-match-labels", HELPER, [(pods_where(app="web"), A)], A)
    add("pod-match-labels-all-keys", HELPER, [(pods_where(app="web", tier="back"), A)], [])
    add("pod-match-labels-other-value", HELPER, [(pods_where(app="db"), A)], [])
    add("pod-in", MATCHES, [(pods_where(expr("app", "In", ["db", "web"])), A)], A)
    add("pod-in-absent-key", MATCHES, [(pods_where(expr("zone", "In", ["a"])), A)], [])
    add("pod-notin", MATCHES, [(pods_where(expr("app", "NotIn", ["web"])), A)], [])
    add("pod-notin-absent-key-matches", MATCHES, [(pods_where(expr("zone", "NotIn", ["a"])), A)], A)
    add("pod-exists", MATCHES, [(pods_where(expr("tier", "Exists")), A)], A)
    add("pod-exists-empty-values", MATCHES, [(pods_where(expr("tier", "Exists", [])), A)], A)
    add("pod-does-not-exist", MATCHES, [(pods_where(expr("tier", "DoesNotExist")), A)], [])
    add("pod-does-not-exist-absent-key", MATCHES, [(pods_where(expr("zone", "DoesNotExist")), A)], A)
    add(
        "pod-labels-and-expressions-anded",
        AS_SELECTOR,
        [(pods_where(expr("tier", "In", ["back"]), app="web"), A)],
        [],
    )
    add("pod-empty-label-value", MATCHES, [(pods_where(mode=""), A)], A, pod={**WEB, "mode": ""})
    add(
        "pod-prefixed-key",
        MATCHES,
        [(pods_where(**{"example.com/app": "web"}), A)],
        A,
        pod={"example.com/app": "web"},
    )
    # service account selector
    sa_team = {"serviceAccountSelector": {"matchLabels": TEAM}}
    add("sa-match-labels", HELPER, [(sa_team, A)], A)
    add("sa-match-labels-other-account", HELPER, [(sa_team, A)], [], sa={"team": "b"})
    add(
        "sa-match-expressions",
        HELPER,
        [({"serviceAccountSelector": {"matchExpressions": [expr("team", "In", ["a"])]}}, A)],
        A,
    )
    add("sa-selector-ignores-pod-labels", HELPER, [(sa_team, A)], [], pod=TEAM, sa={})
    # both: AND
    both = {**pods_where(app="web"), **sa_team}
    add("both-match", HELPER, [(both, A)], A)
    add("both-pod-only", HELPER, [(both, A)], [], sa={})
    add("both-sa-only", HELPER, [(both, A)], [], pod={"app": "db"})
    # empty and absent selectors, empty groups
    add("empty-pod-selector-matches-all", AS_SELECTOR, [({"podSelector": {}}, A)], A, pod={})
    add("empty-sa-selector-matches-all", AS_SELECTOR, [({"serviceAccountSelector": {}}, A)], A, sa={})
    add(
        "empty-lists-are-empty-selector",
        AS_SELECTOR,
        [({"podSelector": {"matchLabels": {}, "matchExpressions": []}}, A)],
        A,
        pod={},
    )
    add("null-pod-selector-sa-decides", HELPER, [({"podSelector": None, **sa_team}, A)], A, pod={})
    add("no-selector-skipped", HELPER, [({}, A)], [])
    add("null-selectors-skipped", HELPER, [({"podSelector": None, "serviceAccountSelector": None}, A)], [])
    add("no-group-ids-skipped", HELPER, [({"podSelector": {}}, [])], [])
    # several policies
    add(
        "several-concatenated-deduplicated",
        f"{HELPER}; RemoveDuplicatedSg",
        [
            ({"podSelector": {}}, ["sg-b", "sg-a"]),
            (pods_where(app="db"), ["sg-z"]),
            (sa_team, ["sg-a", "sg-c", "sg-b"]),
        ],
        ["sg-b", "sg-a", "sg-c"],
    )
    add("several-none-match", HELPER, [(pods_where(app="db"), ["sg-z"]), (sa_team, ["sg-y"])], [], sa={})
    # selectors LabelSelectorAsSelector rejects: the policy is skipped, the others still count. Each
    # would match the pod if it compiled (labels reach a mutating webhook before API validation).
    bad = {"my app": "web", "app": "web app", "long": "w" * 64, "nl": "web\n"}
    rejected = [
        ("notin-without-values", pods_where(expr("zone", "NotIn", [])), REQUIREMENT),
        ("notin-null-values", pods_where(expr("zone", "NotIn")), REQUIREMENT),
        ("in-without-values", pods_where(expr("app", "In", [])), REQUIREMENT),
        ("exists-with-values", pods_where(expr("app", "Exists", ["web app"])), REQUIREMENT),
        ("exists-with-valid-values", pods_where(expr("tier", "Exists", ["front"])), REQUIREMENT),
        ("does-not-exist-with-values", pods_where(expr("zone", "DoesNotExist", ["a"])), REQUIREMENT),
        ("unknown-operator", pods_where(expr("app", "Equals", ["web app"])), AS_SELECTOR),
        ("lowercase-operator", pods_where(expr("zone", "notin", ["a"])), AS_SELECTOR),
        ("gt-is-not-a-label-selector-operator", pods_where(expr("n", "Gt", ["1"])), AS_SELECTOR),
        ("key-with-space", pods_where(expr("my app", "Exists")), KEY),
        ("key-starts-with-dash", pods_where(expr("-zone", "DoesNotExist")), KEY),
        ("key-two-slashes", pods_where(expr("a/b/c", "DoesNotExist")), KEY),
        ("key-empty-prefix", pods_where(expr("/zone", "DoesNotExist")), KEY),
        ("key-uppercase-prefix", pods_where(expr("Example.com/zone", "DoesNotExist")), KEY),
        ("key-name-64", pods_where(expr("a" * 64, "DoesNotExist")), KEY),
        ("key-empty", pods_where(expr("", "DoesNotExist")), KEY),
        ("key-trailing-newline", pods_where(expr("zone\n", "DoesNotExist")), KEY),
        ("match-labels-bad-key", pods_where(**{"my app": "web"}), KEY),
        ("match-labels-bad-value", pods_where(app="web app"), VALUE),
        ("match-labels-value-64", pods_where(long="w" * 64), VALUE),
        ("match-labels-value-trailing-newline", pods_where(nl="web\n"), VALUE),
        ("in-one-bad-value", pods_where(expr("app", "In", ["web app", "-db"])), VALUE),
        ("notin-value-with-underscore-end", pods_where(expr("zone", "NotIn", ["a_"])), VALUE),
        ("notin-value-64", pods_where(expr("zone", "NotIn", ["w" * 64])), VALUE),
        ("notin-value-trailing-newline", pods_where(expr("zone", "NotIn", ["a\n"])), VALUE),
    ]
    for name, spec, source in rejected:
        policies = [(spec, ["sg-x"]), ({"podSelector": {}}, A)]
        add(f"rejected-{name}", f"{source}; {HELPER}", policies, A, pod={**WEB, **bad})
    sa_rejected = {"serviceAccountSelector": {"matchExpressions": [expr("team", "Exists", ["a"])]}}
    add(
        "rejected-sa-selector-skips-policy",
        f"{REQUIREMENT}; {HELPER}",
        [({**pods_where(app="web"), **sa_rejected}, A)],
        [],
    )
    add(
        "rejected-pod-selector-skips-policy-sa-matches",
        f"{REQUIREMENT}; {HELPER}",
        [({**pods_where(expr("app", "In", [])), **sa_team}, A)],
        [],
    )
    # what the validation accepts
    accepted = [
        ("key-63", pods_where(expr("a" * 63, "DoesNotExist"))),
        ("key-prefix-253", pods_where(expr(".".join(["a" * 63] * 3 + ["a" * 61]) + "/app", "DoesNotExist"))),
        ("key-dots-underscores", pods_where(expr("a_b.c-d", "DoesNotExist"))),
        ("value-63", pods_where(expr("app", "NotIn", ["w" * 63]))),
        ("value-mixed", pods_where(expr("app", "NotIn", ["A.b_c-9"]))),
        ("value-empty-in-notin", pods_where(expr("app", "NotIn", [""]))),
    ]
    for name, spec in accepted:
        add(f"accepted-{name}", f"{KEY}; {VALUE}", [(spec, A)], A)
    too_long_prefix = ".".join(["a" * 63] * 3 + ["a" * 62]) + "/app"
    add(
        "rejected-key-prefix-254",
        f"{KEY}; {HELPER}",
        [(pods_where(expr(too_long_prefix, "DoesNotExist")), A)],
        [],
    )
    return cases


CASES = _cases()
