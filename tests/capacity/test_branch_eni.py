"""The branch ENI books (capacity/branch_eni.py): held, tombstones, release models, waiting pods,
capacity as the node advertises it, the cooldown as the VPC resource controller reads it, and
incremental updates that always equal a from-scratch computation."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from capacity.branch_eni import (
    BranchEniBooks,
    Held,
    NodeSummary,
    ReleaseWindow,
    Waiting,
    configured_cooldown,
    release_window,
    release_window_from_configmap,
)
from capacity.branch_eni_words import free_words, held_message, overcommitted_message, waiting_message
from capacity.pod_record import POD_FIELDS
from capacity.records import NodeRecord, PodRecord
from tests.budget import examples

T0 = 1_714_564_800.0  # 2024-05-01T12:00:00Z
WINDOW = 90.0


def books(release: str = "cooldown", window: float = WINDOW, grace: float = 20.0) -> BranchEniBooks:
    b = BranchEniBooks(
        release=release,
        window=window,
        waiting_grace=grace,
    )
    b.set_node(NodeRecord("n1", "ng-batch", "m5.large", pod_eni=9))
    return b


def running(name: str, node: str = "n1", eni: int = 1) -> PodRecord:
    return PodRecord(
        uid=f"uid-{name}", namespace="batch", name=name, node=node, phase="Running", pod_eni=1, eni_count=eni
    )


def finished(pod: PodRecord, at: float | None) -> PodRecord:
    return replace_record(pod, phase="Succeeded", finished_at=at)


def replace_record(pod: PodRecord, **changes: object) -> PodRecord:
    fields = dict(zip(POD_FIELDS, pod.fields(), strict=True))
    fields.update(changes)
    return PodRecord(**fields)


def row(b: BranchEniBooks, now: float, node: str = "n1") -> NodeSummary:
    summary = b.summary(node, now)
    assert summary is not None
    return summary


def test_a_finished_job_pod_holds_its_branch_eni_until_the_window_ends() -> None:
    b = books()
    pods = [running(f"web-{i}") for i in range(6)] + [running(f"job-a-{i}") for i in range(3)]
    for pod in pods:
        b.update_pod(pod, T0 - 100)
    assert (row(b, T0 - 100).in_use, row(b, T0 - 100).held) == (9, 0)
    for pod in pods[6:]:
        b.update_pod(finished(pod, T0 - 20), T0)
    now = row(b, T0)
    assert (now.in_use, now.held, now.scheduler_free, now.true_free) == (6, 3, 3, 0)
    assert set(now.held_by) == {"job-a-0", "job-a-1", "job-a-2"}
    assert now.next_release == pytest.approx(70.0)
    assert held_message(now).startswith("3 of 9 branch ENIs are held by finished pods job-a-")
    assert held_message(now).endswith("the scheduler sees 3 free, but those 3 are held: none is free")
    later = T0 - 20 + WINDOW
    assert row(b, later).held == 0  # read-time filtering: correct even before expire() runs
    assert b.expire(later) == {"n1"}
    assert (row(b, later).held, row(b, later).true_free) == (0, 3)


def test_a_finished_pod_that_never_got_an_eni_holds_nothing() -> None:
    b = books()
    b.update_pod(finished(running("job-x", eni=0), T0 - 5), T0)
    assert (row(b, T0).in_use, row(b, T0).held) == (0, 0)


def test_a_deleted_running_pod_leaves_a_tombstone_for_the_window() -> None:
    b = books()
    pod = running("web-1")
    b.update_pod(pod, T0)
    b.delete_pod(pod, T0 + 10)
    assert (row(b, T0 + 10).in_use, row(b, T0 + 10).held) == (0, 1)
    assert row(b, T0 + 10 + WINDOW - 1).held == 1
    b.expire(T0 + 10 + WINDOW)
    assert row(b, T0 + 10 + WINDOW).held == 0


def test_deleting_a_finished_pod_does_not_restart_its_window() -> None:
    b = books()
    pod = finished(running("job-1"), T0)
    b.update_pod(pod, T0 + 1)
    b.delete_pod(pod, T0 + 50)
    assert row(b, T0 + WINDOW - 1).held == 1
    assert row(b, T0 + WINDOW).held == 0


def test_a_finished_pod_without_timestamps_is_dated_when_first_seen_finished() -> None:
    b = books()
    pod = running("job-1")
    b.update_pod(pod, T0)
    b.update_pod(finished(pod, None), T0 + 5)
    b.update_pod(finished(pod, None), T0 + 60)  # a later update must not move the start
    assert row(b, T0 + 5 + WINDOW - 1).held == 1
    assert row(b, T0 + 5 + WINDOW).held == 0


def test_on_delete_model_holds_until_the_pod_object_is_deleted() -> None:
    b = books(release="on-delete")
    pod = finished(running("job-1"), T0)
    b.update_pod(pod, T0)
    b.expire(T0 + 10 * WINDOW)
    assert row(b, T0 + 10 * WINDOW).held == 1
    b.delete_pod(pod, T0 + 1000)
    assert row(b, T0 + 1000).held == 1  # the release still goes through the cooldown queue
    assert row(b, T0 + 1000 + WINDOW).held == 0


def test_a_bound_pod_without_its_eni_is_waiting_only_after_the_grace() -> None:
    b = books(grace=20.0)
    pod = replace_record(running("job-b", eni=0), phase="Pending", scheduled_at=T0)
    b.update_pod(pod, T0)
    assert row(b, T0 + 19).waiting == 0
    assert row(b, T0 + 20).waiting == 1
    assert row(b, T0 + 20).waiting_pods[0].pod == "job-b"
    b.update_pod(replace_record(pod, eni_count=1, phase="Running"), T0 + 25)
    assert row(b, T0 + 30).waiting == 0


def test_capacity_is_what_the_node_advertises_and_none_when_it_advertises_none() -> None:
    """An m5.large could offer 9 branch ENIs, but a node of it that advertises no pod-eni (Windows,
    no trunk ENI yet) offers the scheduler none: capacity 0 and a pod bound there in use counts
    against it; an advertised 5 is 5, whatever the type's table says."""
    b = books()
    b.set_node(NodeRecord("windows", "ng", "m5.large", pod_eni=None))
    b.set_node(NodeRecord("unknown-type", "ng", "x9.huge", pod_eni=None))
    b.set_node(NodeRecord("advertised", "ng", "m5.large", pod_eni=5))
    b.update_pod(running("web", node="windows"), T0)
    assert [r.to_json() for r in b.node_summary(T0)] == [
        summary_json("advertised", 5),
        summary_json("unknown-type", 0, instance_type="x9.huge"),
        summary_json("windows", 0, in_use=1),
        summary_json("n1", 9, group="ng-batch"),
    ]


def summary_json(
    name: str, capacity: int, *, in_use: int = 0, group: str = "ng", instance_type: str = "m5.large"
) -> dict[str, object]:
    return {
        "name": name,
        "nodeGroup": group,
        "instanceType": instance_type,
        "capacity": capacity,
        "inUse": in_use,
        "held": 0,
        "schedulerFree": capacity - in_use,
        "trueFree": capacity - in_use,
        "waiting": 0,
        "heldBy": [],
        "waitingPods": [],
        "nextReleaseSeconds": None,
    }


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("120", 120.0),
        ("+45", 45.0),
        ("-5", -5.0),  # Atoi accepts it; GetCoolDownPeriod then holds 30 s
        ("0", 0.0),
        ("007", 7.0),
        ("9223372037", -9223372036.709551616),  # time.Second * n wraps in int64, as in Go
        ("9223372036854775807", -1.0),
        ("9223372036854775808", None),  # out of int64: Atoi's range error
        ("", None),
        (" 90", None),
        ("90 ", None),
        ("90\n", None),
        ("1_000", None),
        ("1e3", None),
        ("90s", None),
        ("٩٠", None),  # Arabic-Indic digits: Python's int() reads them, Atoi does not
        ("+", None),
        ("1.5", None),
    ],
)
def test_the_cooldown_value_is_read_as_strconv_atoi_reads_it(raw: str, seconds: float | None) -> None:
    """pkg/provider/branch/cooldown/cooldown.go reads branch-eni-cooldown with strconv.Atoi: a sign
    and ASCII digits only, within int64; anything else is no value."""
    got = configured_cooldown({"branch-eni-cooldown": raw})
    if seconds is None:
        assert got is None
    else:
        assert got == pytest.approx(seconds, abs=1e-9)


def test_the_window_from_the_configmap_at_start_and_at_runtime() -> None:
    """At start an absent ConfigMap, key or unreadable value means 60 s; later they keep the
    cooldown held; a value below 30 s is held as written but waited as 30 s; + 30 s processing."""
    assert release_window_from_configmap(None) == ReleaseWindow(60.0, 90.0)
    assert release_window_from_configmap({}) == ReleaseWindow(60.0, 90.0)
    assert release_window_from_configmap({"branch-eni-cooldown": "soon"}) == ReleaseWindow(60.0, 90.0)
    assert release_window_from_configmap({"branch-eni-cooldown": "120"}) == ReleaseWindow(120.0, 150.0)
    assert release_window_from_configmap({"branch-eni-cooldown": "10"}) == ReleaseWindow(10.0, 60.0)
    assert release_window_from_configmap(None, current=120.0) == ReleaseWindow(120.0, 150.0)
    assert release_window_from_configmap({}, current=120.0) == ReleaseWindow(120.0, 150.0)
    assert release_window_from_configmap({"branch-eni-cooldown": "2m"}, 120.0) == ReleaseWindow(120.0, 150.0)
    assert release_window_from_configmap({"branch-eni-cooldown": "45"}, 120.0) == ReleaseWindow(45.0, 75.0)
    assert release_window(60.0) == 90.0


def test_an_unknown_release_model_is_refused() -> None:
    with pytest.raises(ValueError, match="release model"):
        BranchEniBooks(release="never")


# -- incremental books against an independent model -------------------------------------------


@dataclass
class Life:
    """One pod's lifecycle as a list of states; it only moves forward, as real pods do."""

    uid: str
    node: str
    steps: list[PodRecord]


def _lifecycle(uid: str, *, node: str, pod_eni: int, stage: int, ok: bool, finish: float) -> Life:
    base = PodRecord(uid=uid, namespace="ns", name=uid, phase="Pending", pod_eni=pod_eni, created_at=T0)
    bound = replace_record(base, node=node, scheduled_at=T0)
    annotated = replace_record(bound, eni_count=pod_eni if ok else 0, phase="Running")
    done = replace_record(annotated, phase="Failed" if stage % 2 else "Succeeded", finished_at=T0 + finish)
    return Life(uid, node, [base, bound, annotated, done][: stage + 1])


lives = st.lists(
    st.builds(
        _lifecycle,
        uid=st.uuids().map(str),
        node=st.sampled_from(["n1", "n2"]),
        pod_eni=st.integers(0, 2),
        stage=st.integers(0, 3),
        ok=st.booleans(),
        finish=st.floats(0, 300),
    ),
    max_size=12,
    unique_by=lambda life: life.uid,
)
# (pod index, action): "step" moves a pod on, "last" to its final state, "delete" removes it, "tick"
# lets time pass
actions = st.lists(
    st.tuples(st.integers(0, 11), st.sampled_from(["step", "last", "delete", "tick"])), max_size=60
)


Tombstone = tuple[str, int, float]  # node, branch ENIs, until


def _expected(current: dict[str, PodRecord], tombstones: list[Tombstone], release: str, now: float):
    """Brute force from the definitions in docs/design.md, nothing shared with the implementation."""
    out = {}
    for node in ("n1", "n2"):
        pods = [p for p in current.values() if p.node == node]
        in_use = sum(p.pod_eni for p in pods if p.phase not in ("Succeeded", "Failed"))
        held = sum(
            p.eni_count
            for p in pods
            if p.phase in ("Succeeded", "Failed")
            and p.eni_count
            and (release == "on-delete" or (p.finished_at or 0) + WINDOW > now)
        )
        held += sum(count for n, count, until in tombstones if n == node and until > now)
        waiting = sum(
            1
            for p in pods
            if p.phase not in ("Succeeded", "Failed") and p.pod_eni and not p.eni_count and now >= T0 + 20
        )
        out[node] = (in_use, held, waiting)
    return out


def _observed(b: BranchEniBooks, now: float):
    return {s.name: (s.in_use, s.held, s.waiting) for s in b.node_summary(now)}


@settings(max_examples=examples(300), deadline=None)
@given(lives=lives, actions=actions, release=st.sampled_from(["cooldown", "on-delete"]))
@example(  # a finished pod deleted under on-delete: its tombstone must end
    lives=[_lifecycle("u1", node="n1", pod_eni=1, stage=3, ok=True, finish=5.0)],
    actions=[(0, "last"), (0, "delete")],
    release="on-delete",
)
def test_incremental_books_match_the_definitions_after_any_event_sequence(lives, actions, release) -> None:
    b = books(release=release)
    b.set_node(NodeRecord("n2", "ng", "m5.large", pod_eni=9))
    now = T0
    stage = {life.uid: -1 for life in lives}
    current: dict[str, PodRecord] = {}
    tombstones: list[Tombstone] = []
    for index, action in actions:
        now += 7.0
        if action == "tick" or not lives:
            b.expire(now)
            continue
        life = lives[index % len(lives)]
        if action == "delete":
            pod = current.pop(life.uid, None)
            if pod is not None:
                b.delete_pod(pod, now)
                stage[life.uid] = len(life.steps)  # gone for good
                if pod.eni_count and pod.node:
                    terminal = pod.phase in ("Succeeded", "Failed")
                    keeps_window = terminal and release == "cooldown"
                    until = (pod.finished_at or 0) + WINDOW if keeps_window else now + WINDOW
                    tombstones.append((pod.node, pod.eni_count, until))
            continue
        if stage[life.uid] + 1 < len(life.steps):
            stage[life.uid] = len(life.steps) - 1 if action == "last" else stage[life.uid] + 1
            pod = life.steps[stage[life.uid]]
            current[life.uid] = pod
            b.update_pod(pod, now)
        assert _observed(b, now) == _expected(current, tombstones, release, now)
    for later in (now, now + WINDOW, now + 10 * WINDOW):
        b.expire(later)
        assert _observed(b, later) == _expected(current, tombstones, release, later)


@settings(max_examples=examples(100), deadline=None)
@given(lives=lives, keep=st.lists(st.booleans(), min_size=12, max_size=12))
def test_a_relist_rebuild_equals_the_incremental_deletes_and_updates(lives, keep) -> None:
    """Books fed event by event, then a relist where some pods vanished, equal books that saw
    those pods deleted one by one at the relist time."""
    nodes = [NodeRecord("n1", "ng", "m5.large", pod_eni=9), NodeRecord("n2", "ng", "m5.large", pod_eni=9)]
    relisted, incremental = books(), books()
    for b in (relisted, incremental):
        for node in nodes:
            b.set_node(node)
        for life in lives:
            b.update_pod(life.steps[-1], T0 + 10)
    now = T0 + 40
    survivors = [life.steps[-1] for i, life in enumerate(lives) if keep[i]]
    relisted.rebuild(survivors, nodes, now)
    for i, life in enumerate(lives):
        if not keep[i]:
            incremental.delete_pod(life.steps[-1], now)
    for t in (now, now + 60, now + 200):
        assert _observed(relisted, t) == _observed(incremental, t)
    fresh = books()
    fresh.rebuild([life.steps[-1] for life in lives], nodes, T0 + 10)
    assert _observed(fresh, T0 + 10) == _observed(books_after(lives, nodes), T0 + 10)


def books_after(lives: list[Life], nodes: list[NodeRecord]) -> BranchEniBooks:
    """Books that saw every state of every pod, one event at a time."""
    b = books()
    for node in nodes:
        b.set_node(node)
    for life in lives:
        for step in life.steps:
            b.update_pod(step, T0 + 10)
    return b


# -- whole answers (the mutation run of capacity/branch_eni.py, docs/testing.md) --------------------


def _pod(name: str, node: str = "n1", ns: str = "batch", **kw: object) -> PodRecord:
    return PodRecord(uid=f"uid-{name}", namespace=ns, name=name, node=node, **kw)  # type: ignore[arg-type]


def test_a_node_summary_is_reported_whole() -> None:
    """Capacity, in use, held (timed ones first by release, then the untimed, each by name),
    waiting pods past the grace (by since, namespace, name), and the seconds to the next release."""
    b = books(window=90.0, grace=20.0)
    for name in ("web-a", "web-b"):
        b.update_pod(_pod(name, phase="Running", pod_eni=1, eni_count=1), T0 - 300)
    b.update_pod(_pod("job-z", phase="Succeeded", pod_eni=1, eni_count=2, finished_at=T0 - 30), T0)
    b.update_pod(_pod("job-y", phase="Failed", pod_eni=1, eni_count=1, finished_at=T0 - 30), T0)
    b.update_pod(_pod("job-x", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0 - 10), T0)
    b.update_pod(_pod("wait-b", ns="b", phase="Pending", pod_eni=1, scheduled_at=T0 - 25), T0)
    b.update_pod(_pod("wait-a", ns="b", phase="Pending", pod_eni=1, scheduled_at=T0 - 25), T0)
    b.update_pod(_pod("wait-c", ns="a", phase="Pending", pod_eni=1, scheduled_at=T0 - 25), T0)
    b.update_pod(_pod("wait-d", ns="a", phase="Pending", pod_eni=1, created_at=T0 - 40), T0)
    b.update_pod(_pod("fresh", ns="a", phase="Pending", pod_eni=1, scheduled_at=T0 - 5), T0)
    summary = b.summary("n1", T0)
    assert summary is not None
    assert summary.to_json() == {
        "name": "n1",
        "nodeGroup": "ng-batch",
        "instanceType": "m5.large",
        "capacity": 9,
        "inUse": 7,
        "held": 4,
        "schedulerFree": 2,
        "trueFree": -2,
        "waiting": 4,
        "heldBy": ["job-y", "job-z", "job-x"],
        "waitingPods": ["a/wait-d", "a/wait-c", "b/wait-a", "b/wait-b"],
        "nextReleaseSeconds": 60.0,
    }
    assert [w.since for w in summary.waiting_pods] == [T0 - 40, T0 - 25, T0 - 25, T0 - 25]


def test_a_pod_waiting_without_timestamps_waits_from_when_it_was_seen() -> None:
    """No scheduled or created time: the grace runs from the event's `now`; scheduled beats created."""
    b = books(grace=20.0)
    b.update_pod(_pod("w", phase="Pending", pod_eni=1), T0)
    b.update_pod(_pod("v", phase="Pending", pod_eni=1, created_at=T0 - 100, scheduled_at=T0 - 10), T0)
    assert [w.pod for w in row(b, T0 + 9).waiting_pods] == []
    assert [w.pod for w in row(b, T0 + 10).waiting_pods] == ["v"]
    assert [(w.pod, w.since) for w in row(b, T0 + 20).waiting_pods] == [("v", T0 - 10), ("w", T0)]


def test_held_without_a_release_time_sorts_last_and_sets_no_next_release() -> None:
    """Under on-delete a finished pod holds with no timed release: it sorts after timed ones and,
    alone, leaves the next release unknown."""
    b = books(release="on-delete", window=90.0)
    b.update_pod(_pod("job-b", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0), T0)
    assert (row(b, T0).held_by, row(b, T0).next_release) == (("job-b",), None)
    gone = _pod("job-a", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0)
    b.update_pod(gone, T0)
    b.delete_pod(gone, T0 + 10)
    assert (row(b, T0 + 20).held_by, row(b, T0 + 20).next_release) == (("job-a", "job-b"), 80.0)
    assert row(b, T0 + 200).next_release is None


def test_the_next_release_is_never_negative_before_expiry() -> None:
    """Read at the last instant of a window the next release is 0 seconds away, not less."""
    b = books(window=90.0)
    b.update_pod(_pod("j", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0), T0)
    assert row(b, T0 + 89.5).next_release == 0.5
    assert row(b, T0 + 90).held == 0


def test_the_held_message_names_five_pods_then_dots() -> None:
    """The node event's whole text; past five names it ends the list with `...`; no count is shown
    below zero, and a free count the scheduler sees that is not free says where it went."""
    five = NodeSummary("n1", "ng", "m5.large", 9, 6, 5, 0, ("a", "b", "c", "d", "e"))
    assert held_message(five) == (
        "5 of 9 branch ENIs are held by finished pods a, b, c, d, e; the scheduler sees 3 free, but those 3 "
        "are held: none is free, and the pods placed here wait for 2 more"
    )
    six = NodeSummary("n1", "ng", "m5.large", 9, 2, 6, 0, ("a", "b", "c", "d", "e", "f"))
    assert held_message(six) == (
        "6 of 9 branch ENIs are held by finished pods a, b, c, d, e, ...; the scheduler sees 7 free, 6 of "
        "them held: 1 is free"
    )
    assert held_message(six, shown=2) == (
        "6 of 9 branch ENIs are held by finished pods a, b, ...; the scheduler sees 7 free, 6 of them held: "
        "1 is free"
    )


@pytest.mark.parametrize(
    ("capacity", "in_use", "held", "words"),
    [
        (9, 6, 1, "the scheduler sees 3 free, 1 of them held: 2 are free"),
        (9, 8, 1, "the scheduler sees 1 free, but it is held: none is free"),
        (9, 9, 1, "the scheduler sees none free, and the pods placed here wait for 1 more"),
        (2, 6, 1, "the scheduler sees none free, and the pods placed here wait for 5 more"),
        (2, 6, 0, "the scheduler sees none free, and the pods placed here wait for 4 more"),
        (9, 3, 0, "the scheduler sees 6 free, and they are"),
        (9, 8, 0, "the scheduler sees 1 free, and it is"),
    ],
)
def test_free_words_never_show_a_negative_count(capacity: int, in_use: int, held: int, words: str) -> None:
    """Issue 31: whatever the books, what the scheduler sees free, what really is and where the
    difference went, with no negative count; the over-committed report line says the same."""
    summary = NodeSummary("n1", "ng", "m5.large", capacity, in_use, held, 0)
    assert free_words(summary) == words
    assert overcommitted_message(NodeSummary("n1", "ng", "m5.large", 2, 6, 0, 0)) == (
        "its pods ask for 6 branch ENIs, it advertises 2: the pods placed here wait for 4 more"
    )


def test_the_waiting_message_says_why_and_until_when() -> None:
    """Whole texts for the three cases: held with a timed release (three names, then `...`), held
    until deleted, and every branch ENI in use by running pods."""
    waiting = Waiting("p", "ns", T0 - 42.4)
    timed = NodeSummary("n1", "ng", "m5.large", 9, 5, 4, 1, ("a", "b", "c", "d"), (waiting,), 37.6)
    assert waiting_message(timed, waiting, T0) == (
        "bound to n1 42 s ago, still without a branch ENI: 4 of 9 are held by finished or deleted pods "
        "(a, b, c, ...); the next is released within about 38 s"
    )
    three = NodeSummary("n1", "ng", "m5.large", 9, 6, 3, 1, ("a", "b", "c"), (waiting,), 5.0)
    assert waiting_message(three, waiting, T0) == (
        "bound to n1 42 s ago, still without a branch ENI: 3 of 9 are held by finished or deleted pods "
        "(a, b, c); the next is released within about 5 s"
    )
    untimed = NodeSummary("n1", "ng", "m5.large", 9, 8, 1, 1, ("a",), (waiting,), None)
    assert waiting_message(untimed, waiting, T0) == (
        "bound to n1 42 s ago, still without a branch ENI: 1 of 9 are held by finished pods until deleted"
    )
    full = NodeSummary("n1", "ng", "m5.large", 9, 9, 0, 1, (), (waiting,), 12.0)
    assert waiting_message(full, waiting, T0 - 100) == (
        "bound to n1 0 s ago, still without a branch ENI: all 9 are in use by running pods; "
        "it waits until one of them ends"
    )


def test_the_books_default_to_the_cooldown_model_the_default_window_and_grace() -> None:
    """No arguments: cooldown release, a 60 + 30 s window and a 30 s waiting grace."""
    b = BranchEniBooks()
    assert (b.release, b.window, b.waiting_grace) == ("cooldown", 90.0, 30.0)
    with pytest.raises(ValueError) as raised:
        BranchEniBooks(release="never")
    assert str(raised.value) == "release model must be one of cooldown, on-delete, not 'never'"


def test_which_node_each_event_moved_and_what_the_books_track() -> None:
    """update_pod and delete_pod name the node whose books moved ('' for none); only pods that
    request or got branch ENIs are tracked; expire names the nodes whose held count fell."""
    b = books()
    b.set_node(NodeRecord("n2", "ng", "m5.large", pod_eni=9))
    plain = _pod("plain", phase="Running")
    assert b.update_pod(plain, T0) == ""
    assert b.delete_pod(plain, T0) == ""
    assert b.update_pod(_pod("unbound", node="", phase="Pending", pod_eni=1), T0) == ""
    eni = _pod("eni", phase="Running", pod_eni=1, eni_count=1)
    assert b.update_pod(eni, T0) == "n1"
    assert b.tracked() == 1
    # the same pod no longer asking for branch ENIs: the node it left moved
    assert b.update_pod(_pod("eni", phase="Running"), T0) == "n1"
    assert b.tracked() == 0
    assert row(b, T0).in_use == 0
    assert b.update_pod(eni, T0) == "n1"
    job = _pod("job", node="n2", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0)
    assert b.update_pod(job, T0) == "n2"
    assert b.tracked() == 2
    assert b.delete_pod(eni, T0 + 10) == "n1"
    assert b.tracked() == 1
    assert b.expire(T0 + 89) == set()
    assert b.expire(T0 + 90) == {"n2"}
    assert b.expire(T0 + 100) == {"n1"}
    assert b.expire(T0 + 100) == set()


def test_a_pod_finished_long_ago_holds_nothing() -> None:
    """A pod first seen finished after its window ended is not held (release + window <= now)."""
    b = books(window=90.0)
    b.update_pod(_pod("old", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0 - 90), T0)
    b.update_pod(_pod("young", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0 - 89), T0)
    assert row(b, T0).held_by == ("young",)


def test_a_removed_node_keeps_its_held_enis_and_unknown_nodes_have_no_summary() -> None:
    """A node removed and seen again keeps its held branch ENIs; a node never seen has no row;
    an idle removed node's books are dropped and it comes back empty."""
    b = books()
    b.set_node(NodeRecord("n2", "ng", "m5.large", pod_eni=9))
    b.update_pod(_pod("j", node="n2", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0), T0)
    b.remove_node("n2")
    assert b.summary("n2", T0) is None
    assert [r.name for r in b.node_summary(T0)] == ["n1"]
    b.set_node(NodeRecord("n2", "ng", "m5.large", pod_eni=9))
    assert (row(b, T0, "n2").held, row(b, T0, "n2").held_by) == (1, ("j",))
    b.remove_node("n1")
    assert b.summary("n1", T0) is None


def test_rows_are_ordered_by_node_group_then_name() -> None:
    """node_summary sorts by node group first, then by node name."""
    b = BranchEniBooks()
    for name, group in (("a", "ng-2"), ("c", "ng-1"), ("b", "ng-1"), ("d", "ng-0")):
        b.set_node(NodeRecord(name, group, "m5.large", pod_eni=3))
    assert [(r.node_group, r.name) for r in b.node_summary(T0)] == [
        ("ng-0", "d"),
        ("ng-1", "b"),
        ("ng-1", "c"),
        ("ng-2", "a"),
    ]


def test_a_relist_deletes_the_missing_replaces_the_nodes_and_expires() -> None:
    """rebuild: a pod missing from the list leaves a tombstone from the relist time, the node list
    is replaced whole, and windows already over are dropped."""
    b = books(window=90.0)
    b.set_node(NodeRecord("gone", "ng", "m5.large", pod_eni=9))
    kept = _pod("kept", phase="Running", pod_eni=1, eni_count=1)
    lost = _pod("lost", phase="Running", pod_eni=1, eni_count=1)
    old = _pod("old", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0 - 80)
    for pod in (kept, lost, old):
        b.update_pod(pod, T0 - 80)
    b.rebuild([kept, old], [NodeRecord("n1", "ng-batch", "m5.large", pod_eni=9)], T0 + 10)
    assert [r.name for r in b.node_summary(T0 + 10)] == ["n1"]
    summary = row(b, T0 + 10)
    assert (summary.in_use, summary.held_by, summary.next_release) == (1, ("lost",), 90.0)
    assert b.tracked() == 2
    assert b.expire(T0 + 10) == set()  # the old one was already dropped by the relist


def test_the_cooldown_value_at_the_edges_of_int64() -> None:
    """strconv.Atoi accepts -2^63 (then time.Second * n wraps to 0 in int64) and refuses -2^63 - 1;
    a ConfigMap without data, or a value that is no string, sets nothing."""
    assert configured_cooldown({"branch-eni-cooldown": "-9223372036854775808"}) == 0.0
    assert configured_cooldown({"branch-eni-cooldown": "-9223372036854775809"}) is None
    assert configured_cooldown({"branch-eni-cooldown": "9223372036854775807"}) == -1.0
    assert configured_cooldown(None) is None
    assert configured_cooldown({"branch-eni-cooldown": 90}) is None
    assert configured_cooldown({"other": "90"}) is None


def test_held_enis_are_free_a_window_after_release_or_never_without_one() -> None:
    """Held.until: release time plus the window in force; None while the pod is not yet deleted."""
    assert Held("p", 2, T0).until(90.0) == T0 + 90.0
    assert Held("p", 2, T0).until(60.0) == T0 + 60.0
    assert Held("p", 2, None).until(90.0) is None


def test_removing_a_node_never_seen_is_harmless() -> None:
    """remove_node of an unknown name changes nothing and raises nothing."""
    b = books()
    b.remove_node("never")
    assert [r.name for r in b.node_summary(T0)] == ["n1"]


def test_a_finished_pod_without_timestamps_is_not_held_again_after_its_window() -> None:
    """Once its window has ended, a later event of the same finished pod (still no timestamps)
    keeps the first-seen date and does not hold its branch ENI again."""
    b = books(window=90.0)
    pod = finished(running("job-1"), None)
    b.update_pod(pod, T0)
    assert b.expire(T0 + 90) == {"n1"}
    b.update_pod(pod, T0 + 100)
    assert (row(b, T0 + 100).held, row(b, T0 + 100).held_by) == (0, ())


def test_a_finished_pod_without_a_branch_eni_is_not_listed_as_holding() -> None:
    """A pod that asked for a branch ENI and finished without one holds nothing and is not named."""
    b = books()
    b.update_pod(finished(running("job-x", eni=0), T0 - 5), T0)
    assert (row(b, T0).held, row(b, T0).held_by, row(b, T0).next_release) == (0, (), None)


def test_a_window_ending_exactly_now_holds_nothing_to_expire() -> None:
    """Seen finished exactly one window ago: not held, so expire has nothing to drop."""
    b = books(window=90.0)
    b.update_pod(_pod("old", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=T0 - 90), T0)
    assert b.expire(T0) == set()


def test_held_enis_are_ordered_by_release_time_from_the_epoch_on() -> None:
    """The order is by release time itself, even for a release at time zero."""
    b = books(window=90.0)
    b.update_pod(_pod("b", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=0.5), 1.0)
    b.update_pod(_pod("a", phase="Succeeded", pod_eni=1, eni_count=1, finished_at=0.0), 1.0)
    assert row(b, 1.0).held_by == ("a", "b")


def test_a_pod_that_finishes_and_vanishes_in_one_event_holds_from_its_finish() -> None:
    """A delete event whose last state is already finished: the window runs from the finish time
    in that state, not from the deletion."""
    b = books(window=90.0)
    pod = running("job-1")
    b.update_pod(pod, T0)
    assert b.delete_pod(finished(pod, T0 - 10), T0 + 5) == "n1"
    assert (row(b, T0 + 79).held, row(b, T0 + 79).next_release) == (1, 1.0)
    assert row(b, T0 + 80).held == 0
