"""One admission connection as the request buffering front (webhook/worker.py) holds it: the phase it
is in, its deadline, the bytes received and not yet handed over, and what a worker thread sees in
place of the socket while it answers a request.

gunicorn's gthread worker (gunicorn/workers/gthread.py, ThreadWorker.handle and TConn.init) does the
TLS handshake, reads the header (http/message.py, Request.parse) and lets the app read the body
(http/body.py) on a pool thread, on a blocking socket with no deadline; it only waits up to 5 s for a
first byte (DEFAULT_WORKER_DATA_TIMEOUT) before giving the connection back to its poller. A client
that sends one byte a second therefore holds a thread for as long as it cares to. Here all of that
happens on the worker's poller, non-blocking and under a deadline per phase, and a pool thread gets a
request only once all of it is in memory; it writes its answer to memory too (Outbox), which the
poller then sends.
"""

from __future__ import annotations

import enum
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

from gunicorn.http.parser import RequestParser
from gunicorn.workers.gthread import TConn

from webhook.framing import Chunks


class Phase(enum.Enum):
    HANDSHAKE = "handshake"  # TLS handshake under way
    IDLE = "idle"  # between requests on a kept-alive connection (or before the first one)
    HEADER = "header"  # a request's header is arriving
    BODY = "body"  # its body is arriving
    THREAD = "thread"  # the whole request is with the thread pool (queued or being answered)
    SEND = "send"  # the answer is being written
    LINGER = "linger"  # half-closed after the last answer, reading what the client still sends


@dataclass(frozen=True)
class FrontLimits:
    """How long each phase may take, in seconds, and how much one request may buffer."""

    handshake: float
    header: float
    body: float  # also bounds writing the answer
    keepalive: float  # idle between requests
    max_body: int  # bytes of body buffered at most: the app's limit + 1 (webhook/app.py)
    linger: float = 2.0  # as gunicorn's util.close_graceful

    def timeout(self, phase: Phase) -> float:
        return {
            Phase.HANDSHAKE: self.handshake,
            Phase.IDLE: self.keepalive,
            Phase.HEADER: self.header,
            Phase.BODY: self.body,
            Phase.SEND: self.body,
            Phase.LINGER: self.linger,
        }[phase]


class Outbox:
    """The socket a pool thread answers on: what it writes is kept for the poller to send, and a
    read finds the end of the stream (the request it may read is in its parser already)."""

    def __init__(self, peer: socket.socket) -> None:
        self.data = bytearray()
        self.closed = False  # the thread gave up on the connection (an error, a close)
        self._peer = peer  # for the addresses only

    def sendall(self, data: bytes) -> None:
        self.data += data

    def send(self, data: bytes) -> int:
        self.data += data
        return len(data)

    def recv(self, size: int) -> bytes:
        return b""

    def setblocking(self, flag: bool) -> None:
        """The poller owns the real socket's mode."""

    def settimeout(self, value: float | None) -> None:
        """The poller owns the real socket's deadlines."""

    def gettimeout(self) -> float | None:
        return None

    def shutdown(self, how: int) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True

    def getsockname(self) -> Any:
        return self._peer.getsockname()

    def getpeername(self) -> Any:
        return self._peer.getpeername()


class BufferedParser(RequestParser):
    """gunicorn's parser over one buffered request. It must not send 100 Continue: the front did
    so while the body was awaited, and now the body is here."""

    def __next__(self) -> Any:
        message = super().__next__()
        message._expected_100_continue = False
        return message

    next = __next__


class BufferedConn(TConn):
    """A connection from accept to close; only the poller's thread changes it, except while
    `phase` is THREAD, when only the pool thread given it does."""

    sock: ssl.SSLSocket | Outbox  # the Outbox while a pool thread has the connection
    parser: BufferedParser | None

    def __init__(self, cfg: Any, tls: ssl.SSLSocket, client: Any, server: Any, deadline: float) -> None:
        super().__init__(cfg, tls, client, server)  # leaves the socket non-blocking
        self.tls = tls
        self.initialized = True  # the handshake is the front's, not TConn.init's
        self.phase = Phase.HANDSHAKE
        self.deadline: float | None = deadline
        self.inbox = bytearray()  # received and not yet handed over
        self.searched = 0  # where the search for the header's end resumes
        self.chunks: Chunks | None = None
        self.continued = False  # 100 Continue sent for the request arriving
        self.whole = True  # the request handed over carried all of its body
        self.keep = False  # serve another request after this answer
        self.out = memoryview(b"")  # what is still to be sent
        self.watched = 0  # the selector events registered, 0 when not registered
        self.lingered = 0  # bytes read while lingering

    def init(self) -> None:
        """Nothing to do on the pool thread: the poller did the handshake."""

    def enter(self, phase: Phase, limits: FrontLimits, now: float | None = None) -> None:
        self.phase = phase
        if phase is Phase.THREAD:
            self.deadline = None  # the worker timeout bounds the app
        else:
            self.deadline = (time.monotonic() if now is None else now) + limits.timeout(phase)

    def hand_over(self, end: int, whole: bool) -> BufferedParser:
        """The first `end` bytes of the inbox as a parser for a pool thread, which answers on an
        Outbox put in place of the socket until the poller takes the connection back."""
        request = bytes(self.inbox[:end])
        del self.inbox[:end]
        self.searched, self.chunks, self.continued, self.whole = 0, None, False, whole
        self.sock = Outbox(self.tls)
        parser = BufferedParser(self.cfg, self.sock, self.client)
        parser.unreader.unread(request)
        self.parser = parser
        return parser

    def take_back(self) -> Outbox:
        """The pool thread is done: the real socket again, and the thread's answer."""
        outbox = self.sock
        self.sock, self.parser = self.tls, None
        assert isinstance(outbox, Outbox)
        return outbox


def plain_answer(status: int, reason: str) -> bytes:
    """A body-less answer the front gives itself (408, 431), closing the connection."""
    return f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".encode()


CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
