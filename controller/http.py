"""The controller's plain-HTTP endpoints: /healthz, /readyz, /metrics, and /snapshotz when a
snapshot is given (`--snapshotz`; without it a 404: the port has no authentication, and the snapshot
shows every node's books, the guard's state and the last cycle's templates).

A tiny stdlib server (one thread per request): it serves probes and scrapes, nothing on the
admission path, so Flask and TLS would add weight without use.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

from cmdline import statushttp

log = logging.getLogger(__name__)
SNAPSHOTZ_OFF = b"/snapshotz is off (start with --snapshotz to serve it)\n"


class ControllerHttp:
    def __init__(
        self,
        bind: str,
        *,
        ready: Callable[[], str | None],
        snapshot: Callable[[], dict[str, Any]] | None,
        registries: tuple[CollectorRegistry, ...] = (),
    ) -> None:
        host, _, port = bind.rpartition(":")
        owner = self

        class Handler(statushttp.StatusHandler):
            logger = log

            def do_GET(self) -> None:
                owner._get(self)

        self._ready = ready
        self._snapshot = snapshot
        self._registries = (REGISTRY, *registries)
        self.server = statushttp.StatusServer((host or "0.0.0.0", int(port)), Handler)
        self.server.logger = log
        self._thread = threading.Thread(target=self.server.serve_forever, name="controller-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> ControllerHttp:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(handler, 200, b"ok\n", "text/plain")
        elif path == "/readyz":
            waiting = self._ready()
            if waiting:
                self._send(handler, 503, f"waiting for: {waiting}\n".encode(), "text/plain")
            else:
                self._send(handler, 200, b"ok\n", "text/plain")
        elif path == "/metrics":
            body = b"".join(generate_latest(registry) for registry in self._registries)
            self._send(handler, 200, body, CONTENT_TYPE_LATEST)
        elif path == "/snapshotz":
            self._send_snapshot(handler)
        else:
            self._send(handler, 404, b"not found\n", "text/plain")

    def _send_snapshot(self, handler: BaseHTTPRequestHandler) -> None:
        if self._snapshot is None:
            self._send(handler, 404, SNAPSHOTZ_OFF, "text/plain")
        else:
            self._send(handler, 200, json.dumps(self._snapshot()).encode(), "application/json")

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, body: bytes, content_type: str) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
