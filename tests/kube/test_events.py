"""Event recording: created once then a series, rate limits, refusals that never raise, dry run."""

from __future__ import annotations

from typing import Any

import pytest

from kube.client import KubeClient
from kube.events import EventRecorder, ObjectRef
from kube.options import EventOptions
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.objects import Clock

NODE = ObjectRef(kind="Node", name="ip-10-0-0-1", uid="u-1")
POD = ObjectRef(kind="Pod", name="job-a-x7k2", namespace="batch", uid="u-2")


def recorder(fake: FakeKubeServer, clock: Clock, **options: Any) -> EventRecorder:
    return EventRecorder(KubeClient(fake.api_client()), "fitguard-0", EventOptions(**options), clock=clock)


@pytest.mark.slow
def test_first_occurrence_creates_repeats_become_a_series(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock)
    for i in range(3):
        events.warning(NODE, "BranchENIsHeld", f"3 of 9 branch ENIs are held ({i})")
        clock.now += 10
    stored = fake_kube.objects("Event", "default", api_version="events.k8s.io/v1")
    assert len(stored) == 1
    event = stored[0]
    assert event["series"]["count"] == 3
    assert event["series"]["lastObservedTime"].startswith("2023-11-14T22:13:40.")
    assert event["reportingController"] == "fitguard.io/controller"
    assert event["reportingInstance"] == "fitguard-0"
    assert event["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "ip-10-0-0-1", "uid": "u-1"}
    assert (event["type"], event["reason"], event["action"]) == ("Warning", "BranchENIsHeld", "Reconcile")
    assert event["note"].endswith("(0)")  # the first occurrence's note: the key ignores notes
    assert len(fake_kube.requests.find("POST", "/events")) == 1
    assert len(fake_kube.requests.find("PATCH", "/events")) == 2
    assert (events.stats.created, events.stats.series_updates) == (1, 2)


@pytest.mark.slow
def test_a_repeat_after_the_window_starts_a_new_event(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock, window=60.0)
    events.normal(POD, "Waiting", "waits for a branch ENI")
    clock.now += 61
    events.normal(POD, "Waiting", "waits for a branch ENI")
    stored = fake_kube.objects("Event", "batch", api_version="events.k8s.io/v1")
    assert len(stored) == 2
    assert all("series" not in event for event in stored)


@pytest.mark.slow
def test_series_patch_of_a_vanished_event_recreates_it(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock)
    events.normal(POD, "Waiting", "waits")
    (first,) = fake_kube.objects("Event", "batch", api_version="events.k8s.io/v1")
    fake_kube.delete("Event", first["metadata"]["name"], "batch", api_version="events.k8s.io/v1")
    events.normal(POD, "Waiting", "waits")
    (again,) = fake_kube.objects("Event", "batch", api_version="events.k8s.io/v1")
    assert again["series"]["count"] == 2


@pytest.mark.slow
def test_per_object_rate_limit_keeps_other_objects_going(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock, per_object_burst=2, per_object_rate=1 / 300)
    for i in range(5):
        events.normal(NODE, f"Reason{i}", "note")
    events.normal(POD, "Waiting", "note")
    assert len(fake_kube.objects("Event", "default", api_version="events.k8s.io/v1")) == 2
    assert len(fake_kube.objects("Event", "batch", api_version="events.k8s.io/v1")) == 1
    assert events.stats.rate_limited == 3
    clock.now += 300  # one token back
    events.normal(NODE, "Reason4", "note")
    assert len(fake_kube.objects("Event", "default", api_version="events.k8s.io/v1")) == 3


@pytest.mark.slow
def test_overall_rate_limit(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock, burst=3, rate=0.001)
    for i in range(6):
        events.normal(ObjectRef(kind="Node", name=f"n{i}"), "Reason", "note")
    assert events.stats.created == 3
    assert events.stats.rate_limited == 3


@pytest.mark.slow
def test_rate_limited_series_counts_are_kept_and_flushed(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock, per_object_burst=2, per_object_rate=1 / 60)
    for _ in range(4):
        events.normal(NODE, "Held", "note")
    (event,) = fake_kube.objects("Event", "default", api_version="events.k8s.io/v1")
    assert event["series"]["count"] == 2  # create, one patch, then two held back
    clock.now += 60
    events.flush()
    (event,) = fake_kube.objects("Event", "default", api_version="events.k8s.io/v1")
    assert event["series"]["count"] == 4


@pytest.mark.slow
def test_api_refusal_and_outage_never_raise(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    clock = Clock(1_700_000_000.0)
    events = recorder(fake_kube, clock)
    fake_kube.faults.fail(403, path="/events")
    events.warning(NODE, "Held", "note")
    assert events.stats.failed == 1
    fake_kube.stop_listening()
    events.warning(POD, "Waiting", "note")
    assert events.stats.failed == 2
    assert events.stats.created == 0


def test_dry_run_sends_nothing_and_keeps_what_it_would_have_sent() -> None:
    clock = Clock(1_700_000_000.0)
    events = EventRecorder(None, "fitguard-0", clock=clock)
    events.warning(NODE, "Held", "3 held")
    clock.now += 1
    events.warning(NODE, "Held", "3 held")
    assert [entry["verb"] for entry in events.recent] == ["create", "patch"]
    created = events.recent[0]["event"]
    assert created["metadata"]["namespace"] == "default"  # cluster-scoped objects' events
    assert created["eventTime"] == "2023-11-14T22:13:20.000000Z"
    assert events.recent[1]["event"]["series"]["count"] == 2
    assert all(entry["dryRun"] for entry in events.recent)
