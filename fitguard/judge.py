"""The webhook's verdict on one manifest object, answered by the webhook's own code.

Each object goes where the apiserver would send it on `kubectl apply`: a Pod first to /mutate (its
patch applied, as the apiserver does before validating webhooks run), then /validate; a workload
straight to /validate (which judges its template as /mutate will leave its pods). Each is answered
by `webhook.answer.answer`, the code the webhook's Flask app wraps, so the exemptions, modes,
namespace label overrides, messages and warnings are the webhook's, not a copy of them; the object
is sent as the apiserver sends it (JSON, within the webhook's body limit). Requests are marked
dryRun: a check records no audit finding.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capacity.placement import Abstention
from fitguard.apiserver_quantities import normalised
from webhook.answer import Answer, Webhook, answer
from webhook.cluster import ClusterView
from webhook.mutate import Mutation, PodError, apply_patch, mutate_pod
from webhook.review import Verdict, WebhookOptions, exemption
from webhook.review_wire import load_json
from webhook.validate import TEMPLATE_PATHS, pod_template

ADMITTED, WARNED, AUDITED, EXEMPT, DENIED = "admitted", "warned", "audit", "exempt", "denied"
# admitted without a verdict: fitguard could not know every place it could run (capacity/placement.py)
UNJUDGED = "unjudged"
# the names manifests/base/webhook-configurations.yaml gives the two webhooks (kubectl quotes them)
MUTATING_NAME = "mutate.fitguard.io"
VALIDATING_NAME = "validate.fitguard.io"


@dataclass(frozen=True, slots=True)
class Judgement:
    """What `kubectl apply` would meet: allowed or not, the message and warnings it would print,
    and which webhook said so (`webhook` is empty when the object passed both)."""

    verdict: str  # admitted, warned, audit, exempt, denied, unjudged
    message: str = ""
    warnings: tuple[str, ...] = ()
    webhook: str = ""
    code: int | None = None
    abstained: Abstention | None = None  # why an unjudged object was not judged
    # what /mutate does to the Pod, or to each pod of a workload (None: nothing, or not asked for)
    mutation: Mutation | None = None

    @property
    def denied(self) -> bool:
        return self.verdict == DENIED


@dataclass
class Judge:
    """Judges objects against one cluster view under one configuration; `mutations`: say what
    /mutate does to each object's pods (`Judgement.mutation`)."""

    cluster: ClusterView
    config: WebhookOptions
    mutations: bool = False

    @staticmethod
    def judges(obj: Mapping[str, Any]) -> bool:
        """Whether the validating webhook judges objects of this kind (the others are skipped)."""
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        return obj.get("kind") in TEMPLATE_PATHS and group in ("", "apps", "batch")

    def _answer(self, webhook: Webhook, request: dict[str, Any]) -> Answer:
        """The webhook's answer, or ValueError where the webhook refuses the review itself: a body
        over its limit, as the webhook's app refuses it (webhook/app.py)."""
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        if len(json.dumps(review)) > self.config.max_body_bytes:
            raise ValueError(f"/{webhook.value} answered 413: request body too large")
        return answer(webhook, request, self.cluster, self.config)

    def judge(self, obj: Mapping[str, Any], namespace: str) -> Judgement:
        """The verdict on `obj` created in `namespace` (its own metadata.namespace wins). An object
        the API server itself refuses (fitguard/apiserver_quantities.py) never reaches a webhook:
        it is denied with the API server's code and message, and no webhook name. ValueError for
        an object the webhook cannot be sent (not JSON, over its body limit)."""
        doc, refusal = normalised(as_sent(obj), in_place=True)
        if refusal is not None:
            return Judgement(DENIED, refusal.message, code=refusal.code)
        meta = doc.setdefault("metadata", {})
        namespace = str(meta.get("namespace") or namespace)
        meta["namespace"] = namespace  # the apiserver fills it in before any webhook sees the object
        group, _, version = str(doc["apiVersion"]).rpartition("/")
        request: dict[str, Any] = {
            "uid": "fitguard-check",
            "kind": {"group": group, "version": version, "kind": doc["kind"]},
            "operation": "CREATE",
            "namespace": namespace,
            "name": str(meta.get("name") or ""),
            "object": doc,
            "dryRun": True,
        }
        reason = exemption(request, self.cluster, self.config)
        if reason is not None:
            return Judgement(EXEMPT, reason)
        warnings: list[str] = []
        mutation = None
        if doc["kind"] == "Pod":
            mutated = self._answer(Webhook.MUTATE, request)
            warnings += mutated.verdict.warnings
            if not mutated.verdict.allowed:
                return _denied(mutated.verdict, MUTATING_NAME, warnings)
            mutation = mutated.mutation
            if mutated.verdict.patch:
                request = {**request, "object": apply_patch(doc, mutated.verdict.patch)}
        elif self.mutations:
            mutation = self._pods_mutation(doc, namespace)
        shown = mutation if self.mutations and mutation is not None and mutation.injected else None
        return _validated(self._answer(Webhook.VALIDATE, request).verdict, warnings, shown)

    def _pods_mutation(self, doc: Mapping[str, Any], namespace: str) -> Mutation | None:
        """What /mutate will do to each pod of a workload (None: its template is malformed or its
        ServiceAccount missing, which /validate and /mutate answer for themselves)."""
        template = pod_template(str(doc["kind"]), doc)
        if template is None:
            return None
        pod = {"metadata": {"labels": dict(template.labels)}, "spec": template.spec}
        try:
            return mutate_pod(pod, namespace, self.cluster, self.config)
        except (PodError, LookupError):
            return None


def as_sent(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the apiserver sends it to a webhook: JSON, decoded afresh (a copy the judge
    may change). kubectl sends a YAML date or time as the text it was written as (sigs.k8s.io/yaml
    through gopkg.in/yaml.v2 keeps a timestamp a string); PyYAML read it as a date, written back
    in ISO form. ValueError for what JSON cannot hold (binary, sets, a map as a key)."""
    try:
        text = json.dumps(obj, default=_timestamp_text)
    except (TypeError, ValueError) as err:
        raise ValueError(f"not a JSON object: {err}") from None
    decoded: dict[str, Any] = load_json(text.encode())
    return decoded


def _timestamp_text(value: object) -> str:
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _validated(verdict: Verdict, warnings: list[str], mutation: Mutation | None) -> Judgement:
    """The judgement of /validate's verdict, after /mutate's warnings."""
    warnings = [*warnings, *verdict.warnings]
    if not verdict.allowed:
        return _denied(verdict, VALIDATING_NAME, warnings)
    # the response's status message (an exempt request never gets here)
    message = verdict.message
    if verdict.abstained is not None:
        return Judgement(UNJUDGED, message, tuple(warnings), abstained=verdict.abstained, mutation=mutation)
    if message:  # an allowed verdict with a message is an audit finding (exemptions came first)
        return Judgement(AUDITED, message, tuple(warnings), VALIDATING_NAME, mutation=mutation)
    return Judgement(WARNED if warnings else ADMITTED, "", tuple(warnings), mutation=mutation)


def _denied(verdict: Verdict, webhook: str, warnings: list[str]) -> Judgement:
    return Judgement(DENIED, verdict.message, tuple(warnings), webhook, verdict.code or 403)
