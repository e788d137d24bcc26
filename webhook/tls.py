"""The webhook's TLS: one policy for every serving context, and a serving certificate that follows its
files without a restart.

Reloading builds a NEW context and swaps it in rather than calling `load_cert_chain` on the live one:
OpenSSL installs the certificate before it checks the key, so a failed or half-done load on a live
context leaves it presenting a certificate without its key and every new handshake fails. gunicorn
asks its `ssl_context` hook for a context on every accepted connection, so a swapped-in context
serves the next handshake, and connections already open keep the context they started with.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_RELOAD_INTERVAL_SECONDS = 10.0
# TLS 1.2: forward-secret key exchange and AEAD ciphers only (no CBC, RC4, 3DES, static RSA, NULL).
# TLS 1.3 suites are OpenSSL's defaults, all AEAD; set_ciphers does not touch them.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL"


class CertificateError(Exception):
    """The files do not hold a usable certificate and key (missing, unreadable, unparsable,
    mismatched), said with the file names."""


def policy_context(client_ca: Path | None = None) -> ssl.SSLContext:
    """A server context with no certificate yet: TLS 1.2 or newer, strong ciphers, no compression or
    renegotiation; with `client_ca`, a client certificate signed by it is required."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION | ssl.OP_CIPHER_SERVER_PREFERENCE
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=str(client_ca))
    return context


@dataclass(frozen=True)
class FileState:
    """What identifies one version of a file. The resolved path is part of it because Kubernetes
    updates a mounted Secret by pointing the `..data` symlink at a new directory."""

    path: Path
    inode: int
    size: int
    mtime_ns: int


def file_state(path: Path) -> FileState:
    resolved = Path(os.path.realpath(path))
    stat = resolved.stat()
    return FileState(resolved, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class LoadedCertificate:
    context: ssl.SSLContext
    serial: int
    not_before: datetime
    not_after: datetime
    files: tuple[FileState, ...]  # cert, key and client CA as they were when loaded

    def valid_at(self, now: datetime) -> bool:
        return self.not_before <= now <= self.not_after


def _states(paths: tuple[Path, ...]) -> tuple[FileState, ...]:
    return tuple(file_state(path) for path in paths)


def load_certificate(cert: Path, key: Path, client_ca: Path | None = None) -> LoadedCertificate:
    """A fresh policy context holding the pair, or CertificateError. Files that change while they
    are read fail too: what was loaded might then be half of each version."""
    paths = (cert, key) if client_ca is None else (cert, key, client_ca)
    from cryptography import x509  # here, not at the top: `fitguard --help` imports this module

    where = f"certificate {cert} with key {key}" + (f" and client CA {client_ca}" if client_ca else "")
    try:
        before = _states(paths)
        leaf = x509.load_pem_x509_certificates(before[0].path.read_bytes())[0]
        context = policy_context(before[2].path if client_ca is not None else None)
        context.load_cert_chain(certfile=str(before[0].path), keyfile=str(before[1].path))
        after = _states(paths)
    except (OSError, ValueError) as err:  # ssl.SSLError is an OSError
        raise CertificateError(f"cannot load {where}: {err}") from None
    if after != before:
        raise CertificateError(f"cannot load {where}: the files changed while they were read")
    return LoadedCertificate(
        context, leaf.serial_number, leaf.not_valid_before_utc, leaf.not_valid_after_utc, after
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ReloadingCertificate:
    """The serving certificate of one worker process: polls its files and swaps in a new context when
    they change and hold a valid pair. Safe to read from any thread; only one thread reloads."""

    def __init__(
        self,
        cert: Path,
        key: Path,
        client_ca: Path | None = None,
        interval: float = DEFAULT_RELOAD_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self.interval = interval
        self.clock = clock
        self._current: LoadedCertificate | None = None
        self._last_failure = ""  # logged once per distinct failure, not on every poll
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def current(self) -> LoadedCertificate | None:
        return self._current

    def context(self) -> ssl.SSLContext:
        """The context for the next handshake; CertificateError while none could be loaded."""
        current = self._current
        if current is None:
            raise CertificateError(f"no valid certificate loaded yet from {self.cert} and {self.key}")
        return current.context

    def ready(self) -> bool:
        """A certificate is loaded and valid now (false again once it expires)."""
        current = self._current
        return current is not None and current.valid_at(self.clock())

    def reload(self) -> bool:
        """Load the files if they changed since the certificate in use was loaded; True when a new
        certificate was taken. A bad pair is logged and left for the next poll."""
        current = self._current
        paths = (self.cert, self.key) if self.client_ca is None else (self.cert, self.key, self.client_ca)
        try:
            if current is not None and _states(paths) == current.files:
                return False
            candidate = load_certificate(self.cert, self.key, self.client_ca)
        except OSError as err:
            self._failed(f"cannot read {self.cert} and {self.key}: {err}")
            return False
        except CertificateError as err:
            self._failed(str(err))
            return False
        now = self.clock()
        if not candidate.valid_at(now) and current is not None and current.valid_at(now):
            self._failed(
                f"certificate {self.cert} (serial {candidate.serial:x}) is valid only from "
                f"{candidate.not_before.isoformat()} to {candidate.not_after.isoformat()}; keeping serial "
                f"{current.serial:x}"
            )
            return False
        self._current = candidate
        self._last_failure = ""
        from webhook.metrics import CERTIFICATE_EXPIRY  # here: prometheus_client only when serving

        CERTIFICATE_EXPIRY.set(candidate.not_after.timestamp())
        log.info(
            "serving certificate serial %x loaded from %s, valid until %s",
            candidate.serial,
            candidate.files[0].path,
            candidate.not_after.isoformat(),
        )
        return True

    def _failed(self, message: str) -> None:
        if message != self._last_failure:
            log.warning("%s; still serving %s", message, self._describe_current())
            self._last_failure = message

    def _describe_current(self) -> str:
        current = self._current
        return f"serial {current.serial:x}" if current is not None else "no certificate"

    def start(self) -> None:
        """Poll the files every `interval` seconds on a daemon thread of this process."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._watch, name="fitguard-tls-reload", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.reload()
            except Exception:  # the watcher must outlive any surprise, or rotation silently stops
                log.exception("reloading the serving certificate failed")
