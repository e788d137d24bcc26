"""The example kustomizations docs/install.md shows render (with the loader, and with kubectl where
present, to the same objects), list one mode at most, validate, and do what the text says of them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.install_components import MODES, ROOT, custom_schemas, validation_failures
from tests.kube_prometheus_stack import selected_by
from tests.kubectl_cluster import CONFIGURATION_KINDS, Cluster, running_cluster
from tests.kustomize import build, kubectl_available, object_id, render_with_kubectl

Obj = dict[str, Any]
INSTALL = ROOT / "docs" / "install.md"
_EXAMPLE = re.compile(r"```yaml\n# kustomization\.yaml\n(?P<body>.*?)```", re.DOTALL)


def examples() -> list[str]:
    return [match["body"] for match in _EXAMPLE.finditer(INSTALL.read_text())]


def render(tmp_path: Path, body: str) -> tuple[Obj, list[Obj]]:
    """The example with <fitguard> pointing at this repository, and what it renders to."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(ROOT, tmp_path)
    text = body.replace("<fitguard>", relative)
    (tmp_path / "kustomization.yaml").write_text(text)
    objects = build(tmp_path)
    if kubectl_available():
        assert {object_id(o): o for o in render_with_kubectl(tmp_path)} == {object_id(o): o for o in objects}
    return yaml.safe_load(text), objects


def one(objects: list[Obj], kind: str, name: str) -> Obj:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def test_install_md_shows_three_examples() -> None:
    assert len(examples()) == 3


@pytest.mark.parametrize("index", range(3))
def test_each_example_renders_validates_and_lists_one_mode(tmp_path: Path, index: int) -> None:
    """Every object validates (the oldest supported and newest Kubernetes schemas, the CRD
    schemas); the webhook runs the one mode the example lists."""
    kustomization, objects = render(tmp_path, examples()[index])
    modes = [c.rsplit("/", 1)[-1] for c in kustomization["components"] if c.rsplit("/", 1)[-1] in MODES]
    assert len(modes) == 1
    assert validation_failures(objects, custom_schemas(objects)) == []
    args = one(objects, "Deployment", "fitguard-webhook")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--mode=")] == [f"--mode={modes[0]}"]


def test_the_examples_do_what_the_text_says(tmp_path: Path) -> None:
    """1: cert-manager's Certificate and the controller without certificate management, scaling on,
    and the monitors and rules picked up by a kube-prometheus-stack release named `monitoring` (its
    default selectors, tests/kube_prometheus_stack.py), no longer by one named after the chart;
    2: both NetworkPolicies admit metrics from observability, and both webhooks fail closed;
    3: both Deployments run REGISTRY/fitguard pinned by digest."""
    first, second, third = examples()
    _, objects = render(tmp_path / "1", first)
    controller = one(objects, "Deployment", "fitguard-controller")["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert "--manage-certificates" not in controller["args"] and "--scaling=on" in controller["args"]
    one(objects, "Certificate", "fitguard-webhook")
    monitoring = {
        (o["kind"], o["metadata"]["name"]) for o in objects if o["apiVersion"].startswith("monitoring.")
    }
    assert selected_by("monitoring", objects) == monitoring and len(monitoring) == 3
    assert selected_by("kube-prometheus-stack", objects) == set()
    _, objects = render(tmp_path / "2", second)
    selectors = [
        o["spec"]["ingress"][0]["from"][0]["namespaceSelector"]
        for o in objects
        if o["kind"] == "NetworkPolicy"
    ]
    assert selectors == [{"matchLabels": {"kubernetes.io/metadata.name": "observability"}}] * 2
    assert {
        w["failurePolicy"]
        for o in objects
        if o["kind"].endswith("WebhookConfiguration")
        for w in o["webhooks"]
    } == {"Fail"}
    _, objects = render(tmp_path / "3", third)
    images = {
        c["image"]
        for o in objects
        if o["kind"] == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert images == {"REGISTRY/fitguard@sha256:" + "0" * 64}


# --- the shell blocks -------------------------------------------------------------------------

_SHELL = re.compile(r"^(?P<indent> *)```sh\n(?P<body>.*?)^(?P=indent)```", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^#{2,3} (?P<title>.+)$", re.MULTILINE)
# A section another part of the project documents and tests (`fitguard check` in CI).
_NOT_OURS = re.compile(r"check in CI", re.IGNORECASE)
# What no block may call: the doc promises kubectl's built-in kustomize alone.
_FOREIGN_TOOLS = ("kustomize", "helm")


def shell_blocks() -> list[list[str]]:
    """Each ```sh block of install.md (outside the sections of _NOT_OURS) as its commands: one per
    line, backslash continuations joined, blank lines dropped; comments stay (bash ignores them)."""
    text = INSTALL.read_text()
    headings = [(m.start(), m["title"]) for m in _HEADING.finditer(text)]
    blocks = []
    for match in _SHELL.finditer(text):
        section = next((title for start, title in reversed(headings) if start < match.start()), "")
        if _NOT_OURS.search(section):
            continue
        width = len(match["indent"])
        body = "\n".join(line[width:] for line in match["body"].splitlines()).replace("\\\n", "")
        blocks.append([line for line in body.splitlines() if line.strip()])
    return blocks


def programs(command: str) -> list[str]:
    """The program of each stage of a pipeline."""
    return [stage.split()[0] for stage in command.split("#", 1)[0].split("|") if stage.strip()]


def test_no_shell_block_needs_a_standalone_kustomize_or_helm() -> None:
    """Every command install.md shows runs with kubectl (and its built-in kustomize), docker for the
    image, and base64/openssl to read a certificate: never `kustomize ...` or `helm ...`."""
    used = {program for block in shell_blocks() for command in block for program in programs(command)}
    assert used == {"kubectl", "docker", "base64", "openssl"}
    assert not any(tool in used for tool in _FOREIGN_TOOLS)


# Commands that cannot run here, and why (each is still covered where it can be).
NOT_HERE = {
    "docker build -t REGISTRY/fitguard:0.1.0 .": (
        "no Docker daemon (tests/install/test_dockerfile.py reads the file)"
    ),
    "docker push REGISTRY/fitguard:0.1.0": "no registry",
    "kubectl apply -k .": "the fake API server serves no RBAC, Service, PodDisruptionBudget or CRD kinds; "
    "the kustomizations are rendered by `kubectl kustomize` above",
    "kubectl delete -k .": "as `kubectl apply -k .`",
    "kubectl -n fitguard-system rollout status deploy/fitguard-controller": "no Deployment controller "
    "reports a rollout (fitguard runs as processes here)",
    "kubectl -n fitguard-system rollout status deploy/fitguard-webhook": "as the controller's",
    "kubectl -n fitguard-system scale deploy/fitguard-webhook --replicas=0": "the fake API server has no "
    "scale subresource",
}
NAMESPACE_NAME = "payments"  # what the break-glass commands call NAME
EXHAUSTED = "fitguard.io/branch-eni-exhausted"


def _command(line: str) -> tuple[str, str]:
    """The command without its trailing comment, spaces collapsed (the key of NOT_HERE), and the
    comment."""
    command, _, comment = line.partition("  #")
    return " ".join(command.split()), comment.strip()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The fake API server with examples/cluster.yaml and a namespace `payments`, the controller and
    the webhook running as their Deployments run them (tests/kubectl_cluster.py)."""
    objects = yaml.safe_load((ROOT / "examples" / "cluster.yaml").read_text())["items"]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE_NAME}}
    with running_cluster(tmp_path_factory.mktemp("install-docs"), [*objects, namespace]) as started:
        yield started


def _configurations(cluster: Cluster) -> list[Obj]:
    return [c for kind in CONFIGURATION_KINDS for c in cluster.fake.objects(kind)]


def _prepare(cluster: Cluster, command: str) -> None:
    """Give the command something to act on: the fail-closed configurations for the patch back to
    Ignore, the configurations back after a delete, a node carrying the exhausted label."""
    if command.startswith("kubectl patch"):
        cluster.register("fail-closed")
    elif command.startswith("kubectl delete") and not _configurations(cluster):
        cluster.register()
    elif command.startswith("kubectl label nodes"):
        node = cluster.fake.objects("Node")[0]["metadata"]["name"]
        cluster.fake.patch("Node", node, {"metadata": {"labels": {EXHAUSTED: "true"}}})


def _effect(cluster: Cluster, command: str, comment: str, stdout: str) -> None:
    """What the doc says each command does, checked on the cluster or in its output; a `kubectl get
    ngt` whose comment lists columns prints those."""
    if "openssl x509" in command:
        assert re.search(r"^subject=.*\n^notAfter=", stdout, re.MULTILINE), stdout
    elif "get secrets" in command:
        assert {line.split()[0] for line in stdout.splitlines()[1:]} == {
            "fitguard-ca",
            "fitguard-webhook-tls",
        }
    elif command.startswith("kubectl get ngt ng-batch"):
        conditions = json.loads(stdout)
        assert conditions and all({"type", "status"} <= set(c) for c in conditions), stdout
    elif command.startswith("kubectl get ngt"):
        header = stdout.splitlines()[0]
        assert all(column in header for column in comment.split(", ") if comment), (comment, header)
        assert {line.split()[0] for line in stdout.splitlines()[1:]} >= {"ng-batch", "ng-burst", "ng-general"}
    elif command.startswith("kubectl label namespace"):
        key, value = command.split()[4].split("=")
        assert cluster.fake.get("Namespace", NAMESPACE_NAME)["metadata"]["labels"][key] == value
    elif command.startswith("kubectl patch"):
        kind = next(k for k in CONFIGURATION_KINDS if k.lower() == command.split()[2])
        assert [w["failurePolicy"] for w in cluster.fake.get(kind, "fitguard")["webhooks"]] == ["Ignore"]
    elif command.startswith("kubectl delete"):
        kind = next(k for k in CONFIGURATION_KINDS if k.lower() == command.split()[2])
        assert cluster.fake.objects(kind) == []
    elif command.startswith("kubectl label nodes"):
        assert [n for n in cluster.fake.objects("Node") if EXHAUSTED in n["metadata"].get("labels", {})] == []
    else:
        raise AssertionError(f"no check for {command!r}: say what it does")


@pytest.mark.slow
def test_every_shell_command_runs_on_a_cluster_and_does_what_the_doc_says(cluster: Cluster) -> None:
    """Each command of install.md's ```sh blocks, in the doc's order and as written (NAME is a
    namespace), runs with the real kubectl against the fake API server, with fitguard's controller
    and webhook running, exits 0, and has its effect (the CA's subject and expiry printed, the
    columns the comment names, the label set, failurePolicy back to Ignore, the configurations
    gone, no node left with the exhausted label); the ones that cannot run here are NOT_HERE with
    their reason, and NOT_HERE names nothing the doc no longer shows."""
    if not kubectl_available() or shutil.which("openssl") is None:
        pytest.skip("kubectl or openssl is not on PATH")
    shown = [_command(line) for block in shell_blocks() for line in block]
    assert set(NOT_HERE) <= {command for command, _ in shown}
    for command, comment in shown:
        if command in NOT_HERE:
            continue
        _prepare(cluster, command)
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command.replace("NAME", NAMESPACE_NAME)],
            capture_output=True, text=True, env=cluster.env, cwd=cluster.work, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 0, (command, result.stderr)
        _effect(cluster, command, comment, result.stdout)
