"""Lease leader election against the fake API server: one leader, takeover, deadline, release."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from kube.client import KubeClient
from kube.leader import LeaderCallbacks, LeaderElector
from kube.options import LeaderOptions
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.waiting import eventually

FAST = {"lease_duration": 2.0, "renew_deadline": 1.0, "retry_period": 0.1}


class Calls:
    def __init__(self) -> None:
        self.started: list[threading.Event] = []
        self.stopped = 0
        self.exits: list[int] = []

    def on_started(self, stop: threading.Event) -> None:
        self.started.append(stop)

    def on_stopped(self) -> None:
        self.stopped += 1


@pytest.fixture
def elector(fake_kube: FakeKubeServer) -> Iterator[Callable[..., tuple[LeaderElector, Calls]]]:  # noqa: F811
    made: list[LeaderElector] = []

    def build(identity: str, **options: Any) -> tuple[LeaderElector, Calls]:
        calls = Calls()
        elector = LeaderElector(
            KubeClient(fake_kube.api_client()),
            LeaderOptions(name="fitguard-controller", namespace="kube-system", **{**FAST, **options}),
            LeaderCallbacks(on_started_leading=calls.on_started, on_stopped_leading=calls.on_stopped),
            identity=identity,
        )
        elector._exit = calls.exits.append  # what os._exit would have been called with
        made.append(elector)
        return elector, calls

    yield build
    for each in made:
        each.stop(release=False, timeout=2.0)


def renewed_at(fake: FakeKubeServer) -> datetime:
    """The lease's renewTime as its holder wrote it (MicroTime, RFC 3339 with microseconds)."""
    return datetime.fromisoformat(lease(fake)["spec"]["renewTime"])


def lease(fake: FakeKubeServer) -> dict[str, Any]:
    return fake.get("Lease", "fitguard-controller", "kube-system", api_version="coordination.k8s.io/v1")


@pytest.mark.slow
def test_one_leader_and_the_other_takes_over_when_it_stops_renewing(
    fake_kube: FakeKubeServer,  # noqa: F811
    elector,
) -> None:
    a, a_calls = elector("a")
    b, b_calls = elector("b")
    a.start()
    eventually(a.is_leader)
    eventually(lambda: len(a_calls.started) == 1)
    b.start()
    eventually(lambda: b.observed_holder == "a")
    # not a sleep: wait until a's renewals span more than a lease duration after b saw it lead,
    # long enough for b to have taken a lease it wrongly judged expired
    seen = renewed_at(fake_kube)
    eventually(lambda: (renewed_at(fake_kube) - seen).total_seconds() > FAST["lease_duration"])
    assert a.is_leader() and not b.is_leader()
    assert b.observed_holder == "a"
    a.stop(release=False)  # a vanishes without freeing the lease: b must wait for it to expire
    assert not a.is_leader()
    assert a_calls.stopped == 1 and a_calls.started[0].is_set()
    eventually(b.is_leader)
    spec = lease(fake_kube)["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 2
    eventually(lambda: len(b_calls.started) == 1)  # the leader's work runs in its own thread
    assert not b_calls.started[0].is_set()


@pytest.mark.slow
def test_is_leader_turns_false_at_the_renew_deadline_while_the_api_hangs(
    fake_kube: FakeKubeServer,  # noqa: F811
    elector,
) -> None:
    a, calls = elector("a", exit_on_loss=True)
    a.start()
    eventually(a.is_leader)
    eventually(lambda: len(calls.started) == 1)
    # every lease call now hangs until the test ends (the fake ends a delay when it closes): no
    # answer ever comes, so only a's renew deadline can turn is_leader false; no time is asserted
    fake_kube.faults.delay(600.0, path="/leases", count=None)
    eventually(lambda: not a.is_leader())
    eventually(lambda: calls.stopped == 1)
    assert calls.started[0].is_set()  # the leader's work was told to stop
    assert calls.exits == [1]  # and the process would have exited
    fake_kube.faults.clear()


@pytest.mark.slow
def test_clean_stop_releases_the_lease_for_a_quick_takeover(
    fake_kube: FakeKubeServer,  # noqa: F811
    elector,
) -> None:
    a, calls = elector("a", exit_on_loss=True)
    a.start()
    eventually(a.is_leader)
    a.stop()
    spec = lease(fake_kube)["spec"]
    assert not spec.get("holderIdentity")
    assert spec["leaseDurationSeconds"] == 1
    assert calls.exits == []  # a clean shutdown is not a loss
    b, _ = elector("b", lease_duration=30.0, renew_deadline=20.0)
    fake_kube.requests.clear()
    b.start()
    eventually(b.is_leader)
    # released, not merely left to expire: b's first look finds it free and its first write takes
    # it (an unreleased lease would make b read it again and again until a's 2 s ran out)
    assert [r.method for r in fake_kube.requests.find(path="/leases")][:2] == ["GET", "PUT"]
    assert lease(fake_kube)["spec"]["leaseTransitions"] == 1


@pytest.mark.slow
def test_a_leader_whose_lease_is_taken_stops_at_once(fake_kube: FakeKubeServer, elector) -> None:  # noqa: F811
    a, calls = elector("a")
    a.start()
    eventually(a.is_leader)
    fake_kube.patch(
        "Lease",
        "fitguard-controller",
        {"spec": {"holderIdentity": "intruder"}},
        "kube-system",
        api_version="coordination.k8s.io/v1",
    )
    eventually(lambda: calls.stopped == 1)
    assert not a.is_leader()


def test_durations_must_nest() -> None:
    """Settings whose lease is no longer than the renew deadline, or whose deadline is within the
    retry period, are refused when they are made, before any elector campaigns with them."""
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaderOptions(lease_duration=5, renew_deadline=5, retry_period=1)
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaderOptions(lease_duration=5, renew_deadline=1, retry_period=1)
    assert LeaderOptions(lease_duration=5, renew_deadline=2, retry_period=1).renew_deadline == 2
