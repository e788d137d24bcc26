"""`python -m webhook` for end-to-end tests: gunicorn over TLS on a loopback socket bound here and
inherited through gunicorn's fd:// bind (no free-port race), called by a client that verifies the CA
and the host name as the apiserver does, plus the AdmissionReview and /metrics plumbing.

    with running(tls_files, ["--kubeconfig", str(kubeconfig)], workers=1) as server:
        status, body = post(server.connect(), admission_review(pod), "/validate")
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.tlsfixtures import TlsFiles, client_ssl_context

ROOT = Path(__file__).resolve().parents[1]
READY_SECONDS = 20.0
STOP_SECONDS = 25.0  # above the server's 20 s graceful timeout


@dataclass
class Server:
    port: int
    tls: TlsFiles
    process: subprocess.Popen[bytes]
    metrics_dir: Path | None  # None: the server's own temporary directory

    def connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "localhost", self.port, context=client_ssl_context(self.tls.ca_path)
        )


def wait_ready(server: Server, deadline: float) -> None:
    """Until GET /readyz answers 200 (on whichever worker takes the connection)."""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"webhook exited with {server.process.returncode}")
        try:
            conn = server.connect()
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError("webhook did not become ready")


def start(
    tls: TlsFiles,
    options: Sequence[str],
    *,
    workers: int = 2,
    threads: int = 4,
    metrics_dir: Path | None = None,
) -> Server:
    """Starts the webhook with `options` (e.g. `--state PATH` or `--kubeconfig PATH`); not yet ready."""
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    command = [sys.executable, "-m", "webhook", "--bind", f"fd://{fd}",
               "--tls-cert", str(tls.cert_path), "--tls-key", str(tls.key_path),
               "--workers", str(workers), "--threads", str(threads), "--log-level", "warning",
               *(["--metrics-dir", str(metrics_dir)] if metrics_dir else []), *options]  # fmt: skip
    # the fake apiserver is on loopback: a proxy from the environment must not get in between
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    process = subprocess.Popen(command, cwd=ROOT, pass_fds=(fd,), env=env)
    server = Server(listener.getsockname()[1], tls, process, metrics_dir)
    listener.close()  # only the server holds it now: a dead server refuses connections
    return server


def stop(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@contextmanager
def running(
    tls: TlsFiles,
    options: Sequence[str],
    *,
    workers: int = 2,
    threads: int = 4,
    metrics_dir: Path | None = None,
) -> Iterator[Server]:
    """A ready webhook, always stopped afterwards."""
    server = start(tls, options, workers=workers, threads=threads, metrics_dir=metrics_dir)
    try:
        wait_ready(server, time.monotonic() + READY_SECONDS)
        yield server
    finally:
        stop(server)


def admission_review(
    obj: dict[str, Any], uid: str = "e2e-1", operation: str = "CREATE", **request: Any
) -> bytes:
    """An admission.k8s.io/v1 AdmissionReview of `obj`, its kind and namespace taken from it."""
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    req = {"uid": uid, "kind": {"group": group, "version": version, "kind": obj["kind"]},
           "operation": operation, "namespace": obj["metadata"].get("namespace", ""), "object": obj,
           **request}  # fmt: skip
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
    ).encode()


def post(conn: http.client.HTTPSConnection, body: bytes, path: str = "/mutate") -> tuple[int, dict[str, Any]]:
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    return answer.status, json.loads(answer.read())


def metric_sum(server: Server, name: str, *label_parts: str) -> float:
    """The sum over all samples of `name` whose labels contain every one of `label_parts`."""
    conn = server.connect()
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    total = 0.0
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        metric, _, labels = sample.partition("{")
        if metric == name and all(part in labels for part in label_parts):
            total += float(value)
    return total
