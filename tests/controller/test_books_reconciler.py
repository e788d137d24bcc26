"""controller/books.py's decisions in process: the stores are fed as a reflector feeds them (a list,
then watch events), passes run at chosen times, and the whole answer is compared: every BooksDecision,
every Event the recorder would write, the guard's /snapshotz view, the caches still awaited, and the
release window read from the VPC CNI ConfigMap. Label writes and their failures go to the fake API
server (in a thread of the test process); events go to a dry-run recorder, which keeps what it would
write. tests/controller/test_books.py drives the same code through real reflectors."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import pytest

from capacity.guard import spared_message
from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI
from controller.books import Books
from controller.books_reconciler import BooksReconciler
from controller.labels import BooksDecision, LabelAction
from kube.events import EventRecorder
from tests import objects
from tests.books_stack import books_stack
from tests.objects import Clock, rfc3339
from tests.waiting import eventually

BASE = 1_714_564_800.0  # 2024-05-01T12:00:00Z
HELD_A = (
    "1 of 3 branch ENIs are held by finished pods j1; the scheduler sees 1 free, but it is held: none is free"
)


def node(name: str, pod_eni: int | None = 3, *, exhausted: bool = False) -> dict[str, Any]:
    allocatable = {} if pod_eni is None else {POD_ENI: str(pod_eni)}
    labels = {EXHAUSTED_LABEL: "true"} if exhausted else {}
    return objects.node(name, allocatable, group="ng", instance_type="m5.large", labels=labels)


def pod(
    name: str, on: str, *, phase: str = "Running", finished: float | None = None, eni: bool = True
) -> dict[str, Any]:
    """A pod bound to `on` two minutes before BASE that asks for one branch ENI (and got it if `eni`)."""
    annotations = {POD_ENI: json.dumps([{"eniId": f"eni-{name}"}])} if eni else {}
    return objects.pod(
        name, namespace="batch", container="main", limits={POD_ENI: "1"}, node=on, annotations=annotations,
        uid=f"uid-{name}", phase=phase, scheduled=BASE - 120, finished=finished,
    )  # fmt: skip


def events(recorder: EventRecorder) -> list[tuple[str, str, str, dict[str, str]]]:
    """Every event the recorder wrote (or would have), as (type, reason, note, regarding)."""
    found = []
    for entry in recorder.recent:
        event = entry["event"]
        assert (entry["verb"], event["action"]) == ("create", "BranchENIAccounting")
        found.append((event["type"], event["reason"], event["note"], event["regarding"]))
    return found


def node_ref(name: str) -> dict[str, str]:
    return {"apiVersion": "v1", "kind": "Node", "name": name}


def scales_ng() -> frozenset[str]:
    """fitguard scales the test group "ng" itself, so the guard labels its one ready node (it would
    otherwise spare a group's last ready node for cluster-autoscaler's memory:
    tests/capacity/test_guard.py)."""
    return frozenset({"ng"})


def dry_books(clock: Clock, **options: Any) -> tuple[Any, EventRecorder]:
    recorder = EventRecorder(None, "books-test", clock=clock)
    options.setdefault("window", 1000.0)
    options.setdefault("scaled_groups", scales_ng)
    return books_stack(None, clock=clock, recorder=recorder, dry_run=True, **options), recorder


def test_the_books_wait_for_both_first_lists_and_act_only_then() -> None:
    """Both caches are awaited until their first list is in; a pass before that decides and tells
    nothing; the guard's view is empty until a pass has run."""
    clock = Clock(BASE)
    live, _ = dry_books(clock)
    assert live.waiting_for() == ["nodes", "pods"]
    assert live.wait_synced(0) is False
    assert live.reconciler.guard_json() == {"graceSeconds": 30.0, "groups": {}, "nodes": {}}
    live.nodes.replace([node("a")])
    assert live.waiting_for() == ["pods"]
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    assert live.reconcile() == [BooksDecision(LabelAction.SET, "a", HELD_A)]
    assert live.waiting_for() == []
    assert live.wait_synced(0) is True

    # a follower keeps its books and runs no pass at all: the manager runs the reconciler only
    # while it leads (tests/controller/test_manager.py), the books on every replica
    assert (BooksReconciler.needs_leader, Books.needs_leader) == (True, False)

    # the pods not listed yet: the labelled node looks all free, and its label must stay
    unsynced, unsynced_events = dry_books(clock)
    unsynced.nodes.replace([node("a", exhausted=True)])
    assert unsynced.reconcile() == []
    assert events(unsynced_events) == []


def test_a_pass_observes_its_own_duration() -> None:
    """Each pass adds one observation to the reconcile duration histogram, no longer than the call
    as the test measured it around the pass (and not negative)."""
    clock = Clock(BASE)
    live, _ = dry_books(clock)
    live.nodes.replace([node("a")])
    live.pods.replace([pod("w1", "a")])
    before = time.monotonic()
    live.reconcile(BASE)
    elapsed = time.monotonic() - before
    name = "fitguard_branch_eni_reconcile_duration_seconds"
    assert live.registry.get_sample_value(f"{name}_count") == 1.0
    assert 0.0 <= (live.registry.get_sample_value(f"{name}_sum") or 0.0) <= elapsed


def test_a_pass_labels_a_held_node_and_removes_a_label_that_means_nothing() -> None:
    """A node whose only free ENI is held by a finished pod is labelled (the reason names the holder);
    a labelled node without pod-eni capacity is unlabelled; an unlabelled one without capacity is left
    alone. The held node gets one warning; the guard's view says why for each node."""
    clock = Clock(BASE)
    live, recorder = dry_books(clock)
    live.nodes.replace([node("a"), node("b", None, exhausted=True), node("c", None)])
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    assert live.reconcile() == [
        BooksDecision(LabelAction.SET, "a", HELD_A),
        BooksDecision(LabelAction.REMOVED, "b", "no branch ENIs"),
    ]
    assert events(recorder) == [("Warning", "BranchENIsHeld", HELD_A, node_ref("a"))]
    assert live.reconciler.guard_json() == {
        "graceSeconds": 30.0,
        "groups": {
            "ng": {
                "state": "clear",
                "reason": "a ready node is not labelled",
                "nodes": ["a", "b", "c"],
                "pods": [],
                "since": None,
            }
        },
        "nodes": {
            "a": {
                "labelled": True,
                "reason": "1 held by finished or deleted pods of 3 branch ENIs; "
                "the scheduler sees 1 free, but it is held: none is free",
            },
            "b": {"labelled": False, "reason": "no branch ENIs"},
            "c": {"labelled": False, "reason": "no branch ENIs"},
        },
    }


def test_a_written_label_is_not_rewritten_until_the_watch_shows_it_or_rewrite_after_passes() -> None:
    """After a write the same write waits for the watch, up to `rewrite_after` (60 s) and not a
    second longer; once the watch shows it, nothing is remembered, so a label someone removes later
    is put back at the next pass."""
    clock = Clock(BASE)
    live, _ = dry_books(clock)
    live.nodes.replace([node("a")])
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    assert live.reconcile(BASE) == [BooksDecision(LabelAction.SET, "a", HELD_A)]
    assert live.reconcile(BASE + 59.9) == []
    assert live.reconcile(BASE + 60) == [BooksDecision(LabelAction.SET, "a", HELD_A)]
    live.nodes.apply("MODIFIED", node("a", exhausted=True))
    assert live.reconcile(BASE + 61) == []
    live.nodes.apply("MODIFIED", node("a"))
    assert live.reconcile(BASE + 62) == [BooksDecision(LabelAction.SET, "a", HELD_A)]


def test_label_writes_beyond_the_rate_are_deferred(caplog: pytest.LogCaptureFixture) -> None:
    """With a burst of one write and a rate of one per 1000 s, the second node's write in the same
    pass is deferred for the rate limit (and logged so), and stays deferred a second later."""
    caplog.set_level("INFO", logger="controller")
    clock = Clock(BASE)
    live, _ = dry_books(clock, label_rate=0.001, label_burst=1.0)
    live.nodes.replace([node("a"), node("b")])
    live.pods.replace(
        [
            pod("j1", "a", phase="Succeeded", finished=BASE - 5),
            pod("w1", "a"),
            pod("w2", "a"),
            pod("k1", "b", phase="Succeeded", finished=BASE - 5),
            pod("x1", "b"),
            pod("x2", "b"),
        ]
    )
    assert live.reconcile(BASE) == [
        BooksDecision(LabelAction.SET, "a", HELD_A),
        BooksDecision(LabelAction.DEFERRED, "b", "rate limit"),
    ]
    assert live.reconcile(BASE + 1) == [BooksDecision(LabelAction.DEFERRED, "b", "rate limit")]
    deferred = [r.__dict__ for r in caplog.records if r.getMessage() == "label write deferred"]
    assert [(r["name"], r["node"], r["exhausted"], r["why"]) for r in deferred] == [
        ("controller.labels", "b", True, "rate limit"),
        ("controller.labels", "b", True, "rate limit"),
    ]


def test_the_held_warning_is_told_once_and_the_release_once() -> None:
    """A node stays held over two passes: one BranchENIsHeld; when the window has passed the label
    goes and one BranchENIsReleased says how many are free; a later pass tells nothing new."""
    clock = Clock(BASE)
    live, recorder = dry_books(clock, window=40.0)
    # node c holds one ENI too, but one of its three is still free: neither held nor labelled
    live.nodes.replace([node("a"), node("c")])
    live.pods.replace(
        [
            pod("j1", "a", phase="Succeeded", finished=BASE - 5),
            pod("w1", "a"),
            pod("w2", "a"),
            pod("j3", "c", phase="Succeeded", finished=BASE - 5),
            pod("w3", "c"),
        ]
    )
    live.reconcile(BASE)
    live.reconcile(BASE + 1)
    live.nodes.apply("MODIFIED", node("a", exhausted=True))
    # the pass's own time, not the clock's, decides what the books hold
    assert live.reconcile(BASE + 40) == [
        BooksDecision(LabelAction.REMOVED, "a", "1 of 3 branch ENIs are free")
    ]
    live.reconcile(BASE + 41)
    assert events(recorder) == [
        ("Warning", "BranchENIsHeld", HELD_A, node_ref("a")),
        ("Normal", "BranchENIsReleased", "1 of 3 branch ENIs are free again", node_ref("a")),
    ]


def test_a_pod_waiting_for_its_branch_eni_is_told_once_per_wait(caplog: pytest.LogCaptureFixture) -> None:
    """A running pod bound two minutes ago without its branch ENI gets one WaitingForBranchENI warning
    (on the pod, with its uid), not one per pass; the event is also logged with its fields."""
    caplog.set_level("INFO", logger="controller")
    clock = Clock(BASE)
    live, recorder = dry_books(clock, waiting_grace=20.0)
    live.nodes.replace([node("a", 1)])
    live.pods.replace([pod("w1", "a", eni=False)])
    live.reconcile(BASE)
    live.reconcile(BASE + 1)
    pod_ref = {"apiVersion": "v1", "kind": "Pod", "name": "w1", "namespace": "batch", "uid": "uid-w1"}
    note = (
        "bound to a 120 s ago, still without a branch ENI: "
        "all 1 are in use by running pods; it waits until one of them ends"
    )
    assert events(recorder) == [("Warning", "WaitingForBranchENI", note, pod_ref)]
    logged = [
        r.__dict__
        for r in caplog.records
        if r.name == "controller.books_reconciler" and r.getMessage() == "event"
    ]
    assert [(r["kind"], r["object"], r["reason"], r["note"]) for r in logged] == [
        ("Pod", "w1", "WaitingForBranchENI", note)
    ]


def test_label_writes_reach_the_api_server_and_a_refused_write_is_reported(
    fake_kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Not in dry run, the label is set on the node through the API; a node the server does not know
    gets a label-failed decision with the server's answer, and no write is remembered for it. Each
    write and failure is logged with its fields."""
    caplog.set_level("INFO", logger="controller")
    fake_kube.create(node("a"))
    clock = Clock(BASE)
    live = books_stack(fake_kube.api_client(), window=1000.0, clock=clock, scaled_groups=scales_ng)
    live.nodes.replace([node("a"), node("gone")])
    live.pods.replace(
        [
            pod("j1", "a", phase="Succeeded", finished=BASE - 5),
            pod("k1", "gone", phase="Succeeded", finished=BASE - 5),
            *(
                pod(name, on, eni=True)
                for name, on in (("w1", "a"), ("w2", "a"), ("x1", "gone"), ("x2", "gone"))
            ),
        ]
    )
    assert live.reconcile(BASE) == [
        BooksDecision(LabelAction.SET, "a", HELD_A),
        BooksDecision(LabelAction.FAILED, "gone", '404 NotFound: nodes "gone" not found'),
    ]
    logged = [r.__dict__ for r in caplog.records if r.getMessage() in ("label-set", "label write failed")]
    assert [
        {k: r.get(k) for k in ("msg", "levelname", "node", "node_group", "exhausted", "reason", "error")}
        for r in logged
    ] == [
        {
            "msg": "label-set",
            "levelname": "INFO",
            "node": "a",
            "node_group": "ng",
            "exhausted": None,
            "reason": HELD_A,
            "error": None,
        },
        {
            "msg": "label write failed",
            "levelname": "WARNING",
            "node": "gone",
            "node_group": None,
            "exhausted": True,
            "reason": None,
            "error": '404 NotFound: nodes "gone" not found',
        },
    ]
    assert fake_kube.get("Node", "a")["metadata"]["labels"] == {
        "node.kubernetes.io/instance-type": "m5.large",
        "eks.amazonaws.com/nodegroup": "ng",
        EXHAUSTED_LABEL: "true",
    }
    fake_kube.create(node("gone"))
    held_gone = (
        "1 of 3 branch ENIs are held by finished pods k1; the scheduler sees 1 free, but it is held: "
        "none is free"
    )
    assert live.reconcile(BASE + 1) == [BooksDecision(LabelAction.SET, "gone", held_gone)]


def test_a_dry_run_writes_no_label(fake_kube: Any) -> None:
    """In dry run the decision is made and told, and the node on the server keeps its labels."""
    fake_kube.create(node("a"))
    clock = Clock(BASE)
    live = books_stack(
        fake_kube.api_client(), window=1000.0, clock=clock, dry_run=True, scaled_groups=scales_ng
    )
    live.nodes.replace([node("a")])
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    assert live.reconcile(BASE) == [BooksDecision(LabelAction.SET, "a", HELD_A)]
    assert EXHAUSTED_LABEL not in fake_kube.get("Node", "a")["metadata"]["labels"]
    assert fake_kube.requests.find("PATCH") == []


def test_the_window_follows_the_configmap_and_is_kept_through_errors(
    fake_kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A fixed window is used without reading the API; otherwise the ConfigMap's cooldown plus the
    processing period (default 60 + 30 without it); a failed read or a ConfigMap gone keeps the
    window; each step is logged with its fields."""
    caplog.set_level("INFO", logger="controller")
    fixed = books_stack(fake_kube.api_client(), window=7.0)
    assert fixed.books.read_window() == 7.0
    assert fake_kube.requests.find("GET", "configmaps") == []

    live = books_stack(fake_kube.api_client())
    assert (live.books.read_window(), live.books.cooldown, live.books.window) == (90.0, 60.0, 90.0)
    fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
            "data": {"branch-eni-cooldown": "45"},
        }
    )
    assert (live.books.read_window(), live.books.cooldown, live.books.window) == (75.0, 45.0, 75.0)
    fake_kube.faults.fail(500, method="GET", path="configmaps")
    assert (live.books.read_window(), live.books.cooldown, live.books.window) == (75.0, 45.0, 75.0)
    fake_kube.delete("ConfigMap", "amazon-vpc-cni", "kube-system")
    assert (live.books.read_window(), live.books.cooldown, live.books.window) == (75.0, 45.0, 75.0)
    # the window is told when first read and when it changes, not when kept
    assert logged(caplog) == [
        ("INFO", "branch-eni-cooldown absent or unreadable", {"value": None, "keeping": None}),
        ("INFO", "branch ENI release window", {"window_seconds": 90.0, "cooldown_seconds": 60.0}),
        ("INFO", "branch ENI release window", {"window_seconds": 75.0, "cooldown_seconds": 45.0}),
        (
            "WARNING",
            "reading the VPC CNI ConfigMap failed, keeping the window",
            {"error": "500 InternalError: Internal error injected by the test"},
        ),
        ("INFO", "branch-eni-cooldown absent or unreadable", {"value": None, "keeping": 45.0}),
    ]


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, dict[str, Any]]]:
    """controller.books's log records: level, message and the fields given as `extra`."""
    standard = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
    return [
        (r.levelname, r.getMessage(), {k: v for k, v in vars(r).items() if k not in standard})
        for r in caplog.records
        if r.name == "controller.books"
    ]


GUARDED_SPEC: dict[str, Any] = {
    "containers": [
        {"name": "main", "image": "app", "resources": {"requests": {"cpu": "100m"}, "limits": {POD_ENI: "1"}}}
    ],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]}
                ]
            }
        }
    },
}
LIFT = (
    "every ready node of ng carries fitguard.io/branch-eni-exhausted (branch ENIs held) and 1 guarded pods "
    "pend on it: the guard steps aside (label lifted from the group's nodes) so that cluster-autoscaler, "
    "which copies a ready node's labels into the group's template, can scale it up; with --scaling=on "
    "fitguard would scale the group itself and keep the label"
)
HELD_GUARD = (
    "1 held by finished or deleted pods of 2 branch ENIs; the scheduler sees 1 free, but it is held: "
    "none is free"
)


def guard_node(name: str, *, unschedulable: bool = False) -> dict[str, Any]:
    """A labelled m5.large of group ng with two branch ENIs and room for the guarded pod otherwise."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "node.kubernetes.io/instance-type": "m5.large",
                "eks.amazonaws.com/nodegroup": "ng",
                EXHAUSTED_LABEL: "true",
            },
        },
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29", POD_ENI: "2"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def bound(name: str, on: str, *, finished: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running"}
    if finished:
        terminated = {"exitCode": 0, "finishedAt": rfc3339(BASE - 5)}
        status = {
            "phase": "Succeeded",
            "containerStatuses": [{"name": "main", "state": {"terminated": terminated}}],
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "apps",
            "annotations": {POD_ENI: json.dumps([{"eniId": name}])},
        },
        "spec": {**GUARDED_SPEC, "nodeName": on},
        "status": status,
    }


def pending(name: str = "web-new") -> dict[str, Any]:
    """A guarded pod the scheduler refused for node affinity (fitguard's label)."""
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}"},
        "spec": GUARDED_SPEC,
        "status": {"phase": "Pending", "conditions": [condition]},
    }


def held_group() -> list[dict[str, Any]]:
    return [
        bound("fa", "a", finished=True),
        bound("ra", "a"),
        bound("fb", "b", finished=True),
        bound("rb", "b"),
    ]


def test_the_guard_steps_aside_after_its_grace_and_comes_back_when_the_pod_leaves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Both nodes of a group held and labelled, a guarded pod pending on it: within the grace the
    labels stay; at its end both labels are lifted with the guard's note as reason, the pod and both
    nodes are told, the lift is counted and logged; once the pod is gone the nodes are told the guard
    is back."""
    clock = Clock(BASE)
    live, recorder = dry_books(clock, guard_grace=10.0, scaled_groups=frozenset)
    live.nodes.replace([guard_node("a"), guard_node("b")])
    live.pods.replace([*held_group(), pending()])
    assert live.reconcile(BASE) == []
    assert live.reconciler.guard_json()["groups"] == {
        "ng": {
            "state": "grace",
            "reason": "every ready node is labelled and 1 guarded pods pend on it: grace period",
            "nodes": ["a", "b"],
            "pods": ["apps/web-new"],
            "since": BASE,
        }
    }
    assert live.reconcile(BASE + 9.9) == []
    recorder.recent.clear()

    assert live.reconcile(BASE + 10) == [
        BooksDecision(LabelAction.REMOVED, "a", f"guard lifted for ng: {LIFT}"),
        BooksDecision(LabelAction.REMOVED, "b", f"guard lifted for ng: {LIFT}"),
    ]
    pod_ref = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "web-new",
        "namespace": "apps",
        "uid": "uid-web-new",
    }
    assert events(recorder) == [
        ("Normal", "BranchENIGuardSteppedAside", LIFT, pod_ref),
        ("Normal", "BranchENIGuardSteppedAside", LIFT, node_ref("a")),
        ("Normal", "BranchENIGuardSteppedAside", LIFT, node_ref("b")),
    ]
    assert (
        live.registry.get_sample_value("fitguard_branch_eni_guard_lifts_total", {"node_group": "ng"}) == 1.0
    )
    lifted = [r.__dict__ for r in caplog.records if r.getMessage() == "guard lifted"]
    assert [(r["name"], r["levelname"], r["node_group"], r["reason"]) for r in lifted] == [
        ("controller.books_reconciler", "WARNING", "ng", LIFT)
    ]
    assert live.reconciler.guard_json() == {
        "graceSeconds": 10.0,
        "groups": {
            "ng": {
                "state": "lifted",
                "reason": LIFT,
                "nodes": ["a", "b"],
                "pods": ["apps/web-new"],
                "since": BASE + 10,
            }
        },
        "nodes": {name: {"labelled": False, "reason": f"guard lifted for ng: {LIFT}"} for name in ("a", "b")},
    }

    recorder.recent.clear()
    live.pods.apply("DELETED", pending())
    live.reconcile(BASE + 11)
    back = (
        "the exhausted-node guard applies again to ng: every ready node is labelled; "
        "no guarded pod is pending for node affinity on it"
    )
    assert events(recorder) == [
        ("Normal", "BranchENIGuardRestored", back, node_ref("a")),
        ("Normal", "BranchENIGuardRestored", back, node_ref("b")),
    ]


def test_a_group_fitguard_scales_keeps_its_labels_after_the_grace() -> None:
    """With the group covered by fitguard's own scaling, the guard keeps the labels at the end of the
    grace (the group is being scaled), and nobody is told the guard stepped aside."""
    clock = Clock(BASE)
    live, recorder = dry_books(clock, guard_grace=10.0, scaled_groups=lambda: frozenset({"ng"}))
    live.nodes.replace([guard_node("a"), guard_node("b")])
    live.pods.replace([*held_group(), pending()])
    live.reconcile(BASE)
    assert live.reconcile(BASE + 10) == []
    assert live.reconciler.guard_json()["groups"]["ng"]["state"] == "scaling"
    assert [reason for _, reason, _, _ in events(recorder)] == ["BranchENIsHeld", "BranchENIsHeld"]


def test_a_pod_that_is_bound_or_a_cordoned_node_changes_what_the_guard_sees() -> None:
    """A pending pod that gets bound is no longer pending for the guard; a cordoned node with free
    branch ENIs is no candidate, so the held node is the group's last ready node: it is spared
    (cluster-autoscaler would remember its label), not labelled into a blind group."""
    clock = Clock(BASE)
    live, _ = dry_books(clock, guard_grace=10.0, scaled_groups=frozenset)
    live.nodes.replace([guard_node("a"), guard_node("b")])
    live.pods.replace([*held_group(), pending()])
    live.reconcile(BASE)
    assert live.reconciler.guard_json()["groups"]["ng"]["pods"] == ["apps/web-new"]
    live.pods.apply("MODIFIED", {**pending(), "spec": {**GUARDED_SPEC, "nodeName": "a"}})
    live.reconcile(BASE + 1)
    assert live.reconciler.guard_json()["groups"]["ng"]["pods"] == []

    two, _ = dry_books(clock, guard_grace=10.0, scaled_groups=frozenset)
    two.nodes.replace([guard_node("a"), guard_node("b")])
    two.pods.replace([*held_group(), pending("web-1"), pending("web-2")])
    two.reconcile(BASE)
    assert two.reconciler.guard_json()["groups"]["ng"]["pods"] == ["apps/web-1", "apps/web-2"]

    cordoned, _ = dry_books(clock, guard_grace=10.0, scaled_groups=frozenset)
    cordoned.nodes.replace([guard_node("a"), guard_node("b")])
    cordoned.pods.replace([bound("fa", "a", finished=True), bound("ra", "a"), pending()])
    cordoned.reconcile(BASE)
    assert cordoned.reconciler.guard_json()["groups"]["ng"]["state"] == "clear"
    cordoned.nodes.apply("MODIFIED", guard_node("b", unschedulable=True))
    spared = (
        "1 held by finished or deleted pods of 2 branch ENIs; the scheduler sees 1 free, but it is held: "
        f"none is free; not labelled: {spared_message('ng')}"
    )
    # "a" was labelled while "b" was a candidate too; alone, its label goes before it can be cached
    assert cordoned.reconcile(BASE + 1) == [BooksDecision(LabelAction.REMOVED, "a", spared)]
    assert cordoned.reconciler.guard_json()["groups"]["ng"]["state"] == "last-node"
    assert cordoned.reconciler.guard_json()["nodes"]["a"]["labelled"] is False


def test_a_deleted_node_leaves_the_books_and_its_write_is_forgotten() -> None:
    """A node deleted from the watch is no longer in the summary; back under the same name, it is
    labelled at once (the write made before it went is not remembered)."""
    clock = Clock(BASE)
    live, _ = dry_books(clock)
    live.nodes.replace([node("a")])
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    assert live.reconcile(BASE) == [BooksDecision(LabelAction.SET, "a", HELD_A)]
    live.nodes.apply("DELETED", node("a"))
    assert [row.name for row in live.books.snapshot(BASE + 1)] == []
    live.nodes.apply("ADDED", node("a"))
    assert live.reconcile(BASE + 2) == [BooksDecision(LabelAction.SET, "a", HELD_A)]


def test_the_loop_passes_until_stopped_survives_a_failed_pass_and_rereads_the_window(
    fake_kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The reconciler's run(): a pass that raises (the scaled groups unknown once) is logged and does
    not end the loop; the next passes label and tell as usual, and setting `stop` ends it. The
    books' run() reads the window from the API at each refresh, and not before the refresh period."""
    clock = Clock(BASE)
    recorder = EventRecorder(None, "books-test", clock=clock)
    calls = []

    def scaled() -> frozenset[str]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("scaled groups unknown")
        return frozenset({"ng"})

    live = books_stack(
        fake_kube.api_client(),
        clock=clock,
        recorder=recorder,
        dry_run=True,
        scaled_groups=scaled,
        reconcile_interval=0.01,
        window_refresh=0.01,
    )
    live.nodes.replace([node("a")])
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    stop = threading.Event()
    loops = [threading.Thread(target=r.run, args=(stop,), daemon=True) for r in (live.reconciler, live.books)]
    for loop in loops:
        loop.start()
    eventually(lambda: len(calls) >= 3, "passes after the failed one")
    eventually(lambda: len(fake_kube.requests.find("GET", "configmaps")) >= 2, "the window re-read")
    stop.set()
    for loop in loops:
        loop.join(30.0)
        assert not loop.is_alive()
    assert events(recorder) == [("Warning", "BranchENIsHeld", HELD_A, node_ref("a"))]
    failures = [
        r for r in caplog.records if r.name == "controller.books_reconciler" and r.levelname == "ERROR"
    ]
    assert [(r.getMessage(), str(r.exc_info[1]) if r.exc_info else "") for r in failures] == [
        ("branch ENI reconcile failed", "scaled groups unknown")
    ]

    # a refresh period longer than the test: the window is not read again
    reads = len(fake_kube.requests.find("GET", "configmaps"))
    slow = books_stack(fake_kube.api_client(), clock=clock, dry_run=True, window_refresh=1e9)
    stop = threading.Event()
    loop = threading.Thread(target=slow.books.run, args=(stop,), daemon=True)
    loop.start()
    time.sleep(0.2)  # long enough for many reads had the period been short
    stop.set()
    loop.join(30.0)
    assert len(fake_kube.requests.find("GET", "configmaps")) == reads


def test_start_lists_pods_and_nodes_in_pages_of_the_given_size_on_named_threads(
    fake_kube: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start(page_size=2): the first list of each kind asks for pages of two (from the watch cache,
    resourceVersion 0), 500 by default; the reflectors run on threads named books-nodes and
    books-pods; the books are complete once synced."""
    monkeypatch.setenv(
        "KUBE_FEATURE_WatchListClient", "false"
    )  # paged lists, as tests/controller/test_books.py
    for name in ("a", "b", "c"):
        fake_kube.create(node(name))
        fake_kube.create(pod(f"w-{name}", name))
    live = books_stack(fake_kube.api_client(), window=1000.0, dry_run=True)
    live.start(page_size=2)
    try:
        assert live.wait_synced(30.0)
        threads = {thread.name for thread in threading.enumerate()}
        assert {"books-nodes", "books-pods"} <= threads
        for path in ("/api/v1/nodes", "/api/v1/pods"):
            lists = [r.query for r in fake_kube.requests.find("GET", path, watch=False) if r.path == path]
            assert lists == [{"resourceVersion": "0", "limit": "2"}]
        assert sorted((row.name, row.in_use) for row in live.books.snapshot()) == [
            ("a", 1),
            ("b", 1),
            ("c", 1),
        ]
    finally:
        live.stop()
    fake_kube.requests.clear()
    default = books_stack(fake_kube.api_client(), window=1000.0, dry_run=True).start()
    try:
        assert default.wait_synced(30.0)
        lists = [r.query for r in fake_kube.requests.find("GET", "/api/v1/pods", watch=False)]
        assert lists == [{"resourceVersion": "0", "limit": "500"}]
    finally:
        default.stop()


@pytest.mark.parametrize(("release", "held"), [("cooldown", (0, 1, ())), ("on-delete", (1, 0, ("j1",)))])
def test_the_release_model_reaches_the_books(release: str, held: tuple[int, int, tuple[str, ...]]) -> None:
    """A pod finished 105 s before a 40 s window ends: released under the cooldown model, still held
    (by that pod, nothing free) under on-delete until the pod is deleted."""
    clock = Clock(BASE)
    live, _ = dry_books(clock, window=40.0, release=release)
    live.nodes.replace([node("a")])
    live.pods.replace([pod("j1", "a", phase="Succeeded", finished=BASE - 5), pod("w1", "a"), pod("w2", "a")])
    [row] = live.books.snapshot(BASE + 100)
    assert (row.held, row.true_free, tuple(row.held_by)) == held
