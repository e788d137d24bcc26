"""The webhook's TLS: the protocol and cipher policy, the optional client certificate, nothing on the
port beyond the contract, refusing to start on a bad pair, and certificate renewal under load with no
failed request.

The server tests run `fitguard webhook` for real (the installed console script: gunicorn, gthread
workers) on sockets bound here and inherited through fd:// (the TLS admission port and the plain-HTTP
status port); the TLS files sit in a directory laid out the way the
kubelet lays out a Secret volume, and are renewed the way it renews them.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs import files, material
from tests.waiting import eventually
from webhook.tls import CertificateError, ReloadingCertificate, policy_context

ROOT = Path(__file__).resolve().parents[2]
FITGUARD = str(Path(sys.executable).with_name("fitguard"))  # the installed console script
STATE = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}]
RELOAD_INTERVAL = "0.2"


# --- TLS material -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Issued:
    ca_cert: x509.Certificate
    ca_key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def issue(valid_for: timedelta = timedelta(days=1), now: datetime | None = None) -> Issued:
    """A new CA and a serving certificate for localhost and 127.0.0.1 it signs."""
    now = now or datetime.now(UTC)
    ca_cert, ca_key = material.make_ca(valid_for=max(valid_for, timedelta(days=1)), now=now)
    cert, key = material.make_serving_cert(
        ca_cert, ca_key, ["localhost"], ["127.0.0.1"], valid_for=valid_for, now=now
    )
    return Issued(ca_cert, ca_key, cert, key)


def write_client_cert(directory: Path, ca: Issued) -> tuple[Path, Path]:
    """A client certificate (clientAuth) signed by `ca`, as the apiserver would present."""
    key = material.generate_key()
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca.ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    files.write_certificate(directory / "client.crt", cert)
    files.write_private_key(directory / "client.key", key)
    return directory / "client.crt", directory / "client.key"


class SecretVolume:
    """A directory as the kubelet keeps a mounted Secret: tls.crt -> ..data/tls.crt, ..data -> a
    versioned directory; an update writes a new version and renames a new ..data link over the old
    one, so readers see either all old or all new files, then the old version is removed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = 0
        root.mkdir(parents=True)

    @property
    def cert(self) -> Path:
        return self.root / files.CERT_FILE

    @property
    def key(self) -> Path:
        return self.root / files.KEY_FILE

    def publish(self, issued: Issued) -> None:
        self.versions += 1
        version = self.root / f"..v{self.versions}"
        files.write_tls_files(version, issued.ca_cert, issued.cert, issued.key)
        link = self.root / "..data_tmp"
        link.symlink_to(version.name)
        previous = (self.root / "..data").resolve() if (self.root / "..data").exists() else None
        os.replace(link, self.root / "..data")
        for name in (files.CERT_FILE, files.KEY_FILE, files.CA_CERT_FILE):
            if not (self.root / name).is_symlink():
                (self.root / name).symlink_to(f"..data/{name}")
        if previous is not None:
            for child in previous.iterdir():
                child.unlink()
            previous.rmdir()


def pem(cert: x509.Certificate) -> bytes:
    return material.certificate_to_pem(cert)


# --- clients ------------------------------------------------------------------------------------------


def client_context(
    ca: Path,
    minimum: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
    maximum: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED,
    ciphers: str | None = None,
) -> ssl.SSLContext:
    """A verifying client; `ciphers` at security level 0 so it can offer what the server must refuse."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=str(ca))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.0 and 1.1 are deprecated in ssl
        context.minimum_version = minimum
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(f"{ciphers}:@SECLEVEL=0")
    return context


def handshake(port: int, context: ssl.SSLContext) -> tuple[str | None, str | None, object]:
    """(protocol version, cipher name, compression) of a completed handshake; raises on refusal."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        cipher = tls.cipher()
        return tls.version(), cipher[0] if cipher else None, tls.compression()


def refused(port: int, context: ssl.SSLContext) -> bool:
    try:
        handshake(port, context)
    except OSError:  # ssl.SSLError included
        return True
    return False


def request(
    port: int, context: ssl.SSLContext, method: str, path: str, body: bytes | None = None
) -> tuple[int, bytes, dict[str, str]]:
    conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=5)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read(), dict(answer.getheaders())
    finally:
        conn.close()


def review_body(uid: str) -> bytes:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}  # fmt: skip
    req = {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
           "namespace": "shop", "object": pod}  # fmt: skip
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
    ).encode()


def peer_serial(sock: ssl.SSLSocket) -> int:
    der = sock.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


# --- the server ---------------------------------------------------------------------------------------


@dataclass
class Webhook:
    port: int
    process: subprocess.Popen[bytes]
    status_port: int = 0  # plain HTTP: /healthz, /readyz, /metrics, /snapshotz


def start_webhook(work: Path, cert: Path, key: Path, *extra: str) -> Webhook:
    state = work / "state.yaml"
    state.write_text(yaml.safe_dump_all(STATE))
    listener, status = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    fd, status_fd = listener.fileno(), status.fileno()
    command = [FITGUARD, "webhook", "--bind", f"fd://{fd}", "--metrics-bind", f"fd://{status_fd}",
               "--state", str(state), "--tls-cert", str(cert), "--tls-key", str(key),
               "--tls-reload-interval", RELOAD_INTERVAL, "--workers", "2", "--threads", "4",
               "--log-level", "error", *extra]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, pass_fds=(fd, status_fd))
    webhook = Webhook(listener.getsockname()[1], process, status.getsockname()[1])
    listener.close()  # only the server holds them now
    status.close()
    return webhook


def stop_webhook(webhook: Webhook) -> None:
    webhook.process.send_signal(signal.SIGTERM)
    try:
        webhook.process.wait(timeout=25)
    except subprocess.TimeoutExpired:
        webhook.process.kill()
        webhook.process.wait()


def status_get(webhook: Webhook, path: str) -> tuple[int, bytes]:
    """GET `path` on the plain-HTTP status port, as the kubelet probes it: (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", webhook.status_port, timeout=10)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def wait_for_readyz(webhook: Webhook, status: int, timeout: float = 20) -> bytes:
    """Polls /readyz on the status port until it answers `status`; its body."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if webhook.process.poll() is not None:
            raise RuntimeError(f"webhook exited with {webhook.process.returncode}")
        try:
            answer, body = status_get(webhook, "/readyz")
            if answer == status:
                return body
            last = (answer, body)
        except OSError as err:
            last = err
        time.sleep(0.05)
    raise TimeoutError(f"/readyz never answered {status}; last: {last!r}")


@dataclass
class Served:
    webhook: Webhook
    volume: SecretVolume

    @property
    def ca(self) -> Path:
        return self.volume.root / files.CA_CERT_FILE


@pytest.fixture(scope="module")
def policy_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A webhook with the default policy (no client certificate asked for)."""
    work = tmp_path_factory.mktemp("tls-policy")
    volume = SecretVolume(work / "secret")
    volume.publish(issue())
    webhook = start_webhook(work, volume.cert, volume.key)
    try:
        served = Served(webhook, volume)
        wait_for_readyz(webhook, 200)
        yield served
    finally:
        stop_webhook(webhook)


class PermissiveServer:
    """A TLS server that accepts anything the client offers: the control showing a client can really
    speak an old protocol or a weak cipher, so that the webhook refusing it means something."""

    def __init__(self, volume: SecretVolume) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        self.context.set_ciphers("ALL:@SECLEVEL=0")
        self.context.load_cert_chain(str(volume.cert), str(volume.key))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                raw, _ = self.listener.accept()
            except TimeoutError:
                continue
            raw.settimeout(5)
            try:
                with self.context.wrap_socket(raw, server_side=True):
                    pass
            except OSError:
                raw.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()
        self.listener.close()


@pytest.fixture(scope="module")
def permissive(policy_server: Served) -> Iterator[PermissiveServer]:
    """The control server, presenting the same certificate as the webhook under test."""
    server = PermissiveServer(policy_server.volume)
    try:
        yield server
    finally:
        server.close()


# --- policy, unit level -------------------------------------------------------------------------------


def test_policy_context_allows_tls12_aead_ecdhe_only_without_compression_or_renegotiation() -> None:
    """The context every worker serves with: TLS 1.2 minimum, no compression, no renegotiation, no
    client certificate unless asked, and every TLS 1.2 suite is ECDHE with AES-GCM or ChaCha20."""
    context = policy_context()
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.options & ssl.OP_NO_COMPRESSION
    assert context.options & ssl.OP_NO_RENEGOTIATION
    assert context.verify_mode == ssl.CERT_NONE
    tls12 = [suite for suite in context.get_ciphers() if not suite["name"].startswith("TLS_")]
    assert tls12
    for suite in tls12:
        assert suite["kea"] == "kx-ecdhe", suite["name"]
        assert suite["symmetric"].endswith("-gcm") or suite["symmetric"] == "chacha20-poly1305", suite["name"]


# --- reloading, unit level ----------------------------------------------------------------------------


def write_pair(directory: Path, issued: Issued, *, cert: bool = True, key: bool = True) -> None:
    """Writes tls.crt and/or tls.key in place, as a non-atomic writer would, half a pair at a time."""
    if key:
        files.write_private_key(directory / files.KEY_FILE, issued.key)
    if cert:
        files.write_certificate(directory / files.CERT_FILE, issued.cert)


def test_a_half_written_pair_is_ignored_logged_once_and_taken_when_complete(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A new certificate next to the old key is refused, the context in use stays the same object
    (never half-loaded), the failure is logged once over several polls, and the pair is taken as
    soon as the key follows."""
    old, new = issue(), issue()
    write_pair(tmp_path, old)
    certificate = ReloadingCertificate(tmp_path / files.CERT_FILE, tmp_path / files.KEY_FILE)
    assert certificate.reload() and certificate.ready()
    context = certificate.context()
    write_pair(tmp_path, new, key=False)
    with caplog.at_level(logging.WARNING, logger="webhook.tls"):
        assert not certificate.reload()
        assert not certificate.reload()
    assert certificate.context() is context and certificate.current is not None
    assert certificate.current.serial == old.cert.serial_number
    warnings_logged = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings_logged) == 1 and "KEY_VALUES_MISMATCH" in warnings_logged[0].getMessage()
    assert f"serial {old.cert.serial_number:x}" in warnings_logged[0].getMessage()
    write_pair(tmp_path, new, cert=False)
    assert certificate.reload()
    assert certificate.current.serial == new.cert.serial_number and certificate.context() is not context
    assert not certificate.reload(), "unchanged files are not loaded again"


def test_a_secret_volume_update_is_followed_through_the_data_symlink(tmp_path: Path) -> None:
    """The kubelet's atomic ..data swap is seen through the symlinks the flags name."""
    volume = SecretVolume(tmp_path / "secret")
    old, new = issue(), issue()
    volume.publish(old)
    certificate = ReloadingCertificate(volume.cert, volume.key)
    assert certificate.reload()
    volume.publish(new)
    assert certificate.reload()
    assert certificate.current is not None and certificate.current.serial == new.cert.serial_number


def test_readiness_follows_the_validity_of_the_loaded_certificate(tmp_path: Path) -> None:
    """Not ready before a certificate is loaded, ready while it is valid, not ready once it expired;
    an expired renewal does not replace a valid certificate, a valid one replaces an expired one."""
    now = datetime.now(UTC)
    clock = [now]
    valid = issue(valid_for=timedelta(hours=1), now=now)
    write_pair(tmp_path, valid)
    certificate = ReloadingCertificate(
        tmp_path / files.CERT_FILE, tmp_path / files.KEY_FILE, clock=lambda: clock[0]
    )
    assert not certificate.ready()
    with pytest.raises(CertificateError, match="no valid certificate loaded yet"):
        certificate.context()
    assert certificate.reload() and certificate.ready()
    write_pair(tmp_path, issue(valid_for=timedelta(hours=1), now=now - timedelta(hours=2)))
    assert not certificate.reload(), "an expired renewal must not replace a valid certificate"
    clock[0] = now + timedelta(hours=1, seconds=1)
    assert not certificate.ready(), "the loaded certificate expired"
    renewed = issue(valid_for=timedelta(hours=1), now=clock[0])
    write_pair(tmp_path, renewed)
    assert certificate.reload() and certificate.ready()
    assert certificate.current is not None and certificate.current.serial == renewed.cert.serial_number


def test_the_expiry_metric_follows_the_certificate_in_use(tmp_path: Path) -> None:
    """fitguard_certificate_expiry_timestamp_seconds is the loaded certificate's notAfter; a
    renewal moves it, a refused (expired) renewal leaves it at the certificate still served."""
    from prometheus_client import REGISTRY

    def expiry() -> float | None:
        return REGISTRY.get_sample_value("fitguard_certificate_expiry_timestamp_seconds")

    now = datetime.now(UTC)
    first = issue(valid_for=timedelta(hours=1), now=now)
    write_pair(tmp_path, first)
    certificate = ReloadingCertificate(tmp_path / files.CERT_FILE, tmp_path / files.KEY_FILE)
    assert certificate.reload()
    assert expiry() == first.cert.not_valid_after_utc.timestamp()
    write_pair(tmp_path, issue(valid_for=timedelta(hours=1), now=now - timedelta(hours=2)))
    assert not certificate.reload()
    assert expiry() == first.cert.not_valid_after_utc.timestamp()
    renewed = issue(valid_for=timedelta(days=3), now=now)
    write_pair(tmp_path, renewed)
    assert certificate.reload()
    assert expiry() == renewed.cert.not_valid_after_utc.timestamp()


# --- policy, over the wire ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1], ids=["tls1.0", "tls1.1"])
def test_tls_older_than_1_2_is_refused(
    policy_server: Served, permissive: PermissiveServer, version: ssl.TLSVersion
) -> None:
    """A client limited to TLS 1.0 or 1.1 completes a handshake with a permissive server (so it can
    speak it) and is refused by the webhook."""
    context = client_context(policy_server.ca, minimum=version, maximum=version, ciphers="ALL")
    if refused(permissive.port, context):
        pytest.skip(f"this OpenSSL cannot speak {version.name} at all")
    assert refused(policy_server.webhook.port, context)


@pytest.mark.slow
def test_tls12_accepts_exactly_the_ecdhe_aead_ciphers(
    policy_server: Served, permissive: PermissiveServer
) -> None:
    """Each TLS 1.2 cipher the client can negotiate with this certificate is offered alone: the
    webhook accepts it if and only if it is ECDHE with AES-GCM or ChaCha20 (CBC, SHA-1 MACs, CCM,
    ARIA and Camellia refused), without compression."""
    offered = client_context(policy_server.ca, maximum=ssl.TLSVersion.TLSv1_2, ciphers="ALL")
    suites = [suite for suite in offered.get_ciphers() if not suite["name"].startswith("TLS_")]
    strong, weak = set(), set()
    for suite in suites:
        context = client_context(policy_server.ca, maximum=ssl.TLSVersion.TLSv1_2, ciphers=suite["name"])
        if refused(permissive.port, context):
            continue  # not usable with an ECDSA certificate, whatever the server allows
        aead = suite["symmetric"].endswith("-gcm") and suite["symmetric"].startswith("aes")
        aead = aead or suite["symmetric"] == "chacha20-poly1305"
        (strong if suite["kea"] == "kx-ecdhe" and aead else weak).add(suite["name"])
        if refused(policy_server.webhook.port, context):
            assert suite["name"] in weak, f"{suite['name']} should be accepted"
        else:
            assert suite["name"] in strong, f"{suite['name']} should be refused"
            assert handshake(policy_server.webhook.port, context) == ("TLSv1.2", suite["name"], None)
    assert "ECDHE-ECDSA-AES128-GCM-SHA256" in strong and "ECDHE-ECDSA-CHACHA20-POLY1305" in strong
    assert {"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384"} <= weak, "the weak probes never ran"


@pytest.mark.slow
def test_tls13_and_tls12_serve_requests(policy_server: Served) -> None:
    """Both TLS 1.3 and TLS 1.2 clients complete handshakes and get answers."""
    for version in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
        context = client_context(policy_server.ca, minimum=version, maximum=version)
        assert handshake(policy_server.webhook.port, context)[0] == version.name.replace("v1_", "v1.")
        status, _, _ = request(policy_server.webhook.port, context, "POST", "/validate", review_body("v"))
        assert status == 200


@pytest.mark.slow
def test_only_the_contract_is_served_on_the_port(policy_server: Served) -> None:
    """The admission port answers /mutate and /validate only: the status paths are 404 there (they
    live on the status port), any other path is 404 and any other method 405 (OPTIONS included, with
    Allow), each with a small JSON body, and Flask's static route does not exist."""
    port, context = policy_server.webhook.port, client_context(policy_server.ca)
    for method, path in [("POST", "/mutate"), ("POST", "/validate")]:
        assert request(port, context, method, path, review_body("c"))[0] == 200
    outside = [("GET", "/", 404), ("GET", "/static/app.py", 404), ("GET", "/debug/pprof", 404),
               ("POST", "/mutate/x", 404), ("GET", "/mutate", 405), ("PUT", "/validate", 405),
               ("GET", "/healthz", 404), ("GET", "/readyz", 404), ("GET", "/metrics", 404),
               ("GET", "/snapshotz", 404), ("OPTIONS", "/mutate", 405),
               ("TRACE", "/validate", 405)]  # fmt: skip
    for method, path, expected in outside:
        status, body, headers = request(port, context, method, path)
        assert status == expected, (method, path)
        assert headers["Content-Type"] == "application/json" and len(body) < 200
        assert set(json.loads(body)) == {"message"}
        if expected == 405:
            assert headers["Allow"], (method, path)


@pytest.mark.slow
def test_client_certificate_is_required_when_a_client_ca_is_given(tmp_path: Path) -> None:
    """With --client-ca, a client without a certificate and one with a certificate of another CA
    get no answer, one whose certificate the client CA signed does; over TLS 1.2 and 1.3. The
    status port (plain HTTP) still answers probes and scrapes without any certificate."""
    volume = SecretVolume(tmp_path / "secret")
    volume.publish(issue())
    apiserver_ca, stranger_ca = issue(), issue()
    client_ca = tmp_path / "client-ca.crt"
    client_ca.write_bytes(pem(apiserver_ca.ca_cert))
    good = write_client_cert(tmp_path / "good", apiserver_ca)
    stranger = write_client_cert(tmp_path / "stranger", stranger_ca)
    webhook = start_webhook(tmp_path, volume.cert, volume.key, "--client-ca", str(client_ca))
    ca = volume.root / files.CA_CERT_FILE
    try:
        with_cert = client_context(ca)
        with_cert.load_cert_chain(*map(str, good))
        wait_for_readyz(webhook, 200)
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            anonymous = client_context(ca, minimum=version, maximum=version)
            other = client_context(ca, minimum=version, maximum=version)
            other.load_cert_chain(*map(str, stranger))
            signed = client_context(ca, minimum=version, maximum=version)
            signed.load_cert_chain(*map(str, good))
            for context in (anonymous, other):
                with pytest.raises(OSError):  # TLS 1.3 fails on the first read, TLS 1.2 in the handshake
                    request(webhook.port, context, "POST", "/validate", review_body("a"))
            assert request(webhook.port, signed, "POST", "/validate", review_body("s"))[0] == 200
        # probes and scrapes carry no client certificate: the plain status port answers them
        for path in ("/healthz", "/readyz", "/metrics"):
            assert status_get(webhook, path)[0] == 200, path
        assert status_get(webhook, "/snapshotz")[0] == 404  # served only with --snapshotz
        # two workers: the one not serving the scrape writes its counts within a second (webhook/tally.py)
        eventually(
            lambda: b"fitguard_admission_requests_total" in status_get(webhook, "/metrics")[1],
            "the signed reviews counted in the plain port's /metrics",
        )
    finally:
        stop_webhook(webhook)


# --- start and readiness ------------------------------------------------------------------------------


@pytest.mark.slow
def test_refuses_to_start_on_a_pair_that_does_not_match_or_a_missing_file(tmp_path: Path) -> None:
    """A key that is not the certificate's, a missing key, or an unreadable client CA stop the
    start with exit status 2 (a bad input, webhook/server.py StartError) and a message naming the
    files."""
    one, other = SecretVolume(tmp_path / "one"), SecretVolume(tmp_path / "other")
    one.publish(issue())
    other.publish(issue())
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = [
        (one.cert, other.key, [], "KEY_VALUES_MISMATCH"),
        (one.cert, tmp_path / "absent.key", [], "absent.key"),
        (one.cert, one.key, ["--client-ca", str(garbage)], "garbage.pem"),
    ]
    for cert, key, extra, detail in cases:
        command = [FITGUARD, "webhook", "--bind", "127.0.0.1:0", "--tls-cert", str(cert),
                   "--tls-key", str(key), "--state", str(tmp_path / "none.yaml"), *extra]  # fmt: skip
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=20, check=False)
        assert done.returncode == 2, done.stderr
        assert "fitguard webhook: cannot load certificate" in done.stderr and detail in done.stderr
        assert str(cert) in done.stderr


@pytest.mark.slow
def test_readyz_is_503_with_an_expired_certificate_and_200_once_it_is_renewed(tmp_path: Path) -> None:
    """Started on an expired (but matching) pair the webhook serves, says it waits for a certificate,
    and becomes ready once the renewal lands in the volume, without a restart."""
    volume = SecretVolume(tmp_path / "secret")
    volume.publish(issue(valid_for=timedelta(hours=1), now=datetime.now(UTC) - timedelta(hours=2)))
    webhook = start_webhook(tmp_path, volume.cert, volume.key)
    try:
        body = wait_for_readyz(webhook, 503)
        assert b"certificate" in body
        volume.publish(issue())
        wait_for_readyz(webhook, 200)
        assert webhook.process.poll() is None
    finally:
        stop_webhook(webhook)


# --- rotation under load ------------------------------------------------------------------------------


@dataclass
class Load:
    """Two clients posting AdmissionReviews until stopped: one opens a fresh connection per review
    (recording the serial each presents), one keeps a single connection alive."""

    port: int
    context: ssl.SSLContext
    stopping: threading.Event = field(default_factory=threading.Event)
    fresh_serials: list[int] = field(default_factory=list)
    kept_alive: int = 0
    kept_alive_connections: int = 0
    failures: list[str] = field(default_factory=list)

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._fresh), threading.Thread(target=self._keepalive)]
        for thread in threads:
            thread.start()
        return threads

    def _post(self, conn: http.client.HTTPSConnection, uid: str) -> bool:
        try:
            conn.request(
                "POST", "/validate", body=review_body(uid), headers={"Content-Type": "application/json"}
            )
            answer = conn.getresponse()
            body = answer.read()
            if answer.status != 200 or json.loads(body)["response"]["uid"] != uid:
                self.failures.append(f"{uid}: {answer.status} {body[:100]!r}")
                return False
        except Exception as err:  # every kind of failure is what this test counts
            self.failures.append(f"{uid}: {err!r}")
            return False
        return True

    def _fresh(self) -> None:
        number = 0
        while not self.stopping.is_set():
            number += 1
            conn = http.client.HTTPSConnection("localhost", self.port, context=self.context, timeout=10)
            if self._post(conn, f"fresh-{number}") and isinstance(conn.sock, ssl.SSLSocket):
                self.fresh_serials.append(peer_serial(conn.sock))
            conn.close()

    def _keepalive(self) -> None:
        conn = http.client.HTTPSConnection("localhost", self.port, context=self.context, timeout=10)
        sockets: list[object] = []  # the socket objects themselves: ids may be reused
        while not self.stopping.is_set():
            if self._post(conn, f"kept-{self.kept_alive}"):
                self.kept_alive += 1
                if not any(sock is conn.sock for sock in sockets):
                    sockets.append(conn.sock)
        self.kept_alive_connections = len(sockets)
        conn.close()


@pytest.mark.slow
def test_renewal_under_steady_requests_fails_none_and_new_connections_get_the_new_certificate(
    tmp_path: Path,
) -> None:
    """While two clients post reviews without pause (fresh connections, and one kept-alive
    connection), the Secret volume is renewed with a certificate of a new CA. A client trusting the
    merged bundle of both CAs sees no failed review; once the reload interval passed, every new
    connection presents the new certificate, and the kept-alive one went on uninterrupted."""
    volume = SecretVolume(tmp_path / "secret")
    old, new = issue(), issue()
    volume.publish(old)
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(pem(old.ca_cert) + pem(new.ca_cert))
    webhook = start_webhook(tmp_path, volume.cert, volume.key)
    load = Load(webhook.port, client_context(bundle))
    threads: list[threading.Thread] = []
    try:
        wait_for_readyz(webhook, 200)
        threads = load.start()
        eventually(lambda: len(load.fresh_serials) >= 20 and load.kept_alive >= 20, "no steady load", 20)
        assert set(load.fresh_serials) == {old.cert.serial_number}
        volume.publish(new)
        kept_alive_at_renewal = load.kept_alive

        def new_certificate_everywhere() -> bool:
            tail = load.fresh_serials[-20:]
            return len(tail) == 20 and all(serial == new.cert.serial_number for serial in tail)

        eventually(new_certificate_everywhere, "new connections still get the old certificate", 15)
        eventually(lambda: load.kept_alive >= kept_alive_at_renewal + 20, "kept-alive client stalled", 10)
    finally:
        load.stopping.set()
        for thread in threads:
            thread.join()
        stop_webhook(webhook)
    assert load.failures == []
    assert load.kept_alive_connections == 1, "the kept-alive connection was dropped"
    assert set(load.fresh_serials) == {old.cert.serial_number, new.cert.serial_number}
