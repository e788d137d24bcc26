"""The webhook's gunicorn worker: gthread (a thread pool per process, which the per-worker caches and
the reloading certificate are built around) with a request buffering front on its poller, so that a
slow or malicious client holds a file descriptor and a few kilobytes, never a thread.

gunicorn's ThreadWorker (gunicorn/workers/gthread.py) keeps: the pool, the arbiter heartbeat, the
accept gate at `worker_connections` (--max-connections), graceful shutdown and the request handling
on the pool thread (ThreadWorker.handle, handle_request). Replaced: what happens between accept and
the pool, and between the answer and the next request, as webhook/front.py says.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from gunicorn import sock as gunicorn_sock
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, ThreadWorker

from webhook import framing
from webhook.front import CONTINUE, BufferedConn, FrontLimits, Phase, plain_answer
from webhook.pressure import Pressure, PressureLimits

T = TypeVar("T")

READ_SIZE = 64 * 1024
# Bytes read from one connection per turn of the loop: one fast client must not starve the others.
READ_TURN = 1024 * 1024
MAX_LINGER_BYTES = 64 * 1024  # as gunicorn's util.close_graceful


class BufferingWorker(ThreadWorker):
    """gunicorn `worker_class` "webhook.worker.BufferingWorker"; the app must be a WebhookServer
    (webhook/server.py), which gives the front's limits and passes the pressure to /readyz."""

    def init_process(self) -> None:
        self.limits: FrontLimits = self.app.front_limits()
        self.front: set[BufferedConn] = set()
        self.pressure = Pressure(PressureLimits(self.cfg.threads, self.cfg.worker_connections))
        self.app.pressure = self.pressure  # read by WebhookServer.load, for the status port
        super().init_process()

    def accept(self, listener: socket.socket) -> None:
        try:
            raw, client = listener.accept()
        except OSError as err:
            if err.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        self.nr_conns += 1
        try:
            raw.setblocking(False)
            # the hook (WebhookServer.ssl_context) gives the certificate loaded last
            tls = gunicorn_sock.ssl_context(self.cfg).wrap_socket(
                raw, server_side=True, do_handshake_on_connect=False, suppress_ragged_eofs=True
            )
        except Exception as err:  # no certificate yet, or the peer already gone
            self.log.debug("connection from %s refused: %s", client, err)
            self.nr_conns -= 1
            raw.close()
            return
        now = time.monotonic()
        conn = BufferedConn(self.cfg, tls, client, listener.getsockname(), now + self.limits.handshake)
        self.front.add(conn)
        self._watch(conn, selectors.EVENT_READ)

    # -- the poller's side ------------------------------------------------------------------

    def _watch(self, conn: BufferedConn, events: int) -> None:
        if conn.watched == events:
            return
        callback = partial(self._on_event, conn)
        if conn.watched:
            self.poller.modify(conn.tls, events, callback)
        else:
            self.poller.register(conn.tls, events, callback)
        conn.watched = events

    def _unwatch(self, conn: BufferedConn) -> None:
        if conn.watched:
            with contextlib.suppress(KeyError, ValueError, OSError):  # closed under it
                self.poller.unregister(conn.tls)
            conn.watched = 0

    def _on_event(self, conn: BufferedConn, fileobj: Any = None) -> None:
        """One step of `conn`, whatever its phase; nothing a client does may stop the loop."""
        if conn not in self.front:
            return  # closed since this step was scheduled
        try:
            if conn.phase is Phase.HANDSHAKE:
                self._handshake(conn)
            elif conn.phase in (Phase.IDLE, Phase.HEADER, Phase.BODY):
                self._read(conn)
            elif conn.phase is Phase.SEND:
                self._send(conn)
            elif conn.phase is Phase.LINGER:
                self._linger(conn)
        except Exception:
            self.log.exception("admission connection from %s failed", conn.client)
            self._close(conn)

    def _tls(self, conn: BufferedConn, operation: Callable[[], T], what: str) -> T | None:
        """`operation()` on the connection's TLS socket, or None: TLS wants the socket readable or
        writable first (the connection is watched for it), or the connection failed (closed;
        ssl.SSLError included: a bad hello, no shared cipher, a reset)."""
        try:
            return operation()
        except ssl.SSLWantReadError:
            self._watch(conn, selectors.EVENT_READ)
        except ssl.SSLWantWriteError:
            self._watch(conn, selectors.EVENT_WRITE)
        except OSError as err:
            self.log.debug("TLS %s with %s failed: %s", what, conn.client, err)
            self._close(conn)
        return None

    def _handshake(self, conn: BufferedConn) -> None:
        if self._tls(conn, partial(_handshaken, conn), "handshake") is None:
            return
        # a fresh connection's first request is due at once: the apiserver sends it right away
        conn.enter(Phase.HEADER, self.limits)
        self._read(conn)

    def _read(self, conn: BufferedConn) -> None:
        taken = 0
        while taken < READ_TURN:
            data = self._tls(conn, lambda: conn.tls.recv(READ_SIZE), "read")
            if data is None:
                return
            if not data:  # the client closed (or went away mid-request: nothing to answer)
                self._close(conn)
                return
            taken += len(data)
            conn.inbox += data
            if conn.phase is Phase.IDLE:
                conn.enter(Phase.HEADER, self.limits)
            if not self._advance(conn):
                return
        # TLS may hold decrypted bytes the socket no longer signals: come back on the next turn
        self.method_queue.defer(self._on_event, conn)

    def _advance(self, conn: BufferedConn) -> bool:
        """Frame what arrived; False once the connection left the reading phases."""
        found, conn.chunks = framing.frame(conn.inbox, self.limits.max_body, conn.chunks, conn.searched)
        if found.framing is framing.Framing.NEED_MORE:
            if not found.header_end:
                conn.searched = max(0, len(conn.inbox) - 3)
            elif conn.phase is Phase.HEADER:
                conn.enter(Phase.BODY, self.limits)  # the body's time counts from the header's end
            if found.expect_continue and not conn.continued:
                conn.continued = True
                self._send_now(conn, CONTINUE)
            return True
        if found.framing is framing.Framing.HEADER_TOO_LARGE:
            self._answer_and_close(conn, plain_answer(431, "Request Header Fields Too Large"))
            return False
        self._unwatch(conn)
        conn.hand_over(found.end, whole=found.framing is framing.Framing.COMPLETE)
        conn.enter(Phase.THREAD, self.limits)
        self.pressure.submitted(time.monotonic())
        self.enqueue_req(conn)
        return False

    def _send_now(self, conn: BufferedConn, data: bytes) -> None:
        """Best effort, for a few bytes: an interim answer, or a last word before closing."""
        # the client reads nothing or is gone: its deadline deals with it
        with contextlib.suppress(OSError):
            conn.tls.send(data)

    def _answer_and_close(self, conn: BufferedConn, data: bytes) -> None:
        conn.keep, conn.out = False, memoryview(data)
        conn.enter(Phase.SEND, self.limits)
        self._send(conn)

    def _send(self, conn: BufferedConn) -> None:
        while conn.out:
            sent = self._tls(conn, lambda: conn.tls.send(conn.out[:READ_TURN]), "write")
            if sent is None:
                return
            conn.out = conn.out[sent:]
        if not conn.keep:
            self._start_linger(conn)
            return
        conn.enter(Phase.IDLE, self.limits)
        if not self.alive:  # as gunicorn: a stopping worker keeps idle connections briefly
            conn.deadline = min(conn.deadline or 0.0, time.monotonic() + STOP_KEEPALIVE_LINGER)
        if conn.inbox:  # the client sent its next request behind the last one
            conn.enter(Phase.HEADER, self.limits)
            if not self._advance(conn):
                return
        self._read(conn)

    def _start_linger(self, conn: BufferedConn) -> None:
        """Half-close and read what the client still sends until it closes, so that the kernel
        does not reset the connection over unread bytes and cut the last answer short."""
        try:
            conn.tls.shutdown(socket.SHUT_WR)  # the TLS layer is dropped, as gunicorn does
        except OSError:
            self._close(conn)
            return
        conn.enter(Phase.LINGER, self.limits)
        self._watch(conn, selectors.EVENT_READ)
        self._linger(conn)

    def _linger(self, conn: BufferedConn) -> None:
        while conn.lingered < MAX_LINGER_BYTES:
            try:
                data = conn.tls.recv(READ_SIZE)
            except (BlockingIOError, ssl.SSLWantReadError):
                return
            except OSError:
                break
            if not data:
                break
            conn.lingered += len(data)
        self._close(conn)

    def _close(self, conn: BufferedConn) -> None:
        if conn not in self.front:
            return
        self.front.discard(conn)
        self._unwatch(conn)
        self.nr_conns -= 1
        with contextlib.suppress(OSError):
            conn.tls.close()

    def _expire(self, conn: BufferedConn) -> None:
        if conn.phase in (Phase.HEADER, Phase.BODY):
            self._send_now(conn, plain_answer(408, "Request Timeout"))
        self.log.debug("admission connection from %s: %s timed out", conn.client, conn.phase.value)
        self._close(conn)

    # -- gunicorn's hooks ---------------------------------------------------------------------

    def murder_pending(self) -> None:
        """Called on every turn of gunicorn's loop (at least once a second): the deadlines."""
        now = time.monotonic()
        for conn in [c for c in self.front if c.deadline is not None and c.deadline <= now]:
            self._expire(conn)
        self.pressure.turned(now, self.nr_conns)

    def murder_keepalived(self, force: bool = False) -> None:
        if force:  # the worker is exiting
            for conn in list(self.front):
                self._close(conn)

    def _cap_keepalive(self, deadline: float) -> None:
        for conn in self.front:
            if conn.phase is Phase.IDLE and conn.deadline is not None:
                conn.deadline = min(conn.deadline, deadline)

    def handle(self, conn: BufferedConn) -> Any:
        """On a pool thread: gunicorn's own handling, of a request already in memory."""
        self.pressure.started()
        return super().handle(conn)

    def _keepalive_after(self, conn: BufferedConn, keepalive: bool) -> bool:
        """A request handed over without its body (over the limit, or framed in a way the front
        does not guess at) leaves the connection's next request nowhere to start: close."""
        return conn.whole and bool(super()._keepalive_after(conn, keepalive))

    def finish_request(self, conn: BufferedConn, fs: Any) -> None:
        """On the poller, when the pool thread is done: send its answer."""
        try:
            keep = bool(fs.result()) if not fs.cancelled() else False
        except Exception:
            self.log.exception("admission request from %s failed", conn.client)
            keep = False
        outbox = conn.take_back()
        if conn not in self.front:
            return
        conn.keep, conn.out = keep and not outbox.closed, memoryview(bytes(outbox.data))
        conn.enter(Phase.SEND, self.limits)
        self._on_event(conn)


def _handshaken(conn: BufferedConn) -> bool:
    conn.tls.do_handshake()
    return True
