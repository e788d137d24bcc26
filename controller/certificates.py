"""The leader's certificate reconciler: the webhook's CA and serving certificate in Secrets, and the
caBundle of fitguard's webhook configurations.

- `fitguard-ca` (kubernetes.io/tls): tls.crt/tls.key are the current CA, ca.crt the trust bundle (the
  current CA, then the previous ones until they expire).
- `fitguard-webhook-tls` (kubernetes.io/tls): the serving certificate, its key, and the same bundle.
- What to write is decided by certs/rotation.py (pure: create, renew two thirds into the life, keep
  old CAs in the bundle until they expire, the caBundle patch); this module reads the Secrets and
  webhook configurations, asks it, and writes. The caBundle of every webhook of the named
  configurations is set to the bundle, and put back when something else (an apply, a GitOps sync)
  resets it.
- Idempotent: a round where nothing needs to change writes nothing.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from capacity.names import CERTIFICATE_MANAGER, MANAGED_BY_LABEL
from certs import material
from certs.rotation import (
    CA_BUNDLE_KEY,
    CertificateOptions,
    plan_authority,
    plan_serving,
    read_authority,
    read_serving,
    webhook_patch,
)
from kube.api import (
    create_secret,
    get_secret,
    get_webhook_configuration,
    json_patch_webhook_configuration,
    replace_secret,
)
from kube.client import ApiLike, KubeClient, KubeError, as_kube_client

log = logging.getLogger(__name__)

TLS_SECRET_TYPE = "kubernetes.io/tls"
MANAGED_BY = {MANAGED_BY_LABEL: CERTIFICATE_MANAGER}
# Once per 30 s: a reset caBundle is put back well within the minute a webhook call may fail for.
DEFAULT_INTERVAL_SECONDS = 30.0


@dataclass
class ReconcileResult:
    """The writes one round made, in order, each with its reason; empty when nothing changed."""

    actions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # webhook configurations not found

    def did(self, action: str) -> None:
        log.info("certificates: %s", action)
        self.actions.append(action)


# --- acting (API) -----------------------------------------------------------------------------


def _decode(secret: Mapping[str, Any] | None) -> dict[str, bytes]:
    if secret is None:
        return {}
    return {key: base64.b64decode(value) for key, value in (secret.get("data") or {}).items()}


def _encode(data: Mapping[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in data.items()}


def utc_now() -> datetime:
    return datetime.now(UTC)


class CertificateReconciler:
    """Brings the Secrets and caBundles to the desired state; the leader calls `reconcile` (or `run`)."""

    def __init__(
        self,
        api: ApiLike,
        settings: CertificateOptions | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.kube: KubeClient = as_kube_client(api)
        self.settings = settings or CertificateOptions()
        self.clock = clock

    def reconcile(self) -> ReconcileResult:
        """One round: CA Secret, then caBundles, then the serving Secret (new CA trusted before use)."""
        now = self.clock()
        result = ReconcileResult()
        settings = self.settings
        ca_secret = self._get_secret(settings.ca_secret)
        stored_ca, unusable = read_authority(_decode(ca_secret)) if ca_secret else (None, "")
        authority, decision = plan_authority(stored_ca, unusable, settings, now)
        ca_data = {
            "tls.crt": material.certificate_to_pem(authority.cert),
            "tls.key": material.private_key_to_pem(authority.key),
            CA_BUNDLE_KEY: authority.bundle_pem,
        }
        if decision.changed or _decode(ca_secret) != ca_data:
            self._write_secret(settings.ca_secret, ca_secret, ca_data)
            result.did(f"Secret {settings.namespace}/{settings.ca_secret}: {decision.reason or 'rewritten'}")
        self._inject(authority.bundle_pem, result)
        serving_secret = self._get_secret(settings.serving_secret)
        serving, decision = plan_serving(read_serving(_decode(serving_secret)), authority, settings, now)
        serving_data = {
            "tls.crt": material.certificate_to_pem(serving.cert),
            "tls.key": material.private_key_to_pem(serving.key),
            CA_BUNDLE_KEY: authority.bundle_pem,
        }
        if decision.changed or _decode(serving_secret) != serving_data:
            self._write_secret(settings.serving_secret, serving_secret, serving_data)
            reason = decision.reason or "updated the CA bundle"
            result.did(f"Secret {settings.namespace}/{settings.serving_secret}: {reason}")
        return result

    def run(self, stop: threading.Event, interval: float = DEFAULT_INTERVAL_SECONDS) -> None:
        """Reconcile every `interval` seconds until `stop` is set; a failed round is retried next time."""
        while not stop.is_set():
            try:
                self.reconcile()
            except KubeError as err:
                log.warning("certificates: round failed, retrying in %.0f s: %s", interval, err)
            stop.wait(interval)

    def _get_secret(self, name: str) -> dict[str, Any] | None:
        return get_secret(self.kube, self.settings.namespace, name)

    def _write_secret(self, name: str, current: Mapping[str, Any] | None, data: Mapping[str, bytes]) -> None:
        """Create, or replace at the resourceVersion read: a concurrent writer gets 409, not a lost write."""
        namespace = self.settings.namespace
        if current is None:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)},
                "type": TLS_SECRET_TYPE,
                "data": _encode(data),
            }
            create_secret(self.kube, namespace, body)
            return
        body = {**current, "data": _encode(data)}
        body["metadata"] = {
            **current["metadata"],
            "labels": {**(current["metadata"].get("labels") or {}), **MANAGED_BY},
        }
        replace_secret(self.kube, namespace, name, body)

    def _inject(self, bundle: bytes, result: ReconcileResult) -> None:
        settings = self.settings
        targets = (
            ("MutatingWebhookConfiguration", settings.mutating_webhook_configuration),
            ("ValidatingWebhookConfiguration", settings.validating_webhook_configuration),
        )
        for kind, name in targets:
            configuration = get_webhook_configuration(self.kube, kind, name)
            if configuration is None:
                log.warning("certificates: %s %s not found; the caBundle waits for it", kind, name)
                result.missing.append(f"{kind}/{name}")
                continue
            operations = webhook_patch(configuration, bundle, settings.service, settings.namespace)
            if operations:
                json_patch_webhook_configuration(self.kube, kind, name, operations)
                result.did(f"{kind} {name}: set caBundle on {len(operations) // 2} webhook(s)")
