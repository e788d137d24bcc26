"""Serving the app with gunicorn over TLS: gthread workers with a request buffering front
(webhook/worker.py), each with its own caches (threads do not survive fork, so every worker lists
and watches for itself) and its own reloading serving certificate, metrics summed across them. One
worker by default: a replica then lists and watches each kind once, and the webhook scales by
replicas (docs/design.md, "One worker per replica").

This module must not import prometheus_client (directly or through webhook.app) before
`prepare_metrics_dir` has set $PROMETHEUS_MULTIPROC_DIR: the library reads it once, at import.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import shutil
import socket
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

from capacity.defaults import METRICS_BIND
from capacity.names import WEBHOOK_REPORTER
from cmdline.safe_text import for_terminal
from webhook.review import WebhookOptions
from webhook.tls import (
    DEFAULT_RELOAD_INTERVAL_SECONDS,
    CertificateError,
    ReloadingCertificate,
    load_certificate,
)

log = logging.getLogger(__name__)

# The apiserver's webhook client keeps idle connections for 90 s (http.DefaultTransport's
# IdleConnTimeout, applied by k8s.io/apimachinery/pkg/util/net SetTransportDefaults). Closing first
# would race a request sent on a connection we are closing, so idle connections live longer here.
KEEPALIVE_SECONDS = 120
# In-flight reviews get this long after SIGTERM; below the pod's default 30 s grace period.
GRACEFUL_TIMEOUT_SECONDS = 20
# How long a new worker waits for its caches before accepting requests (below WORKER_TIMEOUT).
SYNC_WAIT_SECONDS = 15.0
# A worker silent this long is restarted; the apiserver gives up on a webhook after at most 30 s.
WORKER_TIMEOUT_SECONDS = 30
# The apiserver's whole call, dial and handshake included, must fit in the webhook configuration's
# timeoutSeconds (3 s for /mutate, 5 s for /validate in manifests/base/webhook-configurations.yaml):
# a connection slower than 5 s at any step cannot be the apiserver's in time, so it is dropped.
HANDSHAKE_TIMEOUT_SECONDS = 5.0
HEADER_TIMEOUT_SECONDS = 5.0
BODY_TIMEOUT_SECONDS = 5.0
# gthread with a request buffering front: a slow client holds a descriptor, never a thread (measured
# against the alternatives in docs/design.md, "Serving").
WORKER_CLASS = "webhook.worker.BufferingWorker"
# Connections one worker holds at most (gunicorn's worker_connections default); more wait in the
# kernel's backlog. A held connection costs a file descriptor, its TLS state and at most 64 KiB of
# header (webhook/framing.py) or the body limit of buffered request.
MAX_CONNECTIONS = 1000


class StartError(Exception):
    """The webhook cannot start (a certificate, state file, kubeconfig or port it was given): the
    one line the command prints after its name, before any worker boots; `fitguard webhook` exits
    2, as for any bad flag or input (webhook/cli.py)."""


@dataclass(frozen=True)
class ServeOptions:
    bind: str
    tls_cert: Path
    tls_key: Path
    config: WebhookOptions
    state: Path | None = None
    kubeconfig: str | None = None
    context: str | None = None
    workers: int = 1  # each worker lists and watches for itself: scale by replicas
    threads: int = 8
    metrics_dir: Path | None = None  # None: a temporary directory, removed when the server exits
    keepalive: int = KEEPALIVE_SECONDS
    graceful_timeout: int = GRACEFUL_TIMEOUT_SECONDS
    log_level: str = "info"
    client_ca: Path | None = None  # None: no client certificate asked for
    tls_reload_interval: float = DEFAULT_RELOAD_INTERVAL_SECONDS
    metrics_bind: str = METRICS_BIND  # plain HTTP: /healthz, /readyz, /metrics, /snapshotz
    handshake_timeout: float = HANDSHAKE_TIMEOUT_SECONDS
    header_timeout: float = HEADER_TIMEOUT_SECONDS
    body_timeout: float = BODY_TIMEOUT_SECONDS
    max_connections: int = MAX_CONNECTIONS


def prepare_metrics_dir(path: Path | None) -> Path:
    """Sets $PROMETHEUS_MULTIPROC_DIR to an empty directory: stale files of a previous run would be
    summed into this one's counters."""
    directory = path or Path(tempfile.mkdtemp(prefix="fitguard-metrics-"))
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return directory


def check_certificate(cert: Path, key: Path, client_ca: Path | None = None) -> None:
    """Fails fast, with the file names, when the serving certificate cannot be loaded. An expired
    one is served (not ready) so that its renewal is picked up without a restart."""
    try:
        loaded = load_certificate(cert, key, client_ca)
    except CertificateError as err:
        raise StartError(str(err)) from None
    if not loaded.valid_at(datetime.now(UTC)):
        log.warning(
            "certificate %s is valid only from %s to %s: not ready until it is renewed",
            cert,
            loaded.not_before.isoformat(),
            loaded.not_after.isoformat(),
        )


def build_app(options: ServeOptions, state_objects: list[dict[str, Any]] | None = None) -> tuple[Any, Any]:
    """The admission app of one worker and the view of the cluster it answers from (which the
    worker's status port reports on). `state_objects`: the state file as the master read it."""
    from webhook import cluster
    from webhook.app import create_app

    audit = None
    if state_objects is not None:
        view = cluster.from_objects(state_objects)
    elif options.state is not None:
        view = cluster.from_state_file(options.state)
    else:
        from kube.client import load_api_client
        from kube.events import EventRecorder
        from kube.leader import default_identity
        from kube.options import EventOptions
        from webhook.audit import AuditEvents

        api = load_api_client(options.kubeconfig, options.context)
        view = cluster.ClusterView()
        cluster.start_reflectors(view, api)
        # A worker that answers before its caches synced would allow everything as a cold start,
        # while /readyz (answered by whichever worker) says ready: hold this worker back until its
        # own caches synced, well within gunicorn's worker timeout.
        if not view.wait_ready(SYNC_WAIT_SECONDS):
            log.warning("caches not synced after %s s; /readyz says what is missing", SYNC_WAIT_SECONDS)
        recorder = EventRecorder(api, default_identity(), EventOptions(reporting_controller=WEBHOOK_REPORTER))
        audit = AuditEvents(recorder).submit
    # The caches are long-lived: out of every garbage collection, they do not make a review's
    # collection pauses grow with the cluster.
    gc.freeze()
    return create_app(view, options.config, audit=audit), view


def _child_exit(server: Any, worker: Any) -> None:
    from webhook.metrics import mark_worker_dead

    mark_worker_dead(worker.pid)


def _remove_metrics_dir(server: Any) -> None:
    shutil.rmtree(os.environ.get("PROMETHEUS_MULTIPROC_DIR", ""), ignore_errors=True)


class WebhookServer(BaseApplication):
    """gunicorn run in-process, configured from ServeOptions rather than a config file."""

    def __init__(
        self,
        options: ServeOptions,
        status_listener: socket.socket | None = None,
        factory: Callable[[ServeOptions], tuple[Any, Any]] = build_app,
    ) -> None:
        self.options = options
        self.status_listener = status_listener  # bound in the master; every worker accepts on it
        self.factory = factory
        self.certificate: ReloadingCertificate | None = None  # set in each worker, after the fork
        self.pressure: Any = None  # the worker's webhook.pressure.Pressure, set by the worker class
        super().__init__()

    def front_limits(self) -> Any:
        """The request buffering front's limits, for webhook.worker.BufferingWorker."""
        from webhook.front import FrontLimits

        options = self.options
        return FrontLimits(
            handshake=options.handshake_timeout,
            header=options.header_timeout,
            body=options.body_timeout,
            keepalive=options.keepalive,
            max_body=options.config.max_body_bytes + 1,  # what the app reads at most (webhook/app.py)
        )

    def load_config(self) -> None:
        settings: dict[str, Any] = {
            "bind": [self.options.bind],
            "workers": self.options.workers,
            "worker_class": WORKER_CLASS,
            "threads": self.options.threads,
            "worker_connections": self.options.max_connections,
            # certfile and keyfile turn TLS on; the contexts themselves come from ssl_context
            "certfile": str(self.options.tls_cert),
            "keyfile": str(self.options.tls_key),
            "ssl_context": self.ssl_context,
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
        """Runs in each worker after the fork: the watcher thread must live in the worker."""
        certificate = ReloadingCertificate(
            self.options.tls_cert,
            self.options.tls_key,
            self.options.client_ca,
            interval=self.options.tls_reload_interval,
        )
        certificate.reload()  # a failure is logged; the watcher keeps trying and /readyz says so
        certificate.start()
        self.certificate = certificate
        app, view = self.factory(self.options)
        if self.status_listener is not None:
            from webhook.status import status_port

            pressure = self.pressure
            serving = (lambda: pressure.blocked(time.monotonic())) if pressure is not None else None
            status_port(self.status_listener, view, self.options.config, certificate.ready, serving).start()
        return app

    def ssl_context(
        self, config: Any, default_ssl_context_factory: Callable[[], ssl.SSLContext]
    ) -> ssl.SSLContext:
        """gunicorn's hook, called for every accepted connection: the worker's current context.
        Raising refuses the connection; that happens only while no valid pair was ever loaded."""
        if self.certificate is None:
            raise CertificateError("the serving certificate is loaded in workers only")
        return self.certificate.context()


def read_state(path: Path) -> list[dict[str, Any]]:
    """The state file's objects, read once in the master: a binary file, one nested too deep or an
    alias bomb ends the command (StartError) with one line before any worker starts, rather than
    failing every worker's boot in a loop; the workers inherit the objects through the fork."""
    from kube.statefile import StateFileError, load_state

    if not path.is_file():
        raise StartError(f"state file {for_terminal(path)} not found")
    try:
        return load_state(path)
    except StateFileError as err:
        raise StartError(for_terminal(err)) from None


def serve(options: ServeOptions) -> int:
    """Runs the webhook until it is stopped; StartError when it cannot start."""
    check_certificate(options.tls_cert, options.tls_key, options.client_ca)
    factory: Callable[[ServeOptions], tuple[Any, Any]] = build_app
    if options.state is not None:
        factory = functools.partial(build_app, state_objects=read_state(options.state))

    if options.state is None:
        # a kubeconfig that cannot be loaded would fail every worker's boot with a traceback:
        # say so once, here, before any worker starts
        from kube.client import KubeError, load_api_client
        from kube.kubeconfig import config_problem

        try:
            load_api_client(options.kubeconfig, options.context)
        except KubeError as err:
            problem = config_problem(
                err, "pass --kubeconfig PATH, or --state PATH to answer from a state file"
            )
            raise StartError(problem or f"cannot load the Kubernetes configuration: {err.message}") from None
    metrics_dir = prepare_metrics_dir(options.metrics_dir)
    log.info("metrics of all workers collected in %s", metrics_dir)
    from webhook.status import bind_listener

    try:
        status_listener = bind_listener(options.metrics_bind)
    except (OSError, ValueError) as err:
        raise StartError(f"cannot listen on --metrics-bind {options.metrics_bind}: {err}") from None
    log.info("status port (/healthz, /readyz, /metrics%s) on %s",
             ", /snapshotz" if options.config.snapshotz else "", options.metrics_bind)  # fmt: skip
    WebhookServer(options, status_listener, factory).run()
    return 0
