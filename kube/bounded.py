"""YAML and JSON read within bounds, for every file a user hands us (manifests, state files).

A hostile or broken file must cost a bounded amount of time and memory and end in one
`InputLimitError`, never in a `MemoryError`, a `RecursionError` or minutes of work:

- size: at most `MAX_BYTES` of text;
- nesting: at most `MAX_DEPTH` levels of maps and lists, counted while the YAML is composed (before
  any object is built) and for JSON by `json_depth` right after decoding. Kubernetes objects nest a
  few dozen levels (a CRD schema among the deepest); the bound keeps every recursive walk done later
  (deepcopy, json.dumps, the YAML constructor) far below Python's recursion limit;
- aliases: the rule kubectl's YAML decoder applies (gopkg.in/yaml.v2 decode.go `allowedAliasRatio`,
  through sigs.k8s.io/yaml): once a document expands to more than 1,000 nodes of which more than
  100 come from aliases, the aliased share may not pass 99 %, falling from 99 % at 400,000 nodes to
  10 % at 4,000,000. The counts are kept per node while composing, so a "billion laughs" is refused
  after reading its few hundred bytes, without expanding anything.

PyYAML's C parser (libyaml) produces the events; the composer is PyYAML's own, with the counting
added, and the constructor is the safe one. A text in which no alias can start (no `*` after a
space, a line start or an indicator) is read first by libyaml's own composer (yaml.CSafeLoader,
about twice as fast) and its nesting checked on the nodes; any error there, or nesting past the
bound, and the text is read again the counting way, so what is refused, with which words and line,
is always the counting reader's.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, ScalarEvent
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser as _Parser
except ImportError:  # a PyYAML built without libyaml: the pure-Python parser, slower, same events
    from yaml.parser import Parser as _Parser  # type: ignore[assignment,unused-ignore]
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _PyParser(Reader, Scanner, _Parser):  # type: ignore[misc,valid-type,unused-ignore]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _Parser.__init__(self)

    _Parser = _PyParser  # type: ignore[misc,assignment,unused-ignore]

T = TypeVar("T")

MAX_BYTES = 32 * 2**20
MAX_DEPTH = 128
# gopkg.in/yaml.v2 decode.go: the alias rule's thresholds
_ALIAS_MIN_NODES = 1000
_ALIAS_MIN_ALIASED = 100
_RATIO_LOW, _RATIO_HIGH = 400_000, 4_000_000


class InputLimitError(ValueError):
    """A document over one of the bounds: `reason` says which, `line` (from 1) where when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(f"line {line}: {reason}" if line is not None else reason)


def allowed_alias_ratio(nodes: int) -> float:
    """The share of a document's expanded nodes that may come from aliases (yaml.v2's rule)."""
    if nodes <= _RATIO_LOW:
        return 0.99
    if nodes >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW)


def excessive_aliasing(nodes: int, aliased: int) -> bool:
    return (
        aliased > _ALIAS_MIN_ALIASED
        and nodes > _ALIAS_MIN_NODES
        and aliased / nodes > allowed_alias_ratio(nodes)
    )


def _too_large() -> InputLimitError:
    return InputLimitError(f"larger than {MAX_BYTES // 2**20} MiB")


def check_size(text: str) -> None:
    # characters, not bytes, for text already read: a bound on the work either way
    if len(text) > MAX_BYTES:
        raise _too_large()


def read_text(path: Path) -> str:
    """A file's UTF-8 text, read no further than the bound (a FIFO or /dev/zero included). OSError
    for a file that cannot be read; InputLimitError for one too large or not UTF-8."""
    with path.open("rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise _too_large()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputLimitError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None


class _CountingComposer(Composer):
    """PyYAML's composer, counting for each node how many nodes it expands to (`_expanded`) and,
    per document, how many of them an alias brought in; it refuses a document past the bounds."""

    def __init__(self) -> None:
        super().__init__()
        self._expanded: dict[int, int] = {}
        self._frames: list[list[int]] = []  # [nodes, aliased] of each collection being composed
        self._totals = [0, 0]

    def compose_document(self) -> Any:
        self._expanded.clear()
        self._totals = [0, 0]
        return super().compose_document()

    def _count(self, nodes: int, aliased: int, mark: Any) -> None:
        into = self._frames[-1] if self._frames else self._totals
        into[0] += nodes
        into[1] += aliased
        if not self._frames and excessive_aliasing(*self._totals):
            raise InputLimitError("the document contains excessive aliasing", mark.line + 1)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            size = self._expanded.get(id(node))
            if size is None:  # the anchor is still being composed: it contains its own alias
                raise InputLimitError("an anchor contains an alias of itself", mark.line + 1)
            self._count(size, size, mark)
            self._check_frames(mark)
            return node
        mark = self.peek_event().start_mark
        # the open frames are the collections around this node: a collection may be the 128th
        if not self.check_event(ScalarEvent) and len(self._frames) >= MAX_DEPTH:
            raise InputLimitError(f"nested deeper than {MAX_DEPTH} levels", mark.line + 1)
        frame = [1, 0]
        self._frames.append(frame)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._frames.pop()
        self._expanded[id(node)] = frame[0]
        self._count(frame[0], frame[1], mark)
        return node

    def _check_frames(self, mark: Any) -> None:
        """The document's running totals include the collections still open: a bomb is stopped
        inside its first big list, not after it."""
        nodes = self._totals[0] + sum(f[0] for f in self._frames)
        aliased = self._totals[1] + sum(f[1] for f in self._frames)
        if excessive_aliasing(nodes, aliased):
            raise InputLimitError("the document contains excessive aliasing", mark.line + 1)


class BoundedLoader(_CountingComposer, _Parser, SafeConstructor, Resolver):  # type: ignore[misc,valid-type,unused-ignore]
    """yaml.CSafeLoader with the counting composer in place of libyaml's own."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _CountingComposer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)


# Where an alias could start: `*` at the start of the text or of a line, or after a blank or an
# indicator. A text without one has no alias, so only the nesting bound applies to it.
_MAYBE_ALIAS = re.compile(r"(?:^|[\s\[\]{},:?-])\*", re.MULTILINE)
# libyaml's own limit (yaml_set_max_nest_level, 1,000 by default since 0.2.5): its composer
# recurses once per level, so no text reaches it deeper than this (tests/kube/test_bounded.py).
LIBYAML_MAX_NEST = 1000
_FAST = hasattr(yaml, "CSafeLoader")


def yaml_documents(text: str) -> Iterator[tuple[yaml.Node | None, Any]]:
    """(node, object) for each document of `text`, in order; the node (None for an empty document)
    keeps the lines. Raises InputLimitError, or yaml.YAMLError for text that is not YAML."""
    check_size(text)
    if not _FAST or _MAYBE_ALIAS.search(text):
        yield from _counted_documents(text)
        return
    read = 0
    try:
        for pair in _fast_documents(text):
            yield pair
            read += 1
    except (yaml.YAMLError, InputLimitError):
        # read again the counting way from the document that failed: its error, in its words
        for i, pair in enumerate(_counted_documents(text)):
            if i >= read:
                yield pair


def _fast_documents(text: str) -> Iterator[tuple[yaml.Node | None, Any]]:
    """Documents without aliases, composed by libyaml; InputLimitError at one nested too deep."""
    loader = yaml.CSafeLoader(text)
    try:
        while loader.check_node():
            with _collector_paused():
                node = loader.get_node()
                if node is not None and _nesting(node) > MAX_DEPTH:
                    raise InputLimitError(f"nested deeper than {MAX_DEPTH} levels")
                doc = loader.construct_document(node) if node is not None else None
            yield node, doc
    finally:
        loader.dispose()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while one document is composed and built: the nodes and
    objects form no cycle (the fast reading has no alias), and the collections their allocations
    would trigger, each walking everything read so far, cost almost half the reading."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _nesting(root: yaml.Node) -> int:
    """How deeply collections nest under `root` (a tree: the text has no alias), walked without
    recursion; the walk stops past MAX_DEPTH."""
    scalar = yaml.ScalarNode
    if type(root) is scalar:
        return 0
    deepest = 0
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        children = [c for pair in node.value for c in pair] if type(node) is yaml.MappingNode else node.value
        stack.extend((child, depth + 1) for child in children if type(child) is not scalar)
    return deepest


def _counted_documents(text: str) -> Iterator[tuple[yaml.Node | None, Any]]:
    loader = BoundedLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def json_depth(value: object) -> int:
    """How deeply maps and lists nest in a decoded JSON value, walked without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_json_depth(value: object) -> None:
    if json_depth(value) > MAX_DEPTH:
        raise InputLimitError(f"nested deeper than {MAX_DEPTH} levels")


def json_value(decode: Callable[[], T]) -> T:
    """`decode()` (a json decoding call) with Python's own limit turned into ours: its decoder gives
    up with a RecursionError near 1,000 levels. The caller bounds what it decoded with
    `check_json_depth`."""
    try:
        return decode()
    except RecursionError:
        raise InputLimitError(f"nested deeper than {MAX_DEPTH} levels") from None


def load_json(text: str) -> Any:
    """json.loads within the bounds; json.JSONDecodeError for text that is not JSON."""
    check_size(text)
    value = json_value(lambda: json.loads(text))
    check_json_depth(value)
    return value
