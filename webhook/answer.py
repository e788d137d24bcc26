"""One admission review answered, apart from HTTP: `answer(webhook, request, ...)` gives what
/mutate or /validate decides for a request already read, as a typed `Answer`; `Answer.review`
is the AdmissionReview the webhook sends back.

webhook/app.py wraps it (the HTTP contract, metrics, findings handed to the audit sink) and
`fitguard check` (fitguard/judge.py) calls it directly, so both answer with the same code: the
exemptions, the handlers, the failure policy.
"""

from __future__ import annotations

import base64
import enum
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from webhook import mutate, validate
from webhook.cluster import ClusterView
from webhook.mutate import Mutation
from webhook.review import MAPPINGS, Verdict, WebhookOptions, exemption

log = logging.getLogger(__name__)

# the API server records it as `<webhook name>/abstained` in its audit log
ABSTAINED_ANNOTATION = "abstained"


class Webhook(enum.Enum):
    MUTATE = "mutate"
    VALIDATE = "validate"


class Outcome(enum.Enum):
    """How a review ended, as the metrics count it (webhook/metrics.py VERDICTS)."""

    ALLOW = "allow"
    WARN = "warn"  # allowed with warnings, or (validating) with a finding of mode warn
    AUDIT = "audit"  # validating: allowed with a finding of mode audit
    DENY = "deny"
    ERROR = "error"  # the handler failed: answered by the failure policy


@dataclass(frozen=True, slots=True)
class Answer:
    """A review's answer: the verdict, how it ended, why it was skipped (`exemption`: the request
    was not reviewed), and for /mutate what it does to the pod (None: not a pod it mutates)."""

    webhook: Webhook
    uid: str
    verdict: Verdict
    outcome: Outcome
    exemption: str | None = None
    mutation: Mutation | None = None

    def review(self, api_version: str) -> dict[str, Any]:
        """The AdmissionReview sent back, in the request's apiVersion."""
        return review_response(api_version, self.uid, self.verdict, self.webhook is Webhook.MUTATE)


def is_pod_create(req: Mapping[str, Any]) -> bool:
    kind = req.get("kind")
    return (
        req.get("operation") == "CREATE"
        and isinstance(kind, MAPPINGS)
        and kind.get("group", "") == ""
        and kind.get("kind") == "Pod"
        and not req.get("subResource")
    )


def review_response(api_version: str, uid: str, verdict: Verdict, mutating: bool) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if verdict.message or verdict.code:
        status: dict[str, Any] = {"code": verdict.code or (200 if verdict.allowed else 403)}
        if verdict.message:
            status["message"] = verdict.message
        if verdict.reason:
            status["reason"] = verdict.reason
        response["status"] = status
    if verdict.patch and verdict.allowed and mutating:
        raw = json_bytes(verdict.patch)
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(raw).decode("ascii")
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if verdict.abstained is not None:
        response["auditAnnotations"] = {ABSTAINED_ANNOTATION: verdict.abstained.value}
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


# what orjson hands to `default` (absent here, so refused: json.dumps decides) instead of writing it
# in a way json.dumps does not: dataclasses, datetimes, and subclasses of str, int, dict and list
_AS_JSON_DUMPS = (
    orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def json_bytes(value: Any) -> bytes:
    """`json.dumps(value, separators=(",", ":")).encode()`, byte for byte, written by orjson (ten
    times faster) where it writes the same. For what an answer holds: strings, integers, booleans,
    None, lists and dicts with string keys (not floats, which json.dumps writes by `repr` and
    orjson in a shortest form of its own). json.dumps writes the text instead when orjson refuses
    the value (an integer beyond 64 bits, a lone surrogate, a key that is not a string, a type
    passed through above) or when orjson's text holds what json.dumps escapes and orjson does not:
    a character beyond ASCII, or DEL (every other ASCII character both write alike;
    tests/webhook/test_answer_json.py)."""
    try:
        text = orjson.dumps(value, option=_AS_JSON_DUMPS)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(value, separators=(",", ":")).encode()
    if text.isascii() and b"\x7f" not in text:
        return text
    return json.dumps(value, separators=(",", ":")).encode()


def failure_verdict(config: WebhookOptions) -> Verdict:
    if config.failure_policy == "fail":
        return Verdict.deny("fitguard hit an internal error (see its logs)", code=500, reason="InternalError")
    return Verdict(allowed=True, warnings=["fitguard could not review this object (internal error)"])


def _reviewed(
    webhook: Webhook, req: Mapping[str, Any], cluster: ClusterView, config: WebhookOptions
) -> tuple[Verdict, Mutation | None]:
    if webhook is Webhook.VALIDATE:
        return validate.review(req, cluster, config), None
    if not is_pod_create(req):
        return Verdict(allowed=True), None
    return mutate.reviewed(req, cluster, config)


def answer(webhook: Webhook, req: Mapping[str, Any], cluster: ClusterView, config: WebhookOptions) -> Answer:
    """The answer to the review's request `req` (its uid already checked): an exempt request is
    allowed with the reason, unreviewed; any error inside a handler is logged and answered by the
    failure policy, never raised."""
    uid = str(req.get("uid"))
    reason = exemption(req, cluster, config)
    if reason is not None:
        return Answer(webhook, uid, Verdict(allowed=True, message=reason), Outcome.ALLOW, exemption=reason)
    try:
        verdict, mutation = _reviewed(webhook, req, cluster, config)
        outcome = _outcome(verdict, webhook is Webhook.MUTATE)
    except Exception:  # any bug becomes the failure policy's answer, never a 500
        log.exception("%s: review %s failed", webhook.value, req.get("uid"))
        return Answer(webhook, uid, failure_verdict(config), Outcome.ERROR)
    return Answer(webhook, uid, verdict, outcome, mutation=mutation)


def _outcome(verdict: Verdict, mutating: bool) -> Outcome:
    """deny; the finding's mode (validating, allowed with a warn or audit finding); warn (allowed
    with warnings); else allow."""
    if not verdict.allowed:
        return Outcome.DENY
    if verdict.finding and not mutating:
        return Outcome(verdict.finding_mode)
    if verdict.warnings:
        return Outcome.WARN
    return Outcome.ALLOW
