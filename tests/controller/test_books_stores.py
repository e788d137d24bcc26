"""controller/books.py, the books every replica keeps from the cache's listeners: when they last
changed (the books-age gauge), which unschedulable pod-eni pods the guard is given and how a pod
that cannot be read is told, what a deletion takes out, and the fields the window read logs."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from capacity.guard import PendingPod
from controller.books import Books
from controller.cache import CacheOptions, ClusterCache
from controller.settings import BooksOptions
from tests.controller.test_books_reconciler import BASE, node, pod
from tests.objects import Clock

POD_ENI = "vpc.amazonaws.com/pod-eni"


def books(clock: Clock, **options: Any) -> tuple[Books, ClusterCache]:
    cache = ClusterCache(CacheOptions(autoscaler_selector=""))
    return Books(cache, BooksOptions(window=100.0, **options), clock), cache


def unschedulable(name: str, message: str = "0/3 nodes are available", **spec: Any) -> dict[str, Any]:
    """An unbound pod the scheduler could not place that asks for one branch ENI."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    if message:
        condition["message"] = message
    container = {"name": "main", "resources": {"requests": {POD_ENI: "1"}, "limits": {POD_ENI: "1"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}"},
        "spec": {"containers": [container], **spec},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


def test_the_books_age_is_the_time_of_the_last_pod_or_node_event() -> None:
    """last_event: 0 before any event; the clock's time at a pod event and at a node event."""
    clock = Clock(BASE)
    live, cache = books(clock)
    assert live.last_event == 0.0
    cache.nodes.replace([node("a")])
    assert live.last_event == BASE
    clock.now = BASE + 7
    cache.pods.apply("ADDED", pod("w1", "a"))
    assert live.last_event == BASE + 7
    clock.now = BASE + 9
    cache.nodes.apply("DELETED", node("a"))
    assert live.last_event == BASE + 9


def test_the_guard_is_given_each_unschedulable_pod_eni_pod_until_it_is_bound_or_deleted() -> None:
    """pending(): whole PendingPods, the scheduler's message kept (its reason when it gave none); a pod
    bound by a later event, or deleted, leaves the list."""
    clock = Clock(BASE)
    live, cache = books(clock)
    cache.nodes.replace([node("a")])
    cache.pods.replace([unschedulable("p1"), unschedulable("p2", message="")])
    found = {p.name: p for p in live.pending()}
    assert sorted(found) == ["p1", "p2"]
    assert all(isinstance(p, PendingPod) for p in found.values())
    assert (found["p1"].message, found["p2"].message) == ("0/3 nodes are available", "Unschedulable")
    assert (found["p1"].namespace, found["p1"].uid) == ("apps", "uid-p1")
    bound = unschedulable("p1")
    bound["spec"]["nodeName"] = "a"
    cache.pods.apply("MODIFIED", bound)
    assert [p.name for p in live.pending()] == ["p2"]
    cache.pods.apply("DELETED", unschedulable("p2", message=""))
    assert live.pending() == []


def test_a_pending_pod_the_guard_cannot_read_is_logged_and_left_out(caplog: pytest.LogCaptureFixture) -> None:
    """A pod whose placement the guard cannot read (a node affinity that is not a map) is not
    guarded for, with one warning naming it and the error; the readable one still is."""
    caplog.set_level(logging.WARNING, logger="controller.books")
    live, cache = books(Clock(BASE))
    cache.pods.replace([unschedulable("odd", affinity={"nodeAffinity": ["x"]}), unschedulable("fine")])
    assert [p.name for p in live.pending()] == ["fine"]
    warned = [r for r in caplog.records if r.name == "controller.books"]
    assert [(r.getMessage(), r.__dict__["pod"]) for r in warned] == [
        ("pending pod unreadable, not guarded for", "odd")
    ]
    assert warned[0].__dict__["error"]


def test_the_window_read_logs_the_value_it_could_not_read() -> None:
    """An unreadable branch-eni-cooldown is logged with the value as found in the ConfigMap."""
    cache = ClusterCache(CacheOptions(autoscaler_selector=""))
    configmap = {
        "kind": "ConfigMap",
        "metadata": {"namespace": "kube-system", "name": "amazon-vpc-cni"},
        "data": {"branch-eni-cooldown": "soon"},
    }
    live = Books(cache, BooksOptions(), Clock(BASE))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("controller.books")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        cache.fill({"ConfigMap": [configmap]})
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    unreadable = [r for r in records if r.getMessage() == "branch-eni-cooldown absent or unreadable"]
    assert [(r.__dict__["value"], r.__dict__["keeping"]) for r in unreadable] == [("soon", None)]
    assert live.window == 90.0  # the default cooldown (60 s) and the processing period (30 s)
