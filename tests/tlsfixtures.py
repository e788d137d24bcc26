"""TLS material for tests, made with certs.material exactly as `fitguard certs generate` makes it.

Use the `tls_files` fixture for a serving certificate valid for localhost and 127.0.0.1, or
`make_tls_files` for your own names, validity or clock (rotation tests). Clients verify the CA the
way the apiserver does through `client_ssl_context`.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from certs import files, material


@dataclass(frozen=True)
class TlsFiles:
    ca_path: Path
    cert_path: Path
    key_path: Path
    ca_pem: str  # str, because ssl's cadata= reads bytes as DER and only str as PEM


def make_tls_files(
    directory: Path,
    dns: Sequence[str] = ("localhost",),
    ips: Sequence[str] = ("127.0.0.1",),
    valid_for: timedelta = timedelta(days=1),
    now: datetime | None = None,
) -> TlsFiles:
    """A new CA and a serving certificate for `dns` and `ips`, written as ca.crt, tls.crt, tls.key."""
    now = now or datetime.now(UTC)
    ca_cert, ca_key = material.make_ca(valid_for=max(valid_for, timedelta(days=1)), now=now)
    cert, key = material.make_serving_cert(ca_cert, ca_key, dns, ips, valid_for=valid_for, now=now)
    written = files.write_tls_files(Path(directory), ca_cert, cert, key)
    return TlsFiles(
        ca_path=written.ca_cert,
        cert_path=written.cert,
        key_path=written.key,
        ca_pem=material.certificate_to_pem(ca_cert).decode("ascii"),
    )


def client_ssl_context(ca_path: Path) -> ssl.SSLContext:
    """A client context that trusts only `ca_path` and checks the host name, as the apiserver does."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca_path))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def server_ssl_context(tls: TlsFiles) -> ssl.SSLContext:
    """A server context presenting the serving certificate of `tls`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certfile=str(tls.cert_path), keyfile=str(tls.key_path))
    return context


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """One CA and serving certificate (localhost, 127.0.0.1) shared by the whole session."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))
