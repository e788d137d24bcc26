"""The offline stand-in for the API: a state file of objects as `kubectl get -o yaml|json` prints
them (a `kind: List` with `items`, several YAML documents, or both)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml


class StateFileError(ValueError):
    """A state file that cannot be read, with where in it."""


def _flatten(doc: object, where: str) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        raise StateFileError(f"{where}: expected an object, got {type(doc).__name__}")
    if str(doc.get("kind", "")).endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise StateFileError(f"{where}: items must be a list")
        for i, item in enumerate(items):
            yield from _flatten(item, f"{where}.items[{i}]")
        return
    if not doc.get("kind") or not isinstance(doc.get("metadata"), Mapping):
        raise StateFileError(f"{where}: every object needs kind and metadata")
    yield dict(doc)


def parse_state(text: str, source: str = "state") -> list[dict[str, Any]]:
    """Objects in a state file's text; JSON is tried first because it is much faster to parse."""
    stripped = text.lstrip()
    docs: list[object]
    if stripped.startswith(("{", "[")):
        try:
            parsed = json.loads(text)
            docs = parsed if isinstance(parsed, list) else [parsed]
        except json.JSONDecodeError:
            docs = []
        else:
            return [obj for i, doc in enumerate(docs) for obj in _flatten(doc, f"{source}[{i}]")]
    try:
        docs = list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError as err:
        raise StateFileError(f"{source}: not YAML or JSON: {err}") from None
    return [obj for i, doc in enumerate(docs) for obj in _flatten(doc, f"{source}[{i}]")]


def load_state(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise StateFileError(f"{path}: {err.strerror or err}") from None
    return parse_state(text, str(path))


def by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        grouped.setdefault(str(obj["kind"]), []).append(obj)
    return grouped
