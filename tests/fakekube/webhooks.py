"""Whether a webhook is called for a request: rules, namespaceSelector, objectSelector, matchConditions.

Modelled on k8s.io/apiserver pkg/admission/plugin/webhook: generic/webhook.go ShouldCallHook (the
order of the checks and which errors surface), predicates/rules/rules.go Matcher, predicates/
namespace/matcher.go MatchNamespaceSelector, predicates/object/matcher.go MatchObjectSelector,
matchconditions/matcher.go Match. matchPolicy Equivalent has nothing to add here: the fake serves
each resource in one version only, so no equivalent resource exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .cel import CelError, evaluate_bool
from .registry import ResourceType

# The label the apiserver keeps on every namespace (pkg/registry/core/namespace/strategy.go
# PrepareForCreate/PrepareForUpdate), which namespaceSelectors commonly use.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# What the fake's one user looks like (there is no authentication): a cluster admin, as kubectl
# with an admin kubeconfig would be.
ADMIN_USER: dict[str, Any] = {
    "username": "kubernetes-admin",
    "groups": ["system:masters", "system:authenticated"],
}


@dataclass
class Attributes:
    """admission.Attributes: one write as admission sees it."""

    operation: str  # CREATE, UPDATE, DELETE
    rt: ResourceType
    subresource: str  # "" for the main resource
    namespace: str  # "" for cluster-scoped objects
    name: str
    obj: dict[str, Any] | None
    old_obj: dict[str, Any] | None
    dry_run: bool
    options: dict[str, Any]
    user_info: dict[str, Any] = field(default_factory=lambda: dict(ADMIN_USER))


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector: matchLabels and matchExpressions ANDed; empty or absent matches all."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = set(expression.get("values") or [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:  # absent matches NotIn
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise errors.ApiError(
                500, "InternalError", f"Internal error occurred: invalid operator {operator!r}"
            )
    return True


def _exact_or_wildcard(items: list[str], requested: str) -> bool:
    return "*" in items or requested in items


def rule_matches(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """rules.go Matcher.Matches: scope, operation, group, version, resource/subresource."""
    scope = rule.get("scope") or "*"
    is_namespace = attrs.rt.group == "" and attrs.rt.plural == "namespaces"
    if scope == "Namespaced" and (is_namespace or not attrs.namespace):
        return False
    if scope == "Cluster" and not (is_namespace or not attrs.namespace):
        return False
    if scope not in ("*", "Namespaced", "Cluster"):
        return False
    operations = rule.get("operations") or []
    if "*" not in operations and attrs.operation not in operations:
        return False
    if not _exact_or_wildcard(rule.get("apiGroups") or [], attrs.rt.group):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions") or [], attrs.rt.version):
        return False
    for entry in rule.get("resources") or []:
        resource, _, subresource = entry.partition("/")
        if resource in ("*", attrs.rt.plural) and subresource in ("*", attrs.subresource):
            return True
    return False


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def namespace_labels(attrs: Attributes, lookup: Callable[[str], dict[str, Any]]) -> dict[str, str]:
    """The labels a namespaceSelector is matched against (namespace/matcher.go GetNamespaceLabels):
    a namespace being created or updated is judged by its own new labels, anything else by the
    stored namespace (404 if it does not exist)."""
    is_namespace = attrs.rt.group == "" and attrs.rt.plural == "namespaces"
    if is_namespace and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE"):
        labels, name = _labels(attrs.obj), attrs.name
    else:
        name = attrs.namespace
        labels = _labels(lookup(name))
    return {**labels, NAMESPACE_NAME_LABEL: name}


def should_call(
    hook: Mapping[str, Any],
    attrs: Attributes,
    lookup_namespace: Callable[[str], dict[str, Any]],
    request: Mapping[str, Any],
) -> bool:
    """ShouldCallHook: selectors first, then the rules, then matchConditions (CEL).

    A selector that cannot be evaluated only matters when the rules match, as upstream; a
    matchCondition error fails closed (403) under failurePolicy Fail and skips the hook under Ignore.
    """
    namespace_error: errors.ApiError | None = None
    is_namespace = attrs.rt.group == "" and attrs.rt.plural == "namespaces"
    selector = hook.get("namespaceSelector")
    if (attrs.namespace or is_namespace) and selector:
        try:
            if not selector_matches(selector, namespace_labels(attrs, lookup_namespace)):
                return False
        except errors.ApiError as error:
            namespace_error = error
    object_selector = hook.get("objectSelector")
    if object_selector and not (
        (attrs.obj is not None and selector_matches(object_selector, _labels(attrs.obj)))
        or (attrs.old_obj is not None and selector_matches(object_selector, _labels(attrs.old_obj)))
    ):
        return False
    if not any(rule_matches(rule, attrs) for rule in hook.get("rules") or []):
        return False
    if namespace_error is not None:
        raise namespace_error
    return _conditions_match(hook, attrs, request)


def _conditions_match(hook: Mapping[str, Any], attrs: Attributes, request: Mapping[str, Any]) -> bool:
    variables = {"object": attrs.obj, "oldObject": attrs.old_obj, "request": dict(request)}
    failures: list[str] = []
    for condition in hook.get("matchConditions") or []:
        try:
            if not evaluate_bool(condition["expression"], variables):
                return False  # any false condition skips the hook, even after an error in another
        except CelError as error:
            failures.append(f"{condition.get('name')}: {error}")
    if not failures:
        return True
    if (hook.get("failurePolicy") or "Fail") == "Ignore":
        return False
    message = "; ".join(failures)
    group_resource = f"{attrs.rt.plural}.{attrs.rt.group}" if attrs.rt.group else attrs.rt.plural
    raise errors.ApiError(
        403,
        "Forbidden",
        f'{group_resource} "{attrs.name}" is forbidden: {message}',
        {"name": attrs.name, "group": attrs.rt.group, "kind": attrs.rt.plural},
    )
