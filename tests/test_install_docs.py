"""The example kustomizations docs/install.md shows render (with the loader, and with kubectl where
present, to the same objects), list one mode at most, validate, and do what the text says of them."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.install_components import MODES, ROOT, custom_schemas, validation_failures
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
    """1: cert-manager's Certificate and the controller without certificate management, scaling on;
    2: both NetworkPolicies admit metrics from observability, and both webhooks fail closed;
    3: both Deployments run REGISTRY/fitguard pinned by digest."""
    first, second, third = examples()
    _, objects = render(tmp_path / "1", first)
    controller = one(objects, "Deployment", "fitguard-controller")["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert "--manage-certificates" not in controller["args"] and "--scaling=on" in controller["args"]
    one(objects, "Certificate", "fitguard-webhook")
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
