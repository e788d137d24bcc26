"""A list response body read as it arrives, its `items` handed out one at a time, never held whole.

A watch cache answers a list with resourceVersion "0" (and an unpaged relist) in one body whatever
its `limit` (apiserver pkg/storage/cacher/cacher.go computeListLimit): at 150,000 pods hundreds of
MB, which, read whole and then decoded whole, were the process's peak. Here the body is read chunk
by chunk and each item of the top-level `items` array is decoded and handed on as soon as its last
byte has arrived; at any time the reader holds one chunk, the item being completed and the other
top-level members (`metadata`, `kind`...), which may come before or after `items` (JSON does not
order an object's members).

Where an item ends is found by msgspec, not by a Python loop over bytes (measured: a regex
tokenizer over a pod list ran at 20 MB/s, msgspec's validating skip at 900 MB/s, its schema decode
of the same pods at 250 MB/s). Decoding `buffer[start:]` as `msgspec.Raw` parses exactly one JSON
value and then refuses what follows with "trailing characters (byte N)", N being one past the
first non-blank byte after that value (msgspec src/msgspec/_core.c `json_has_trailing_characters`
reads that byte, then reports its position; input that ends inside the value is
`ms_err_truncated`'s "Input data was truncated", or an invalid number at the end offset for "1."
or "1e"); so one C pass both validates the item and gives its end, and the slice is then decoded
by the caller's item decoder (docs/upstream.md; tests/kube/test_liststream.py pins it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec

_BLANK = b" \t\n\r"  # JSON's whitespace (RFC 8259 section 2)
_AT_BYTE = re.compile(r"\(byte (\d+)\)$")  # where msgspec's DecodeError says it stopped
_TRAILING = "trailing characters "
_TRUNCATED = "Input data was truncated"


class BadList(ValueError):
    """The body is not a JSON object, or breaks off: one line saying what is wrong with it."""


class _Buffer:
    """The bytes received and not yet consumed, refilled from `chunks` on demand."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self.data = b""
        self.pos = 0
        self.ended = False

    def more(self, at_least: int = 1) -> bool:
        """Reads chunks until `at_least` more bytes arrived; False at the end of the body."""
        if self.ended:
            return False
        parts = [self.data[self.pos :]]
        got = 0
        for chunk in self._chunks:
            parts.append(chunk)
            got += len(chunk)
            if got >= at_least:
                break
        else:
            self.ended = True
        self.data, self.pos = b"".join(parts), 0
        return got > 0

    def fill(self, limit: int) -> bool:
        """Reads ahead until the body has ended or `limit` bytes are pending; whether it ended
        (the rest of the body is then all in `data`)."""
        pending = len(self.data) - self.pos
        if not self.ended and pending < limit:
            self.more(limit - pending)
        return self.ended

    def peek(self) -> int:
        """The next non-blank byte (consumed blanks are dropped); -1 at the end of the body."""
        while True:
            data, pos = self.data, self.pos
            while pos < len(data) and data[pos] in _BLANK:
                pos += 1
            self.pos = pos
            if pos < len(data):
                return data[pos]
            if not self.more():
                return -1

    def expect(self, allowed: bytes, where: str) -> int:
        """Consumes the next non-blank byte, which must be one of `allowed`."""
        byte = self.peek()
        if byte < 0:
            raise BadList(f"list page is not JSON: the body ends inside {where}")
        if byte not in allowed:
            wanted = " or ".join(repr(chr(b)) for b in allowed)
            raise BadList(f"list page is not JSON: expected {wanted} in {where}, got {chr(byte)!r}")
        self.pos += 1
        return byte

    def value(self) -> bytes:
        """The bytes of the next JSON value (validated), consumed; refills until it is complete."""
        self.peek()
        while True:
            end = _value_end(self.data, self.pos)
            if end is not None:
                raw, self.pos = self.data[self.pos : end], end
                return raw
            # incomplete: read at least as much again as is pending, so that a value many chunks
            # long is re-parsed a logarithmic number of times, not once per chunk
            if not self.more(max(1, len(self.data) - self.pos)):
                raise BadList("list page is not JSON: the body ends inside a value")


def _value_end(data: bytes, start: int) -> int | None:
    """Where the JSON value starting at `data[start]` ends (exclusive), None when `data` ends
    before it is known to; BadList when it is not valid JSON."""
    view = memoryview(data)[start:]
    try:
        msgspec.json.decode(view, type=msgspec.Raw)
    except msgspec.DecodeError as err:
        message = str(err)
        at = _AT_BYTE.search(message)
        if at is not None and message.startswith(_TRAILING, at.start() - len(_TRAILING)):
            return start + int(at.group(1)) - 1  # N counts one past the trailing byte
        if _TRUNCATED in message or (at is not None and int(at.group(1)) >= len(view)):
            # cut at the end of what arrived ("1." and "1e" are refused as invalid numbers there,
            # not as truncated): the next chunk decides
            return None
        raise BadList(f"list page is not JSON: {message}") from None
    return None  # the value runs to the end of what arrived: a number may go on in the next chunk


def _decoded_items(raw: bytes, decode_items: Callable[[bytes], Any]) -> list[Any] | None:
    """A whole items array decoded at once; None when the decoder refuses it (then each item is
    read on its own, as any body is, which gives the same items or the same refusal)."""
    try:
        items = decode_items(raw)
    except ValueError:  # json.JSONDecodeError and msgspec's errors are ValueErrors
        return None
    return items if type(items) is list else None


def _decoded(raw: bytes, decode: Callable[[bytes], Any]) -> Any:
    try:
        return decode(raw)
    except ValueError as err:  # json.JSONDecodeError and msgspec.DecodeError are ValueErrors
        raise BadList(f"list page is not JSON: {err}") from None


# A body that ends within this many bytes of its `items` array (a list page: 500 pods are about
# 3 MB) has the array decoded in one pass: read item by item, each item is parsed twice (the
# validating skip that finds its end, then its decode) with a Python step between (measured at the
# benchmark's pods: 25 against 11 us a pod). A longer body (a watch cache's unpaged answer) is read
# item by item, holding at most this much beyond the item being read.
WHOLE_BELOW = 4 * 1024 * 1024


class ListReader:
    """One list body: iterate `items()` for its items, decoded by `decode_item` (or, where the body
    ends within `WHOLE_BELOW` bytes of the array, by `decode_items` all at once, which gives the
    same list); once that ends, `members` holds the body's other top-level members, decoded with
    `json.loads`."""

    def __init__(
        self,
        chunks: Iterable[bytes],
        decode_item: Callable[[bytes], Any],
        decode_items: Callable[[bytes], Any] | None = None,
    ) -> None:
        self._buffer = _Buffer(chunks)
        self._decode_item = decode_item
        self._decode_items = decode_items
        self.members: dict[str, Any] = {}

    def items(self) -> Iterator[Any]:
        """Each item of the top-level `items` array, as its end arrives; raises BadList on a body
        that is not a JSON object (with the same words as a whole-body decode would give)."""
        buffer = self._buffer
        if buffer.peek() != ord("{"):
            self._refuse_whole()
        buffer.pos += 1
        seen_items = False
        if buffer.peek() == ord("}"):
            buffer.pos += 1
        else:
            while True:
                key = _decoded(buffer.value(), json.loads)
                if not isinstance(key, str):
                    raise BadList("list page is not JSON: an object key is not a string")
                buffer.expect(b":", "the list object")
                if key == "items" and buffer.peek() == ord("["):
                    if seen_items:
                        raise BadList("list page is not JSON: it has two items arrays")
                    seen_items = True
                    yield from self._whole_array()
                else:
                    self.members[key] = _decoded(buffer.value(), json.loads)
                if buffer.expect(b",}", "the list object") == ord("}"):
                    break
        if buffer.peek() >= 0:
            raise BadList("list page is not JSON: data after the list object")

    def _whole_array(self) -> Iterator[Any]:
        """The items array (the buffer at its `[`): in one decode where the body has ended within
        `WHOLE_BELOW` bytes and the array is valid and accepted whole; item by item otherwise,
        from the same byte, so a bad array is refused with the same words either way."""
        buffer = self._buffer
        decode_items = self._decode_items
        whole = decode_items is not None and buffer.fill(WHOLE_BELOW)
        start = buffer.pos  # after the read-ahead, which moves the pending bytes to the front
        if whole and decode_items is not None:
            try:
                end = _value_end(buffer.data, start)
            except BadList:
                end = None
            if end is not None:
                items = _decoded_items(buffer.data[start:end], decode_items)
                if items is not None:
                    buffer.pos = end
                    yield from items
                    return
        buffer.pos = start + 1
        yield from self._array()

    def _array(self) -> Iterator[Any]:
        buffer = self._buffer
        decode = self._decode_item
        if buffer.peek() == ord("]"):
            buffer.pos += 1
            return
        while True:
            yield _decoded(buffer.value(), decode)
            if buffer.expect(b",]", "the items array") == ord("]"):
                return

    def _refuse_whole(self) -> None:
        """Not an object: the rest is read (such a body is an error page or a proxy's answer, not
        a list) so the error says whether it is JSON at all, as a whole-body decode did."""
        buffer = self._buffer
        buffer.more(1 << 62)  # all of it, in one join
        try:
            json.loads(buffer.data[buffer.pos :])
        except ValueError as err:
            raise BadList(f"list page is not JSON: {err}") from None
        raise BadList("list page is not an object")
