"""certs/: the CA and serving certificate chain, survive a real TLS handshake, and are written safely."""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from certs import files, material
from fitguard.cli import main
from tests.tlsfixtures import TlsFiles, client_ssl_context, make_tls_files, server_ssl_context

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def generate(*argv: str) -> int:
    return main(["certs", "generate", *argv], only="certs")


@contextmanager
def tls_server(tls: TlsFiles) -> Iterator[tuple[str, int]]:
    """A one-connection-at-a-time TLS server on 127.0.0.1 that completes handshakes and says hello."""
    context = server_ssl_context(tls)
    listener = socket.create_server(("127.0.0.1", 0))
    # Short accept timeouts let the thread notice `stop`: closing a socket does not wake accept().
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(10)
            # A client that rejects our certificate aborts the handshake: that is expected here.
            try:
                with context.wrap_socket(connection, server_side=True) as tls_connection:
                    tls_connection.sendall(b"hello")
            except (ssl.SSLError, OSError):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[:2]
    finally:
        stop.set()
        thread.join(timeout=10)
        listener.close()


def handshake(address: tuple[str, int], context: ssl.SSLContext, server_hostname: str) -> bytes:
    with (
        socket.create_connection(address, timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=server_hostname) as connection,
    ):
        return connection.recv(5)


def test_serving_cert_is_signed_by_the_ca_and_verifies_for_its_names() -> None:
    ca_cert, ca_key = material.make_ca(now=NOW)
    cert, _ = material.make_serving_cert(ca_cert, ca_key, ["localhost"], ["127.0.0.1"], now=NOW)

    cert.verify_directly_issued_by(ca_cert)
    verifier = (
        PolicyBuilder()
        .store(Store([ca_cert]))
        .time(NOW + timedelta(days=1))
        .build_server_verifier(x509.DNSName("localhost"))
    )
    chain = verifier.verify(cert, [])
    assert chain == [cert, ca_cert]


def test_serving_cert_does_not_verify_against_another_ca() -> None:
    ca_cert, ca_key = material.make_ca(now=NOW)
    other_ca, _ = material.make_ca(now=NOW)
    cert, _ = material.make_serving_cert(ca_cert, ca_key, ["localhost"], now=NOW)

    # Same subject name, different key: only the signature tells them apart.
    with pytest.raises(InvalidSignature):
        cert.verify_directly_issued_by(other_ca)
    verifier = (
        PolicyBuilder().store(Store([other_ca])).time(NOW).build_server_verifier(x509.DNSName("localhost"))
    )
    with pytest.raises(VerificationError):
        verifier.verify(cert, [])


def test_extensions_make_a_leaf_server_cert_and_a_leaf_only_ca() -> None:
    ca_cert, ca_key = material.make_ca(now=NOW)
    cert, _ = material.make_serving_cert(ca_cert, ca_key, ["svc"], now=NOW)

    ca_constraints = ca_cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert ca_constraints.critical and ca_constraints.value.ca and ca_constraints.value.path_length == 0
    assert ca_cert.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    leaf_constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert not leaf_constraints.ca
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and not usage.key_cert_sign
    assert list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH
    ]
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == ca_ski.digest


def test_keys_are_ecdsa_p256() -> None:
    ca_cert, ca_key = material.make_ca(now=NOW)
    cert, key = material.make_serving_cert(ca_cert, ca_key, ["svc"], now=NOW)
    for private_key, certificate in ((ca_key, ca_cert), (key, cert)):
        assert isinstance(private_key, ec.EllipticCurvePrivateKey)
        assert isinstance(private_key.curve, ec.SECP256R1)
        assert certificate.public_key() == private_key.public_key()


def test_real_handshake_verifies_the_ca_for_localhost_and_127_0_0_1(tls_files: TlsFiles) -> None:
    with tls_server(tls_files) as address:
        context = client_ssl_context(tls_files.ca_path)
        assert handshake(address, context, "localhost") == b"hello"
        assert handshake(address, context, "127.0.0.1") == b"hello"


def test_handshake_fails_for_a_client_trusting_another_ca(tls_files: TlsFiles, tmp_path: Path) -> None:
    other = make_tls_files(tmp_path)
    with tls_server(tls_files) as address, pytest.raises(ssl.SSLCertVerificationError):
        handshake(address, client_ssl_context(other.ca_path), "localhost")


def test_handshake_fails_for_a_name_the_cert_does_not_carry(tls_files: TlsFiles) -> None:
    with tls_server(tls_files) as address, pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        handshake(address, client_ssl_context(tls_files.ca_path), "other.example")


def test_generate_writes_service_names_then_extra_names(tmp_path: Path) -> None:
    assert (
        generate("--out", str(tmp_path), "--service", "s", "--namespace", "n", "--dns", "extra.example") == 0
    )

    cert = material.certificate_from_pem((tmp_path / "tls.crt").read_bytes())
    ca_cert = material.certificate_from_pem((tmp_path / "ca.crt").read_bytes())
    dns, ips = material.subject_alt_names(cert)
    assert dns == ["s", "s.n", "s.n.svc", "extra.example"]
    assert ips == []
    cert.verify_directly_issued_by(ca_cert)


def test_generate_adds_ip_addresses(tmp_path: Path) -> None:
    assert generate("--out", str(tmp_path), "--ip", "10.0.0.1", "--ip", "::1") == 0

    cert = material.certificate_from_pem((tmp_path / "tls.crt").read_bytes())
    assert material.subject_alt_names(cert)[1] == [
        ipaddress.ip_address("10.0.0.1"),
        ipaddress.ip_address("::1"),
    ]


def test_generate_serving_validity_follows_days(tmp_path: Path) -> None:
    assert generate("--out", str(tmp_path), "--days", "30") == 0

    cert = material.certificate_from_pem((tmp_path / "tls.crt").read_bytes())
    validity = material.not_after(cert) - material.not_before(cert)
    assert validity == timedelta(days=30) + material.CLOCK_SKEW_ALLOWANCE


@pytest.mark.parametrize("umask", [0o000, 0o077], ids=["loose-umask", "strict-umask"])
def test_generate_modes_are_keys_0600_and_certs_0644_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        assert generate("--out", str(tmp_path), "--ca-key") == 0
    finally:
        os.umask(previous)

    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in tmp_path.iterdir()}
    assert modes == {"ca.crt": 0o644, "tls.crt": 0o644, "tls.key": 0o600, "ca.key": 0o600}
    key = material.private_key_from_pem((tmp_path / "tls.key").read_bytes())
    assert isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1)


def test_generate_leaves_no_ca_key_unless_asked(tmp_path: Path) -> None:
    assert generate("--out", str(tmp_path)) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


def test_generate_help_says_the_ca_key_is_not_written(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        generate("--help")
    assert "The CA private key is NOT written unless --ca-key" in capsys.readouterr().out


def test_generate_prints_no_key_material(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate("--out", str(tmp_path), "--ca-key") == 0
    output = capsys.readouterr()
    assert "PRIVATE KEY" not in output.out + output.err
    assert str(tmp_path / "tls.key") in output.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ip", "300.1.1.1"], "argument --ip: invalid IP address: '300.1.1.1'"),
        (["--dns", "bad name"], "argument --dns: invalid DNS name: 'bad name'"),
        (["--days", "0"], "argument --days: must be at least 1 day"),
        (["--days", "soon"], "argument --days: not a whole number of days"),
    ],
)
def test_generate_rejects_bad_arguments_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        generate("--out", str(tmp_path), *argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--service", "Webhook_1"], "invalid Service name"),
        (["--namespace", "Team_A"], "invalid namespace"),
        (["--days", "400", "--ca-days", "365"], "--days (400) must not exceed --ca-days (365)"),
    ],
)
def test_generate_rejects_inconsistent_arguments_without_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert generate("--out", str(tmp_path), *argv) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_renew_at_is_two_thirds_into_the_validity() -> None:
    ca_cert, ca_key = material.make_ca(now=NOW)
    cert, _ = material.make_serving_cert(ca_cert, ca_key, ["svc"], valid_for=timedelta(days=90), now=NOW)

    start = NOW - material.CLOCK_SKEW_ALLOWANCE
    end = NOW + timedelta(days=90)
    assert material.not_before(cert) == start
    assert material.not_after(cert) == end
    assert material.renew_at(cert) == start + (end - start) * 2 / 3


def test_serving_cert_may_not_outlive_its_ca() -> None:
    ca_cert, ca_key = material.make_ca(valid_for=timedelta(days=30), now=NOW)
    with pytest.raises(ValueError, match="after its CA"):
        material.make_serving_cert(ca_cert, ca_key, ["svc"], valid_for=timedelta(days=31), now=NOW)


def test_material_rejects_a_naive_clock_and_no_names() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        material.make_ca(now=datetime(2026, 1, 1))
    ca_cert, ca_key = material.make_ca(now=NOW)
    with pytest.raises(ValueError, match="at least one DNS name or IP address"):
        material.make_serving_cert(ca_cert, ca_key, [], now=NOW)


def test_pem_round_trips_and_bundles_hold_several_cas() -> None:
    old_ca, old_key = material.make_ca(now=NOW)
    new_ca, _ = material.make_ca(now=NOW)
    bundle = material.certificate_to_pem(old_ca) + material.certificate_to_pem(new_ca)

    assert material.certificates_from_pem(bundle) == [old_ca, new_ca]
    assert material.certificate_from_pem(material.certificate_to_pem(old_ca)) == old_ca
    loaded = material.private_key_from_pem(material.private_key_to_pem(old_key))
    assert loaded.public_key() == old_key.public_key()


def test_write_atomically_replaces_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "tls.key"
    target.write_bytes(b"old")
    target.chmod(0o644)

    files.write_atomically(target, b"new", files.PRIVATE_KEY_MODE)

    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [path.name for path in tmp_path.iterdir()] == ["tls.key"]


def test_a_clock_with_microseconds_lets_the_leaf_live_exactly_as_long_as_its_ca() -> None:
    # X.509 keeps whole seconds: a leaf made at the same instant must not appear to outlive the CA.
    now = NOW.replace(microsecond=987654)
    ca_cert, ca_key = material.make_ca(valid_for=timedelta(days=30), now=now)
    cert, _ = material.make_serving_cert(ca_cert, ca_key, ["svc"], valid_for=timedelta(days=30), now=now)
    assert material.not_after(cert) == material.not_after(ca_cert) == NOW + timedelta(days=30)
