"""The webhook for end-to-end tests, started as the image starts it: the installed console script
`fitguard webhook` with the manifests' flags (TLS admission port, plain-HTTP status port,
--metrics-dir), each port a loopback socket bound here and inherited through fd:// (no free-port
race). Called by a client that verifies the CA and the host name as the apiserver does; probes and
scrapes go to the status port, as the kubelet and Prometheus do. Plus the AdmissionReview plumbing.

    with running(tls_files, ["--kubeconfig", str(kubeconfig)], workers=1) as server:
        status, body = post(server.connect(), admission_review(pod), "/validate")
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tests import objects
from tests.kustomize import render
from tests.tlsfixtures import TlsFiles, client_ssl_context

ROOT = Path(__file__).resolve().parents[1]
# the console script pip installed beside this interpreter: what the image's entry point runs
FITGUARD = str(Path(sys.executable).with_name("fitguard"))
# A namespace whose pods labelled app=web match a SecurityGroupPolicy: the state a webhook started
# with `--state` answers from in the end-to-end tests.
SHOP_STATE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": "shop", "name": "default"}},
    {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"namespace": "shop", "name": "web"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "securityGroups": {"groupIds": ["sg-1"]}},
    },
]
READY_SECONDS = 20.0
STOP_SECONDS = 25.0  # above the server's 20 s graceful timeout


@dataclass
class Server:
    port: int
    tls: TlsFiles
    process: subprocess.Popen[bytes]
    metrics_dir: Path | None  # None: the server's own temporary directory
    status_port: int = 0  # plain HTTP: /healthz, /readyz, /metrics, /snapshotz
    command: tuple[str, ...] = ()
    owned_metrics_dir: Path | None = None  # made for this run, removed when it stops

    def connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "localhost", self.port, context=client_ssl_context(self.tls.ca_path)
        )

    def status(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.status_port, timeout=10)


def get_status(server: Server, path: str) -> tuple[int, bytes]:
    """GET `path` on the status port: (status, body)."""
    conn = server.status()
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def wait_ready(server: Server, deadline: float) -> None:
    """Until GET /readyz on the status port answers 200 (on whichever worker takes the connection)."""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"webhook exited with {server.process.returncode}")
        try:
            if get_status(server, "/readyz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError("webhook did not become ready")


def manifest_args(overlay: str = "base", **replace: str) -> list[str]:
    """The webhook container's args in the rendered manifests (base or an overlay), each
    `--flag=value` whose flag is in `replace` (as `tls_cert=...` for --tls-cert) given that value."""
    directory = ROOT / "manifests" / ("" if overlay == "base" else "overlays") / overlay
    [deployment] = [
        o
        for o in render(directory)
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "fitguard-webhook"
    ]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    wanted = {f"--{key.replace('_', '-')}": value for key, value in replace.items()}
    args = []
    for arg in container["args"]:
        flag, sep, _ = str(arg).partition("=")
        args.append(f"{flag}={wanted.pop(flag)}" if sep and flag in wanted else str(arg))
    assert not wanted, f"the manifests do not pass {sorted(wanted)}"
    return args


def start(
    tls: TlsFiles,
    options: Sequence[str],
    *,
    workers: int | None = 2,
    threads: int = 4,
    metrics_dir: Path | None = None,
    stderr: IO[bytes] | None = None,
) -> Server:
    """Starts the webhook as the base manifests run it (their args, with the ports, TLS files and
    metrics directory of this test) plus `options` (e.g. `--state PATH` or `--kubeconfig PATH`);
    not yet ready. `workers` None: the manifests' own worker count."""
    listener = socket.create_server(("127.0.0.1", 0))
    status = socket.create_server(("127.0.0.1", 0))
    fd, status_fd = listener.fileno(), status.fileno()
    owned = None if metrics_dir else Path(tempfile.mkdtemp(prefix="fitguard-test-metrics-"))
    args = manifest_args(bind=f"fd://{fd}", metrics_bind=f"fd://{status_fd}", tls_cert=str(tls.cert_path),
                         tls_key=str(tls.key_path), metrics_dir=str(metrics_dir or owned))  # fmt: skip
    count = [] if workers is None else ["--workers", str(workers)]
    command = [FITGUARD, *args, *count, "--threads", str(threads), "--log-level", "warning", *options]
    # the fake apiserver is on loopback: a proxy from the environment must not get in between
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    process = subprocess.Popen(command, cwd=ROOT, pass_fds=(fd, status_fd), env=env, stderr=stderr)
    server = Server(
        listener.getsockname()[1], tls, process, metrics_dir, status.getsockname()[1], tuple(command), owned
    )
    listener.close()  # only the server holds them now: a dead server refuses connections
    status.close()
    return server


def stop(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    if server.owned_metrics_dir is not None:
        shutil.rmtree(server.owned_metrics_dir, ignore_errors=True)


@contextmanager
def running(
    tls: TlsFiles,
    options: Sequence[str],
    *,
    workers: int | None = 2,
    threads: int = 4,
    metrics_dir: Path | None = None,
    stderr: IO[bytes] | None = None,
) -> Iterator[Server]:
    """A ready webhook, always stopped afterwards; its log goes to `stderr` when given."""
    server = start(tls, options, workers=workers, threads=threads, metrics_dir=metrics_dir, stderr=stderr)
    try:
        wait_ready(server, time.monotonic() + READY_SECONDS)
        yield server
    finally:
        stop(server)


def admission_review(
    obj: dict[str, Any], uid: str = "e2e-1", operation: str = "CREATE", **request: Any
) -> bytes:
    """An admission.k8s.io/v1 AdmissionReview of `obj`, its kind and namespace taken from it."""
    namespace = request.pop("namespace", obj["metadata"].get("namespace", ""))
    return json.dumps(objects.review(obj, uid, operation, namespace=namespace, **request)).encode()


def post(conn: http.client.HTTPSConnection, body: bytes, path: str = "/mutate") -> tuple[int, dict[str, Any]]:
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    return answer.status, json.loads(answer.read())


def metric_sum(server: Server, name: str, *label_parts: str) -> float:
    """The sum over all samples of `name` whose labels contain every one of `label_parts`, from
    /metrics on the status port."""
    status, body = get_status(server, "/metrics")
    assert status == 200, status
    text = body.decode()
    total = 0.0
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        metric, _, labels = sample.partition("{")
        if metric == name and all(part in labels for part in label_parts):
            total += float(value)
    return total
