"""Label selectors (metav1.LabelSelector) and node selectors (v1.NodeSelector), compiled once into
predicates over a label map.

Semantics from k8s.io/apimachinery/pkg/labels and k8s.io/component-helpers/scheduling/corev1:
- a LabelSelector ANDs matchLabels and matchExpressions; an empty selector matches everything;
- NodeSelectorTerms are ORed, the expressions of a term ANDed; an empty term matches nothing;
- NotIn and DoesNotExist match when the key is absent; Gt/Lt compare the label as an integer and
  fail when it is not one; matchFields (metadata.name) cannot match a node that does not exist yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Labels = Mapping[str, str]
Predicate = Callable[[Labels], bool]


class SelectorError(ValueError):
    """A selector the API would reject (unknown operator, wrong number of values)."""


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
        predicates.append(_requirement(expr["key"], str(expr.get("operator")), values, numeric, where))
    return predicates


def _all(predicates: list[Predicate]) -> Predicate:
    if not predicates:
        return lambda labels: True
    if len(predicates) == 1:
        return predicates[0]
    return lambda labels: all(p(labels) for p in predicates)


def label_selector(raw: Mapping[str, Any] | None, field: str = "selector") -> Predicate:
    """A metav1.LabelSelector; `{}` matches everything (callers decide what `None` means)."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise SelectorError(f"{field}: expected a map")
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"{field}.matchLabels: expected a map")
    predicates = [_requirement(str(k), "In", [str(v)], False, field) for k, v in match_labels.items()]
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
        if term.get("matchFields"):
            # metadata.name of a node that has not been created yet is unknown: cannot match.
            expressions.append(lambda labels: False)
        if expressions:
            terms.append(_all(expressions))
    if not terms:
        return lambda labels: False
    return lambda labels: any(t(labels) for t in terms)
