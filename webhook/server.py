"""Serving the app with gunicorn over TLS: gthread workers, each with its own caches (threads do not
survive fork, so every worker lists and watches for itself), metrics summed across them.

This module must not import prometheus_client (directly or through webhook.app) before
`prepare_metrics_dir` has set $PROMETHEUS_MULTIPROC_DIR: the library reads it once, at import.
"""

from __future__ import annotations

import logging
import os
import shutil
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from webhook.review import WebhookConfig

log = logging.getLogger(__name__)

# The apiserver's webhook client keeps idle connections for 90 s (http.DefaultTransport's
# IdleConnTimeout, applied by k8s.io/apimachinery/pkg/util/net SetTransportDefaults). Closing first
# would race a request sent on a connection we are closing, so idle connections live longer here.
KEEPALIVE_SECONDS = 120
# In-flight reviews get this long after SIGTERM; below the pod's default 30 s grace period.
GRACEFUL_TIMEOUT_SECONDS = 20
# A worker silent this long is restarted; the apiserver gives up on a webhook after at most 30 s.
WORKER_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class ServeOptions:
    bind: str
    tls_cert: Path
    tls_key: Path
    config: WebhookConfig
    state: Path | None = None
    kubeconfig: str | None = None
    context: str | None = None
    workers: int = 2
    threads: int = 8
    metrics_dir: Path | None = None  # None: a temporary directory, removed when the server exits
    keepalive: int = KEEPALIVE_SECONDS
    graceful_timeout: int = GRACEFUL_TIMEOUT_SECONDS
    log_level: str = "info"


def prepare_metrics_dir(path: Path | None) -> Path:
    """Sets $PROMETHEUS_MULTIPROC_DIR to an empty directory: stale files of a previous run would be
    summed into this one's counters."""
    directory = path or Path(tempfile.mkdtemp(prefix="fitguard-metrics-"))
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return directory


def check_certificate(cert: Path, key: Path) -> None:
    """Fails fast, with the file names, when the serving certificate cannot be loaded."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certfile=str(cert), keyfile=str(key))
    except (OSError, ssl.SSLError) as err:
        raise SystemExit(f"fitguard webhook: cannot load certificate {cert} with key {key}: {err}") from None


def build_app(options: ServeOptions) -> Any:
    """The Flask app of one worker, with its own view of the cluster."""
    from webhook import cluster
    from webhook.app import create_app

    audit = None
    if options.state is not None:
        view = cluster.from_state_file(options.state)
    else:
        from kube.client import load_api_client
        from kube.events import EventRecorder
        from kube.leader import default_identity
        from webhook.audit import AuditEvents

        api = load_api_client(options.kubeconfig, options.context)
        view = cluster.ClusterView()
        cluster.start_reflectors(view, api)
        recorder = EventRecorder(api, default_identity(), reporting_controller="fitguard.io/webhook")
        audit = AuditEvents(recorder).submit
    cert, key = options.tls_cert, options.tls_key
    return create_app(view, options.config, tls_ready=lambda: cert.is_file() and key.is_file(), audit=audit)


def _child_exit(server: Any, worker: Any) -> None:
    from webhook.metrics import mark_worker_dead

    mark_worker_dead(worker.pid)


def _remove_metrics_dir(server: Any) -> None:
    shutil.rmtree(os.environ.get("PROMETHEUS_MULTIPROC_DIR", ""), ignore_errors=True)


class WebhookServer(BaseApplication):  # type: ignore[misc]
    """gunicorn run in-process, configured from ServeOptions rather than a config file."""

    def __init__(self, options: ServeOptions, factory: Callable[[ServeOptions], Any] = build_app) -> None:
        self.options = options
        self.factory = factory
        super().__init__()

    def load_config(self) -> None:
        settings: dict[str, Any] = {
            "bind": [self.options.bind],
            "workers": self.options.workers,
            "worker_class": "gthread",
            "threads": self.options.threads,
            "certfile": str(self.options.tls_cert),
            "keyfile": str(self.options.tls_key),
            "keepalive": self.options.keepalive,
            "graceful_timeout": self.options.graceful_timeout,
            "timeout": WORKER_TIMEOUT_SECONDS,
            "loglevel": self.options.log_level,
            "accesslog": None,
            "errorlog": "-",
            "proc_name": "fitguard-webhook",
            "child_exit": _child_exit,
        }
        if "control_socket_disable" in self.cfg.settings:
            # gunicorn 24+ opens a control socket at one fixed path per user: replicas would clash
            settings["control_socket_disable"] = True
        if self.options.metrics_dir is None:
            settings["on_exit"] = _remove_metrics_dir  # master only: workers must not remove it
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        return self.factory(self.options)


def serve(options: ServeOptions) -> int:
    check_certificate(options.tls_cert, options.tls_key)
    if options.state is not None and not options.state.is_file():
        raise SystemExit(f"fitguard webhook: state file {options.state} not found")
    metrics_dir = prepare_metrics_dir(options.metrics_dir)
    log.info("metrics of all workers collected in %s", metrics_dir)
    WebhookServer(options).run()
    return 0
