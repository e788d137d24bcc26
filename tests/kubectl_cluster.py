"""A cluster as `kubectl` meets it: the fake API server running the admission chain with the webhook
configurations rendered from manifests/, `fitguard controller` and `fitguard webhook` started with
the arguments their Deployments in manifests/ give them (the controller makes the certificates and
sets the caBundle; the webhook serves the Secret's certificate), the Service routed to the webhook.

    with running_cluster(work, tls) as cluster:
        result = cluster.kubectl("apply", "-f", path)
"""

from __future__ import annotations

import base64
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

import urllib3
import yaml

from tests.fakekube import ApiError
from tests.fakekube.server import FakeKubeServer
from tests.kustomize import render
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "fitguard-system"
SERVICE_NAME = "fitguard-webhook"
SERVING_SECRET = "fitguard-webhook-tls"  # what the controller writes and the webhook mounts
CONFIGURATION_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
# A pod no node group can take (30Gi of ephemeral storage): the webhook denies it only once its
# caches hold the templates, so its denial through the API server is the readiness signal (not
# /readyz, whose port is moving to --metrics-bind).
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


def container_args(deployment_name: str, overlay: str | None = None) -> list[str]:
    """The arguments of the first container of a rendered Deployment."""
    directory = MANIFESTS / "overlays" / overlay if overlay else MANIFESTS
    deployment = next(
        obj
        for obj in render(directory)
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == deployment_name
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return list(container.get("args") or [])


@dataclass
class Cluster:
    fake: FakeKubeServer
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
        """Apply the rendered configurations (of an overlay) as `kubectl apply` does to objects the
        controller has since given a caBundle: the caBundle, never in the manifests, is kept."""
        for configuration in webhook_configurations(overlay):
            stored = _stored(self.fake, configuration)
            bundles = {
                hook["name"]: hook["clientConfig"].get("caBundle") for hook in stored.get("webhooks", [])
            }
            for hook in configuration["webhooks"]:
                if bundles.get(hook["name"]):
                    hook["clientConfig"]["caBundle"] = bundles[hook["name"]]
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


def _stored(fake: FakeKubeServer, obj: dict[str, Any]) -> dict[str, Any]:
    try:
        return fake.get(obj["kind"], obj["metadata"]["name"])
    except ApiError as error:
        if error.code != 404:
            raise
        return {}


def _fitguard(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "fitguard"), *args]  # the installed console script


def _localised(args: list[str], local: dict[str, str]) -> list[str]:
    """The container's `--flag=value` arguments with the values of `local`'s flags replaced."""
    out = []
    for arg in args:
        flag, sep, _ = arg.partition("=")
        out.append(f"{flag}={local[flag]}" if sep and flag in local else arg)
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_controller(kubeconfig: Path, work: Path) -> subprocess.Popen[bytes]:
    """`fitguard controller` with its Deployment's arguments (leader election, certificates); AWS
    is unreachable, so discovery fails and keeps every template as it is (examples/cluster.yaml's)."""
    args = _localised(container_args("fitguard-controller"), {"--metrics-bind": f"127.0.0.1:{_free_port()}"})
    env = {
        **os.environ,
        "POD_NAMESPACE": NAMESPACE,
        "POD_NAME": "fitguard-controller-0",
        "NO_PROXY": "127.0.0.1,localhost",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{_free_port()}",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
    }
    log = (work / "controller.log").open("wb")
    command = _fitguard(*args, f"--kubeconfig={kubeconfig}", "--log-level=WARNING")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def _certificates_served(fake: FakeKubeServer) -> dict[str, Any] | None:
    """The serving Secret once the controller wrote it and put the caBundle on every webhook."""
    secrets = {s["metadata"]["name"]: s for s in fake.objects("Secret", NAMESPACE)}
    hooks = [hook for kind in CONFIGURATION_KINDS for c in fake.objects(kind) for hook in c["webhooks"]]
    if SERVING_SECRET in secrets and hooks and all(hook["clientConfig"].get("caBundle") for hook in hooks):
        return secrets[SERVING_SECRET]
    return None


def _mount(secret: dict[str, Any], directory: Path) -> tuple[Path, Path]:
    """The Secret's tls.crt and tls.key as files, as the kubelet mounts the webhook's volume."""
    directory.mkdir(parents=True, exist_ok=True)
    for key in ("tls.crt", "tls.key"):
        (directory / key).write_bytes(base64.b64decode(secret["data"][key]))
    return directory / "tls.crt", directory / "tls.key"


def _start_webhook(
    kubeconfig: Path, cert: Path, key: Path, work: Path
) -> tuple[subprocess.Popen[bytes], int]:
    """`fitguard webhook` with its Deployment's arguments, paths and bind address made local; the
    listening socket is inherited (fd://), so the port is known before the server runs."""
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    (work / "metrics").mkdir(exist_ok=True)
    local = {
        "--bind": f"fd://{fd}",
        "--tls-cert": str(cert),
        "--tls-key": str(key),
        "--metrics-dir": str(work / "metrics"),
        "--metrics-bind": f"127.0.0.1:{_free_port()}",  # once the Deployment passes one
    }
    args = _localised(container_args(SERVICE_NAME), local)
    command = _fitguard(*args, "--workers=1", "--log-level=warning", f"--kubeconfig={kubeconfig}")
    env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "NO_PROXY": "127.0.0.1,localhost"}
    process = subprocess.Popen(command, cwd=ROOT, pass_fds=(fd,), env=env)
    port = listener.getsockname()[1]
    listener.close()
    return process, port


def _probe_denied(fake: FakeKubeServer, processes: list[subprocess.Popen[bytes]]) -> bool:
    """Whether the API server, asked to create the probe pod (dry run), answers the webhook's denial:
    the whole path works (Service, TLS with the caBundle, the webhook's caches synced)."""
    for process in processes:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[1]} exited with {process.returncode}")
    answer = urllib3.PoolManager().request(
        "POST",
        f"{fake.url}/api/v1/namespaces/default/pods?dryRun=All",
        body=json.dumps(PROBE_POD),
        headers={"Content-Type": "application/json"},
        retries=False,
    )
    return answer.status == 403


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_cluster(work: Path, objects: list[dict[str, Any]]) -> Iterator[Cluster]:
    """The fake API server holding `objects`, fitguard's namespace and the rendered configurations;
    the controller and the webhook running as their Deployments run them, the Service routed to
    the webhook; yields once the API server gets the webhook's denial of a pod that cannot fit."""
    fake = FakeKubeServer().start()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        fake.apply(yaml.safe_load((MANIFESTS / "base" / "namespace.yaml").read_text()))
        for obj in objects:
            fake.apply(obj)
        kubeconfig = fake.write_kubeconfig(work / "kubeconfig.json")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "NO_PROXY": "127.0.0.1,localhost"}
        cluster = Cluster(fake, work, 0, env)
        cluster.register()
        processes.append(_start_controller(kubeconfig, work))
        secret = eventually(lambda: _certificates_served(fake), "the controller's certificates", timeout=90)
        cert, key = _mount(secret, work / "webhook-tls")
        webhook, cluster.webhook_port = _start_webhook(kubeconfig, cert, key, work)
        processes.append(webhook)
        cluster.route_service(cluster.webhook_port)
        eventually(
            lambda: _probe_denied(fake, processes), "the API server gets the webhook's denial", timeout=90
        )
        fake.admission.clear_calls()
        yield cluster
    finally:
        for process in reversed(processes):
            _stop(process)
        fake.stop()
    if fake.internal_errors:
        raise AssertionError("the fake apiserver hit its own bugs:\n" + "\n".join(fake.internal_errors))
