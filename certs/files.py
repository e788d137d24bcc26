"""Write TLS material to disk atomically, private keys readable by their owner only.

Readers (gunicorn reloading its certificate, a kubelet-synced Secret volume) must never see a
half-written file, so every file is written to a temporary name in the same directory and renamed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

from certs.material import certificate_to_pem, private_key_to_pem

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"

PRIVATE_KEY_MODE = 0o600
CERTIFICATE_MODE = 0o644


@dataclass(frozen=True)
class WrittenFiles:
    ca_cert: Path
    cert: Path
    key: Path
    ca_key: Path | None = None


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` with `data`; the file has `mode` from its creation, never wider."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: never write through a file or symlink someone else planted under the temporary name.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        # The umask may have narrowed `mode`; set it exactly before any byte is written.
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    _fsync_directory(path.parent)


def write_private_key(path: Path, key: CertificateIssuerPrivateKeyTypes) -> None:
    write_atomically(path, private_key_to_pem(key), PRIVATE_KEY_MODE)


def write_certificate(path: Path, cert: x509.Certificate) -> None:
    write_atomically(path, certificate_to_pem(cert), CERTIFICATE_MODE)


def write_tls_files(
    directory: Path,
    ca_cert: x509.Certificate,
    cert: x509.Certificate,
    key: CertificateIssuerPrivateKeyTypes,
    ca_key: CertificateIssuerPrivateKeyTypes | None = None,
) -> WrittenFiles:
    """Write ca.crt, tls.crt, tls.key (and ca.key when given) into `directory`, creating it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = WrittenFiles(
        ca_cert=directory / CA_CERT_FILE,
        cert=directory / CERT_FILE,
        key=directory / KEY_FILE,
        ca_key=directory / CA_KEY_FILE if ca_key is not None else None,
    )
    # Key before certificate: a reader that sees the new certificate finds its key already there.
    write_private_key(written.key, key)
    write_certificate(written.cert, cert)
    write_certificate(written.ca_cert, ca_cert)
    if ca_key is not None and written.ca_key is not None:
        write_private_key(written.ca_key, ca_key)
    return written


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; without it a crash can bring back the old file.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
