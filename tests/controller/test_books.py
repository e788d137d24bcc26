"""The live books (controller/books.py) against the fake API server: a Job pod finishes, its node's
held count rises and the node is labelled; after the window the count falls and the label goes; a
deleted pod's tombstone; a dropped watch and a 410 relist neither lose nor double count; a pod that
waits for its branch ENI gets an event; a Karpenter NodePool's nodes are booked under the NodePool
and keep their labels while a guarded pod pends on them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI
from controller.labels import LabelAction
from kube.events import EventRecorder
from tests import objects
from tests.books_stack import BooksStack, books_stack
from tests.objects import Clock
from tests.waiting import eventually

NODE = "ip-10-0-1-23.ec2.internal"
WINDOW = 40.0
BASE = 1_714_564_800.0
Obj = dict[str, Any]  # the fake clock's start: 2024-05-01T12:00:00Z


pytestmark = pytest.mark.usefixtures("paged_lists")  # tests/conftest.py says why


def node(pod_eni: int = 3) -> dict[str, Any]:
    return objects.node(NODE, {POD_ENI: str(pod_eni)}, group="ng", instance_type="m5.large")


def pod(
    name: str, *, phase: str = "Running", eni: bool = True, finished: float | None = None
) -> dict[str, Any]:
    annotations = {POD_ENI: json.dumps([{"eniId": f"eni-{name}"}])} if eni else {}
    return objects.pod(
        name, namespace="batch", container="main", limits={POD_ENI: "1"}, node=NODE, annotations=annotations,
        phase=phase, scheduled=BASE - 120, finished=finished,
    )  # fmt: skip


def row(live: BooksStack, now: float | None = None) -> Any:
    return next(r for r in live.books.snapshot(now) if r.name == NODE)


def labels(fake_kube: Any) -> dict[str, str]:
    return fake_kube.get("Node", NODE)["metadata"].get("labels") or {}


def events(fake_kube: Any, reason: str) -> list[dict[str, Any]]:
    found = fake_kube.objects("Event", api_version="events.k8s.io/v1")
    return [e for e in found if e.get("reason") == reason]


@pytest.fixture
def started(fake_kube: Any):
    clock = Clock(BASE)
    api = fake_kube.api_client()
    recorder = EventRecorder(api, "books-test", clock=clock)
    # fitguard scales "ng" itself, so its one node may carry the label (a group's last ready node is
    # otherwise spared for cluster-autoscaler's memory: tests/capacity/test_guard.py)
    live = books_stack(
        api,
        window=WINDOW,
        waiting_grace=20.0,
        clock=clock,
        recorder=recorder,
        scaled_groups=lambda: frozenset({"ng"}),
    )
    fake_kube.create(node())
    yield live, clock
    live.stop()


def test_a_finished_job_pod_is_held_labelled_then_released(fake_kube, started) -> None:
    live, clock = started
    for name in ("web-1", "web-2", "job-a-x7k2"):
        fake_kube.create(pod(name))
    live.start(page_size=2)
    assert live.wait_synced(10.0)
    eventually(lambda: row(live).in_use == 3, "three pods in use")

    fake_kube.apply(pod("job-a-x7k2", phase="Succeeded", finished=clock.now - 5))
    eventually(lambda: row(live).held == 1, "the finished job's ENI held")
    summary = row(live)
    assert (summary.in_use, summary.scheduler_free, summary.true_free) == (2, 1, 0)

    decisions = live.reconcile()
    assert [(d.action, d.node) for d in decisions] == [(LabelAction.SET, NODE)]
    assert "1 of 3 branch ENIs are held by finished pods job-a-x7k2" in decisions[0].reason
    assert labels(fake_kube).get(EXHAUSTED_LABEL) == "true"
    assert len(events(fake_kube, "BranchENIsHeld")) == 1
    eventually(lambda: live.nodes.get("", NODE).exhausted, "the label seen by the watch")
    patches = len(fake_kube.requests.find("PATCH", f"/nodes/{NODE}"))
    assert live.reconcile() == []  # nothing changed: no write
    assert len(fake_kube.requests.find("PATCH", f"/nodes/{NODE}")) == patches

    clock.now += WINDOW
    assert [d.action for d in live.reconcile()] == [LabelAction.REMOVED]
    assert (row(live).held, row(live).true_free) == (0, 1)
    assert EXHAUSTED_LABEL not in labels(fake_kube)
    assert len(events(fake_kube, "BranchENIsReleased")) == 1


def test_a_deleted_pod_keeps_its_eni_held_for_the_window(fake_kube, started) -> None:
    live, clock = started
    fake_kube.create(pod("web-1"))
    live.start()
    assert live.wait_synced(10.0)
    eventually(lambda: row(live).in_use == 1, "the pod in use")
    fake_kube.delete("Pod", "web-1", "batch")
    eventually(lambda: row(live).in_use == 0, "the pod gone")
    assert (row(live).held, row(live).held_by) == (1, ("web-1",))
    assert row(live, clock.now + WINDOW).held == 0


def test_a_dropped_watch_and_a_410_relist_neither_lose_nor_double_count(fake_kube, started) -> None:
    live, clock = started
    for i in range(4):
        fake_kube.create(pod(f"web-{i}"))
    live.start(page_size=3)
    assert live.wait_synced(10.0)
    eventually(lambda: row(live).in_use == 4, "four pods")

    # the open watch is dropped mid-stream (the connection cut), the changes happen while the
    # reflector cannot see them, and the watch it resumes is answered 410 Expired
    fake_kube.stop_listening()
    fake_kube.faults.expire_next_watch(path="/pods")
    fake_kube.expire_history("Pod")
    fake_kube.delete("Pod", "web-0", "batch")
    fake_kube.apply(pod("web-1", phase="Succeeded", finished=clock.now - 1))
    fake_kube.create(pod("web-9"))
    fake_kube.create(pod("waits", eni=False))
    fake_kube.start_listening()

    def fresh_lists() -> int:
        # a list starts without a continue token
        lists = fake_kube.requests.find("GET", "/api/v1/pods", watch=False)
        return len([r for r in lists if "continue" not in r.query])

    def relisted_after_410() -> bool:
        record = fake_kube.requests.find("GET", "/api/v1/pods")
        expired = [i for i, r in enumerate(record) if r.fault == "expire_watch"]
        after = record[expired[0] + 1 :] if expired else []
        return any(not r.watch and "continue" not in r.query for r in after)

    eventually(relisted_after_410, "the 410 relist")
    api_pods = sorted((p["metadata"]["name"], p["status"]["phase"]) for p in fake_kube.objects("Pod"))
    eventually(lambda: sorted((p.name, p.phase) for p in live.pods.items()) == api_pods, "caught up")
    summary = row(live)
    # written out: web-2, web-3, web-9 and "waits" are bound, unfinished and ask for a branch ENI
    # each (in use; "waits" has not got its ENI yet, so it also waits); web-1 finished a second
    # ago and web-0 was deleted (the relist could not show it: its tombstone holds beyond the
    # list's objects), both within the window: held
    assert (summary.in_use, summary.held, summary.waiting) == (4, 2, 1)
    assert set(summary.held_by) == {"web-0", "web-1"}
    assert live.books.model.tracked() == len(fake_kube.objects("Pod"))
    # the 410 forced one fresh list, not a loop of relists (one more before it when the dropped
    # watch had lasted under a second without an event: client-go relists that too): a pod
    # created now arrives by a watch event, after which no further list has been made
    relisted = fresh_lists()
    assert relisted in (2, 3)
    fake_kube.create(pod("web-late"))
    eventually(lambda: live.pods.get("batch", "web-late") is not None, "a later pod by the watch")
    assert fresh_lists() == relisted


def test_a_pod_waiting_for_its_branch_eni_gets_an_event(fake_kube, started) -> None:
    live, _ = started
    fake_kube.create(pod("job-b-d4s6", phase="Pending", eni=False))
    live.start()
    assert live.wait_synced(10.0)
    eventually(lambda: live.books.model.tracked() == 1, "the pod in the books")
    live.reconcile()
    found = events(fake_kube, "WaitingForBranchENI")
    assert len(found) == 1
    assert found[0]["regarding"]["name"] == "job-b-d4s6"
    assert "still without a branch ENI" in found[0]["note"]
    live.reconcile()
    assert len(events(fake_kube, "WaitingForBranchENI")) == 1  # reported on the change only


def vpc_cni(data: dict[str, str] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
    }
    if data is not None:
        obj["data"] = data
    return obj


def test_the_books_wait_the_cooldown_the_live_configmap_sets_and_keep_it_when_it_goes(fake_kube) -> None:
    """Books built by the controller (no fixed window) from ConfigMap kube-system/amazon-vpc-cni on
    the API server: branch-eni-cooldown 120 makes a window of 150 s, so a job that finished 100 s ago
    still holds its branch ENI (the 60 s default would have freed it at 90 s). Removing the key, an
    unreadable value or deleting the ConfigMap keeps the 120 s, as the VPC resource controller's
    configmap_controller keeps its current cooldown; a readable new value takes over, for ENIs already
    held as well."""
    clock = Clock(BASE)
    fake_kube.create(vpc_cni({"branch-eni-cooldown": "120", "enable-windows-ipam": "false"}))
    fake_kube.create(node())
    fake_kube.create(pod("job-a", phase="Succeeded", finished=BASE - 100))
    live = books_stack(fake_kube.api_client(), waiting_grace=20.0, clock=clock)
    try:
        live.start()
        assert live.wait_synced(10.0)
        eventually(lambda: live.pods.get("batch", "job-a") is not None, "the job seen")
        assert (live.books.cooldown, live.books.window) == (120.0, 150.0)
        assert (row(live).held, row(live).held_by, row(live).next_release) == (1, ("job-a",), 50.0)

        for data in ({"enable-windows-ipam": "false"}, {"branch-eni-cooldown": "2m"}, None):
            fake_kube.apply(vpc_cni(data))
            assert live.books.read_window() == 150.0
            assert (live.books.cooldown, row(live).held) == (120.0, 1)
        fake_kube.delete("ConfigMap", "amazon-vpc-cni", "kube-system")
        assert (live.books.read_window(), live.books.cooldown, row(live).held) == (150.0, 120.0, 1)

        fake_kube.create(vpc_cni({"branch-eni-cooldown": "45"}))
        assert (live.books.read_window(), live.books.cooldown) == (75.0, 45.0)
        # upstream compares every queued ENI with the cooldown in force: the job's ENI is free now
        assert (row(live).held, row(live).true_free) == (0, 3)
    finally:
        live.stop()


def test_books_started_without_the_configmap_use_the_default_cooldown(fake_kube) -> None:
    """No ConfigMap at start: the VPC resource controller's 60 s default, a 90 s window."""
    live = books_stack(fake_kube.api_client(), clock=Clock(BASE))
    assert (live.books.read_window(), live.books.cooldown) == (90.0, 60.0)


def test_a_leaked_branch_eni_earns_the_label_and_running_pods_alone_do_not(fake_kube, started) -> None:
    """3 of 3 in use by running pods: no label (the scheduler counts them). 2 running and one ENI
    that --verify-with-ec2 reported leaked: the label, naming the leak."""
    live, clock = started
    for name in ("web-1", "web-2", "web-3"):
        fake_kube.create(pod(name))
    live.start()
    assert live.wait_synced(10.0)
    eventually(lambda: row(live).in_use == 3, "three pods in use")
    assert live.reconcile() == []
    assert EXHAUSTED_LABEL not in labels(fake_kube)

    fake_kube.delete("Pod", "web-3", "batch")
    eventually(lambda: row(live).in_use == 2, "one pod gone")
    clock.now += WINDOW  # the deleted pod's tombstone has expired: one ENI is free by the books
    assert (row(live).held, row(live).true_free) == (0, 1)
    live.books.note_leaks({NODE: 1})  # as the loop sets it from --verify-with-ec2's audit
    decisions = live.reconcile()
    assert [(d.action, d.node, d.reason) for d in decisions] == [
        (
            LabelAction.SET,
            NODE,
            "1 leaked of 3 branch ENIs; the scheduler sees 1 free, but it is leaked: none is free",
        )
    ]
    assert labels(fake_kube).get(EXHAUSTED_LABEL) == "true"


POOL_NODES = ("ip-10-0-3-10.ec2.internal", "ip-10-0-3-11.ec2.internal")
GUARD_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]}
            ]
        }
    }
}


def pool_node(name: str) -> dict[str, Any]:
    """A node Karpenter launched for NodePool "general": two branch ENIs, no node group label."""
    labels = {"karpenter.sh/nodepool": "general", "kubernetes.io/hostname": name}
    allocatable = {"cpu": "1930m", "memory": "7220Mi", "pods": "29", POD_ENI: "2"}
    return objects.node(name, allocatable, instance_type="m5.large", labels=labels)


def pool_pod(name: str, on: str, finished: float | None = None) -> dict[str, Any]:
    annotations = {POD_ENI: json.dumps([{"eniId": f"eni-{name}"}])}
    return objects.pod(
        name, namespace="apps", container="main", limits={POD_ENI: "1"}, node=on, annotations=annotations,
        phase="Succeeded" if finished else "Running", scheduled=BASE - 120, finished=finished,
    )  # fmt: skip


def guarded_pending() -> dict[str, Any]:
    """A guarded pod the scheduler refused for node affinity (both nodes carry fitguard's label)."""
    raw = objects.pod(
        "web-new", {"cpu": "100m"}, namespace="apps", container="main", limits={POD_ENI: "1"},
        uid="uid-web-new", affinity=GUARD_AFFINITY,
    )  # fmt: skip
    message = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    return {**raw, "status": {"phase": "Pending", "conditions": [condition]}}


def test_a_nodepools_nodes_are_booked_under_it_and_keep_their_labels_past_the_grace(fake_kube) -> None:
    """Two nodes of Karpenter NodePool "general" (no node group label), each with one ENI in use and
    one held, and a guarded pod pending on them, through real reflectors: each row is booked under
    "general"; both nodes are labelled on the API server and stay labelled past the guard's grace
    (Karpenter builds its new node from the NodePool, so the label blinds nothing and nothing is
    lifted, no BranchENIGuardSteppedAside); the guard's view says so whole; once the held ENIs are
    released the labels go as for any node."""
    clock = Clock(BASE)
    api = fake_kube.api_client()
    live = books_stack(
        api,
        window=WINDOW,
        clock=clock,
        recorder=EventRecorder(api, "books-test", clock=clock),
        guard_grace=5.0,
    )
    for index, name in enumerate(POOL_NODES):
        fake_kube.create(pool_node(name))
        fake_kube.create(pool_pod(f"run-{index}", name))
        fake_kube.create(pool_pod(f"done-{index}", name, finished=BASE - 5))
    fake_kube.create(guarded_pending())
    live.start()
    try:
        assert live.wait_synced(10.0)
        eventually(lambda: len(live.books.pending()) == 1, "the guarded pod seen pending")
        rows = {
            r.name: (r.node_group, r.instance_type, r.capacity, r.in_use, r.held)
            for r in live.books.snapshot()
        }
        assert rows == dict.fromkeys(POOL_NODES, ("general", "m5.large", 2, 1, 1))
        assert [(d.action, d.node) for d in live.reconcile()] == [(LabelAction.SET, n) for n in POOL_NODES]
        for later in (5.0, 30.0):
            clock.now = BASE + later
            assert live.reconcile() == []
            for name in POOL_NODES:
                assert fake_kube.get("Node", name)["metadata"]["labels"].get(EXHAUSTED_LABEL) == "true"
        assert events(fake_kube, "BranchENIGuardSteppedAside") == []
        assert live.reconciler.guard_json()["groups"] == {
            "general": {
                "state": "karpenter",
                "reason": (
                    "every ready node is labelled and 1 guarded pods pend on it; Karpenter builds NodePool "
                    "general's new nodes from the NodePool, never from a live node, so the label hides no "
                    "new node from it: kept"
                ),
                "nodes": list(POOL_NODES),
                "pods": ["apps/web-new"],
                "since": None,
            }
        }
        clock.now = BASE + WINDOW
        assert [(d.action, d.node) for d in live.reconcile()] == [
            (LabelAction.REMOVED, n) for n in POOL_NODES
        ]
    finally:
        live.stop()
