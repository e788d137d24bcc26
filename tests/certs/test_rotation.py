"""certs/rotation.py's decisions in process: which stored CA and serving certificate are usable, when
each is kept, renewed or replaced (the boundaries to the second), the bundle a client must trust, the
reasons given, and the caBundle patch of a webhook configuration, each checked as a whole value.

tests/controller/test_certificates.py drives the same policy through the fake API server; this file pins the
policy's own answers so a mutation of one comparison or message is seen without a cluster."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from certs import material
from certs.rotation import (
    Authority,
    CertificateOptions,
    RotationDecision,
    Serving,
    plan_authority,
    plan_serving,
    read_authority,
    read_serving,
    serving_problem,
    webhook_patch,
)

START = datetime(2030, 1, 1, tzinfo=UTC)
SECOND = timedelta(seconds=1)
# A CA valid for 3 days from START starts 5 minutes earlier (clock skew allowance): its life is
# 259,500 s, two thirds of it 173,000 s, so it is renewed 172,700 s after START.
CA_DAYS = timedelta(days=3)
CA_RENEW = START + timedelta(seconds=172_700)
CA_END = START + CA_DAYS
# A serving certificate valid for 1 day: life 86,700 s, two thirds 57,800 s, renewed at START + 57,500 s.
LEAF_DAY = timedelta(days=1)
LEAF_RENEW = START + timedelta(seconds=57_500)
SETTINGS = CertificateOptions(namespace="ns1", service="hook", ca_validity=CA_DAYS, serving_validity=LEAF_DAY)
NAMES = ["hook", "hook.ns1", "hook.ns1.svc"]


def pem(cert: x509.Certificate) -> bytes:
    return material.certificate_to_pem(cert)


def key_pem(key: Any) -> bytes:
    return material.private_key_to_pem(key)


def public(key: Any) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def public_of(cert: x509.Certificate) -> bytes:
    return cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def ca(at: datetime = START, valid_for: timedelta = CA_DAYS) -> tuple[x509.Certificate, Any]:
    return material.make_ca(valid_for=valid_for, now=at)


def authority(at: datetime = START, valid_for: timedelta = CA_DAYS, *older: x509.Certificate) -> Authority:
    cert, key = ca(at, valid_for)
    return Authority(cert, key, (cert, *older))


def leaf(
    issuer: Authority, names: list[str], at: datetime = START, valid_for: timedelta = LEAF_DAY
) -> Serving:
    cert, key = material.make_serving_cert(issuer.cert, issuer.key, names, valid_for=valid_for, now=at)
    return Serving(cert, key)


def no_basic_constraints() -> tuple[x509.Certificate, Any]:
    """A self-signed certificate without the BasicConstraints extension (so not a CA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "plain")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(START)
        .not_valid_after(CA_END)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def test_read_authority_says_why_a_ca_secret_cannot_be_used() -> None:
    """Each unusable CA Secret gets its own whole reason and no authority."""
    cert, key = ca()
    _, other_key = ca()
    plain, plain_key = no_basic_constraints()
    serving = leaf(Authority(cert, key, (cert,)), NAMES)
    cases = [
        ({}, "tls.crt is missing"),
        ({"tls.crt": pem(cert)}, "tls.key is missing"),
        ({"tls.key": key_pem(key)}, "tls.crt is missing"),
        (
            {"tls.crt": b"not a certificate", "tls.key": key_pem(key)},
            "unreadable: Unable to load PEM file. See https://cryptography.io/en/latest/faq/#why-can-t-i-"
            "import-my-pem-file for more details. MalformedFraming",
        ),
        ({"tls.crt": pem(plain), "tls.key": key_pem(plain_key)}, "tls.crt is not a CA certificate"),
        ({"tls.crt": pem(serving.cert), "tls.key": key_pem(serving.key)}, "tls.crt is not a CA certificate"),
        ({"tls.crt": pem(cert), "tls.key": key_pem(other_key)}, "tls.key does not match tls.crt"),
    ]
    assert [read_authority(data) for data, _ in cases] == [(None, reason) for _, reason in cases]


def test_read_authority_puts_the_ca_first_in_its_bundle_once() -> None:
    """Without a bundle the CA trusts itself; with one, the CA comes first and no CA is repeated."""
    cert, key = ca()
    old, _ = ca(START - CA_DAYS)
    for data, bundle in [
        ({"tls.crt": pem(cert), "tls.key": key_pem(key)}, (cert,)),
        ({"tls.crt": pem(cert), "tls.key": key_pem(key), "ca.crt": b""}, (cert,)),
        (
            {"tls.crt": pem(cert), "tls.key": key_pem(key), "ca.crt": pem(old) + pem(cert) + pem(old)},
            (cert, old),
        ),
    ]:
        read, reason = read_authority(data)
        assert reason == ""
        assert read is not None
        assert (read.cert, read.bundle, public(read.key)) == (cert, bundle, public(key))


def test_a_missing_ca_is_created_with_the_reason_it_was_unusable() -> None:
    """No usable CA: a new CA valid from START for the configured life, trusted alone, the reason named."""
    for unusable, reason in [
        ("", "issued a new CA (none stored)"),
        ("tls.key is missing", "issued a new CA (tls.key is missing)"),
    ]:
        made, decision = plan_authority(None, unusable, SETTINGS, START)
        assert decision == RotationDecision(reason)
        assert decision.changed
        assert made.bundle == (made.cert,)
        assert public(made.key) == public_of(made.cert)
        assert (material.not_before(made.cert), material.not_after(made.cert)) == (
            START - timedelta(minutes=5),
            CA_END,
        )
        assert read_authority({"tls.crt": pem(made.cert), "tls.key": key_pem(made.key)})[1] == ""


def test_a_ca_is_kept_until_two_thirds_of_its_life_then_rotated_keeping_the_old_one_trusted() -> None:
    """One second before the renewal point the CA is kept as it is; at the point a new CA comes first,
    the old one and every unexpired earlier CA stay in the bundle, and an expired earlier CA goes."""
    expired_old, _ = ca(START - 2 * CA_DAYS, CA_DAYS)  # ends START - 3 days
    live_old, _ = ca(START - timedelta(days=1), CA_DAYS)  # ends START + 2 days
    ends_at_renew, _ = ca(CA_RENEW - CA_DAYS, CA_DAYS)  # ends exactly at CA_RENEW: expired then
    stored = authority(START, CA_DAYS, live_old)

    kept, decision = plan_authority(stored, "", SETTINGS, CA_RENEW - SECOND)
    assert (kept, decision) == (stored, RotationDecision(""))
    assert not decision.changed

    with_dead = Authority(stored.cert, stored.key, (stored.cert, live_old, expired_old, ends_at_renew))
    rotated, decision = plan_authority(with_dead, "", SETTINGS, CA_RENEW)
    assert decision == RotationDecision(
        "rotated the CA (two thirds of its life passed; "
        "the old one is trusted until 2030-01-04T00:00:00+00:00)"
    )
    assert rotated.cert not in (stored.cert, live_old)
    assert public(rotated.key) == public_of(rotated.cert)
    assert rotated.bundle == (rotated.cert, stored.cert, live_old)
    assert (material.not_before(rotated.cert), material.not_after(rotated.cert)) == (
        CA_RENEW - timedelta(minutes=5),
        CA_RENEW + CA_DAYS,
    )


def test_an_expired_ca_is_replaced_and_not_trusted_any_more() -> None:
    """At its expiry second the stored CA is replaced by a new one trusted alone; a second earlier it
    is rotated."""
    stored = authority()
    replaced, decision = plan_authority(stored, "", SETTINGS, CA_END)
    assert decision == RotationDecision("issued a new CA (the stored one has expired)")
    assert replaced.bundle == (replaced.cert,)
    assert replaced.cert != stored.cert
    assert public(replaced.key) == public_of(replaced.cert)
    assert material.not_after(replaced.cert) == CA_END + CA_DAYS

    rotated, decision = plan_authority(stored, "", SETTINGS, CA_END - SECOND)
    assert decision.reason.startswith("rotated the CA")
    assert rotated.bundle == (rotated.cert, stored.cert)


def test_expired_earlier_cas_are_dropped_from_the_bundle_of_a_kept_ca() -> None:
    """A CA that is kept loses the earlier CAs whose expiry has come (at the very second), keeps the
    others."""
    gone, _ = ca(START - 2 * CA_DAYS, CA_DAYS)  # ends START - 3 days
    at_now, _ = ca(START - CA_DAYS, CA_DAYS)  # ends exactly at START
    live, _ = ca(START - timedelta(days=1), CA_DAYS)
    stored = authority(START - timedelta(hours=1), CA_DAYS, gone, at_now, live)
    kept, decision = plan_authority(stored, "", SETTINGS, START)
    assert decision == RotationDecision("dropped expired CAs from the bundle")
    assert (kept.cert, kept.key, kept.bundle) == (stored.cert, stored.key, (stored.cert, live))


def test_bundle_pem_and_dns_names_are_whole() -> None:
    """The bundle's PEM is its certificates in order; the DNS names are the Service's three, then the
    extras."""
    old, _ = ca(START - CA_DAYS)
    stored = authority(START, CA_DAYS, old)
    assert stored.bundle_pem == pem(stored.cert) + pem(old)
    extra = CertificateOptions(namespace="ns1", service="hook", extra_dns_names=("a.example", "b.example"))
    assert extra.dns_names == [*NAMES, "a.example", "b.example"]
    assert CertificateOptions().dns_names == [
        "fitguard-webhook",
        "fitguard-webhook.fitguard-system",
        "fitguard-webhook.fitguard-system.svc",
    ]


def test_read_serving_takes_only_a_readable_matching_pair() -> None:
    """A serving Secret is usable only with both keys, readable, and a key that belongs to the certificate."""
    issuer = authority()
    good = leaf(issuer, NAMES)
    other = leaf(issuer, NAMES)
    assert read_serving({}) is None
    assert read_serving({"tls.crt": pem(good.cert)}) is None
    assert read_serving({"tls.key": key_pem(good.key)}) is None
    assert read_serving({"tls.crt": b"junk", "tls.key": key_pem(good.key)}) is None
    assert read_serving({"tls.crt": pem(good.cert), "tls.key": b"junk"}) is None
    assert read_serving({"tls.crt": pem(good.cert), "tls.key": key_pem(other.key)}) is None
    read = read_serving({"tls.crt": pem(good.cert), "tls.key": key_pem(good.key)})
    assert read is not None
    assert (read.cert, public(read.key)) == (good.cert, public(good.key))


def test_serving_problem_names_the_first_reason_to_reissue() -> None:
    """The problems in order: none stored, another CA's signature, two thirds of life (to the second),
    names missing (all of them, in the wanted order); none for a fine certificate with extra names."""
    issuer = authority()
    stranger = authority()
    fine = leaf(issuer, [*NAMES, "extra.example"])
    cases = [
        (None, NAMES, START, "none stored, or unreadable"),
        (leaf(stranger, NAMES), NAMES, START, "not signed by the current CA"),
        (fine, NAMES, LEAF_RENEW - SECOND, ""),
        (fine, NAMES, LEAF_RENEW, "two thirds of its life passed"),
        (leaf(issuer, ["hook.ns1"]), NAMES, START, "does not name hook, hook.ns1.svc"),
        (fine, [*NAMES, "a.example", "b.example"], START, "does not name a.example, b.example"),
        (fine, [], START, ""),
    ]
    assert [serving_problem(stored, issuer, names, now) for stored, names, now, _ in cases] == [
        problem for *_, problem in cases
    ]


def test_plan_serving_keeps_a_fine_certificate_and_reissues_any_other() -> None:
    """A fine certificate is kept as it is; otherwise a new one for the configured names, signed by the
    current CA, valid for the configured life, with the problem as the reason."""
    issuer = authority()
    fine = leaf(issuer, NAMES)
    assert plan_serving(fine, issuer, SETTINGS, START) == (fine, RotationDecision())

    for stored, problem in [(None, "none stored, or unreadable"), (fine, "two thirds of its life passed")]:
        at = START if stored is None else LEAF_RENEW
        made, decision = plan_serving(stored, issuer, SETTINGS, at)
        assert decision == RotationDecision(f"issued a serving certificate ({problem})")
        assert material.subject_alt_names(made.cert) == (NAMES, [])
        assert (material.not_before(made.cert), material.not_after(made.cert)) == (
            at - timedelta(minutes=5),
            at + LEAF_DAY,
        )
        assert serving_problem(made, issuer, NAMES, at) == ""
        assert public(made.key) == public_of(made.cert)


def test_a_new_serving_certificate_never_outlives_its_ca() -> None:
    """With less CA life left than the serving validity, the leaf ends exactly when the CA does, also
    when the clock has microseconds; with more left, it gets its full configured life."""
    issuer = authority()
    late = CA_END - timedelta(hours=5)
    made, _ = plan_serving(None, issuer, SETTINGS, late.replace(microsecond=250_000))
    assert material.not_after(made.cert) == CA_END
    made, _ = plan_serving(None, issuer, SETTINGS, CA_END - LEAF_DAY)
    assert material.not_after(made.cert) == CA_END
    made, _ = plan_serving(None, issuer, SETTINGS, CA_END - LEAF_DAY - SECOND)
    assert material.not_after(made.cert) == CA_END - SECOND


@pytest.mark.parametrize("webhooks_key", ["missing", "null"])
def test_webhook_patch_of_a_configuration_without_webhooks_is_empty(webhooks_key: str) -> None:
    """No webhooks (absent or null): nothing to patch."""
    configuration: dict[str, Any] = {} if webhooks_key == "missing" else {"webhooks": None}
    assert webhook_patch(configuration, b"PEM", "hook", "ns1") == []


def test_webhook_patch_sets_the_bundle_on_each_of_our_webhooks_that_lacks_it() -> None:
    """Only webhooks calling our Service in our namespace, and only those whose caBundle differs, get a
    test of their name and an add of the bundle, at their own index."""
    encoded = base64.b64encode(b"PEM").decode()
    ours = {"name": "hook", "namespace": "ns1"}
    configuration = {
        "webhooks": [
            {"name": "a", "clientConfig": {"service": ours}},
            {"name": "b", "clientConfig": {"service": ours, "caBundle": encoded}},
            {"name": "c", "clientConfig": {"service": {"name": "other", "namespace": "ns1"}}},
            {"name": "d", "clientConfig": {"service": {"name": "hook", "namespace": "ns2"}}},
            {"name": "e", "clientConfig": {"url": "https://example.com"}},
            {"name": "f"},
            {"name": "g", "clientConfig": {"service": None, "caBundle": None}},
            {"name": "h", "clientConfig": {"service": ours, "caBundle": "b2xk"}},
        ]
    }
    assert webhook_patch(configuration, b"PEM", "hook", "ns1") == [
        {"op": "test", "path": "/webhooks/0/name", "value": "a"},
        {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": encoded},
        {"op": "test", "path": "/webhooks/7/name", "value": "h"},
        {"op": "add", "path": "/webhooks/7/clientConfig/caBundle", "value": encoded},
    ]
