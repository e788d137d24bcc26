"""A cluster as `kubectl` meets it: the fake API server running the admission chain, the webhook
configurations rendered from manifests/ and registered there, and `fitguard webhook` started with
the arguments its Deployment in manifests/ gives it, reached through the configurations' Service.

    with running_cluster(work, tls) as cluster:
        result = cluster.kubectl("apply", "-f", path)
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.fakekube.server import FakeKubeServer
from tests.kustomize import render
from tests.tlsfixtures import TlsFiles, client_ssl_context, make_tls_files
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "fitguard-system"
SERVICE_NAME = "fitguard-webhook"
SERVICE_DNS = f"{SERVICE_NAME}.{NAMESPACE}.svc"
CONFIGURATION_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# A pod no node group can take (30Gi of ephemeral storage): the webhook answers it with a denial
# only once its caches hold the templates, so a denial is the readiness signal.
PROBE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "readiness-probe", "namespace": "default"},
    "spec": {
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"ephemeral-storage": "30Gi"}}}
        ]
    },
}


def kubectl_path() -> str | None:
    return shutil.which("kubectl")


def webhook_configurations(overlay: str | None = None) -> list[dict[str, Any]]:
    """The webhook configurations manifests/ (or one of its overlays) renders, caBundle unset."""
    directory = MANIFESTS / "overlays" / overlay if overlay else MANIFESTS
    return [obj for obj in render(directory) if obj["kind"] in CONFIGURATION_KINDS]


def webhook_args(overlay: str | None = None) -> list[str]:
    """The arguments of the webhook container of the rendered Deployment."""
    directory = MANIFESTS / "overlays" / overlay if overlay else MANIFESTS
    deployment = next(
        obj
        for obj in render(directory)
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == SERVICE_NAME
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return list(container.get("args") or [])


@dataclass
class Cluster:
    fake: FakeKubeServer
    tls: TlsFiles
    work: Path
    webhook_port: int
    env: dict[str, str]

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args], capture_output=True, text=True, env=self.env, timeout=120, check=False
        )

    def write(self, name: str, *objects: dict[str, Any]) -> Path:
        path = self.work / name
        path.write_text(yaml.safe_dump_all(objects))
        return path

    def register(self, overlay: str | None = None) -> None:
        """Register (or replace) the rendered webhook configurations, with the CA as caBundle
        (the controller's job in a cluster)."""
        ca_bundle = base64.b64encode(self.tls.ca_path.read_bytes()).decode()
        for configuration in webhook_configurations(overlay):
            for hook in configuration["webhooks"]:
                hook["clientConfig"]["caBundle"] = ca_bundle
            self.fake.apply(configuration)

    def route_service(self, port: int) -> None:
        """Where the configurations' Service sends the apiserver (every port of the Service)."""
        for configuration in webhook_configurations():
            for hook in configuration["webhooks"]:
                service = hook["clientConfig"]["service"]
                key = (service["namespace"], service["name"], int(service.get("port") or 443))
                self.fake.admission.services[key] = ("127.0.0.1", port)

    def reviewed(self) -> list[tuple[str, str, str, str, bool]]:
        """(webhook, operation, namespace, name, dryRun) of every review sent since the last clear."""
        return [
            (
                call.webhook,
                call.request["operation"],
                call.request.get("namespace", ""),
                call.request.get("name", ""),
                call.request["dryRun"],
            )
            for call in self.fake.admission.calls()
        ]


def _start_webhook(
    cluster_kubeconfig: Path, tls: TlsFiles, work: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """`fitguard webhook` (the installed console script) with the Deployment's arguments, its paths
    and bind address replaced by local ones; the listening socket is inherited (fd://)."""
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    local = {
        "--bind": f"fd://{fd}",
        "--tls-cert": str(tls.cert_path),
        "--tls-key": str(tls.key_path),
        "--metrics-dir": str(work / "metrics"),
    }
    args = []
    for arg in webhook_args():
        flag, sep, _ = arg.partition("=")
        args.append(f"{flag}={local[flag]}" if sep and flag in local else arg)
    (work / "metrics").mkdir(exist_ok=True)
    command = [
        str(Path(sys.executable).parent / "fitguard"),
        *args,
        "--workers=1",
        "--log-level=warning",
        f"--kubeconfig={cluster_kubeconfig}",
    ]
    env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "NO_PROXY": "127.0.0.1,localhost"}
    process = subprocess.Popen(command, cwd=ROOT, pass_fds=(fd,), env=env)
    port = listener.getsockname()[1]
    listener.close()
    return process, port


def _denies_probe(tls: TlsFiles, port: int, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"fitguard webhook exited with {process.returncode}")
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "ready",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": "default",
            "object": PROBE_POD,
        },
    }
    try:
        connection = http.client.HTTPSConnection("localhost", port, context=client_ssl_context(tls.ca_path))
        connection.request(
            "POST", "/validate", body=json.dumps(review), headers={"Content-Type": "application/json"}
        )
        answer = connection.getresponse()
        body = json.loads(answer.read())
        connection.close()
    except (OSError, ValueError):
        return False
    return answer.status == 200 and body["response"]["allowed"] is False


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_cluster(work: Path, objects: list[dict[str, Any]]) -> Iterator[Cluster]:
    """The fake API server holding `objects` and fitguard's namespace, the webhook ready behind the
    configurations' Service, the base configurations registered."""
    tls = make_tls_files(work / "tls", dns=(SERVICE_DNS, "localhost"), ips=("127.0.0.1",))
    fake = FakeKubeServer().start()
    try:
        namespace = yaml.safe_load((MANIFESTS / "base" / "namespace.yaml").read_text())
        fake.apply(namespace)
        for obj in objects:
            fake.apply(obj)
        kubeconfig = fake.write_kubeconfig(work / "kubeconfig.json")
        process, port = _start_webhook(kubeconfig, tls, work)
        try:
            eventually(lambda: _denies_probe(tls, port, process), "the webhook judges pods", timeout=60)
            env = {**os.environ, "KUBECONFIG": str(kubeconfig), "NO_PROXY": "127.0.0.1,localhost"}
            cluster = Cluster(fake, tls, work, port, env)
            cluster.route_service(port)
            cluster.register()
            yield cluster
        finally:
            _stop(process)
    finally:
        fake.stop()
    if fake.internal_errors:
        raise AssertionError("the fake apiserver hit its own bugs:\n" + "\n".join(fake.internal_errors))
