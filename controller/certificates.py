"""The leader's certificate reconciler: the webhook's CA and serving certificate in Secrets, and the
caBundle of fitguard's webhook configurations.

- `fitguard-ca` (kubernetes.io/tls): tls.crt/tls.key are the current CA, ca.crt the trust bundle (the
  current CA, then the previous ones until they expire).
- `fitguard-webhook-tls` (kubernetes.io/tls): the serving certificate, its key, and the same bundle.
- Both are created when absent and renewed two thirds into their life. A new CA joins the bundle
  before anything it signs is served, and the old CA stays in it until it expires, so a caller that
  trusts the bundle never sees a gap. The caBundle of every webhook of the named configurations is
  set to the bundle, and put back when something else (an apply, a GitOps sync) resets it.
- Idempotent: a round where nothing needs to change writes nothing.

Deciding (`plan_authority`, `plan_serving`, `webhook_patch`) is pure and separate from the API calls.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

from capacity.names import CERTIFICATE_MANAGER, MANAGED_BY_LABEL
from certs import material
from kube.client import JSON_PATCH, KubeClient, KubeError, Resource, as_kube_client

log = logging.getLogger(__name__)

SECRETS = Resource("", "v1", "secrets", True)
MUTATING_WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False)
VALIDATING_WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False)
TLS_SECRET_TYPE = "kubernetes.io/tls"
CA_BUNDLE_KEY = "ca.crt"
MANAGED_BY = {MANAGED_BY_LABEL: CERTIFICATE_MANAGER}
# Once per 30 s: a reset caBundle is put back well within the minute a webhook call may fail for.
DEFAULT_INTERVAL_SECONDS = 30.0


@dataclass(frozen=True)
class CertificateOptions:
    """Names and lifetimes; the defaults match manifests/base."""

    namespace: str = "fitguard-system"
    service: str = "fitguard-webhook"
    ca_secret: str = "fitguard-ca"
    serving_secret: str = "fitguard-webhook-tls"
    mutating_webhook_configuration: str = "fitguard"
    validating_webhook_configuration: str = "fitguard"
    ca_validity: timedelta = material.DEFAULT_CA_VALIDITY
    serving_validity: timedelta = material.DEFAULT_SERVING_VALIDITY
    extra_dns_names: tuple[str, ...] = ()

    @property
    def dns_names(self) -> list[str]:
        return [*material.service_dns_names(self.service, self.namespace), *self.extra_dns_names]


@dataclass(frozen=True)
class Authority:
    """The current CA with its key, and the bundle a client must trust (current first)."""

    cert: x509.Certificate
    key: CertificateIssuerPrivateKeyTypes
    bundle: tuple[x509.Certificate, ...]

    @property
    def bundle_pem(self) -> bytes:
        return b"".join(material.certificate_to_pem(cert) for cert in self.bundle)


@dataclass(frozen=True)
class Serving:
    cert: x509.Certificate
    key: CertificateIssuerPrivateKeyTypes


@dataclass(frozen=True)
class RotationDecision:
    """What a plan settled on, and why it changed anything (empty reason: kept as it was)."""

    reason: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.reason)


@dataclass
class ReconcileResult:
    """The writes one round made, in order, each with its reason; empty when nothing changed."""

    actions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # webhook configurations not found

    def did(self, action: str) -> None:
        log.info("certificates: %s", action)
        self.actions.append(action)


# --- deciding (pure) --------------------------------------------------------------------------


def _key_matches(cert: x509.Certificate, key: CertificateIssuerPrivateKeyTypes) -> bool:
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    encoding = serialization.Encoding.DER
    return cert.public_key().public_bytes(encoding, spki) == key.public_key().public_bytes(encoding, spki)


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _unexpired(certs: Sequence[x509.Certificate], now: datetime) -> list[x509.Certificate]:
    return [cert for cert in certs if material.not_after(cert) > now]


def _dedupe(certs: Sequence[x509.Certificate]) -> tuple[x509.Certificate, ...]:
    seen: dict[bytes, x509.Certificate] = {}
    for cert in certs:
        seen.setdefault(cert.fingerprint(hashes.SHA256()), cert)
    return tuple(seen.values())


def read_authority(data: Mapping[str, bytes]) -> tuple[Authority | None, str]:
    """The CA stored in a Secret's decoded data, or None and why it cannot be used."""
    try:
        cert = material.certificate_from_pem(data["tls.crt"])
        key = material.private_key_from_pem(data["tls.key"])
        bundle = material.certificates_from_pem(data[CA_BUNDLE_KEY]) if data.get(CA_BUNDLE_KEY) else [cert]
    except KeyError as err:
        return None, f"{err.args[0]} is missing"
    except ValueError as err:
        return None, f"unreadable: {err}"
    if not _is_ca(cert):
        return None, "tls.crt is not a CA certificate"
    if not _key_matches(cert, key):
        return None, "tls.key does not match tls.crt"
    return Authority(cert, key, _dedupe([cert, *bundle])), ""


def plan_authority(
    stored: Authority | None, unusable: str, settings: CertificateOptions, now: datetime
) -> tuple[Authority, RotationDecision]:
    """Keep, renew or create the CA; the bundle keeps every earlier CA until it expires."""
    if stored is None:
        cert, key = material.make_ca(valid_for=settings.ca_validity, now=now)
        return Authority(cert, key, (cert,)), RotationDecision(
            f"issued a new CA ({unusable or 'none stored'})"
        )
    if now >= material.not_after(stored.cert):
        cert, key = material.make_ca(valid_for=settings.ca_validity, now=now)
        return Authority(cert, key, (cert,)), RotationDecision("issued a new CA (the stored one has expired)")
    if now >= material.renew_at(stored.cert):
        cert, key = material.make_ca(valid_for=settings.ca_validity, now=now)
        bundle = _dedupe([cert, *_unexpired(stored.bundle, now)])
        until = material.not_after(stored.cert).isoformat()
        reason = f"rotated the CA (two thirds of its life passed; the old one is trusted until {until})"
        return Authority(cert, key, bundle), RotationDecision(reason)
    bundle = _dedupe([stored.cert, *_unexpired(stored.bundle, now)])
    if bundle != stored.bundle:
        return Authority(stored.cert, stored.key, bundle), RotationDecision(
            "dropped expired CAs from the bundle"
        )
    return stored, RotationDecision()


def read_serving(data: Mapping[str, bytes]) -> Serving | None:
    try:
        serving = Serving(
            material.certificate_from_pem(data["tls.crt"]), material.private_key_from_pem(data["tls.key"])
        )
    except (KeyError, ValueError):
        return None
    return serving if _key_matches(serving.cert, serving.key) else None


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def serving_problem(
    stored: Serving | None, authority: Authority, dns_names: Sequence[str], now: datetime
) -> str:
    """Why the stored serving certificate must be re-issued; empty when it is fine."""
    if stored is None:
        return "none stored, or unreadable"
    if not _signed_by(stored.cert, authority.cert):
        return "not signed by the current CA"
    if now >= material.renew_at(stored.cert):
        return "two thirds of its life passed"
    names, _ = material.subject_alt_names(stored.cert)
    missing = [name for name in dns_names if name not in names]
    if missing:
        return f"does not name {', '.join(missing)}"
    return ""


def plan_serving(
    stored: Serving | None, authority: Authority, settings: CertificateOptions, now: datetime
) -> tuple[Serving, RotationDecision]:
    problem = serving_problem(stored, authority, settings.dns_names, now)
    if stored is not None and not problem:
        return stored, RotationDecision()
    # A leaf may not outlive its CA (make_serving_cert refuses): cut it to the CA's remaining life.
    valid_for = min(
        settings.serving_validity, material.not_after(authority.cert) - now.replace(microsecond=0)
    )
    cert, key = material.make_serving_cert(
        authority.cert, authority.key, settings.dns_names, valid_for=valid_for, now=now
    )
    return Serving(cert, key), RotationDecision(f"issued a serving certificate ({problem})")


def webhook_patch(
    configuration: Mapping[str, Any], ca_bundle: bytes, service: str, namespace: str
) -> list[Any]:
    """JSON patch operations setting caBundle on every webhook calling our Service; [] if all are set.

    Each operation is guarded by a test of the webhook's name, so a concurrent reorder fails the
    patch instead of writing a bundle to someone else's webhook.
    """
    encoded = base64.b64encode(ca_bundle).decode()
    operations: list[Any] = []
    for index, webhook in enumerate(configuration.get("webhooks") or []):
        client = webhook.get("clientConfig") or {}
        target = client.get("service") or {}
        if target.get("name") != service or target.get("namespace") != namespace:
            continue
        if client.get("caBundle") == encoded:
            continue
        operations.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook["name"]})
        operations.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": encoded})
    return operations


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
        api: Any,
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
        try:
            return self.kube.get(SECRETS.path(self.settings.namespace, name))
        except KubeError as err:
            if err.not_found:
                return None
            raise

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
            self.kube.request("POST", SECRETS.path(namespace), body=body)
            return
        body = {**current, "data": _encode(data)}
        body["metadata"] = {
            **current["metadata"],
            "labels": {**(current["metadata"].get("labels") or {}), **MANAGED_BY},
        }
        self.kube.request("PUT", SECRETS.path(namespace, name), body=body)

    def _inject(self, bundle: bytes, result: ReconcileResult) -> None:
        settings = self.settings
        targets = (
            (MUTATING_WEBHOOKS, "MutatingWebhookConfiguration", settings.mutating_webhook_configuration),
            (
                VALIDATING_WEBHOOKS,
                "ValidatingWebhookConfiguration",
                settings.validating_webhook_configuration,
            ),
        )
        for resource, kind, name in targets:
            try:
                configuration = self.kube.get(resource.path(name=name))
            except KubeError as err:
                if not err.not_found:
                    raise
                log.warning("certificates: %s %s not found; the caBundle waits for it", kind, name)
                result.missing.append(f"{kind}/{name}")
                continue
            operations = webhook_patch(configuration, bundle, settings.service, settings.namespace)
            if operations:
                self.kube.request("PATCH", resource.path(name=name), body=operations, content_type=JSON_PATCH)
                result.did(f"{kind} {name}: set caBundle on {len(operations) // 2} webhook(s)")
