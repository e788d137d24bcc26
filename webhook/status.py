"""The webhook's plain-HTTP status port (`--metrics-bind`): GET /healthz, /readyz, /metrics and,
with `--snapshotz`, /snapshotz, apart from the TLS admission port, so kubelet probes and Prometheus
need no client certificate when the admission port demands one (`--client-ca`).

The gunicorn master binds the listening socket before it forks; every worker accepts on it from a
thread of its own (as gunicorn's workers share the admission socket), so /readyz and /snapshotz are
answered by whichever worker takes the connection, from that worker's own caches, and /metrics sums
every worker's files.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from cmdline import statushttp
from webhook.cluster import ClusterView
from webhook.review import WebhookOptions

log = logging.getLogger(__name__)
PATHS = ("/healthz", "/readyz", "/metrics", "/snapshotz")
SNAPSHOTZ_OFF = b"/snapshotz is off (start with --snapshotz to serve it)\n"
Serving = Callable[[], list[str]]  # why the admission port cannot answer now; empty when it can


def waiting_for(
    cluster: ClusterView, tls_ready: Callable[[], bool], serving: Serving | None = None
) -> list[str]:
    """What keeps this worker from being ready: stores not yet listed, no valid certificate, an
    admission port that cannot answer in time (webhook/pressure.py)."""
    waiting = [kind for kind, store in cluster.stores().items() if not store.synced]
    if not tls_ready():
        waiting.append("certificate")
    if serving is not None:
        waiting.extend(serving())
    return waiting


def snapshot(cluster: ClusterView, config: WebhookOptions) -> dict[str, Any]:
    """What /snapshotz shows: the view's snapshot and the configuration it answers with."""
    shown = cluster.snapshot()
    shown["config"] = {
        "mode": config.mode,
        "failurePolicy": config.failure_policy,
        "eniGuard": config.eni_guard,
        "ownNamespace": config.own_namespace,
        "allowObjectIgnore": config.allow_object_ignore,
    }
    return shown


def answer(
    method: str,
    path: str,
    cluster: ClusterView,
    config: WebhookOptions,
    tls_ready: Callable[[], bool],
    *,
    serving: Serving | None = None,
) -> tuple[int, bytes, str]:
    """(status, body, content type) of one request to the status port."""
    path = path.split("?", 1)[0]
    if path not in PATHS:
        return 404, b"not found\n", "text/plain"
    if method != "GET":
        return 405, b"method not allowed\n", "text/plain"
    if path == "/healthz":
        return 200, b"ok\n", "text/plain"
    if path == "/readyz":
        waiting = waiting_for(cluster, tls_ready, serving)
        if waiting:
            return 503, f"waiting for: {', '.join(waiting)}\n".encode(), "text/plain"
        return 200, b"ok\n", "text/plain"
    if path == "/metrics":
        from webhook import metrics

        data, content_type = metrics.render()
        return 200, data, content_type
    if not config.snapshotz:
        return 404, SNAPSHOTZ_OFF, "text/plain"
    body = json.dumps(snapshot(cluster, config), separators=(",", ":")).encode()
    return 200, body, "application/json"


def bind_listener(bind: str) -> socket.socket:
    """The listening socket for HOST:PORT, [IPv6]:PORT, or fd://N (a socket inherited from the
    caller, already listening)."""
    if bind.startswith("fd://"):
        sock = socket.socket(fileno=int(bind.removeprefix("fd://")))
        sock.set_inheritable(True)
        return sock
    host, _, port = bind.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, int(port)), family=family, backlog=64)
    sock.set_inheritable(True)
    return sock


class StatusServer:
    """One worker's thread accepting on the shared status socket."""

    def __init__(
        self,
        listener: socket.socket,
        cluster: ClusterView,
        config: WebhookOptions,
        tls_ready: Callable[[], bool],
        serving: Serving | None = None,
    ) -> None:
        def respond(handler: BaseHTTPRequestHandler) -> None:
            code, body, content_type = answer(
                handler.command, handler.path, cluster, config, tls_ready, serving=serving
            )
            handler.send_response(code)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(body)))
            if code == 405:
                handler.send_header("Allow", "GET")
            handler.end_headers()
            if handler.command != "HEAD":
                handler.wfile.write(body)

        class Handler(statushttp.StatusHandler):
            logger = log

            def __getattr__(self, name: str) -> Any:
                if name.startswith("do_"):  # every method: unknown ones get 405, not 501
                    return lambda: respond(self)
                raise AttributeError(name)

        self.server = statushttp.StatusServer(listener.getsockname()[:2], Handler, bind_and_activate=False)
        self.server.logger = log
        self.server.socket.close()
        self.server.socket = listener  # bound and listening in the master, shared by the workers
        self._thread = threading.Thread(target=self.server.serve_forever, name="status-http", daemon=True)

    def start(self) -> StatusServer:
        self._thread.start()
        return self
