"""The certificate rotation policy, pure: what the webhook's CA, its trust bundle and the serving
certificate should be at a given time, and the caBundle patch of a webhook configuration.

- The CA is created when absent or unusable and renewed two thirds into its life; the bundle keeps
  every earlier CA until it expires, so a caller that trusts the bundle never sees a gap.
- The serving certificate is re-issued when absent, not signed by the current CA, two thirds into
  its life, or missing a DNS name; it never outlives its CA.
- A round where nothing needs to change decides nothing (an empty reason).

The time is an argument; no I/O here. controller/certificates.py reads and writes the Secrets and
webhook configurations through kube/ and asks this module what to write.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

from capacity.defaults import NAMESPACE
from certs import material

CA_BUNDLE_KEY = "ca.crt"  # the trust bundle's key in both Secrets


@dataclass(frozen=True)
class CertificateOptions:
    """Names and lifetimes; the defaults match manifests/base."""

    namespace: str = NAMESPACE
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
