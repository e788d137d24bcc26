"""The branch ENI books of one list of objects (`fitguard report`, and `fitguard controller --once`
through the same cache and books, controller/cache.py and controller/books.py): the release window
read from the amazon-vpc-cni ConfigMap in kube-system and nowhere else, unless given; malformed Pods
and Nodes counted and skipped without hiding the others; other kinds ignored; the release model and
the waiting grace passed through. Whole node summaries are compared."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.cache import ClusterCache
from fitguard.report import Report, build_report
from tests.objects import rfc3339

NOW = 1_714_564_800.0  # 2024-05-01T12:00:00Z
POD_ENI = "vpc.amazonaws.com/pod-eni"


def config_map(namespace: str, name: str, data: Any, kind: str = "ConfigMap") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": name}, "data": data}


def vpc_cni(cooldown: str) -> dict[str, Any]:
    return config_map("kube-system", "amazon-vpc-cni", {"branch-eni-cooldown": cooldown})


def books_from_objects(objects: list[dict[str, Any]], now: float, **options: Any) -> tuple[Report, int]:
    report = build_report(objects, now, **options)
    return report, report.skipped


NODE = {
    "kind": "Node",
    "metadata": {
        "name": "n1",
        "labels": {"eks.amazonaws.com/nodegroup": "ng", "node.kubernetes.io/instance-type": "m5.large"},
    },
    "status": {"allocatable": {POD_ENI: "9"}, "conditions": [{"type": "Ready", "status": "True"}]},
}


def finished_pod(name: str, ago: float, enis: int) -> dict[str, Any]:
    """A pod on n1 that got `enis` branch ENIs and finished `ago` seconds before NOW."""
    annotation = json.dumps([{"eniId": f"eni-{name}-{i}"} for i in range(enis)])
    return {
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "uid": name, "annotations": {POD_ENI: annotation}},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "resources": {"requests": {POD_ENI: str(enis)}}}],
        },
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [{"state": {"terminated": {"finishedAt": rfc3339(NOW - ago)}}}],
        },
    }


def waiting_pod(name: str, ago: float) -> dict[str, Any]:
    """A running pod on n1 that requests 1 branch ENI, scheduled `ago` seconds before NOW, given none."""
    return {
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "uid": name},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {POD_ENI: "1"}}}]},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(NOW - ago)}
            ],
        },
    }


def summary(
    *,
    in_use: int = 0,
    held: int = 0,
    held_by: tuple[str, ...] = (),
    waiting: tuple[str, ...] = (),
    next_release: float | None = None,
) -> dict[str, Any]:
    """n1's whole summary: 9 branch ENIs, `held` of them by `held_by`, `waiting` pods."""
    return {
        "name": "n1",
        "nodeGroup": "ng",
        "instanceType": "m5.large",
        "capacity": 9,
        "inUse": in_use,
        "held": held,
        "schedulerFree": 9 - in_use,
        "trueFree": 9 - in_use - held,
        "waiting": len(waiting),
        "heldBy": list(held_by),
        "waitingPods": [f"default/{p}" for p in waiting],
        "nextReleaseSeconds": next_release,
    }


def test_the_window_comes_from_kube_systems_amazon_vpc_cni_only() -> None:
    """cooldown 90 s: window 120 s; a pod finished 100 s ago still holds its 2 ENIs for 20 s. The
    same ConfigMap name elsewhere, another name in kube-system and another kind are not read."""
    decoys = [
        config_map("default", "amazon-vpc-cni", {"branch-eni-cooldown": "1"}),
        config_map("kube-system", "other", {"branch-eni-cooldown": "1"}),
        config_map("kube-system", "amazon-vpc-cni", {"branch-eni-cooldown": "1"}, kind="Secret"),
    ]
    books, skipped = books_from_objects([*decoys, vpc_cni("90"), NODE, finished_pod("a", 100, 2)], NOW)
    assert skipped == 0
    assert books.window == 120.0
    assert [s.to_json() for s in books.nodes] == [summary(held=2, held_by=("a",), next_release=20.0)]


@pytest.mark.parametrize(
    ("objects", "window"),
    [
        ([], 90.0),  # no ConfigMap: the 60 s default
        ([config_map("kube-system", "amazon-vpc-cni", None)], 90.0),  # no data
        ([config_map("kube-system", "amazon-vpc-cni", ["x"])], 90.0),  # data not a map
        ([vpc_cni("10")], 60.0),  # below the 30 s minimum
        ([vpc_cni("200")], 230.0),
    ],
    ids=["absent", "no-data", "data-not-a-map", "below-minimum", "long"],
)
def test_the_window_of_each_configmap(objects: list[dict[str, Any]], window: float) -> None:
    """The window is the cooldown (at least 30 s) plus the 30 s processing period."""
    books, skipped = books_from_objects([*objects, NODE], NOW)
    assert (books.window, skipped) == (window, 0)


def test_a_given_window_overrides_the_configmap() -> None:
    """window=50: the pod finished 100 s ago holds nothing any more, whatever the ConfigMap says."""
    books, _ = books_from_objects([vpc_cni("600"), NODE, finished_pod("a", 100, 2)], NOW, window=50.0)
    assert books.window == 50.0
    assert [s.to_json() for s in books.nodes] == [summary()]


def test_a_state_files_configmap_is_found_by_namespace_and_name_only() -> None:
    """The cache filled from a file answers a ConfigMap by namespace and name: the object, or None."""
    cache = ClusterCache().fill({"ConfigMap": [vpc_cni("90"), config_map("default", "x", {})]})
    assert cache.config_map("kube-system", "amazon-vpc-cni") == vpc_cni("90")
    assert cache.config_map("default", "amazon-vpc-cni") is None
    assert ClusterCache().fill({}).config_map("kube-system", "amazon-vpc-cni") is None


def test_malformed_pods_and_nodes_are_counted_and_the_rest_still_booked() -> None:
    """A pod without a name, a node whose metadata is a list, a pod whose status is a number: three
    skipped; a Service is not a malformed object, only not read. n1's books are whole."""
    objects = [
        {"kind": "Pod", "metadata": {"namespace": "default"}},
        {"kind": "Node", "metadata": ["n2"]},
        {"kind": "Pod", "metadata": {"name": "x"}, "status": 7},
        {"kind": "Service", "metadata": {"name": "svc"}},
        NODE,
        finished_pod("a", 10, 1),
    ]
    books, skipped = books_from_objects(objects, NOW)
    assert skipped == 3
    assert [s.to_json() for s in books.nodes] == [summary(held=1, held_by=("a",), next_release=80.0)]


def test_the_release_model_and_waiting_grace_are_passed_on() -> None:
    """on-delete: a pod finished long ago still holds its ENI; grace 30 s: the pod scheduled 40 s ago
    without its ENI is waiting, with grace 50 s it is not yet."""
    objects = [NODE, finished_pod("a", 3600, 1), waiting_pod("w", 40)]
    books, _ = books_from_objects(objects, NOW, release="on-delete", waiting_grace=30.0)
    assert [s.to_json() for s in books.nodes] == [summary(in_use=1, held=1, held_by=("a",), waiting=("w",))]
    books, _ = books_from_objects(objects, NOW, waiting_grace=50.0)
    assert [s.to_json() for s in books.nodes] == [summary(in_use=1)]
