"""The base's placement and upgrade guarantees: a PodDisruptionBudget for the controller that never
blocks a node drain (restated from the disruption controller), both Deployments on Linux nodes, and
one image name for both Deployments so that a kustomization's `images:` can pin a digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.install_components import BASE
from tests.kustomize import build, kubectl_available, render_with_kubectl, write_kustomization

Obj = dict[str, Any]
IMAGE_NAME = "ghcr.io/fitguard/fitguard"
DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.fixture(scope="module")
def base() -> list[Obj]:
    return build(BASE)


def one(objects: list[Obj], kind: str, name: str) -> Obj:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def disruptions_allowed(pdb: Obj, replicas: int, healthy: int) -> int:
    """How many ready pods the eviction API may take now, as the disruption controller computes it
    (kubernetes/kubernetes pkg/controller/disruption/disruption.go, `getExpectedPodCount` and
    `updatePdbStatus`): with maxUnavailable, the desired healthy count is the scale minus it; with an
    integer minAvailable, that number; allowed = healthy - desired, never below 0. Integer values
    only (the manifests use no percentage)."""
    spec = pdb["spec"]
    if "maxUnavailable" in spec:
        assert isinstance(spec["maxUnavailable"], int)
        desired = max(replicas - spec["maxUnavailable"], 0)
    else:
        assert isinstance(spec["minAvailable"], int)
        desired = spec["minAvailable"]
    return max(healthy - desired, 0)


def unhealthy_evictable(pdb: Obj, healthy: int, desired: int) -> bool:
    """Whether a pod that is not ready may be evicted (pkg/registry/core/pod/storage/eviction.go,
    `EvictionREST.Create`): always with AlwaysAllow; with IfHealthyBudget (the default) only while
    the budget's healthy pods are at least the desired count."""
    return pdb["spec"].get("unhealthyPodEvictionPolicy") == "AlwaysAllow" or healthy >= desired


def test_the_controller_pdb_selects_the_controller_and_never_blocks_a_drain(base: list[Obj]) -> None:
    """Two ready replicas: one may go at a time; scaled to one replica, that pod may be evicted; a
    pod that is not ready may always be evicted. The one wait: the ready one of two while the other
    is not ready."""
    pdb = one(base, "PodDisruptionBudget", "fitguard-controller")
    pods = one(base, "Deployment", "fitguard-controller")["spec"]["template"]["metadata"]["labels"]
    assert pdb["metadata"]["namespace"] == "fitguard-system"
    assert all(pods.get(k) == v for k, v in pdb["spec"]["selector"]["matchLabels"].items())
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
        "selector": {"matchLabels": {"app.kubernetes.io/name": "fitguard-controller"}},
    }
    assert [disruptions_allowed(pdb, r, h) for r, h in ((2, 2), (2, 1), (1, 1))] == [1, 0, 1]
    assert unhealthy_evictable(pdb, healthy=0, desired=1)
    # what the comment in controller-pdb.yaml warns about: minAvailable 1 blocks a single replica
    assert disruptions_allowed({"spec": {"minAvailable": 1}}, 1, 1) == 0


@pytest.mark.parametrize("deployment", ["fitguard-webhook", "fitguard-controller"])
def test_both_deployments_run_on_linux_nodes_only(base: list[Obj], deployment: str) -> None:
    """The image is Linux-only: the whole nodeSelector is kubernetes.io/os=linux."""
    pod = one(base, "Deployment", deployment)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}


def test_images_in_a_kustomization_pins_both_deployments_to_a_digest(tmp_path: Path) -> None:
    """`images: [{name, digest}]` over the base gives both Deployments `name@digest`, with the loader
    and with kubectl."""
    directory = write_kustomization(tmp_path, [BASE], images=[{"name": IMAGE_NAME, "digest": DIGEST}])
    renders = [build(directory)]
    if kubectl_available():
        renders.append(render_with_kubectl(directory))
    for objects in renders:
        images = {
            o["metadata"]["name"]: [c["image"] for c in o["spec"]["template"]["spec"]["containers"]]
            for o in objects
            if o["kind"] == "Deployment"
        }
        assert images == {
            "fitguard-webhook": [f"{IMAGE_NAME}@{DIGEST}"],
            "fitguard-controller": [f"{IMAGE_NAME}@{DIGEST}"],
        }
