"""Manifests as `kubectl apply -f` reads them: files, directories (recursively), standard input;
multi-document YAML, JSON, and `kind: List`. Every object keeps where it came from (file, document
index, line, item of a List) so a verdict can point at it; unreadable input names file and line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from kube.bounded import InputLimitError, check_json_depth, check_size, json_value, read_text, yaml_documents

STDIN = "-"
STDIN_NAME = "<stdin>"
MAX_STDIN = 32 * 2**20  # characters, as kube/bounded.py's MAX_BYTES for a file
# the extensions kubectl reads from a directory
EXTENSIONS = (".yaml", ".yml", ".json")


class ManifestError(ValueError):
    """Input that cannot be read, with `file:line:` in front of the reason; `file` is the input's
    name (`<stdin>` for standard input)."""

    def __init__(self, message: str, file: str) -> None:
        super().__init__(message)
        self.file = file


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
        raise ManifestError(
            f"{file}:{line}: document {document} is a {type(doc).__name__}, not an object", file
        )
    if not _is_list(doc):
        if not doc.get("kind") or not doc.get("apiVersion"):
            raise ManifestError(f"{file}:{line}: document {document} has no kind or apiVersion", file)
        if not isinstance(doc.get("metadata", {}), Mapping):
            raise ManifestError(f"{file}:{line}: document {document}: metadata must be an object", file)
        yield Located(dict(doc), file, document, line)
        return
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise ManifestError(f"{file}:{line}: document {document}: items must be a list", file)
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
                "not an object with kind, apiVersion and metadata",
                file,
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
        line = text.count("\n", 0, position) + 1
        try:
            doc, end = json_value(partial(decoder.raw_decode, text, position))
            check_json_depth(doc)
        except json.JSONDecodeError as err:
            if document == 0:
                return None  # maybe YAML (flow style starts with `{` too)
            raise ManifestError(f"{file}:{err.lineno}: not JSON: {err.msg}", file) from None
        except InputLimitError as err:
            raise ManifestError(f"{file}:{line}: {err.reason}", file) from None
        for entry in doc if isinstance(doc, list) else [doc]:
            document += 1
            found.extend(_objects(entry, file, document, line, []))
        position = end


def parse_manifests(text: str, file: str) -> list[Located]:
    """Every object in one input's text, read within kube/bounded.py's limits."""
    try:
        check_size(text)
    except InputLimitError as err:
        raise ManifestError(f"{file}: {err}", file) from None
    if text.lstrip().startswith(("{", "[")):
        parsed = _parse_json(text, file)
        if parsed is not None:
            return parsed
    found: list[Located] = []
    try:
        for document, (node, doc) in enumerate(yaml_documents(text), start=1):
            if node is not None:
                found.extend(_objects(doc, file, document, node.start_mark.line + 1, _item_lines(node)))
    except InputLimitError as err:
        raise ManifestError(f"{file}:{err.line or 0}: {err.reason}", file) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 0
        reason = " ".join(" ".join(str(part).split()) for part in (err.context, err.problem) if part)
        raise ManifestError(f"{file}:{line}: not valid YAML: {reason}", file) from None
    except yaml.YAMLError as err:
        raise ManifestError(f"{file}: not valid YAML: {' '.join(str(err).split())}", file) from None
    return found


def files_under(path: Path) -> list[Path]:
    """The manifest files of a directory, recursively, in a stable order."""
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS)


def _read_file(file: Path) -> list[Located]:
    try:
        text = read_text(file)
    except OSError as err:
        raise ManifestError(f"{file}: cannot read: {err.strerror or err}", str(file)) from None
    except InputLimitError as err:
        raise ManifestError(f"{file}: cannot read: {err}", str(file)) from None
    return parse_manifests(text, str(file))


def _read_stdin(stdin: Any) -> list[Located]:
    text = (stdin or sys.stdin).read(MAX_STDIN + 1)
    if len(text) > MAX_STDIN:
        raise ManifestError(f"{STDIN_NAME}: cannot read: larger than {MAX_STDIN // 2**20} MiB", STDIN_NAME)
    return parse_manifests(text, STDIN_NAME)


def read_inputs(paths: Iterable[str], stdin: Any = None) -> tuple[list[Located], list[ManifestError]]:
    """Every object of every `-f` argument, in order, and every input that could not be read (one
    error per file: the other files of a directory are still read)."""
    found: list[Located] = []
    problems: list[ManifestError] = []
    for raw in paths:
        if raw == STDIN:
            readers: list[Any] = [lambda: _read_stdin(stdin)]
        else:
            path = Path(raw)
            files = files_under(path) if path.is_dir() else [path]
            if not files:
                problems.append(
                    ManifestError(f"{path}: no {', '.join(EXTENSIONS)} files in this directory", str(path))
                )
            readers = [lambda file=file: _read_file(file) for file in files]
        for read in readers:
            try:
                found.extend(read())
            except ManifestError as err:
                problems.append(err)
    return found, problems


def read_manifests(paths: Iterable[str], stdin: Any = None) -> list[Located]:
    """Every object of every `-f` argument, in order; raises the first ManifestError."""
    found, problems = read_inputs(paths, stdin)
    if problems:
        raise problems[0]
    return found
