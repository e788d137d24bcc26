"""Label selectors (metav1.LabelSelector) and node selectors (v1.NodeSelector), compiled once into
predicates over a label map.

Semantics from k8s.io/apimachinery/pkg/labels and k8s.io/component-helpers/scheduling/corev1:
- a LabelSelector ANDs matchLabels and matchExpressions; an empty selector matches everything;
- a LabelSelector compiles only when every requirement is one `metav1.LabelSelectorAsSelector`
  (pkg/apis/meta/v1/helpers.go) accepts: labels.NewRequirement (pkg/labels/selector.go) wants a
  valid label key, at least one value for In/NotIn, none for Exists/DoesNotExist, and every value a
  valid label value (pkg/util/validation/validation.go IsQualifiedName, IsValidLabelValue);
- NodeSelectorTerms are ORed, the expressions of a term ANDed; an empty term matches nothing;
- NotIn and DoesNotExist match when the key is absent; Gt/Lt compare the label as an integer and
  fail when it is not one;
- matchFields compares a node's fields (only `metadata.name` exists) with In or NotIn and exactly
  one value (component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go
  nodeSelectorRequirementsAsFieldSelector); a term whose field requirement is not of that form
  matches nothing, and the other terms still count (its LazyErrorNodeSelector). The node's name
  rides in the label map under `NODE_NAME_FIELD`, a key no label can have, so one predicate
  serves both; a view of a node that does not exist yet has no name, and `In` cannot match it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Labels = Mapping[str, str]
Predicate = Callable[[Labels], bool]

# ':' is not allowed in a label key (label_key_errors), so no real label can shadow this one.
NODE_NAME_FIELD = "field:metadata.name"


def with_node_name(labels: Labels, name: str) -> dict[str, str]:
    """A node's labels with its name added where node affinity's matchFields reads it."""
    return {**labels, NODE_NAME_FIELD: name}


class SelectorError(ValueError):
    """A selector the API would reject (unknown operator, wrong number of values)."""


# k8s.io/apimachinery pkg/util/validation/validation.go: qualifiedNameFmt, dns1123SubdomainFmt. Go's
# regexp `$` is the end of the text; Python's fullmatch is used for the same reason.
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
QUALIFIED_NAME_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63


def label_key_errors(key: str) -> list[str]:
    """Why `key` is not a label key (upstream validation.IsQualifiedName); empty when it is one:
    an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"label key {key!r}: at most one '/'"]
    errors = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append(f"label key {key!r}: the prefix must not be empty")
        else:
            if len(prefix.encode()) > DNS1123_SUBDOMAIN_MAX:
                errors.append(f"label key {key!r}: the prefix is longer than {DNS1123_SUBDOMAIN_MAX}")
            if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
                errors.append(f"label key {key!r}: the prefix is not a DNS-1123 subdomain")
    if not name:
        errors.append(f"label key {key!r}: the name must not be empty")
    elif len(name.encode()) > QUALIFIED_NAME_MAX:
        errors.append(f"label key {key!r}: the name is longer than {QUALIFIED_NAME_MAX}")
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append(
            f"label key {key!r}: the name must be alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why `value` is not a label value (upstream validation.IsValidLabelValue): empty, or at most
    63 characters of alphanumerics, '-', '_', '.', starting and ending with an alphanumeric."""
    errors = []
    if len(value.encode()) > LABEL_VALUE_MAX:
        errors.append(f"label value {value!r}: longer than {LABEL_VALUE_MAX}")
    if value and not _QUALIFIED_NAME.fullmatch(value):
        errors.append(
            f"label value {value!r}: must be empty or alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return errors


def _validate(key: str, operator: str, values: list[str], field: str) -> None:
    """labels.NewRequirement's checks for the operators a LabelSelector has (Equals stands for a
    matchLabels entry). Raises SelectorError with every reason, as upstream aggregates them."""
    errors = label_key_errors(key)
    if operator in ("In", "NotIn") and not values:
        errors.append(f"{operator} needs at least one value")
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(f"{operator} takes no values")
    for value in values:
        errors += label_value_errors(value)
    if errors:
        raise SelectorError(f"{field}: {'; '.join(errors)}")


def _requirement(key: str, operator: str, values: list[str], numeric: bool, field: str) -> Predicate:
    if operator == "In":
        allowed = frozenset(values)
        return lambda labels: labels.get(key) in allowed
    if operator == "NotIn":
        denied = frozenset(values)
        return lambda labels: labels.get(key) not in denied
    if operator == "Exists":
        return lambda labels: key in labels
    if operator == "DoesNotExist":
        return lambda labels: key not in labels
    if numeric and operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise SelectorError(f"{field}: {operator} takes exactly one value")
        try:
            bound = int(values[0])
        except ValueError:
            raise SelectorError(f"{field}: {operator} value {values[0]!r} is not an integer") from None
        greater = operator == "Gt"

        def compare(labels: Labels) -> bool:
            try:
                value = int(labels[key])
            except (KeyError, ValueError):
                return False
            return value > bound if greater else value < bound

        return compare
    raise SelectorError(f"{field}: unknown operator {operator!r}")


def _expressions(raw: object, numeric: bool, field: str) -> list[Predicate]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SelectorError(f"{field}: expected a list")
    predicates = []
    for i, expr in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            raise SelectorError(f"{where}: expected {{key, operator, values}}")
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"{where}.values: expected a list of strings")
        operator = str(expr.get("operator"))
        predicate = _requirement(expr["key"], operator, values, numeric, where)
        if not numeric:  # a LabelSelector: metav1.LabelSelectorAsSelector's checks
            _validate(expr["key"], operator, values, where)
        predicates.append(predicate)
    return predicates


def _all(predicates: list[Predicate]) -> Predicate:
    if not predicates:
        return lambda labels: True
    if len(predicates) == 1:
        return predicates[0]
    return lambda labels: all(p(labels) for p in predicates)


def label_selector(raw: Mapping[str, Any] | None, field: str = "selector") -> Predicate:
    """A metav1.LabelSelector; `{}` matches everything (callers decide what `None` means). Raises
    SelectorError where upstream metav1.LabelSelectorAsSelector returns an error."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{field}: expected a map")
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"{field}.matchLabels: expected a map")
    predicates = []
    for key, value in match_labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SelectorError(f"{field}.matchLabels: expected a map of strings")
        _validate(key, "Equals", [value], f"{field}.matchLabels")
        predicates.append(_requirement(key, "In", [value], False, field))
    predicates += _expressions(raw.get("matchExpressions"), False, f"{field}.matchExpressions")
    return _all(predicates)


def node_selector_map(raw: Mapping[str, Any] | None) -> Predicate:
    """`spec.nodeSelector`: every key must be present with exactly that value."""
    wanted = dict(raw or {})
    if not wanted:
        return lambda labels: True
    items = tuple(wanted.items())
    return lambda labels: all(labels.get(k) == v for k, v in items)


def node_selector_terms(raw: object, field: str) -> Predicate:
    """Required node affinity: terms ORed, expressions ANDed, an empty term matching nothing."""
    if not isinstance(raw, list):
        raise SelectorError(f"{field}: expected a list of terms")
    terms: list[Predicate] = []
    for i, term in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(term, Mapping):
            raise SelectorError(f"{where}: expected a map")
        expressions = _expressions(term.get("matchExpressions"), True, f"{where}.matchExpressions")
        fields = _fields(term.get("matchFields"), f"{where}.matchFields")
        if fields is None:
            continue  # upstream: this term's error makes it match nothing; the others still count
        expressions += fields
        if expressions:
            terms.append(_all(expressions))
    if not terms:
        return lambda labels: False
    return lambda labels: any(t(labels) for t in terms)


def _fields(raw: object, field: str) -> list[Predicate] | None:
    """A term's matchFields as predicates over NODE_NAME_FIELD; None where upstream's
    nodeSelectorRequirementsAsFieldSelector returns an error (the term then matches nothing)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SelectorError(f"{field}: expected a list")
    predicates = []
    for expr in raw:
        if not isinstance(expr, Mapping):
            raise SelectorError(f"{field}: expected {{key, operator, values}}")
        values = expr.get("values") or []
        operator = expr.get("operator")
        if operator not in ("In", "NotIn") or not isinstance(values, list) or len(values) != 1:
            return None
        key = NODE_NAME_FIELD if expr.get("key") == "metadata.name" else f"field:{expr.get('key')}"
        predicates.append(_field_requirement(key, str(values[0]), operator == "In"))
    return predicates


def _field_requirement(key: str, wanted: str, equal: bool) -> Predicate:
    # fields.OneTermEqualSelector / OneTermNotEqualSelector: a field the node lacks reads as ""
    return lambda labels: (labels.get(key, "") == wanted) == equal


def required_node_terms(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A pod spec's required node affinity terms as written (malformed parts left out)."""
    affinity = spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node_affinity, Mapping)
        else None
    )
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    return [t for t in terms if isinstance(t, Mapping)] if isinstance(terms, list) else []
