"""The overhead baseline: a Flask app whose /mutate and /validate read the body and answer a fixed
allowed AdmissionReview, served by webhook.server's own gunicorn configuration (same workers,
threads, TLS, keep-alive). Ours divided by this is the cost of fitguard itself.

    python -m tests.bench.emptyapp --bind fd://N --tls-cert PATH --tls-key PATH [--workers N]
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from flask import Flask, Response, request

ANSWER = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"","allowed":true}}'


def create_empty_app() -> Flask:
    app = Flask("fitguard-bench-empty")

    def answer() -> Response:
        request.get_data(cache=False)  # the body is received either way; only the work differs
        return Response(ANSWER, 200, mimetype="application/json")

    app.add_url_rule("/mutate", "mutate", answer, methods=["POST"])
    app.add_url_rule("/validate", "validate", answer, methods=["POST"])
    app.add_url_rule("/readyz", "readyz", lambda: Response("ok\n", mimetype="text/plain"))
    return app


def main() -> int:
    from webhook.review import WebhookOptions
    from webhook.server import ServeOptions, WebhookServer, prepare_metrics_dir

    parser = argparse.ArgumentParser(prog="python -m tests.bench.emptyapp")
    parser.add_argument("--bind", required=True)
    parser.add_argument("--tls-cert", required=True, type=Path)
    parser.add_argument("--tls-key", required=True, type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    logging.basicConfig(level=args.log_level.upper())
    options = ServeOptions(
        bind=args.bind,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        config=WebhookOptions(),
        workers=args.workers,
        threads=args.threads,
        log_level=args.log_level,
    )
    prepare_metrics_dir(None)  # as webhook.server.serve does, so both runs pay the same setup

    def factory(*_: Any) -> tuple[Flask, None]:  # (app, cluster view): an empty handler has no view
        return create_empty_app(), None

    WebhookServer(options, factory=factory).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
