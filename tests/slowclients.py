"""Slow and malicious TLS clients of the admission port, for tests/e2e/test_slow_clients.py and the
slow-client benchmark (tests/bench/slowclients.py).

Three kinds, each a real socket to the server:
- `handshake`: TCP connected, half of a real ClientHello sent, then one byte a second of the rest;
- `body`: handshake done, a whole header with `Content-Length: 1000` sent, then one byte a second of
  the body (the finding of issue 30);
- `header`: handshake done, half of a header line sent, then one byte a second of the rest.
A `Trickler` thread feeds every held connection a byte a second and notes when the server closed it
(end of stream, a reset, or an answer such as 408 followed by the end).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field

KINDS = ("handshake", "body", "header")
BODY_HEADER = (
    b"POST /validate?timeout=5s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b"Content-Length: 1000\r\n\r\n"
)
HALF_HEADER = b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Ty"


@dataclass(eq=False)
class SlowConn:
    kind: str
    sock: socket.socket  # an SSLSocket for `body` and `header`
    rest: bytes  # what is trickled, a byte a second
    opened: float
    closed: float | None = None  # when the client saw the server close it
    answer: bytes = b""  # what the server said before closing, if anything
    sent: int = 0  # bytes trickled

    def fileno(self) -> int:
        return self.sock.fileno()


def client_hello(host: str = "localhost") -> bytes:
    """The ClientHello a verifying TLS client sends first, made through memory BIOs."""
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server's answer
        tls.do_handshake()
    return outgoing.read()


def open_slow(kind: str, port: int, context: ssl.SSLContext, timeout: float = 10.0) -> SlowConn:
    """One slow connection of `kind` to 127.0.0.1:`port`, its first bytes sent."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    opened = time.monotonic()
    if kind == "handshake":
        hello = client_hello()
        half = len(hello) // 2
        raw.sendall(hello[:half])
        return SlowConn(kind, raw, hello[half:], opened)
    tls = context.wrap_socket(raw, server_hostname="localhost")  # the handshake, in `timeout`
    if kind == "body":
        tls.sendall(BODY_HEADER)
        return SlowConn(kind, tls, b"{" + b" " * 998 + b"}", opened)
    tls.sendall(HALF_HEADER)
    return SlowConn(kind, tls, b"pe: application/json\r\nContent-Length: 2\r\n\r\n{}", opened)


@dataclass(eq=False)
class Trickler:
    """Feeds every connection one byte a second; records when the server closes each one."""

    conns: list[SlowConn]
    period: float = 1.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Trickler:
        self._thread = threading.Thread(target=self._run, name="trickler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for conn in self.conns:
            conn.sock.close()

    def open(self) -> list[SlowConn]:
        return [conn for conn in self.conns if conn.closed is None]

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for conn in self.conns:
            # non-blocking: a readable TLS socket may carry only session tickets, no data
            conn.sock.setblocking(False)
            selector.register(conn, selectors.EVENT_READ, conn)
        next_byte = time.monotonic() + self.period
        while not self._stop.is_set() and selector.get_map():
            for key, _ in selector.select(timeout=max(0.0, next_byte - time.monotonic())):
                conn = key.data
                if self._read(conn):
                    selector.unregister(conn)
            if time.monotonic() >= next_byte:
                next_byte += self.period
                for conn in self.open():
                    self._trickle(conn)
                    if conn.closed is not None:
                        selector.unregister(conn)
        selector.close()

    def _read(self, conn: SlowConn) -> bool:
        """True once the server closed `conn`."""
        try:
            data = conn.sock.recv(4096)
        except (ssl.SSLWantReadError, BlockingIOError):
            return False  # a TLS record not yet whole, or session tickets only
        except OSError:
            data = b""
        if data:
            conn.answer += data
            return False
        conn.closed = time.monotonic()
        return True

    def _trickle(self, conn: SlowConn) -> None:
        if conn.sent >= len(conn.rest):
            return
        try:
            conn.sock.send(conn.rest[conn.sent : conn.sent + 1])
            conn.sent += 1
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
            pass  # the next second's byte then
        except OSError:
            conn.closed = time.monotonic()
