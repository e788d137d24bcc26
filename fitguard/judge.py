"""The webhook's verdict on one manifest object, reached through the webhook's own Flask app.

Each object goes where the apiserver would send it on `kubectl apply`: a Pod first through
/mutate (its patch applied, as the apiserver does before validating webhooks run), then
/validate; a workload straight to /validate (which judges its template as /mutate will leave its
pods). The app's exemptions, modes, namespace label overrides, messages and warnings are therefore
the webhook's, not a copy of them. Requests are marked dryRun: a check records no audit finding.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.placement import Abstention
from fitguard.apiserver_quantities import normalised
from webhook.app import ABSTAINED_ANNOTATION, create_app
from webhook.cluster import ClusterView
from webhook.mutate import apply_patch
from webhook.review import WebhookOptions, exemption
from webhook.validate import TEMPLATE_PATHS

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

    @property
    def denied(self) -> bool:
        return self.verdict == DENIED


@dataclass
class Judge:
    """Judges objects against one cluster view under one configuration."""

    cluster: ClusterView
    config: WebhookOptions
    _client: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._client = create_app(self.cluster, self.config).test_client()

    @staticmethod
    def judges(obj: Mapping[str, Any]) -> bool:
        """Whether the validating webhook judges objects of this kind (the others are skipped)."""
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        return obj.get("kind") in TEMPLATE_PATHS and group in ("", "apps", "batch")

    def _post(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        answer = self._client.post(path, data=json.dumps(review), content_type="application/json")
        body = answer.get_json(silent=True) or {}
        if answer.status_code != 200 or not isinstance(body.get("response"), Mapping):
            message = body.get("message") if isinstance(body, Mapping) else None
            raise ValueError(f"{path} answered {answer.status_code}: {message or answer.get_data(True)}")
        return dict(body["response"])

    def judge(self, obj: Mapping[str, Any], namespace: str) -> Judgement:
        """The verdict on `obj` created in `namespace` (its own metadata.namespace wins). An object
        the API server itself refuses (fitguard/apiserver_quantities.py) never reaches a webhook:
        it is denied with the API server's code and message, and no webhook name."""
        doc, refusal = normalised(obj)
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
        if doc["kind"] == "Pod":
            mutated = self._post("/mutate", request)
            warnings += mutated.get("warnings") or []
            if not mutated.get("allowed"):
                return _denied(mutated, MUTATING_NAME, warnings)
            if mutated.get("patch"):
                patch = json.loads(base64.b64decode(mutated["patch"]))
                request = {**request, "object": apply_patch(doc, patch)}
        validated = self._post("/validate", request)
        warnings += validated.get("warnings") or []
        if not validated.get("allowed"):
            return _denied(validated, VALIDATING_NAME, warnings)
        message = str((validated.get("status") or {}).get("message") or "")
        abstained = (validated.get("auditAnnotations") or {}).get(ABSTAINED_ANNOTATION)
        if abstained:
            return Judgement(UNJUDGED, message, tuple(warnings), abstained=Abstention(abstained))
        if message:  # an allowed verdict with a message is an audit finding (exemptions came first)
            return Judgement(AUDITED, message, tuple(warnings), VALIDATING_NAME)
        return Judgement(WARNED if warnings else ADMITTED, "", tuple(warnings))


def _denied(response: Mapping[str, Any], webhook: str, warnings: list[str]) -> Judgement:
    status = response.get("status") or {}
    return Judgement(
        DENIED, str(status.get("message") or ""), tuple(warnings), webhook, status.get("code") or 403
    )
