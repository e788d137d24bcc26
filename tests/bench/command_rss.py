"""Peak resident memory of the whole `fitguard controller` process, as deployed (the base manifest's
args: --leader-elect --metrics-bind --manage-certificates), against a served cluster of N pods.

It runs with the manifest's plain environment values (`manifest_env`: MALLOC_ARENA_MAX).
The pods and nodes come pre-rendered from tests/bench/apiserve.py (tests/fakekube cannot list 150,000
pods in reasonable time); everything else the command reads and writes (its Lease, the webhook's
certificate Secret, DaemonSets, NodeGroupTemplates, events) goes to tests/fakekube; AWS is moto in
server mode, with no node groups. A small router in front sends each request to the right one.
VmHWM is read from /proc/<pid>/status once /readyz answers 200 (both caches synced), the first
discovery cycle has ended (fitguard_controller_cycles_total) and a few seconds more have passed.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from tests.bench import apiserve, bigcluster

NAMESPACE = "fitguard-system"
DEPLOYMENT = Path(__file__).resolve().parents[2] / "manifests" / "base" / "controller-deployment.yaml"
PRERENDERED = ("/api/v1/pods", "/api/v1/nodes")  # collection GETs (list and watch) only
_HOP = {"connection", "transfer-encoding", "content-length", "keep-alive"}


def _router(prerendered: str, pending: str, fake: str) -> ThreadingHTTPServer:
    """A reverse proxy: collection GETs of pods and nodes to `prerendered`, the rest to `fake`;
    bodies without a length (watches) are streamed chunk by chunk. The pre-rendered server ignores
    selectors, so a pod list with one goes where it is answered as the API server would: the
    cycle's unschedulable pods (`spec.nodeName=,status.phase=Pending`) to `pending`, which holds
    exactly those; a label selector (cluster-autoscaler's own pods, listed or watched) to `fake`,
    which holds none."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the base class's name
            return

        def _forward(self) -> None:
            url = urlsplit(self.path)
            target = prerendered if self.command == "GET" and url.path in PRERENDERED else fake
            if target == prerendered and "labelSelector=" in url.query:
                target = fake  # cluster-autoscaler's pods, listed or watched: the fake holds none
            elif target == prerendered and "fieldSelector=" in url.query and "watch=" not in url.query:
                target = pending
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            upstream = http.client.HTTPConnection(urlsplit(target).netloc, timeout=900)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP | {"host"}}
            upstream.request(self.command, self.path, body, headers)
            response = upstream.getresponse()
            self.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            size = response.getheader("Content-Length")
            try:
                if size is not None:
                    data = response.read()
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while chunk := response.read1(65536):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True  # the controller or the upstream went away
            finally:
                upstream.close()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server


def manifest_env(path: Path = DEPLOYMENT) -> dict[str, str]:
    """The controller container's environment variables with a plain value in the base manifest
    (the allocator's settings among them): the command runs with them, as deployed. Those taken from
    the pod (fieldRef) are set by the benchmark itself."""
    deployment = yaml.safe_load(path.read_text())
    (container,) = (
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "controller"
    )
    return {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def vm_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _cycles(port: int) -> float:
    """Discovery cycles the command has ended (fitguard_controller_cycles_total, any result)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    except OSError:
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("fitguard_controller_cycles_total{")
    )


def command_rss(
    pods: int, settle: float = 5.0, timeout: float = 900.0, *, streaming: bool = False
) -> dict[str, Any]:
    """Runs the deployed command against `pods` pods; its peak RSS once synced (MB), and how long
    the sync took as the command saw it (process start to /readyz). The pods and nodes are listed
    in pages of 500 (a server that refuses streamed lists, as before Kubernetes 1.27), or, with
    `streaming`, as streamed lists (WatchList), which the command tries first."""
    from moto.server import ThreadedMotoServer

    from tests.bench.controller import CONFIG_MAP_PATH
    from tests.fakekube import FakeKubeServer

    rendered = bigcluster.render(pods, 0)
    api = apiserve.PrerenderedApi()
    api.pages["/api/v1/pods"] = apiserve.render_list("PodList", rendered.pods, 500, rendered.resource_version)
    api.pages["/api/v1/nodes"] = apiserve.render_list(
        "NodeList", rendered.nodes, 500, rendered.resource_version
    )
    if streaming:
        api.items["/api/v1/pods"] = ("Pod", rendered.pods, rendered.resource_version)
        api.items["/api/v1/nodes"] = ("Node", rendered.nodes, rendered.resource_version)
    nodes = len(rendered.nodes)
    unbound = [p for p in rendered.pods if b'"phase":"Pending"' in p and b'"nodeName"' not in p]
    pending_api = apiserve.PrerenderedApi()
    pending_api.pages["/api/v1/pods"] = apiserve.render_list(
        "PodList", unbound, 500, rendered.resource_version
    )
    del rendered, unbound
    fake = FakeKubeServer()
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    namespace, name = CONFIG_MAP_PATH.split("/")[4], CONFIG_MAP_PATH.split("/")[-1]
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"branch-eni-cooldown": "60"},
        }
    )
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    moto_port = moto._server.server_address[1]  # type: ignore[union-attr]  # moto exposes no getter
    prerendered_url = api.start()
    fake.start()
    router = _router(prerendered_url, pending_api.start(), fake.url)
    port = _free_port()
    process: subprocess.Popen[bytes] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        config = fake.kubeconfig(NAMESPACE)
        config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{router.server_address[1]}"
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        env = {
            **os.environ,
            **manifest_env(),
            "KUBECONFIG": str(kubeconfig),
            "POD_NAME": "fitguard-controller-0",
            "POD_NAMESPACE": NAMESPACE,
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{moto_port}",
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        command = [
            *os.environ.get(
                "FITGUARD_BENCH_COMMAND", str(Path(sys.executable).with_name("fitguard"))
            ).split(),
            "controller",
            "--leader-elect",
            f"--metrics-bind=127.0.0.1:{port}",
            "--manage-certificates",
        ]
        log = open(os.environ.get("FITGUARD_BENCH_LOG", os.devnull), "wb")  # noqa: SIM115
        try:
            started = time.monotonic()
            process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
            deadline = started + timeout
            while not _ready(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the controller did not become ready (exit {process.poll()})")
                time.sleep(0.5)
            synced = time.monotonic() - started
            # the first discovery cycle ended (its AWS client built), then the leader's reconcile
            while _cycles(port) < 1:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the controller ran no cycle (exit {process.poll()})")
                time.sleep(0.5)
            time.sleep(settle)
            memory = vm_kb(process.pid)
        finally:
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
            router.shutdown()
            api.stop()
            pending_api.stop()
            fake.stop()
            moto.stop()
    return {
        "pods": pods,
        "nodes": nodes,
        "lists": "streamed (WatchList)" if streaming else "paged",
        "args": command[1:],
        "env": manifest_env(),
        "secondsToReady": synced,
        "peakRssMb": memory["VmHWM"] / 1024,
        "rssMb": memory["VmRSS"] / 1024,
    }


if __name__ == "__main__":
    # python -m tests.bench.command_rss [PODS] [paged|streamed]
    print(
        command_rss(
            int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
            streaming=len(sys.argv) > 2 and sys.argv[2] == "streamed",
        )
    )
