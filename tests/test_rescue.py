"""Rescue and reclaim delete only what they may, through the fake API server, with uid and
resourceVersion preconditions: a pod that changed since it was seen is left alone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from capacity.branch_eni import ON_DELETE
from capacity.resources import POD_ENI
from cmdline.durations import parse_duration
from controller.rescue import Deletion, carry_out, reclaim_candidates, rescue_candidates
from kube.events import EventRecorder, ObjectRef

NOW = 1_700_000_000.0
WINDOW = 90.0
ENI = '[{"eniId": "eni-1", "ifAddress": "02:00", "privateIp": "10.0.0.5", "vlanId": 1}]'


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    *,
    node: str = "n1",
    owner: str | None = "ReplicaSet",
    phase: str = "Pending",
    scheduled: float | None = None,
    eni: bool = False,
    started: bool = False,
    keep: bool = False,
    finished: float | None = None,
) -> dict[str, Any]:
    """A pod scheduled 300 s before NOW, or a minute before it `finished` (a terminal pod's latest
    status time is its finish: capacity/pod_status.py released_at)."""
    if scheduled is None:
        scheduled = NOW - 300 if finished is None else finished - 60
    meta: dict[str, Any] = {"namespace": "default", "name": name, "labels": {}}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1" if owner != "Job" else "batch/v1",
                "kind": owner,
                "name": f"{name}-owner",
                "uid": f"uid-{name}-owner",
                "controller": True,
            }
        ]
    if keep:
        meta["labels"]["fitguard.io/keep"] = "true"
    if eni:
        meta["annotations"] = {"vpc.amazonaws.com/pod-eni": ENI}
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(scheduled)}],
    }
    if started:
        status["containerStatuses"] = [
            {"name": "c", "state": {"running": {"startedAt": stamp(scheduled + 5)}}}
        ]
    if finished is not None:
        status["containerStatuses"] = [
            {"name": "c", "state": {"terminated": {"exitCode": 0, "finishedAt": stamp(finished)}}}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {POD_ENI: "1"}}}],
        },
        "status": status,
    }


def names(fake_kube: Any) -> set[str]:
    return {p["metadata"]["name"] for p in fake_kube.objects("Pod", "default")}


def test_rescue_deletes_only_a_controller_owned_never_started_pod_waiting_past_the_window(
    fake_kube: Any,
) -> None:
    for obj in (
        pod("stuck"),  # waiting 300 s, never started, ReplicaSet: rescued
        pod("fresh", scheduled=NOW - 30),  # within the window
        pod("started", started=True),
        pod("kept", keep=True),
        pod("bare", owner=None),
        pod("daemon", owner="DaemonSet"),
        pod("served", eni=True, phase="Running", started=True),
    ):
        fake_kube.create(obj)
    seen = fake_kube.objects("Pod", "default")

    chosen = rescue_candidates(seen, now=NOW, window=WINDOW)
    assert [d.name for d in chosen] == ["stuck"]
    recorder = EventRecorder(fake_kube.api_client(), "test")
    results = carry_out(fake_kube.api_client(), chosen, recorder)

    assert [r["outcome"] for r in results] == ["deleted"]
    assert names(fake_kube) == {"fresh", "started", "kept", "bare", "daemon", "served"}
    [event] = [
        e
        for e in fake_kube.objects("Event", api_version="events.k8s.io/v1")
        if e["reason"] == "RescuedWaitingPod"
    ]
    assert "past the 90 s release window" in event["note"] and event["regarding"]["name"] == "stuck"


def test_a_pod_changed_since_it_was_seen_is_left_alone(fake_kube: Any) -> None:
    fake_kube.create(pod("stuck"))
    chosen = rescue_candidates(fake_kube.objects("Pod", "default"), now=NOW, window=WINDOW)
    fake_kube.patch("Pod", "stuck", {"metadata": {"labels": {"touched": "yes"}}}, "default")

    results = carry_out(fake_kube.api_client(), chosen)

    assert results[0]["outcome"] == "changed since seen: left alone"
    assert names(fake_kube) == {"stuck"}


def test_dry_run_deletes_nothing(fake_kube: Any) -> None:
    fake_kube.create(pod("stuck"))
    chosen = rescue_candidates(fake_kube.objects("Pod", "default"), now=NOW, window=WINDOW)
    assert carry_out(fake_kube.api_client(), chosen, dry_run=True)[0]["outcome"] == "planned"
    assert names(fake_kube) == {"stuck"}


def test_reclaim_deletes_the_oldest_finished_holders_a_waiting_pod_needs(fake_kube: Any) -> None:
    for obj in (
        pod("waiting", started=False, scheduled=NOW - 120),  # needs one branch ENI on n1
        pod("job-old", owner="Job", phase="Succeeded", eni=True, finished=NOW - 600),
        pod("job-new", owner="Job", phase="Succeeded", eni=True, finished=NOW - 400),
        pod("job-recent", owner="Job", phase="Succeeded", eni=True, finished=NOW - 10),
        pod("rs-done", owner="ReplicaSet", phase="Failed", eni=True, finished=NOW - 900),
        pod("kept", owner="Job", phase="Succeeded", eni=True, finished=NOW - 950, keep=True),
        pod("elsewhere", node="n2", owner="Job", phase="Succeeded", eni=True, finished=NOW - 999),
    ):
        fake_kube.create(obj)
    seen = fake_kube.objects("Pod", "default")

    chosen = reclaim_candidates(
        seen, now=NOW, after=300.0, window=WINDOW, waiting_grace=30.0, release=ON_DELETE
    )
    assert [d.name for d in chosen] == ["job-old"]
    recorder = EventRecorder(fake_kube.api_client(), "test")
    assert [r["outcome"] for r in carry_out(fake_kube.api_client(), chosen, recorder)] == ["deleted"]

    assert "job-old" not in names(fake_kube) and {"job-new", "rs-done", "kept", "elsewhere"} <= names(
        fake_kube
    )
    [event] = [
        e
        for e in fake_kube.objects("Event", api_version="events.k8s.io/v1")
        if e["reason"] == "ReclaimedBranchEni"
    ]
    assert event["regarding"]["kind"] == "Job" and event["regarding"]["name"] == "job-old-owner"


def test_reclaim_leaves_pods_whose_eni_the_cooldown_already_released(fake_kube: Any) -> None:
    """Cooldown model: finished 600 s ago, its branch ENI was released 510 s ago: deleting frees nothing."""
    fake_kube.create(pod("waiting", scheduled=NOW - 120))
    fake_kube.create(pod("job-old", owner="Job", phase="Succeeded", eni=True, finished=NOW - 600))
    seen = fake_kube.objects("Pod", "default")
    assert reclaim_candidates(seen, now=NOW, after=60.0, window=WINDOW, waiting_grace=30.0) == []
    held = reclaim_candidates(seen, now=NOW, after=60.0, window=900.0, waiting_grace=30.0)
    assert [d.name for d in held] == ["job-old"]


def test_no_waiting_pod_no_reclaim(fake_kube: Any) -> None:
    fake_kube.create(pod("job-old", owner="Job", phase="Succeeded", eni=True, finished=NOW - 600))
    seen = fake_kube.objects("Pod", "default")
    assert (
        reclaim_candidates(seen, now=NOW, after=60.0, window=WINDOW, waiting_grace=30.0, release=ON_DELETE)
        == []
    )


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("45", 45.0)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_bad_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("5 minutes")


def test_pods_on_node_reads_fresh_pods_of_that_node_only(fake_kube: Any) -> None:
    from controller.rescue import pods_on_node

    fake_kube.create(pod("here"))
    fake_kube.create(pod("there", node="n2"))
    [found] = pods_on_node(fake_kube.api_client(), "n1")
    assert found["metadata"]["name"] == "here" and found["metadata"]["resourceVersion"]


def test_carry_out_sends_whole_preconditions_and_answers_whole_lines_and_events(
    fake_kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Each deletion is one DELETE of the pod in its own namespace with the uid and resourceVersion
    seen as preconditions, and one whole result line: deleted, gone (404), changed since seen (409)
    or failed (any other refusal, the error quoted). Only a deletion made writes an Event: a rescue a
    Warning on the pod, a reclaim a Normal on its owner, or on the node when it has none (the note
    then names the pod with its namespace). Each deletion is logged on one line."""
    for name in ("stuck", "job-done", "bare", "changed", "forbidden"):
        fake_kube.create({**pod(name), "metadata": {"namespace": "team", "name": name}})
    seen = {p["metadata"]["name"]: p["metadata"] for p in fake_kube.objects("Pod", "team")}
    job = ObjectRef("Job", "job-done-owner", "team", "uid-job", "batch/v1")

    def deletion(action: str, name: str, owner: ObjectRef | None = None, rv: str = "") -> Deletion:
        meta = seen.get(name, {"uid": f"uid-{name}", "resourceVersion": "7"})
        why = f"why {name}"
        return Deletion(action, "team", name, meta["uid"], rv or meta["resourceVersion"], "n1", why, owner)

    deletions = [
        deletion("rescue", "stuck"),
        deletion("reclaim", "job-done", job),
        deletion("reclaim", "bare"),
        deletion("reclaim", "vanished", job),
        deletion("rescue", "changed", rv="1"),
        deletion("rescue", "forbidden"),
    ]
    fake_kube.faults.fail(403, method="DELETE", path="/pods/forbidden")
    recorder = EventRecorder(fake_kube.api_client(), "test", clock=lambda: NOW)
    fake_kube.requests.clear()
    caplog.set_level("INFO", logger="controller.rescue")

    results = carry_out(fake_kube.api_client(), deletions, recorder)

    [forbidden] = [r for r in results if r["pod"] == "team/forbidden"]
    failure = forbidden["outcome"]
    assert failure.startswith("failed: ") and "403" in failure
    outcomes = ["deleted", "deleted", "deleted", "gone", "changed since seen: left alone", failure]
    assert results == [
        {"action": d.action, "pod": f"team/{d.name}", "node": "n1", "outcome": outcome, "why": d.why}
        for d, outcome in zip(deletions, outcomes, strict=True)
    ]
    options = {"apiVersion": "v1", "kind": "DeleteOptions"}
    assert [(r.path, r.body) for r in fake_kube.requests.find("DELETE")] == [
        (
            f"/api/v1/namespaces/team/pods/{d.name}",
            {**options, "preconditions": {"uid": d.uid, "resourceVersion": d.resource_version}},
        )
        for d in deletions
    ]
    assert sorted(p["metadata"]["name"] for p in fake_kube.objects("Pod", "team")) == [
        "changed",
        "forbidden",
    ]
    stuck_uid = deletions[0].uid

    def event(n: int, regarding: dict[str, str], kind: str, reason: str, note: str) -> dict[str, Any]:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{regarding['name']}.17979cfe362a0000{n}", "namespace": "team"},
            "eventTime": "2023-11-14T22:13:20.000000Z",
            "reportingController": "fitguard.io/controller",
            "reportingInstance": "test",
            "action": "Delete",
            "reason": reason,
            "note": note,
            "type": kind,
            "regarding": regarding,
        }

    node_event = event(
        3,
        {"apiVersion": "v1", "kind": "Node", "name": "n1"},
        "Normal",
        "ReclaimedBranchEni",
        "deleted pod team/bare: why bare",
    )
    node_event["metadata"]["namespace"] = "default"
    assert [r.body for r in fake_kube.requests.find("POST", "/events")] == [
        event(
            1,
            {"apiVersion": "v1", "kind": "Pod", "name": "stuck", "namespace": "team", "uid": stuck_uid},
            "Warning",
            "RescuedWaitingPod",
            "deleted pod: why stuck",
        ),
        event(
            2,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "job-done-owner",
                "namespace": "team",
                "uid": "uid-job",
            },
            "Normal",
            "ReclaimedBranchEni",
            "deleted pod job-done: why job-done",
        ),
        node_event,
    ]
    assert [r.getMessage() for r in caplog.records if r.name == "controller.rescue"] == [
        f"{d.action} team/{d.name}: {outcome} (why {d.name})"
        for d, outcome in zip(deletions, outcomes, strict=True)
    ]
