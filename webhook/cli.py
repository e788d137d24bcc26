"""`fitguard webhook`: serve the admission webhook over TLS with gunicorn."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from capacity.defaults import METRICS_BIND, NAMESPACE, WEBHOOK_BIND
from cmdline.logs import add_arguments as add_logging_arguments
from cmdline.logs import setup_logging
from webhook.review import FAILURE_POLICIES, MODES, WebhookOptions
from webhook.tls import DEFAULT_RELOAD_INTERVAL_SECONDS


def _bind(value: str) -> str:
    """HOST:PORT, [IPv6]:PORT, or gunicorn's fd://N (a socket inherited from the caller)."""
    if value.startswith(("fd://", "unix:")):
        return value
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return value


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not number > 0:  # also rejects nan
        raise argparse.ArgumentTypeError("must be more than 0")
    return number


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "webhook",
        help="serve the mutating and validating admission webhook",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Serve the admission webhook over HTTPS (gunicorn, gthread workers behind a\n"
            "request buffering front: a pool thread gets a request only once all of it arrived):\n"
            "  POST /mutate     pod-eni injection for pods matching a SecurityGroupPolicy, and the\n"
            "                   exhausted-node guard affinity\n"
            "  POST /validate   pod and pod-template fit against the node group templates\n"
            "and, on the plain-HTTP --metrics-bind port, GET /healthz, /readyz, /metrics (and\n"
            "/snapshotz with --snapshotz).\n"
            "Policies, ServiceAccounts, namespaces and templates come from list+watch caches (the\n"
            "kubeconfig, or the in-cluster service account), or from --state FILE offline.\n"
            "TLS 1.2 or newer with ECDHE and AES-GCM or ChaCha20 only. Each worker polls the\n"
            "certificate and key files (a Kubernetes Secret volume included) and serves a renewed\n"
            "pair to new connections without a restart; /readyz is 503 while no valid one is loaded."
        ),
    )
    _add_serving_arguments(parser)
    _add_review_arguments(parser)
    _add_process_arguments(parser)
    parser.set_defaults(func=run)


def _add_serving_arguments(parser: argparse.ArgumentParser) -> None:
    """The ports and their TLS."""
    parser.add_argument(
        "--bind",
        default=WEBHOOK_BIND,
        type=_bind,
        help="the TLS admission port, HOST:PORT (default: %(default)s)",
    )
    parser.add_argument(
        "--metrics-bind",
        default=METRICS_BIND,
        type=_bind,
        metavar="HOST:PORT",
        help="plain HTTP for /healthz, /readyz, /metrics and /snapshotz, for probes and Prometheus, "
        "which need no client certificate there (default: %(default)s)",
    )
    parser.add_argument(
        "--snapshotz",
        action="store_true",
        help="serve GET /snapshotz on the status port: every cached policy (security group IDs, "
        "selectors), template and this configuration, as JSON, to anyone who can reach the port "
        "(default: off, a 404)",
    )
    parser.add_argument("--tls-cert", required=True, type=Path, metavar="PATH", help="serving certificate")
    parser.add_argument("--tls-key", required=True, type=Path, metavar="PATH", help="its private key")
    parser.add_argument(
        "--tls-reload-interval",
        type=_seconds,
        default=DEFAULT_RELOAD_INTERVAL_SECONDS,
        metavar="SECONDS",
        help="how often each worker checks the certificate files for a renewal (default: %(default)s)",
    )
    parser.add_argument(
        "--client-ca",
        type=Path,
        metavar="PATH",
        help="require a client certificate signed by a CA in this PEM file (the apiserver presents one "
        "when its admission configuration names it); reloaded like the certificate (default: off)",
    )
    _add_connection_arguments(parser)


# as webhook/server.py; not imported, to keep --help light
HANDSHAKE_TIMEOUT_SECONDS = HEADER_TIMEOUT_SECONDS = BODY_TIMEOUT_SECONDS = 5.0
MAX_CONNECTIONS = 1000


def _add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """What one admission connection may take: a client slower than these is dropped, and never
    holds a worker thread while it is slow."""
    parser.add_argument(
        "--tls-handshake-timeout",
        type=_seconds,
        default=HANDSHAKE_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="a TLS handshake not done this long after the connection was accepted is dropped "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--header-timeout",
        type=_seconds,
        default=HEADER_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="a request header not all received this long after its first byte (or after the "
        "handshake, for a connection's first request) is answered 408 and the connection closed "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--body-timeout",
        type=_seconds,
        default=BODY_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="the same for a request body, counted from the end of its header; writing the answer "
        "is bounded by it too (default: %(default)s)",
    )
    parser.add_argument(
        "--max-connections",
        type=_positive,
        default=MAX_CONNECTIONS,
        metavar="N",
        help="admission connections each worker holds at most; more wait in the kernel's backlog "
        "(default: %(default)s)",
    )


def _add_review_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the cluster's objects come from and how a review is answered."""
    parser.add_argument("--state", type=Path, metavar="PATH", help="answer from this state file, no API")
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default: in-cluster, $KUBECONFIG)")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="enforce",
        help="enforce denies, warn admits with warnings, audit only logs; the namespace label "
        "fitguard.io/mode overrides it (default: %(default)s)",
    )
    parser.add_argument(
        "--failure-policy",
        choices=FAILURE_POLICIES,
        default="ignore",
        help="the answer when a review hits an internal error: ignore admits, fail denies "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--no-eni-guard",
        dest="eni_guard",
        action="store_false",
        help="do not add the fitguard.io/branch-eni-exhausted DoesNotExist node affinity to pods "
        "that request pod-eni",
    )
    parser.add_argument(
        "--allow-object-ignore",
        action="store_true",
        help="also skip objects that carry the fitguard.io/ignore=true label themselves (default: only "
        "namespaces labelled so are skipped: opting out is the cluster administrator's decision; "
        "the webhook configurations' objectSelector must then exclude such objects as well)",
    )
    parser.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE") or NAMESPACE,
        help="the webhook's own namespace, never reviewed (default: $POD_NAMESPACE or %(default)s)",
    )


def _add_process_arguments(parser: argparse.ArgumentParser) -> None:
    """Workers, threads, metrics directory; the logging flags every long-running command shares."""
    parser.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="worker processes; each lists and watches the cluster and keeps its own caches, so N "
        "workers cost the API server N watches per kind: scale with replicas (default: %(default)s)",
    )
    parser.add_argument(
        "--threads", type=_positive, default=8, help="threads per worker (default: %(default)s)"
    )
    parser.add_argument(
        "--metrics-dir",
        type=Path,
        metavar="PATH",
        help="where workers keep their metrics; wiped at start (default: a temporary directory)",
    )
    add_logging_arguments(parser.add_argument_group("logging"))


EXIT_USAGE = 2


def run(args: argparse.Namespace) -> int:
    from webhook.server import ServeOptions, StartError, serve

    setup_logging(args.log_format, args.log_level)
    config = WebhookOptions(
        mode=args.mode,
        failure_policy=args.failure_policy,
        eni_guard=args.eni_guard,
        own_namespace=args.namespace,
        allow_object_ignore=args.allow_object_ignore,
        snapshotz=args.snapshotz,
    )
    options = ServeOptions(
        bind=args.bind,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        config=config,
        state=args.state,
        kubeconfig=args.kubeconfig,
        context=args.context,
        workers=args.workers,
        threads=args.threads,
        metrics_dir=args.metrics_dir,
        log_level=args.log_level.lower(),  # gunicorn's own loggers
        client_ca=args.client_ca,
        tls_reload_interval=args.tls_reload_interval,
        metrics_bind=args.metrics_bind,
        handshake_timeout=args.tls_handshake_timeout,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_connections=args.max_connections,
    )
    try:
        return serve(options)
    except StartError as err:  # a certificate, state file, kubeconfig or port given that cannot be used
        print(f"fitguard webhook: {err}", file=sys.stderr)
        return EXIT_USAGE
