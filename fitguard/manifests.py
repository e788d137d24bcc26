"""Manifests as `kubectl apply -f` reads them: files, directories (recursively), standard input;
multi-document YAML, JSON, and `kind: List`. Every object keeps where it came from (file, document
index, line, item of a List) so a verdict can point at it; unreadable input names file and line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

STDIN = "-"
# the extensions kubectl reads from a directory
EXTENSIONS = (".yaml", ".yml", ".json")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(ValueError):
    """Input that cannot be read, with `file:line:` in front of the reason."""


@dataclass(frozen=True, slots=True)
class Located:
    """One object and where it was written: `document` counts from 1 within its file, `item`
    (from 1) is its place in a `kind: List`, `line` (from 1) where its text starts."""

    obj: dict[str, Any]
    file: str
    document: int
    line: int
    item: int | None = None

    @property
    def location(self) -> str:
        where = f"{self.file}:{self.line} (document {self.document}"
        return where + (f", item {self.item})" if self.item is not None else ")")


def _is_list(doc: Mapping[str, Any]) -> bool:
    return str(doc.get("kind", "")).endswith("List") and "items" in doc


def _objects(doc: object, file: str, document: int, line: int, item_lines: list[int]) -> Iterator[Located]:
    if doc is None:
        return  # an empty document (a stray `---`) is no object
    if not isinstance(doc, Mapping):
        raise ManifestError(f"{file}:{line}: document {document} is a {type(doc).__name__}, not an object")
    if not _is_list(doc):
        if not doc.get("kind") or not doc.get("apiVersion"):
            raise ManifestError(f"{file}:{line}: document {document} has no kind or apiVersion")
        if not isinstance(doc.get("metadata", {}), Mapping):
            raise ManifestError(f"{file}:{line}: document {document}: metadata must be an object")
        yield Located(dict(doc), file, document, line)
        return
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise ManifestError(f"{file}:{line}: document {document}: items must be a list")
    for i, entry in enumerate(items):
        at = item_lines[i] if i < len(item_lines) else line
        if (
            not isinstance(entry, Mapping)
            or not entry.get("kind")
            or not entry.get("apiVersion")
            or not isinstance(entry.get("metadata", {}), Mapping)
        ):
            raise ManifestError(
                f"{file}:{at}: document {document}, item {i + 1}: "
                "not an object with kind, apiVersion and metadata"
            )
        yield Located(dict(entry), file, document, at, i + 1)


def _item_lines(node: yaml.Node) -> list[int]:
    """Lines of the entries of a List document's `items`, read from the YAML node tree."""
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "items" and isinstance(value, yaml.SequenceNode):
            return [entry.start_mark.line + 1 for entry in value.value]
    return []


def _parse_json(text: str, file: str) -> list[Located] | None:
    """JSON input (one object, an array of them, or concatenated objects as `kubectl get -o json`
    of several files prints); None when the text is not JSON, so YAML gets its turn."""
    decoder = json.JSONDecoder()
    found: list[Located] = []
    position = 0
    document = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return found
        try:
            doc, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as err:
            if document == 0:
                return None  # maybe YAML (flow style starts with `{` too)
            raise ManifestError(f"{file}:{err.lineno}: not JSON: {err.msg}") from None
        line = text.count("\n", 0, position) + 1
        for entry in doc if isinstance(doc, list) else [doc]:
            document += 1
            found.extend(_objects(entry, file, document, line, []))
        position = end


def parse_manifests(text: str, file: str) -> list[Located]:
    """Every object in one input's text."""
    if text.lstrip().startswith(("{", "[")):
        parsed = _parse_json(text, file)
        if parsed is not None:
            return parsed
    found: list[Located] = []
    loader = _Loader(text)
    try:
        document = 0
        while loader.check_node():
            node = loader.get_node()
            document += 1
            if node is None:
                continue
            doc = loader.construct_document(node)
            found.extend(_objects(doc, file, document, node.start_mark.line + 1, _item_lines(node)))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 0
        reason = " ".join(str(part) for part in (err.context, err.problem) if part)
        raise ManifestError(f"{file}:{line}: not valid YAML: {reason}") from None
    except yaml.YAMLError as err:
        raise ManifestError(f"{file}: not valid YAML: {err}") from None
    finally:
        loader.dispose()
    return found


def files_under(path: Path) -> list[Path]:
    """The manifest files of a directory, recursively, in a stable order."""
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS)


def read_manifests(paths: Iterable[str], stdin: Any = None) -> list[Located]:
    """Every object of every `-f` argument, in order; raises ManifestError for unreadable input."""
    found: list[Located] = []
    for raw in paths:
        if raw == STDIN:
            text = (stdin or sys.stdin).read()
            found.extend(parse_manifests(text, "<stdin>"))
            continue
        path = Path(raw)
        if path.is_dir():
            files = files_under(path)
            if not files:
                raise ManifestError(f"{path}: no {', '.join(EXTENSIONS)} files in this directory")
        else:
            files = [path]
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
                raise ManifestError(f"{file}: cannot read: {reason}") from None
            found.extend(parse_manifests(text, str(file)))
    return found
