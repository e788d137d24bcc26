"""The offline stand-in for the API: a state file of objects as `kubectl get -o yaml|json` prints
them (a `kind: List` with `items`, several YAML documents, or both).

Read within kube/bounded.py's limits: whatever the file holds, reading it ends in the objects or in
one StateFileError (never a traceback, never unbounded time or memory)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kube.bounded import InputLimitError, check_json_depth, check_size, json_value, read_text, yaml_documents


class StateFileError(ValueError):
    """A state file that cannot be read, with where in it."""


@dataclass(frozen=True, slots=True)
class StateFile:
    """A state file's objects, and the annotations of its top `kind: List` (where an export
    records when and from which cluster it was taken; empty for a hand-written file)."""

    objects: list[dict[str, Any]]
    annotations: dict[str, str] = field(default_factory=dict)


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


def _documents(text: str, source: str) -> list[object]:
    """The file's top-level documents; JSON is tried first because it is much faster to parse."""
    if text.lstrip().startswith(("{", "[")):
        try:
            parsed = json_value(lambda: json.loads(text))
        except json.JSONDecodeError:
            pass  # YAML's flow style starts with `{` too
        else:
            check_json_depth(parsed)
            return parsed if isinstance(parsed, list) else [parsed]
    try:
        return [doc for _, doc in yaml_documents(text)]
    except yaml.YAMLError as err:
        raise StateFileError(f"{source}: not YAML or JSON: {' '.join(str(err).split())}") from None


def _annotations(docs: list[object]) -> dict[str, str]:
    first = docs[0] if docs else None
    meta = first.get("metadata") if isinstance(first, Mapping) else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return {}
    return {str(key): str(value) for key, value in annotations.items()}


def parse_state_file(text: str, source: str = "state") -> StateFile:
    try:
        check_size(text)
        docs = _documents(text, source)
    except InputLimitError as err:
        raise StateFileError(f"{source}: {err}") from None
    objects = [obj for i, doc in enumerate(docs) for obj in _flatten(doc, f"{source}[{i}]")]
    return StateFile(objects, _annotations(docs))


def parse_state(text: str, source: str = "state") -> list[dict[str, Any]]:
    """Objects in a state file's text."""
    return parse_state_file(text, source).objects


def read_state_file(path: str | Path) -> StateFile:
    path = Path(path)
    try:
        text = read_text(path)
    except OSError as err:
        raise StateFileError(f"{path}: {err.strerror or err}") from None
    except InputLimitError as err:
        raise StateFileError(f"{path}: {err}") from None
    return parse_state_file(text, str(path))


def load_state(path: str | Path) -> list[dict[str, Any]]:
    return read_state_file(path).objects


def by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        grouped.setdefault(str(obj["kind"]), []).append(obj)
    return grouped
