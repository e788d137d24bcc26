"""The leader's certificate reconciler against the fake API server: it creates the CA and serving
Secrets, renews them two thirds into their life, keeps the old CA trusted until it expires, puts back
a reset caBundle, and writes nothing when nothing has to change."""

from __future__ import annotations

import base64
import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from certs import material
from certs.rotation import CertificateOptions, webhook_patch
from controller.certificates import CertificateReconciler
from tests.objects import Clock

ROOT = Path(__file__).resolve().parents[2]
WEBHOOK_CONFIGURATIONS = ROOT / "manifests" / "base" / "webhook-configurations.yaml"
NAMESPACE = "fitguard-system"
START = datetime(2030, 1, 1, tzinfo=UTC)
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def webhook_configurations() -> list[dict[str, Any]]:
    """The configurations exactly as manifests/base ships them (caBundle left empty)."""
    return [doc for doc in yaml.safe_load_all(WEBHOOK_CONFIGURATIONS.read_text()) if doc]


@pytest.fixture
def cluster(fake_kube: Any) -> Any:
    for configuration in webhook_configurations():
        fake_kube.create(configuration)
    return fake_kube


def make_reconciler(cluster: Any, clock: Clock, **lifetimes: timedelta) -> CertificateReconciler:
    settings = CertificateOptions(namespace=NAMESPACE, **lifetimes)
    return CertificateReconciler(cluster.api_client(), settings, clock=clock)


def secret_data(cluster: Any, name: str) -> dict[str, bytes]:
    secret = cluster.get("Secret", name, NAMESPACE)
    assert secret["type"] == "kubernetes.io/tls"
    return {key: base64.b64decode(value) for key, value in secret["data"].items()}


def ca_bundles(cluster: Any) -> list[list[x509.Certificate]]:
    """The caBundle of every webhook of both configurations, parsed."""
    bundles = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for webhook in cluster.get(kind, "fitguard")["webhooks"]:
            encoded = webhook["clientConfig"].get("caBundle")
            bundles.append(material.certificates_from_pem(base64.b64decode(encoded)) if encoded else [])
    return bundles


def trusted(cert: x509.Certificate, bundle: list[x509.Certificate], now: datetime) -> bool:
    """What the apiserver checks of a serving certificate: signed by a bundle CA, both valid now."""
    if not material.not_before(cert) <= now < material.not_after(cert):
        return False
    for ca in bundle:
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        if material.not_before(ca) <= now < material.not_after(ca):
            return True
    return False


def writes(cluster: Any) -> list[str]:
    return [f"{r.method} {r.path}" for r in cluster.requests.find() if r.method in WRITES]


def test_creates_both_secrets_and_injects_the_ca_into_both_configurations(cluster: Any) -> None:
    clock = Clock(START)
    result = make_reconciler(cluster, clock).reconcile()

    ca = secret_data(cluster, "fitguard-ca")
    serving = secret_data(cluster, "fitguard-webhook-tls")
    ca_cert = material.certificate_from_pem(ca["tls.crt"])
    serving_cert = material.certificate_from_pem(serving["tls.crt"])
    assert material.private_key_from_pem(ca["tls.key"]) is not None
    assert serving["ca.crt"] == ca["ca.crt"] == material.certificate_to_pem(ca_cert)
    names, _ = material.subject_alt_names(serving_cert)
    assert set(names) >= {
        "fitguard-webhook",
        "fitguard-webhook.fitguard-system",
        "fitguard-webhook.fitguard-system.svc",
    }
    bundles = ca_bundles(cluster)
    assert len(bundles) == 2 and all(bundle == [ca_cert] for bundle in bundles)
    assert trusted(serving_cert, bundles[0], clock.now)
    assert len(result.actions) == 4 and not result.missing


def test_a_second_round_with_nothing_to_change_writes_nothing(cluster: Any) -> None:
    reconciler = make_reconciler(cluster, Clock(START))
    reconciler.reconcile()
    cluster.requests.clear()

    result = reconciler.reconcile()

    assert result.actions == []
    assert writes(cluster) == []
    assert len(cluster.requests.find(method="GET")) == 4  # it did look: two Secrets, two configurations


def test_serving_certificate_is_renewed_two_thirds_into_its_life_and_not_before(cluster: Any) -> None:
    clock = Clock(START)
    reconciler = make_reconciler(cluster, clock, serving_validity=timedelta(days=30))
    reconciler.reconcile()
    first = secret_data(cluster, "fitguard-webhook-tls")

    clock.advance(timedelta(days=19))  # before two thirds (20 days)
    assert reconciler.reconcile().actions == []

    clock.advance(timedelta(days=2))
    cluster.requests.clear()
    reconciler.reconcile()

    second = secret_data(cluster, "fitguard-webhook-tls")
    assert second["tls.crt"] != first["tls.crt"] and second["tls.key"] != first["tls.key"]
    assert secret_data(cluster, "fitguard-ca")["tls.crt"] == material.certificate_to_pem(
        material.certificates_from_pem(first["ca.crt"])[0]
    )
    # Only the serving Secret was written: the CA and the caBundles did not change.
    assert writes(cluster) == [f"PUT /api/v1/namespaces/{NAMESPACE}/secrets/fitguard-webhook-tls"]


def test_ca_rotation_keeps_the_old_ca_trusted_until_it_expires(cluster: Any) -> None:
    clock = Clock(START)
    reconciler = make_reconciler(
        cluster, clock, ca_validity=timedelta(days=30), serving_validity=timedelta(days=15)
    )
    reconciler.reconcile()
    old_ca = material.certificate_from_pem(secret_data(cluster, "fitguard-ca")["tls.crt"])

    clock.advance(timedelta(days=10, hours=12))  # the serving certificate's two thirds, not the CA's
    reconciler.reconcile()
    assert material.certificate_from_pem(secret_data(cluster, "fitguard-ca")["tls.crt"]) == old_ca
    served_before_rotation = material.certificate_from_pem(
        secret_data(cluster, "fitguard-webhook-tls")["tls.crt"]
    )

    clock.advance(timedelta(days=10))  # day 20.5: past the CA's two thirds
    reconciler.reconcile()
    new_ca = material.certificate_from_pem(secret_data(cluster, "fitguard-ca")["tls.crt"])
    served_after_rotation = material.certificate_from_pem(
        secret_data(cluster, "fitguard-webhook-tls")["tls.crt"]
    )
    assert new_ca != old_ca
    served_after_rotation.verify_directly_issued_by(new_ca)
    for bundle in ca_bundles(cluster):
        assert bundle == [new_ca, old_ca]
        # No gap: pods still serving the old certificate and pods with the new one are both trusted.
        assert trusted(served_before_rotation, bundle, clock.now)
        assert trusted(served_after_rotation, bundle, clock.now)
    assert material.certificates_from_pem(secret_data(cluster, "fitguard-ca")["ca.crt"]) == [new_ca, old_ca]

    clock.now = material.not_after(old_ca) - timedelta(minutes=1)
    assert reconciler.reconcile().actions == []

    clock.now = material.not_after(old_ca) + timedelta(minutes=1)
    reconciler.reconcile()
    assert all(bundle == [new_ca] for bundle in ca_bundles(cluster))
    assert material.certificates_from_pem(secret_data(cluster, "fitguard-webhook-tls")["ca.crt"]) == [new_ca]
    assert trusted(served_after_rotation, ca_bundles(cluster)[0], clock.now)


def test_a_reset_ca_bundle_is_put_back_without_touching_the_secrets(cluster: Any) -> None:
    reconciler = make_reconciler(cluster, Clock(START))
    reconciler.reconcile()
    expected = ca_bundles(cluster)
    for configuration in webhook_configurations():  # what `kubectl apply` or a GitOps sync puts back
        cluster.apply(configuration)
    assert all(bundle == [] for bundle in ca_bundles(cluster))
    cluster.requests.clear()

    reconciler.reconcile()

    assert ca_bundles(cluster) == expected
    assert writes(cluster) == [
        "PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/fitguard",
        "PATCH /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/fitguard",
    ]


def test_an_unusable_ca_secret_is_replaced(cluster: Any) -> None:
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": "fitguard-ca", "namespace": NAMESPACE},
            "data": {"tls.crt": base64.b64encode(b"not a certificate").decode(), "tls.key": ""},
        }
    )
    result = make_reconciler(cluster, Clock(START)).reconcile()

    ca = material.certificate_from_pem(secret_data(cluster, "fitguard-ca")["tls.crt"])
    assert any("issued a new CA (unreadable" in action for action in result.actions)
    assert all(bundle == [ca] for bundle in ca_bundles(cluster))


def test_missing_webhook_configurations_are_reported_and_the_secrets_still_made(fake_kube: Any) -> None:
    result = make_reconciler(fake_kube, Clock(START)).reconcile()

    assert result.missing == [
        "MutatingWebhookConfiguration/fitguard",
        "ValidatingWebhookConfiguration/fitguard",
    ]
    assert secret_data(fake_kube, "fitguard-webhook-tls")["tls.crt"].startswith(
        b"-----BEGIN CERTIFICATE-----"
    )


def test_webhook_patch_leaves_webhooks_of_other_services_alone() -> None:
    configuration = copy.deepcopy(webhook_configurations()[1])
    foreign = copy.deepcopy(configuration["webhooks"][0])
    foreign["name"] = "other.example.com"
    foreign["clientConfig"]["service"]["name"] = "other"
    configuration["webhooks"].insert(0, foreign)

    operations = webhook_patch(configuration, b"PEM", "fitguard-webhook", NAMESPACE)

    assert operations == [
        {"op": "test", "path": "/webhooks/1/name", "value": "validate.fitguard.io"},
        {
            "op": "add",
            "path": "/webhooks/1/clientConfig/caBundle",
            "value": base64.b64encode(b"PEM").decode(),
        },
    ]
