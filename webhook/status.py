"""The webhook's plain-HTTP status port (`--metrics-bind`): GET /healthz, /readyz, /metrics and,
with `--snapshotz`, /snapshotz, apart from the TLS admission port, so kubelet probes and Prometheus
need no client certificate when the admission port demands one (`--client-ca`).

The gunicorn master binds the listening socket before it forks; every worker accepts on it from a
thread of its own (as gunicorn's workers share the admission socket), so /readyz and /snapshotz are
answered by whichever worker takes the connection, from that worker's own caches, and /metrics sums
every worker's files.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

from cmdline import statushttp
from webhook.cluster import ClusterView
from webhook.review import WebhookOptions

log = logging.getLogger(__name__)
SNAPSHOTZ_OFF = statushttp.SNAPSHOTZ_OFF
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


def routes(
    cluster: ClusterView,
    config: WebhookOptions,
    tls_ready: Callable[[], bool],
    serving: Serving | None = None,
) -> statushttp.StatusRoutes:
    """This worker's status routes: its caches and certificate, every worker's metrics."""

    def metrics() -> tuple[bytes, str]:
        from webhook import metrics

        return metrics.render()

    return statushttp.StatusRoutes(
        waiting=lambda: waiting_for(cluster, tls_ready, serving),
        metrics=metrics,
        snapshot=(lambda: snapshot(cluster, config)) if config.snapshotz else None,
    )


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
    return routes(cluster, config, tls_ready, serving).answer(method, path)


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


def status_port(
    listener: socket.socket,
    cluster: ClusterView,
    config: WebhookOptions,
    tls_ready: Callable[[], bool],
    serving: Serving | None = None,
) -> statushttp.StatusPort:
    """One worker's thread accepting on the shared status socket."""
    return statushttp.StatusPort(routes(cluster, config, tls_ready, serving), log, listener=listener)
