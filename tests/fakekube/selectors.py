"""Label and field selectors with the apiserver's grammar (apimachinery/pkg/labels and pkg/fields)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_TERM = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


def _split_terms(selector: str) -> list[str]:
    """Split on the commas that separate requirements, not those inside an in/notin value set."""
    terms, depth, current = [], 0, []
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [term for term in terms if term.strip()]


def _label_requirement(term: str) -> Callable[[dict[str, str]], bool]:
    if match := _SET_TERM.match(term):
        key, op, raw_values = match.groups()
        values = {value.strip() for value in raw_values.split(",") if value.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        # notin also matches objects without the label (labels.Requirement.Matches).
        return lambda labels: labels.get(key) not in values
    if match := _EQ_TERM.match(term):
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: key in labels and labels[key] == value
    if match := _EXISTS_TERM.match(term):
        negated, key = match.groups()
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: {term.strip()!r}")


def label_selector(selector: str | None) -> Predicate:
    """A predicate over whole objects for a labelSelector query value; empty selects everything."""
    requirements = [_label_requirement(term) for term in _split_terms(selector or "")]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def field_value(obj: dict[str, Any], path: str) -> str:
    """A selectable field as the apiserver renders it: missing is "", booleans are lower case."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(selector: str | None, allowed: tuple[str, ...]) -> Predicate:
    """A predicate for a fieldSelector; a field the resource does not support is a 400, as upstream."""
    requirements: list[tuple[str, bool, str]] = []
    for term in _split_terms(selector or ""):
        match = re.match(r"^\s*([^!=\s]+)\s*(==|!=|=)\s*(.*?)\s*$", term)
        if not match:
            raise bad_request(f"invalid selector: '{selector}'; can't understand '{term}'")
        path, op, value = match.groups()
        if path not in allowed:
            raise bad_request(f"field label not supported: {path}")
        requirements.append((path, op != "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) is equal for path, equal, value in requirements)

    return matches
