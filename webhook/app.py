"""The Flask app of the admission port: POST /mutate and /validate and the HTTP contract around
them. Health, readiness, metrics and the snapshot are served on the status port (webhook/status.py).

Contract: a valid AdmissionReview is answered 200 with its uid and apiVersion echoed; a body that is
not JSON or not a review gets 400, one over the limit 413 (judged from Content-Length before the
body is read), a wrong content type 415. An internal error is logged and answered by the failure
policy; the caller never sees a stack trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Request, Response, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from webhook import metrics
from webhook.answer import Answer, Outcome, Webhook, answer, json_bytes
from webhook.cluster import ClusterView
from webhook.review import MAPPINGS, WebhookOptions
from webhook.review_wire import decode_review
from webhook.tally import ThreadTally

log = logging.getLogger(__name__)

API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
JSON_TYPE = "application/json"
AuditSink = Callable[[Mapping[str, Any], str], None]


class BadReview(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _json(body: Any, status: int) -> Response:
    return Response(json_bytes(body), status, mimetype=JSON_TYPE)


def parse_review(body: bytes) -> tuple[str, dict[str, Any]]:
    """(apiVersion, request) of an AdmissionReview, or BadReview(400)."""
    try:
        review = decode_review(body)
    except (ValueError, RecursionError):
        raise BadReview(400, "request body is not JSON") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise BadReview(400, "request body is not an AdmissionReview")
    api_version = review.get("apiVersion")
    if api_version not in API_VERSIONS:
        raise BadReview(400, f"unsupported AdmissionReview apiVersion {api_version!r}")
    req = review.get("request")
    if not isinstance(req, dict):
        raise BadReview(400, "AdmissionReview has no request")
    if not isinstance(req.get("uid"), str) or not req["uid"]:
        raise BadReview(400, "AdmissionReview request has no uid")
    return api_version, req


class Admission:
    """What POST /mutate and /validate do, for one app: the HTTP checks, the answer
    (webhook/answer.py), its metrics, and the findings of modes warn and audit handed to `audit`.
    `create_app` wires it."""

    def __init__(self, cluster: ClusterView, config: WebhookOptions, audit: AuditSink | None = None) -> None:
        self.cluster = cluster
        self.config = config
        self.audit = audit

    def admit(self, webhook: Webhook) -> Response:
        name = webhook.value
        # one look-up of the request: each use of Flask's `request` proxy costs a context look-up
        current: Request = request._get_current_object()  # type: ignore[attr-defined]
        refused = self._refuse_unread(name, current)
        if refused is not None:
            return refused
        tally = metrics.TALLY.mine()
        in_flight = (metrics.IN_FLIGHT, name)
        started = time.perf_counter()
        tally.enter(in_flight)
        try:
            return self._answer(webhook, current, tally)
        finally:
            tally.leave(in_flight)
            elapsed = time.perf_counter() - started
            tally.observe((metrics.DURATION, name), metrics.DURATION_BOUNDS, elapsed)

    def _refuse_unread(self, name: str, current: Request) -> Response | None:
        """415 for a wrong content type, 413 for a declared length over the limit; None to go on."""
        # the header as the apiserver sends it needs no parsing; anything else is parsed as before
        if current.environ.get("CONTENT_TYPE") != JSON_TYPE and current.mimetype != JSON_TYPE:
            metrics.count(metrics.INVALID, name, "415")
            return _json({"message": f"content type must be {JSON_TYPE}"}, 415)
        length = current.content_length
        if length is not None and length > self.config.max_body_bytes:
            metrics.count(metrics.INVALID, name, "413")
            # answered unread; gunicorn discards the declared body before reusing the connection
            return _json({"message": "request body too large"}, 413)
        return None

    def _answer(self, webhook: Webhook, current: Request, tally: ThreadTally) -> Response:
        name = webhook.value
        body = current.get_data(cache=False)
        if len(body) > self.config.max_body_bytes:  # chunked: no Content-Length to judge it by
            metrics.count(metrics.INVALID, name, "413")
            return _json({"message": "request body too large"}, 413)
        try:
            api_version, req = parse_review(body)
        except BadReview as err:
            metrics.count(metrics.INVALID, name, metrics.bounded(str(err.code), metrics.INVALID_CODES))
            return _json({"message": err.message}, err.code)
        answered = answer(webhook, req, self.cluster, self.config)
        self._record(answered, req)
        # label values from closed sets only (webhook/metrics.py): the request chooses none
        operation = metrics.bounded(req.get("operation"), metrics.OPERATIONS)
        kind = metrics.bounded(_kind(req), metrics.KINDS)
        outcome = metrics.bounded(answered.outcome.value, metrics.VERDICTS)
        tally.count((metrics.REVIEWS, name, kind, operation, outcome))
        allowed = "true" if answered.verdict.allowed else "false"
        dry_run = "true" if req.get("dryRun") is True else "false"
        tally.count((metrics.REQUESTS, name, operation, allowed, dry_run))
        return Response(json_bytes(answered.review(api_version)), 200, mimetype=JSON_TYPE)

    def _record(self, answered: Answer, req: Mapping[str, Any]) -> None:
        """An internal error is counted; a finding (validating, allowed, not a dry run: a dry run
        gets the same answer and causes nothing else) is counted, logged and sent to `audit`."""
        if answered.outcome is Outcome.ERROR:
            metrics.count(metrics.ERRORS, answered.webhook.value)
        verdict = answered.verdict
        if (
            verdict.allowed
            and verdict.finding
            and answered.webhook is Webhook.VALIDATE
            and req.get("dryRun") is not True
        ):
            self._finding(req, verdict.finding, verdict.finding_mode)

    def _finding(self, req: Mapping[str, Any], message: str, mode: str) -> None:
        metrics.count(metrics.AUDITED, metrics.bounded(mode, metrics.VERDICTS))
        log.warning("%s: %s %s/%s: %s", mode, _kind(req), req.get("namespace"), _name(req), message)
        if self.audit is not None:
            self.audit(req, message)


def create_app(cluster: ClusterView, config: WebhookOptions, audit: AuditSink | None = None) -> Flask:
    """`audit` receives the findings of modes warn and audit (allowed, but no node group fits), to
    record off the request path."""
    # no static route (Flask would serve ./static of the working directory) and no automatic
    # OPTIONS: the port answers the contract's paths and methods only, anything else 404/405
    app = Flask("fitguard-webhook", static_folder=None)
    metrics.set_build_info("webhook")
    for webhook in ("mutate", "validate"):
        metrics.ERRORS.labels(webhook)  # a zero series from the start: alert rules can rate() it
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    # One byte over the limit: werkzeug cuts a chunked body at MAX_CONTENT_LENGTH without an error,
    # so reading limit + 1 bytes is how an oversized chunked body is told from one at the limit.
    app.config["MAX_CONTENT_LENGTH"] = config.max_body_bytes + 1
    admission = Admission(cluster, config, audit)

    @app.post("/mutate")
    def mutate_endpoint() -> Response:
        return admission.admit(Webhook.MUTATE)

    @app.post("/validate")
    def validate_endpoint() -> Response:
        return admission.admit(Webhook.VALIDATE)

    @app.errorhandler(HTTPException)
    def http_error(err: HTTPException) -> Response:
        response = _json({"message": err.description or err.name}, err.code or 500)
        if isinstance(err, MethodNotAllowed) and err.valid_methods:
            response.headers["Allow"] = ", ".join(err.valid_methods)  # a 405 must say what is allowed
        return response

    @app.errorhandler(Exception)
    def internal_error(err: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _json({"message": "internal error"}, 500)

    return app


def _kind(req: Mapping[str, Any]) -> str:
    kind = req.get("kind")
    return str(kind.get("kind", "")) if isinstance(kind, MAPPINGS) else ""


def _name(req: Mapping[str, Any]) -> str:
    obj = req.get("object")
    meta = obj.get("metadata") if isinstance(obj, MAPPINGS) else None
    return str(meta.get("name") or meta.get("generateName") or "") if isinstance(meta, MAPPINGS) else ""
