"""controller/cache.py PendingPods: the pending store's slim copy of an unbound Pending pod keeps
exactly what the planner reads, shares one placement among the pods that have it, and plans as the
whole pod would."""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pytest

from capacity.demand import pending_shapes
from capacity.names import IGNORE_LABEL
from controller import cache as cache_module
from controller.cache import PendingPods
from kube import podwire
from kube.events import ObjectRef
from tests.bench import bigcluster


def pod(name: str, cpu: str = "500m", **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "labels": {"app": "web", IGNORE_LABEL: "false"},
            "annotations": {"a": "b"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "controller": True}],
        },
        "spec": {
            "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}, "env": [{"name": "A"}]}
            ],
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"podAntiAffinity": {"x": 1}},
            "serviceAccountName": "sa",
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                },
            ],
        },
    }
    obj.update(extra)
    return obj


def test_the_slim_copy_keeps_exactly_what_the_planner_reads() -> None:
    """Kind, apiVersion, name, namespace, uid, the opt-out label, the placement fields (each
    container's resources and restartPolicy only), the phase and the PodScheduled condition's
    type, status and reason; nothing else."""
    assert PendingPods()(pod("p1")) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "ns", "uid": "uid-p1", "labels": {IGNORE_LABEL: "false"}},
        "spec": {
            "containers": [{"resources": {"requests": {"cpu": "500m"}}}],
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"podAntiAffinity": {"x": 1}},
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["spec"].update(nodeName="n1"),
        lambda p: p["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
        lambda p: p["status"].update(phase="Running"),
    ],
)
def test_a_bound_deleted_or_started_pod_is_not_kept(change: Any) -> None:
    """Bound, being deleted, or past Pending: None (the store leaves it out)."""
    obj = pod("p1")
    change(obj)
    assert PendingPods()(obj) is None


def test_pods_of_one_placement_share_it_and_the_memo_starts_again_when_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two pods with equal placements share one spec object; a different placement has its own;
    past SHARED_SPECS distinct placements the memo is emptied (copies stay correct, only no longer
    shared with what came before); a placement JSON cannot encode is kept unshared."""
    project = PendingPods()
    first, second, other = project(pod("a")), project(pod("b")), project(pod("c", cpu="1"))
    assert first["spec"] is second["spec"] and first["spec"] is not other["spec"]
    monkeypatch.setattr(cache_module, "SHARED_SPECS", 2)
    third = project(pod("d", cpu="2"))
    assert project(pod("e"))["spec"] is not first["spec"]
    assert project(pod("f", cpu="2"))["spec"] is third["spec"]
    odd = pod("g")
    odd["spec"]["nodeSelector"] = {1: object()}
    assert project(odd)["spec"]["nodeSelector"] == odd["spec"]["nodeSelector"]


def test_odd_shapes_are_kept_as_they_came() -> None:
    """A container that is not a map, containers that are not a list and conditions that are not a
    list pass through, so the planner judges them as on the whole pod."""
    obj = pod("p1")
    obj["spec"]["initContainers"] = ["not a map"]
    obj["spec"]["containers"] = "nope"
    obj["status"]["conditions"] = "odd"
    slim = PendingPods()(obj)
    assert slim["spec"]["initContainers"] == ["not a map"]
    assert slim["spec"]["containers"] == "nope"
    assert slim["status"]["conditions"] == "odd"


def test_the_planner_reads_the_same_from_the_slim_copies_as_from_whole_pods() -> None:
    """Differential over the benchmark's pods (decoded as the pod watch decodes them) plus odd
    ones: pending_shapes gives the same shapes, pods and malformed reasons from the slim copies as
    from the whole pods, and each pod's event reference is the same."""
    decoded = [podwire.decode_pod(raw) for raw in bigcluster.render(600, 0).pods]
    ignored = pod("ignored")
    ignored["metadata"]["labels"][IGNORE_LABEL] = "true"
    broken = pod("broken")
    broken["spec"]["containers"] = [{"resources": {"requests": {"cpu": "lots"}}}]
    whole = [*decoded, pod("p1"), pod("p2", cpu="2"), ignored, broken, json.loads(json.dumps(pod("p3")))]
    project = PendingPods()
    slim = [s for s in (project(copy.deepcopy(p)) for p in whole) if s is not None]
    kept = [p for p in whole if project(p) is not None]
    assert len(slim) == len(kept) > 50

    def planned(pods: list[Any]) -> Any:
        shapes, malformed = pending_shapes(pods)
        return [(s.key, s.needs.requests, [r.key for r in s.pods]) for s in shapes], malformed

    assert planned(slim) == planned(kept)
    assert [ObjectRef.of(s, "Pod", "v1") for s in slim] == [ObjectRef.of(p, "Pod", "v1") for p in kept]


def test_pods_waiting_for_the_same_reason_share_their_status() -> None:
    """Pending pods with the same phase and PodScheduled condition share one status copy (the
    scheduler's reason is one of a few for thousands of pods); a different reason has its own,
    which reads as it came."""
    project = PendingPods()
    first, second = project(pod("a")), project(pod("b"))
    other_pod = pod("c")
    other_pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": "x"}
    ]
    other = project(other_pod)
    assert first["status"] is second["status"]
    assert other["status"] is not first["status"]
    assert other["status"] == {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}],
    }


def test_init_containers_odd_words_and_key_order_as_the_planner_needs_them() -> None:
    """A pod with init containers keeps of each what pod_requests reads; its namespace and the
    scheduler's words are one interned copy (built here out of parts, as a decoder builds them),
    a word that is not a string is kept as it came; and a second pod whose placement has its keys
    in another order shares the first one's placement."""
    init = {"name": "i", "image": "x", "resources": {"requests": {"cpu": "1"}}, "restartPolicy": "Always"}
    first = pod("a")
    first["spec"]["initContainers"] = [init]
    first["metadata"]["namespace"] = "".join(["n", "s"])
    first["status"]["conditions"][1]["reason"] = 7
    second = pod("b")
    first["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}
    second["spec"] = copy.deepcopy(dict(reversed(list(first["spec"].items()))))
    second["spec"]["containers"][0]["resources"]["requests"] = {"memory": "1Gi", "cpu": "1"}
    pending = PendingPods()
    slim_first, slim_second = pending(first), pending(second)
    assert slim_first["spec"]["initContainers"] == [
        {"resources": {"requests": {"cpu": "1"}}, "restartPolicy": "Always"}
    ]
    assert slim_first["metadata"]["namespace"] is sys.intern("ns")
    assert slim_first["status"]["conditions"] == [{"type": "PodScheduled", "status": "False", "reason": 7}]
    assert slim_second["spec"] is slim_first["spec"]
