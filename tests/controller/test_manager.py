"""The manager (controller/manager.py) runs each runnable where controller-runtime would: one that
does not need the lease on every replica from the start, one that does only on the replica holding
the Lease, and only after the cache's first lists; a replica that takes the lease over starts its
leader runnables then. The real kube client against the fake API server (a thread of the test)."""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

import pytest

from cmdline.statushttp import StatusPort, StatusRoutes
from controller import manager as manager_module
from controller.cache import CacheOptions, ClusterCache
from controller.manager import Manager
from kube.client import as_kube_client
from kube.options import LeaderOptions
from tests.waiting import eventually

NAMESPACE = "fitguard-system"


class Probe:
    """A runnable that records when it started and whether the cache had listed by then."""

    def __init__(self, name: str, needs_leader: bool, cache: ClusterCache) -> None:
        self.name, self.needs_leader, self.cache = name, needs_leader, cache
        self.started = threading.Event()
        self.synced_at_start: bool | None = None
        self.thread: tuple[str, bool] | None = None  # the name and daemon flag of its thread
        self.stop: threading.Event | None = None  # the event it was given

    def run(self, stop: threading.Event) -> None:
        self.synced_at_start = not self.cache.waiting_for()
        self.thread = (threading.current_thread().name, threading.current_thread().daemon)
        self.stop = stop
        self.started.set()
        stop.wait()


def replica(fake_kube: Any, leadership: LeaderOptions | None) -> tuple[Manager, Probe, Probe]:
    cache = ClusterCache(CacheOptions(autoscaler_selector=""))
    routes = StatusRoutes(waiting=cache.waiting_for, metrics=lambda: (b"", "text/plain"))
    status = StatusPort(routes, logging.getLogger("test"), bind="127.0.0.1:0")
    manager = Manager(as_kube_client(fake_kube.api_client()), cache, leadership, status)
    everywhere = Probe("books", needs_leader=False, cache=cache)
    leader_only = Probe("discovery", needs_leader=True, cache=cache)
    manager.add(everywhere)
    manager.add(leader_only)
    return manager, everywhere, leader_only


def test_without_leader_election_every_runnable_runs_after_the_first_lists(
    fake_kube: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leadership off: this replica leads; the leader's runnable starts once every store listed,
    though the pod list is held a second (paged lists, so the held request is that list)."""
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "false")
    fake_kube.faults.delay(1.0, method="GET", path="/api/v1/pods", watch=False)
    manager, everywhere, leader_only = replica(fake_kube, None)
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    try:
        eventually(leader_only.started.is_set, "the leader's runnable started")
        assert everywhere.started.is_set() and manager.is_leader()
        assert leader_only.synced_at_start is True
    finally:
        stop.set()
        thread.join(30.0)
    assert not thread.is_alive(), "stop ends the manager"


def test_a_follower_runs_only_what_needs_no_lease_until_it_takes_the_lease_over(fake_kube: Any) -> None:
    """Two replicas with leader election: both run the books; only the lease holder runs discovery;
    once the holder stops (its lease left to expire), the other starts its discovery."""
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    leadership = LeaderOptions(namespace=NAMESPACE, lease_duration=1.0, renew_deadline=0.8, retry_period=0.2)
    first = replica(fake_kube, leadership)
    first[0].elector._exit = lambda code: None  # type: ignore[union-attr]  # the test process stays
    stops = [threading.Event(), threading.Event()]
    threading.Thread(target=first[0].run, args=(stops[0],), daemon=True).start()
    eventually(first[2].started.is_set, "the first replica leads")
    second = replica(fake_kube, leadership)
    second[0].elector._exit = lambda code: None  # type: ignore[union-attr]
    threading.Thread(target=second[0].run, args=(stops[1],), daemon=True).start()
    try:
        eventually(second[1].started.is_set, "the follower runs its books")
        assert not second[2].started.is_set() and not second[0].is_leader()
        stops[0].set()
        eventually(second[2].started.is_set, "the follower took the lease over and runs discovery")
        assert second[2].synced_at_start is True
    finally:
        for stop in stops:
            stop.set()


def test_each_runnable_has_its_own_named_thread_and_stop_leaves_nothing_running(
    fake_kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Each runnable runs on a daemon thread named after it (a hung one never holds the process);
    the leader says it leads, with its identity; once `run` returns, no thread it started is left:
    the status port, the cache's reflectors and the runnables have stopped."""
    before = set(threading.enumerate())
    manager, everywhere, leader_only = replica(fake_kube, None)
    stop = threading.Event()
    # not a daemon itself: a runnable's thread is a daemon because the manager makes it one
    thread = threading.Thread(target=manager.run, args=(stop,))
    with caplog.at_level(logging.INFO, logger="controller.manager"):
        thread.start()
        try:
            eventually(leader_only.started.is_set, "the leader's runnable started")
            assert (everywhere.thread, leader_only.thread) == (("books", True), ("discovery", True))
            assert everywhere.stop is stop and leader_only.stop is stop
        finally:
            stop.set()
            thread.join(30.0)
    said = [(r.getMessage(), r.identity) for r in caplog.records if r.name == "controller.manager"]  # type: ignore[attr-defined]
    assert said == [("leading", manager.identity)]
    eventually(lambda: not set(threading.enumerate()) - before, "every thread of the manager ended")
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", manager.status.port), timeout=5.0).close()


def test_a_leader_whose_stores_have_not_listed_in_time_leads_anyway_and_says_so(
    fake_kube: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The first lists waited for at most FIRST_SYNC seconds: past it (the pod list held), the
    leader's runnables start all the same, with a warning naming the stores still waiting."""
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "false")
    monkeypatch.setattr(manager_module, "FIRST_SYNC", 0.5)
    fake_kube.faults.delay(3.0, method="GET", path="/api/v1/pods", watch=False)
    manager, _, leader_only = replica(fake_kube, None)
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    with caplog.at_level(logging.WARNING, logger="controller.manager"):
        thread.start()
        try:
            eventually(leader_only.started.is_set, "the leader's runnable started")
            assert leader_only.synced_at_start is False
        finally:
            stop.set()
            thread.join(30.0)
    warnings = [(r.getMessage(), r.waiting) for r in caplog.records if r.name == "controller.manager"]  # type: ignore[attr-defined]
    # the held pod list at least (another store may be slow too on a busy machine)
    assert [message for message, _ in warnings] == ["leading before every store listed"]
    assert "pods" in warnings[0][1]


def test_a_leader_that_loses_the_lease_ends_the_process(fake_kube: Any) -> None:
    """With leader election the elector is told to exit on a lost lease (as client-go's leaders
    do), whatever the options said; it competes for the Lease under the manager's identity."""
    leadership = LeaderOptions(namespace=NAMESPACE, exit_on_loss=False)
    manager, _, _ = replica(fake_kube, leadership)
    assert manager.elector is not None
    assert (manager.elector.exit_on_loss, manager.elector.identity) == (True, manager.identity)
