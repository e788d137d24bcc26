"""What the webhook's and the controller's plain-HTTP status ports share: a threaded stdlib server
and request handler for which a client that hangs up is routine, not an error.

Probes and scrapes time out and retry, load balancers open and drop connections, and anyone who can
reach the port may disconnect mid-answer. The standard library reports each of these through
`socketserver.BaseServer.handle_error`, which prints a traceback to stderr; here they are one DEBUG
line, and only a real failure (a bug answering a request) is logged as an error, once, through
logging.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A client gone (reset, closed before our answer was written) or silent past the handler's timeout.
HANG_UPS: tuple[type[BaseException], ...] = (
    BrokenPipeError,
    ConnectionResetError,
    ConnectionAbortedError,
    TimeoutError,
)
# How long a connection may stay silent (before its request line, or between keep-alive requests)
# before it is closed: a probe or scrape sends its request at once; a connection that sends nothing
# would otherwise hold its thread for ever.
IDLE_SECONDS = 30.0


class StatusServer(ThreadingHTTPServer):
    """One thread per connection, daemon threads; hang-ups logged at DEBUG, failures through the
    `logger` class attribute (set by a subclass or the instance)."""

    daemon_threads = True
    logger = logging.getLogger(__name__)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # called by socketserver inside an `except` clause: the exception is the current one
        err = sys.exc_info()[1]
        if isinstance(err, HANG_UPS):
            self.logger.debug("status: client %s hung up (%s)", client_address, type(err).__name__)
        else:
            self.logger.error("status: request from %s failed", client_address, exc_info=True)


class StatusHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, an idle timeout, access lines at DEBUG, and a hang-up during one
    request ending that connection with one DEBUG line."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS
    logger = logging.getLogger(__name__)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except HANG_UPS as err:
            self.close_connection = True
            self.logger.debug("status: client %s hung up (%s)", self.client_address, type(err).__name__)
        except Exception:  # a bad request must never take the thread down, nor go unseen
            self.close_connection = True
            self.logger.exception("status: request failed")

    def log_message(self, format: str, *args: Any) -> None:
        self.logger.debug("status: " + format, *args)


SNAPSHOTZ_OFF = b"/snapshotz is off (start with --snapshotz to serve it)\n"
PATHS = ("/healthz", "/readyz", "/metrics", "/snapshotz")
Answer = tuple[int, bytes, str]  # status, body, content type


@dataclass(frozen=True)
class StatusRoutes:
    """What a status port answers, the same for both components: /healthz, /readyz (503 with what it
    waits for), /metrics, and /snapshotz when a snapshot is given (`--snapshotz`; without it a 404:
    the port has no authentication, and the snapshot shows the component's whole state)."""

    waiting: Callable[[], list[str]]  # why not ready; empty when ready
    metrics: Callable[[], tuple[bytes, str]]  # the exposition and its content type
    snapshot: Callable[[], Any] | None = None

    def answer(self, method: str, path: str) -> Answer:
        path = path.split("?", 1)[0]
        if path not in PATHS:
            return 404, b"not found\n", "text/plain"
        if method != "GET":
            return 405, b"method not allowed\n", "text/plain"
        if path == "/healthz":
            return 200, b"ok\n", "text/plain"
        if path == "/readyz":
            waiting = self.waiting()
            if waiting:
                return 503, f"waiting for: {', '.join(waiting)}\n".encode(), "text/plain"
            return 200, b"ok\n", "text/plain"
        if path == "/metrics":
            data, content_type = self.metrics()
            return 200, data, content_type
        if self.snapshot is None:
            return 404, SNAPSHOTZ_OFF, "text/plain"
        return 200, json.dumps(self.snapshot(), separators=(",", ":")).encode(), "application/json"


def handler_for(routes: StatusRoutes, logger: logging.Logger) -> type[StatusHandler]:
    """A request handler answering every method from `routes` (unknown methods: 405, not 501)."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        code, body, content_type = routes.answer(handler.command, handler.path)
        handler.send_response(code)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        if code == 405:
            handler.send_header("Allow", "GET")
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)

    class Handler(StatusHandler):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("do_"):
                return lambda: respond(self)
            raise AttributeError(name)

    Handler.logger = logger
    return Handler


class StatusPort:
    """A status server on its own thread: bound to HOST:PORT (the controller), or accepting on a
    socket another process bound and listens on (the webhook's gunicorn master, shared by workers)."""

    def __init__(
        self,
        routes: StatusRoutes,
        logger: logging.Logger,
        *,
        bind: str = "",
        listener: socket.socket | None = None,
    ) -> None:
        handler = handler_for(routes, logger)
        if listener is not None:
            self.server = StatusServer(listener.getsockname()[:2], handler, bind_and_activate=False)
            self.server.socket.close()
            self.server.socket = listener
        else:
            host, _, port = bind.rpartition(":")
            self.server = StatusServer((host.strip("[]") or "0.0.0.0", int(port)), handler)
        self.server.logger = logger
        self._thread = threading.Thread(target=self.server.serve_forever, name="status-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> StatusPort:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
