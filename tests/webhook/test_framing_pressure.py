"""The request buffering front's pure parts: where a request ends in the bytes received so far
(webhook/framing.py), and when a worker's admission port counts as unable to answer
(webhook/pressure.py)."""

from __future__ import annotations

from webhook.framing import MAX_HEADER_BYTES, Chunks, Framing, frame
from webhook.pressure import SATURATION_SECONDS, Pressure, PressureLimits

HEAD = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def test_a_request_is_complete_only_with_all_of_its_declared_body() -> None:
    """A header without its blank line, or a body short of Content-Length, needs more; the whole
    request is handed over up to its end, and what follows it (a pipelined request) is not."""
    request = HEAD + b"Content-Length: 4\r\n\r\n{}{}"
    for cut in range(len(request)):
        assert frame(request[:cut], 100)[0].framing is Framing.NEED_MORE, cut
    found, _ = frame(request + b"GET / HTTP/1.1\r\n", 100)
    assert (found.framing, found.end) == (Framing.COMPLETE, len(request))


def test_a_body_over_the_limit_is_not_buffered_and_an_endless_header_is_refused() -> None:
    """Content-Length over the limit hands the header over alone (the app answers 413 unread); a
    header with no end within MAX_HEADER_BYTES is refused; ambiguous lengths go to gunicorn."""
    found, _ = frame(HEAD + b"Content-Length: 101\r\n\r\n", 100)
    assert found.framing is Framing.HEADER_ONLY
    assert frame(HEAD + b"X: " + b"a" * MAX_HEADER_BYTES, 100)[0].framing is Framing.HEADER_TOO_LARGE
    both = HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}"
    assert frame(both, 100)[0].framing is Framing.HEADER_ONLY
    twice = HEAD + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
    assert frame(twice, 100)[0].framing is Framing.HEADER_ONLY


def test_a_chunked_body_is_complete_at_its_last_chunk_and_cut_at_the_limit() -> None:
    """Chunks are scanned where the last scan stopped; the body ends after the zero chunk and the
    trailer section; more decoded bytes than the limit hand the request over (the app says 413);
    broken chunk syntax goes to gunicorn's reader."""
    head = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    body = b"2\r\n{}\r\n3;ext=1\r\n   \r\n0\r\nX-T: 1\r\n\r\n"
    chunks: Chunks | None = None
    for cut in range(len(head), len(head + body)):
        found, chunks = frame((head + body)[:cut], 100, chunks)
        assert found.framing is Framing.NEED_MORE, cut
    found, _ = frame(head + body, 100, chunks)
    assert (found.framing, found.end) == (Framing.COMPLETE, len(head + body))
    endless = head + b"ffff\r\n" + b"a" * 200
    assert frame(endless, 100)[0].framing is Framing.HEADER_ONLY
    assert frame(head + b"zz\r\n", 100)[0].framing is Framing.HEADER_ONLY


def test_expect_continue_is_reported_while_the_body_is_awaited() -> None:
    """An HTTP/1.1 client that asks for 100 Continue gets it from the front, once its header is in."""
    found, _ = frame(HEAD + b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n", 100)
    assert (found.framing, found.expect_continue) == (Framing.NEED_MORE, True)


def test_the_admission_port_is_blocked_only_after_the_saturation_bound() -> None:
    """A review waiting for a thread, or every connection slot taken, longer than
    SATURATION_SECONDS makes the worker not ready, with the reason; a front loop silent for seconds
    too, and one that has not turned yet at once; all clear again once the pool starts the review
    and a slot frees up."""
    pressure = Pressure(PressureLimits(threads=8, connections=4))
    assert pressure.blocked(0.0) == ["admission front loop (not started: the worker is starting)"]
    pressure.submitted(0.0)
    pressure.turned(0.0, connections=4)
    assert pressure.blocked(SATURATION_SECONDS) == []
    reasons = pressure.blocked(SATURATION_SECONDS + 0.1)
    assert [r.split(" (")[0] for r in reasons] == ["admission threads", "admission connections"]
    assert "1 reviews waiting" in reasons[0]
    pressure.started()
    pressure.turned(2.0, connections=3)
    assert pressure.blocked(2.5) == []
    assert pressure.blocked(10.0) == ["admission front loop (silent for 8.0 s)"]
