"""Rescue and reclaim delete only what they may, through the fake API server, with uid and
resourceVersion preconditions: a pod that changed since it was seen is left alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capacity.branch_eni import COOLDOWN, ON_DELETE
from capacity.resources import POD_ENI
from cmdline.durations import parse_duration
from controller.rescue import Deletion, carry_out, reclaim_candidates, rescue_candidates
from kube.events import EventRecorder, ObjectRef
from tests import objects
from tests.objects import rfc3339 as stamp

NOW = 1_700_000_000.0
WINDOW = 90.0
ENI = '[{"eniId": "eni-1", "ifAddress": "02:00", "privateIp": "10.0.0.5", "vlanId": 1}]'


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
    meta: dict[str, Any] = {}
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
    return objects.pod(
        name,
        {POD_ENI: "1"},
        image="busybox",
        node=node,
        labels={"fitguard.io/keep": "true"} if keep else {},
        annotations={POD_ENI: ENI} if eni else None,
        meta=meta,
        phase=phase,
        scheduled=scheduled,
        started=scheduled + 5 if started else None,
        finished=finished,
    )


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


# --------------------------------------------------------------------------------------------------
# controller/rescue.py's decisions in process, as whole Deletion lists: which waiting pods rescue
# deletes (past the release window, owned by a controller that replaces them elsewhere, never
# started, not kept), which finished pods reclaim deletes (oldest first, only as many branch ENIs as
# the pods waiting past the grace on that node need), and the whole result lines of a dry run. The
# deletions themselves, with their preconditions and events, are proved against the fake API server
# by the tests above.
# `listed_pod` differs from `pod` above: it takes a namespace, an owner that is not a controller, a
# creation time and a count of branch ENIs, which these decisions read.


def enis(count: int) -> str:
    return json.dumps(
        [
            {"eniId": f"eni-{i}", "ifAddress": f"02:0{i}", "privateIp": f"10.0.0.{i}", "vlanId": i}
            for i in range(1, count + 1)
        ]
    )


def listed_pod(
    name: str,
    *,
    node: str = "n1",
    namespace: str = "default",
    owner: str | None = "ReplicaSet",
    controller: bool = True,
    phase: str = "Pending",
    scheduled: float | None = NOW - 300,
    created: float | None = None,
    eni: int = 0,
    want: str = "1",
    started: bool = False,
    keep: bool = False,
    deleting: bool = False,
    finished: float | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "uid": f"uid-{name}",
        "resourceVersion": f"rv-{name}",
        "labels": {"fitguard.io/keep": "true"} if keep else {},
    }
    if created is not None:
        meta["creationTimestamp"] = stamp(created)
    if deleting:
        meta["deletionTimestamp"] = stamp(NOW - 1)
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1" if owner == "Job" else "apps/v1",
                "kind": owner,
                "name": f"{name}-owner",
                "uid": f"uid-{name}-owner",
                "controller": controller,
            }
        ]
    if eni:
        meta["annotations"] = {"vpc.amazonaws.com/pod-eni": enis(eni)}
    status: dict[str, Any] = {"phase": phase, "conditions": []}
    if scheduled is not None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(scheduled)}
        ]
    if started:
        status["containerStatuses"] = [{"name": "c", "state": {"running": {"startedAt": stamp(NOW - 100)}}}]
    if finished is not None:
        status["containerStatuses"] = [
            {"name": "c", "state": {"terminated": {"exitCode": 0, "finishedAt": stamp(finished)}}}
        ]
    requests = {POD_ENI: want} if want else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}],
        },
        "status": status,
    }


def owner(name: str, kind: str = "ReplicaSet", namespace: str = "default") -> ObjectRef:
    api_version = "batch/v1" if kind == "Job" else "apps/v1"
    return ObjectRef(kind, f"{name}-owner", namespace, f"uid-{name}-owner", api_version)


def rescued(
    name: str, waited: int, node: str = "n1", kind: str = "ReplicaSet", namespace: str = "default"
) -> Deletion:
    why = (
        f"bound to {node} {waited} s ago and still without a branch ENI, past the 90 s release window: "
        f"deleted so that {kind} {name}-owner replaces it on a node with a free branch ENI"
    )
    return Deletion(
        "rescue", namespace, name, f"uid-{name}", f"rv-{name}", node, why, owner(name, kind, namespace)
    )


def test_rescue_chooses_exactly_the_pods_that_wait_in_vain_for_a_replacing_owner() -> None:
    """Past the window (strictly) and waiting since scheduling, else since creation: pods owned
    by a ReplicaSet, StatefulSet, Job or ReplicationController controller are chosen, sorted by node,
    namespace and name. Not chosen: within the window or exactly at it, owned by a DaemonSet or by
    nothing or by a non-controller owner, started, kept, being deleted, holding a branch ENI,
    finished, unbound, asking for no branch ENI, with no time known, or unreadable."""
    pods = [
        listed_pod("stuck"),
        listed_pod("sts", owner="StatefulSet", node="n0"),
        listed_pod("job", owner="Job", namespace="batch"),
        listed_pod("rc", owner="ReplicationController", scheduled=NOW - 91),
        listed_pod("created-only", scheduled=None, created=NOW - 200),
        listed_pod("fresh", scheduled=NOW - 30),
        listed_pod("at-window", scheduled=NOW - 90),
        listed_pod("daemon", owner="DaemonSet"),
        listed_pod("bare", owner=None),
        listed_pod("not-controller", controller=False),
        listed_pod("started", started=True),
        listed_pod("kept", keep=True),
        listed_pod("deleting", deleting=True),
        listed_pod("served", eni=1),
        listed_pod("failed", phase="Failed"),
        listed_pod("unbound", node=""),
        listed_pod("no-eni-wanted", want=""),
        listed_pod("timeless", scheduled=None),
        {"metadata": {"namespace": "default"}, "spec": {"nodeName": "n1"}},
    ]
    assert rescue_candidates(pods, now=NOW, window=WINDOW) == [
        rescued("sts", 300, node="n0", kind="StatefulSet"),
        rescued("job", 300, kind="Job", namespace="batch"),
        rescued("created-only", 200),
        rescued("rc", 91, kind="ReplicationController"),
        rescued("stuck", 300),
    ]


def reclaimed(
    name: str, ago: int, held: int, node: str, awaited: int, *, kind: str | None = "Job"
) -> Deletion:
    why = (
        f"finished {ago} s ago and still holds {held} branch ENI(s) on {node}, where {awaited} are "
        "awaited: deleted to release them"
    )
    ref = owner(name, kind) if kind else None
    return Deletion("reclaim", "default", name, f"uid-{name}", f"rv-{name}", node, why, ref)


def finished(name: str, ago: float, *, eni: int = 1, node: str = "n1", **kw: Any) -> dict[str, Any]:
    """A terminal pod that finished `ago` seconds before NOW, scheduled a minute before that (its
    status's latest time is the finish: capacity/pod_status.py released_at)."""
    kw.setdefault("owner", "Job")
    kw.setdefault("scheduled", NOW - ago - 60)
    return listed_pod(name, node=node, phase=kw.pop("phase", "Succeeded"), eni=eni, finished=NOW - ago, **kw)


def test_reclaim_frees_the_oldest_holders_until_the_waiting_pods_have_enough() -> None:
    """n1 awaits 3 branch ENIs (pods waiting at least the 30 s grace, one exactly at it; a pod
    within it is not counted): the oldest finished Job pods holding ENIs go first (a tie by name)
    until 3 are freed; n3 awaits 1 and gets the older of two finished pods owned by nothing. Never:
    a pod finished less than `after` ago, owned by a ReplicaSet, owned by a Job that is not its
    controller, kept, being deleted, holding no ENI, still running, or on a node where nothing
    waits."""
    pods = [
        listed_pod("w1", scheduled=NOW - 120),
        listed_pod("w2", scheduled=NOW - 30, want="2"),
        listed_pod("w-new", scheduled=NOW - 10, want="5"),
        finished("j-oldest", 900, eni=2),
        finished("j-b", 600),
        finished("j-a", 600),
        finished("j-after", 300),
        finished("j-recent", 299),
        finished("rs", 950, owner="ReplicaSet", phase="Failed"),
        finished("not-controller", 950, controller=False),
        finished("kept", 950, keep=True),
        finished("deleting", 950, deleting=True),
        finished("no-eni", 950, eni=0),
        listed_pod("running", owner="Job", phase="Running", eni=1, started=True),
        finished("elsewhere", 999, node="n2"),
        listed_pod("w3", node="n3", scheduled=NOW - 60),
        finished("bare", 400, node="n3", owner=None),
        finished("bare-newer", 350, node="n3", owner=None),
    ]
    chosen = reclaim_candidates(
        pods, now=NOW, after=300.0, window=WINDOW, waiting_grace=30.0, release=ON_DELETE
    )
    assert chosen == [
        reclaimed("j-oldest", 900, 2, "n1", 3),
        reclaimed("j-a", 600, 1, "n1", 3),
        reclaimed("bare", 400, 1, "n3", 1, kind=None),
    ]


def test_with_the_cooldown_only_pods_within_the_window_still_hold_their_enis() -> None:
    """Released on a cooldown (the default): a pod finished more than the window ago holds
    nothing any more (never chosen), nor does one finished exactly the window ago (the books' rule:
    held while release + window > now); one finished within it is chosen once `after` has passed,
    exactly `after` included."""
    pods = [
        listed_pod("w", scheduled=NOW - 120),
        finished("gone", 91),
        finished("just-gone", 90),
        finished("held", 89),
    ]
    assert reclaim_candidates(
        pods, now=NOW, after=89.0, window=WINDOW, waiting_grace=30.0, release=COOLDOWN
    ) == [reclaimed("held", 89, 1, "n1", 1)]
    assert reclaim_candidates(pods, now=NOW, after=89.0, window=WINDOW, waiting_grace=30.0) == [
        reclaimed("held", 89, 1, "n1", 1)
    ]


def test_a_dry_run_answers_one_whole_line_per_deletion_and_deletes_nothing() -> None:
    """`carry_out(..., dry_run=True)` needs no API: each deletion is planned, in order."""
    deletions = [rescued("stuck", 300), reclaimed("bare", 400, 1, "n3", 1, kind=None)]
    assert carry_out(None, deletions, dry_run=True) == [
        {
            "action": "rescue",
            "pod": "default/stuck",
            "node": "n1",
            "outcome": "planned",
            "why": deletions[0].why,
        },
        {
            "action": "reclaim",
            "pod": "default/bare",
            "node": "n3",
            "outcome": "planned",
            "why": deletions[1].why,
        },
    ]


def bare_pod(name: str, owner_name: str = "", **kw: Any) -> dict[str, Any]:
    """A pod as a hurried client (or a test fixture) may write it: no namespace, uid or
    resourceVersion, and an owner reference without apiVersion or uid (and without a name when
    none is given), all of which the API server would have filled or required."""
    raw = listed_pod(name, **kw)
    reference = {"kind": kw.get("owner", "ReplicaSet"), "controller": True}
    if owner_name:
        reference["name"] = owner_name
    raw["metadata"] = {
        "name": name,
        "ownerReferences": [reference],
        **({"annotations": raw["metadata"]["annotations"]} if "annotations" in raw["metadata"] else {}),
    }
    return raw


def test_pods_missing_a_namespace_uid_or_owner_fields_are_deleted_with_empty_preconditions() -> None:
    """A pod without a namespace is in "default"; without a uid or resourceVersion it is deleted with
    empty ones (no precondition, never a made-up value); its owner reference's missing name and uid
    are empty and its apiVersion "v1" (the Event's default). Its status's one time, PodScheduled 300 s ago,
    dates its finish (capacity/pod_status.py released_at)."""
    why = (
        "bound to n1 300 s ago and still without a branch ENI, past the 90 s release window: "
        "deleted so that ReplicaSet rs replaces it on a node with a free branch ENI"
    )
    assert rescue_candidates([bare_pod("stuck", "rs")], now=NOW, window=WINDOW) == [
        Deletion("rescue", "default", "stuck", "", "", "n1", why, ObjectRef("ReplicaSet", "rs", "default"))
    ]
    pods = [listed_pod("w", scheduled=None), bare_pod("done", owner="Job", phase="Succeeded", eni=1)]
    held = (
        "finished 300 s ago and still holds 1 branch ENI(s) on n1, where 1 are awaited: "
        "deleted to release them"
    )
    assert reclaim_candidates(
        pods, now=NOW, after=0.0, window=WINDOW, waiting_grace=0.0, release=ON_DELETE
    ) == [Deletion("reclaim", "default", "done", "", "", "n1", held, ObjectRef("Job", "", "default"))]


def test_a_finished_pod_without_a_finish_time_finished_now() -> None:
    """No container says when it finished: the pod counts as finished at `now`, so it holds its
    branch ENI within the cooldown and is not old enough for any positive `after`; a waiting pod
    with neither a scheduling nor a creation time has waited 0 s, enough only for a zero grace."""
    pods = [listed_pod("w", scheduled=None), finished("j", 0, phase="Succeeded", scheduled=None)]
    del pods[1]["status"]["containerStatuses"]
    assert reclaim_candidates(pods, now=NOW, after=1.0, window=WINDOW, waiting_grace=0.0) == []
    assert reclaim_candidates(pods, now=NOW, after=0.0, window=WINDOW, waiting_grace=1.0) == []
    assert reclaim_candidates(pods, now=NOW, after=0.0, window=WINDOW, waiting_grace=0.0) == [
        reclaimed("j", 0, 1, "n1", 1)
    ]


def test_an_unreadable_pod_is_never_deleted_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    """A pod the records cannot read is skipped with one warning naming it and the reason."""
    nameless = {"metadata": {"namespace": "default"}, "spec": {"nodeName": "n1"}}
    broken = {"metadata": {"name": "broken"}, "spec": {"nodeName": "n1", "containers": 5}}
    caplog.set_level("WARNING", logger="controller.rescue")
    assert rescue_candidates([nameless, broken, {"metadata": None}], now=NOW, window=WINDOW) == []
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "pod None unreadable, never deleted: metadata.name: missing"),
        ("WARNING", "pod broken unreadable, never deleted: spec.containers: expected a list of containers"),
        ("WARNING", "pod None unreadable, never deleted: metadata.name: missing"),
    ]


def test_a_dry_run_records_whole_would_delete_events() -> None:
    """With a recorder, a dry run writes the Event each deletion would: a Warning on the rescued pod
    itself, a Normal on the reclaimed pod's owner, or on its node when it has none."""
    recorder = EventRecorder(None, "test", clock=lambda: NOW)
    deletions = [
        rescued("stuck", 300),
        reclaimed("j", 400, 1, "n1", 1),
        reclaimed("bare", 400, 1, "n3", 1, kind=None),
    ]
    carry_out(None, deletions, recorder, dry_run=True)

    def event(n: int, regarding: dict[str, str], kind: str, reason: str, note: str) -> dict[str, Any]:
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"{regarding['name']}.17979cfe362a0000{n}", "namespace": "default"},
            "eventTime": "2023-11-14T22:13:20.000000Z",
            "reportingController": "fitguard.io/controller",
            "reportingInstance": "test",
            "action": "Delete",
            "reason": reason,
            "note": note,
            "type": kind,
            "regarding": regarding,
        }

    assert list(recorder.recent) == [
        {"verb": "create", "dryRun": True, "event": e}
        for e in [
            event(
                1,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "stuck",
                    "namespace": "default",
                    "uid": "uid-stuck",
                },
                "Warning",
                "RescuedWaitingPod",
                f"would delete pod: {deletions[0].why}",
            ),
            event(
                2,
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "j-owner",
                    "namespace": "default",
                    "uid": "uid-j-owner",
                },
                "Normal",
                "ReclaimedBranchEni",
                f"would delete pod j: {deletions[1].why}",
            ),
            event(
                3,
                {"apiVersion": "v1", "kind": "Node", "name": "n3"},
                "Normal",
                "ReclaimedBranchEni",
                f"would delete pod default/bare: {deletions[2].why}",
            ),
        ]
    ]
