"""Where one HTTP/1.1 request ends in the bytes received so far: what the request buffering front
(webhook/front.py) needs to know to hand a worker thread a whole request and nothing else. Pure: no
I/O, no clock.

It reads only what framing needs (the header's end, Content-Length, Transfer-Encoding: chunked,
Expect) and does not judge the request: anything it cannot frame (conflicting or malformed lengths,
other transfer codings, bad chunk syntax) is handed over with the header alone, for gunicorn's parser
to answer 400 or 501 as it does for any request, and the connection is then closed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# The header section must end within this many bytes. The apiserver's are a few hundred; gunicorn's
# own limits (request line 4094, 100 fields of 8190) would allow 800 KiB per connection, too much to
# hold for every one of --max-connections.
MAX_HEADER_BYTES = 64 * 1024
# A chunk-size line (hex digits, perhaps extensions) and a trailer section end within these.
MAX_CHUNK_LINE_BYTES = 8190
MAX_TRAILER_BYTES = 64 * 1024


class Framing(enum.Enum):
    NEED_MORE = "need-more"  # the header or the body is still arriving
    COMPLETE = "complete"  # buf[:end] is the whole request
    HEADER_ONLY = "header-only"  # buf[:end] is the header; its body is not to be buffered
    HEADER_TOO_LARGE = "header-too-large"  # no end of header within MAX_HEADER_BYTES


@dataclass(frozen=True)
class Frame:
    framing: Framing
    end: int = 0  # where the handed-over bytes end (COMPLETE, HEADER_ONLY)
    header_end: int = 0  # 0 until the header's end is known
    expect_continue: bool = False  # an HTTP/1.1 client waits for 100 Continue before its body


@dataclass(frozen=True)
class Chunks:
    """How far a chunked body has been scanned. The scan resumes at `at`, so a trickled body is not
    rescanned from its start."""

    at: int  # where the next chunk-size line starts
    decoded: int = 0  # decoded bytes of the whole chunks before `at`
    arrived: int = 0  # decoded bytes of the chunk at `at` received so far (for the size limit)
    end: int = 0  # just past the trailer section once the body is complete; 0 before
    broken: bool = False  # the chunk framing is malformed

    @property
    def received(self) -> int:
        return self.decoded + self.arrived


@dataclass(frozen=True)
class Header:
    end: int  # just past the blank line
    http11: bool
    content_length: int | None
    chunked: bool
    unframable: bool  # lengths the front will not guess at; gunicorn's parser judges them
    expect_continue: bool


def header_end(buf: bytes | bytearray, start: int = 0) -> int:
    """Just past the header's blank line, or 0 while it has not arrived; the search begins at
    `start` (so a trickled header is not rescanned). A bare-LF header is handed over as it is, for
    gunicorn to refuse."""
    crlf = buf.find(b"\r\n\r\n", start)
    lf = buf.find(b"\n\n", start)
    ends = [i + 4 for i in (crlf,) if i >= 0] + [i + 2 for i in (lf,) if i >= 0]
    return min(ends) if ends else 0


def parse_header(buf: bytes | bytearray, end: int) -> Header:
    lines = bytes(buf[:end]).split(b"\n")
    request_line = lines[0].rstrip(b"\r")
    lengths: list[bytes] = []
    codings: list[bytes] = []
    expect = b""
    for line in lines[1:]:
        name, sep, value = line.rstrip(b"\r").partition(b":")
        if not sep:
            continue
        key, value = name.strip().lower(), value.strip()
        if key == b"content-length":
            lengths.append(value)
        elif key == b"transfer-encoding":
            codings.extend(part.strip().lower() for part in value.split(b","))
        elif key == b"expect":
            expect = value.lower()
    length = int(lengths[0]) if len(lengths) == 1 and lengths[0].isdigit() else None
    chunked = codings == [b"chunked"]
    unframable = len(lengths) > 1 or (lengths and length is None) or (codings and not chunked)
    unframable = bool(unframable) or bool(lengths and codings)
    http11 = request_line.endswith(b"HTTP/1.1")
    return Header(end, http11, length, chunked, unframable, http11 and expect == b"100-continue")


def frame(
    buf: bytes | bytearray, max_body: int, chunks: Chunks | None = None, searched: int = 0
) -> tuple[Frame, Chunks | None]:
    """Where the request at the start of `buf` ends, and the chunked scan to resume from next time.
    A body declared over `max_body` is not buffered (HEADER_ONLY: the app answers 413 unread); a
    chunked body is buffered until it ends or more than `max_body` decoded bytes arrived. The
    header's end is searched for from `searched` on (where the last search stopped, less 3)."""
    end = header_end(buf, searched)
    if not end:
        return Frame(Framing.HEADER_TOO_LARGE if len(buf) > MAX_HEADER_BYTES else Framing.NEED_MORE), None
    if end > MAX_HEADER_BYTES:
        return Frame(Framing.HEADER_TOO_LARGE), None
    header = parse_header(buf, end)
    if header.unframable:
        return Frame(Framing.HEADER_ONLY, end, end), None
    if header.chunked:
        return _frame_chunked(buf, header, max_body, chunks or Chunks(end))
    length = header.content_length or 0
    if length > max_body:
        return Frame(Framing.HEADER_ONLY, end, end), None
    if len(buf) >= end + length:
        return Frame(Framing.COMPLETE, end + length, end), None
    return Frame(Framing.NEED_MORE, 0, end, header.expect_continue), None


def _frame_chunked(
    buf: bytes | bytearray, header: Header, max_body: int, chunks: Chunks
) -> tuple[Frame, Chunks | None]:
    scanned = scan_chunks(buf, chunks)
    if scanned.broken:  # gunicorn's chunked reader says what is wrong
        return Frame(Framing.HEADER_ONLY, header.end, header.end), None
    if scanned.end:
        return Frame(Framing.COMPLETE, scanned.end, header.end), None
    if scanned.received > max_body:  # enough for the app to tell that the body is too large
        return Frame(Framing.HEADER_ONLY, len(buf), header.end), None
    return Frame(Framing.NEED_MORE, 0, header.end, header.expect_continue), scanned


def scan_chunks(buf: bytes | bytearray, chunks: Chunks) -> Chunks:
    """The scan of the chunks from `chunks.at` on, as far as `buf` goes (RFC 9112 section 7.1)."""
    at, decoded = chunks.at, chunks.decoded
    while True:
        line_end = buf.find(b"\r\n", at, at + MAX_CHUNK_LINE_BYTES + 2)
        if line_end < 0:
            return Chunks(at, decoded, broken=len(buf) - at > MAX_CHUNK_LINE_BYTES)
        size_text = bytes(buf[at:line_end]).split(b";", 1)[0].strip()
        if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
            return Chunks(at, decoded, broken=True)
        size = int(size_text, 16)
        if size == 0:
            return _trailers(buf, line_end + 2, Chunks(at, decoded))
        data_end = line_end + 2 + size
        if len(buf) < data_end + 2:
            return Chunks(at, decoded, arrived=max(0, min(len(buf), data_end) - line_end - 2))
        if buf[data_end : data_end + 2] != b"\r\n":
            return Chunks(at, decoded, broken=True)
        at, decoded = data_end + 2, decoded + size


def _trailers(buf: bytes | bytearray, start: int, last: Chunks) -> Chunks:
    """After the last chunk: an empty line, or trailer fields and then one."""
    if len(buf) >= start + 2 and buf[start : start + 2] == b"\r\n":
        return Chunks(last.at, last.decoded, end=start + 2)
    found = buf.find(b"\r\n\r\n", start)
    if found < 0:
        return Chunks(last.at, last.decoded, broken=len(buf) - start > MAX_TRAILER_BYTES)
    return Chunks(last.at, last.decoded, end=found + 4)
