"""A pod event that changes nothing its record reads is not told to the books as a change
(kube/store.py `same`, capacity/records.py `same_pod`, controller/books.py `_on_pod`), and this
never hides a change: over the benchmark's pods (tests/bench/bigcluster.py, every variant), each
field the projection reads changed in turn gives a record `same_pod` calls different, exactly when
the whole record differs (field by field, with types, `pending_spec` as JSON text); and books fed
such events equal books built from the final pods in one list."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
from collections.abc import Callable
from typing import Any

import pytest

from capacity.pod_record import POD_FIELDS
from capacity.records import PodRecord, project_pod, same_pod
from controller.books import Books
from controller.cache import CacheOptions, ClusterCache
from controller.settings import BooksOptions
from kube import podwire
from kube.store import Store
from tests.bench import bigcluster
from tests.bench.controller import QUIET_CHANGES, _quiet_change
from tests.objects import Clock

LATER = "2024-05-01T12:30:00Z"
ENI = "vpc.amazonaws.com/pod-eni"
Change = Callable[[dict[str, Any]], Any]  # changes the pod in place


def _first(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["containers"][0]


def _requests(pod: dict[str, Any]) -> dict[str, Any]:
    return _first(pod).setdefault("resources", {}).setdefault("requests", {})


def _scheduled(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return pod["status"].setdefault("containerStatuses", [{"name": "main", "state": {}}])


# each field capacity/records.py project_pod reads, changed (the pod's key, namespace and name, aside)
READ_CHANGES: dict[str, Change] = {
    "uid": lambda p: p["metadata"].update(uid="another-uid"),
    "nodeName set": lambda p: p["spec"].update(nodeName="ip-10-9-9-9.ec2.internal"),
    "nodeName removed": lambda p: p["spec"].pop("nodeName", None),
    "phase": lambda p: p["status"].update(phase="Failed"),
    "pod-eni annotation removed": lambda p: p["metadata"]["annotations"].pop(ENI, None),
    "pod-eni annotation, another ENI": lambda p: p["metadata"]["annotations"].update(
        {ENI: json.dumps([{"eniId": "eni-1"}, {"eniId": "eni-2"}])}
    ),
    "cpu request": lambda p: _requests(p).update(cpu="1234m"),
    "memory request": lambda p: _requests(p).update(memory="3Gi"),
    "ephemeral-storage request": lambda p: _requests(p).update({"ephemeral-storage": "5Gi"}),
    "pod-eni request": lambda p: _requests(p).update({ENI: "2"}),
    "a limit standing in for a request": lambda p: (
        _requests(p).pop("cpu", None),
        _first(p)["resources"].setdefault("limits", {}).update(cpu="3"),
    ),
    "a sidecar init container": lambda p: p["spec"].update(
        initContainers=[{"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "2"}}}]
    ),
    "an init container made a sidecar": lambda p: p["spec"].update(
        initContainers=[{"name": "s", "restartPolicy": "Never", "resources": {"requests": {"cpu": "2"}}}]
    ),
    "overhead": lambda p: p["spec"].update(overhead={"cpu": "250m"}),
    "pod-level requests": lambda p: p["spec"].update(resources={"requests": {"memory": "9Gi"}}),
    "a container terminated": lambda p: _statuses(p)[0].update(
        state={"terminated": {"exitCode": 1, "finishedAt": LATER}}
    ),
    "a container never started": lambda p: [
        s.update(state={"waiting": {}}, lastState={}) for s in _statuses(p)
    ],
    "a finished container's finishedAt": lambda p: [
        s["state"]["terminated"].update(finishedAt=LATER)
        for s in _statuses(p)
        if "terminated" in s.get("state", {})
    ],
    "a condition's lastTransitionTime": lambda p: p["status"]["conditions"][0].update(
        lastTransitionTime=LATER
    ),
    "PodScheduled time": lambda p: _scheduled(p).update(lastTransitionTime=LATER),
    "PodScheduled unschedulable": lambda p: _scheduled(p).update(
        status="False", reason="Unschedulable", message="0/9 nodes"
    ),
    "the scheduler's message": lambda p: _scheduled(p).update(message="0/10 nodes are available"),
    "PodScheduled scheduled": lambda p: _scheduled(p).update(status="True", reason=None),
    "deletionTimestamp": lambda p: p["metadata"].update(deletionTimestamp=LATER),
    "creationTimestamp": lambda p: p["metadata"].update(creationTimestamp=LATER),
    "owner kind": lambda p: p["metadata"]["ownerReferences"][0].update(kind="StatefulSet"),
    "owner name": lambda p: p["metadata"]["ownerReferences"][0].update(name="another"),
    "owner no longer the controller": lambda p: p["metadata"].update(
        ownerReferences=[{"kind": "A", "name": "a"}, {"kind": "B", "name": "b", "controller": True}]
    ),
    "keep label": lambda p: p["metadata"].setdefault("labels", {}).update({"fitguard.io/keep": "true"}),
    "node selector": lambda p: p["spec"].update(nodeSelector={"zone": "b"}),
    "a toleration": lambda p: p["spec"].update(tolerations=[{"key": "k", "operator": "Exists"}]),
    "a toleration's seconds, 300 as 300.0": lambda p: p["spec"].update(
        tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 300.0}]
    ),
    "affinity": lambda p: p["spec"].update(affinity={"nodeAffinity": {}}),
}
QUIET = {change: (lambda p, c=change: _quiet_change(p, c, LATER)) for change in set(QUIET_CHANGES)}


def _pods() -> list[dict[str, Any]]:
    """One pod of each variant of the benchmark, as json.loads reads it, and each pending one again
    asking for a branch ENI (its record then keeps its placement) with a toleration of 300 s, so
    that 300 as 300.0 is a change of what it keeps."""
    pods = [json.loads(raw) for raw in bigcluster.render(bigcluster.VARIANTS, 0).pods]
    for pod in [p for p in pods if p["status"]["phase"] == "Pending"]:
        eni = copy.deepcopy(pod)
        eni["metadata"]["name"] += "-eni"
        _requests(eni)[ENI] = "1"
        eni["spec"]["tolerations"] = [{"key": "k", "operator": "Exists", "tolerationSeconds": 300}]
        pods.append(eni)
    return pods


def _record(pod: dict[str, Any]) -> PodRecord:
    """The record as the pod reflector makes it: kube/podwire.py's decode, then the projection."""
    return project_pod(podwire.decode_pod(json.dumps(pod).encode()))


def _strict(record: PodRecord) -> list[tuple[str, type, Any]]:
    """Every field with its type; `pending_spec` as JSON text (in which 300 and 300.0 differ)."""
    fields = []
    for name in POD_FIELDS:
        value = getattr(record, name)
        if name == "pending_spec" and value is not None:
            value = json.dumps(value, sort_keys=True)
        fields.append((name, type(value), value))
    return fields


def _changed(pod: dict[str, Any], change: Change) -> dict[str, Any] | None:
    mutated = copy.deepcopy(pod)
    try:
        change(mutated)
    except (KeyError, IndexError, StopIteration):
        return None  # this variant lacks the field (e.g. no PodScheduled condition of its kind)
    return mutated


@pytest.mark.parametrize("name", sorted(READ_CHANGES))
def test_same_pod_is_the_whole_record_compared_field_by_field(name: str) -> None:
    """For every variant, `same_pod` says "same" exactly when every field of the two records is
    equal with its type; and the change makes some variant's record differ (it is read)."""
    moved = 0
    for pod in _pods():
        mutated = _changed(pod, READ_CHANGES[name])
        if mutated is None:
            continue
        old, new = _record(pod), _record(mutated)
        assert same_pod(old, new) == (_strict(old) == _strict(new)), (name, old, new)
        moved += not same_pod(old, new)
    assert moved, f"{name}: no variant's record changed"


@pytest.mark.parametrize("name", sorted(QUIET))
def test_status_updates_the_books_do_not_read_leave_the_record_the_same(name: str) -> None:
    """The benchmark's quiet events (readiness flips, restarts, another annotation) on every
    running variant: the same record, field by field."""
    for pod in _pods():
        if pod["status"]["phase"] != "Running":
            continue
        mutated = _changed(pod, QUIET[name])
        assert mutated is not None
        old, new = _record(pod), _record(mutated)
        assert same_pod(old, new) and _strict(old) == _strict(new)


def test_pending_specs_are_the_same_in_any_key_order_and_never_when_not_json() -> None:
    """The same spec with its keys in another order (a client may write them so) is the same;
    values equal in Python that JSON cannot write (a date read from a hand-written YAML state
    file) are told as a change, never guessed the same."""
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        "priority": 0,
    }
    reordered = {
        "priority": 0,
        "containers": [{"resources": {"requests": {"memory": "1Gi", "cpu": "1"}}, "name": "c"}],
    }
    assert same_pod(
        PodRecord("u", "ns", "p", pending_spec=spec), PodRecord("u", "ns", "p", pending_spec=reordered)
    )
    dated = {"containers": [], "x": datetime.date(2024, 5, 1)}
    assert not same_pod(
        PodRecord("u", "ns", "p", pending_spec=dated), PodRecord("u", "ns", "p", pending_spec=dict(dated))
    )


def test_a_store_keeps_the_same_record_and_tells_its_listeners_old_twice() -> None:
    """With `same`, an event whose record is the same keeps the stored object and is told as
    (event, old, old); a changed one is stored and told as (event, old, new); without `same`, every
    event is stored and told as it came."""
    seen: list[tuple[str, Any, Any]] = []
    store: Store[dict[str, Any]] = Store("things", lambda o: dict(o["spec"]), lambda a, b: a == b)
    store.add_listener(lambda event, old, new: seen.append((event, old, new)))
    obj = {"metadata": {"namespace": "a", "name": "x"}, "spec": {"v": 1}}
    store.apply("ADDED", obj)
    first = store.get("a", "x")
    store.apply("MODIFIED", obj)
    assert store.get("a", "x") is first
    assert seen[-1][1] is first and seen[-1][2] is first
    store.apply("MODIFIED", {**obj, "spec": {"v": 2}})
    assert store.get("a", "x") == {"v": 2}
    assert seen[-1][1] is first and seen[-1][2] == {"v": 2}
    plain: Store[dict[str, Any]] = Store("things", lambda o: dict(o["spec"]))
    plain.apply("ADDED", obj)
    kept = plain.get("a", "x")
    plain.apply("MODIFIED", obj)
    assert plain.get("a", "x") is not kept


def _pending(pod: Any) -> str:
    """A guard's pending pod as text, its node-matching function (compared by identity) left out."""
    needs = {f.name: getattr(pod.needs, f.name) for f in dataclasses.fields(pod.needs)}
    kept = sorted((k, v) for k, v in needs.items() if not callable(v))
    return repr((pod.namespace, pod.name, pod.uid, pod.message, kept))


def _cache(clock: Clock, skip: bool = True) -> tuple[ClusterCache, Books]:
    """The controller's cache and books; `skip` False: the pod store without `same`, every event
    told to the books as it came (as before the skip)."""
    cache = ClusterCache(CacheOptions(autoscaler_selector="", karpenter_selector=""))
    if not skip:
        cache.pods = Store("pods", project_pod)
    return cache, Books(cache, BooksOptions(window=3600.0), clock)


def test_books_fed_with_the_skip_equal_books_fed_every_event() -> None:
    """Every variant's pod listed, then one MODIFIED event per (variant, change) of every read and
    quiet change, each on a pod of its own, and then the same events again (each changing nothing
    now), the clock moving between them: the books' node rows, the guard's pending pods, the
    planner's pending store and the records equal those of books told every event as it came."""
    rendered = bigcluster.render(bigcluster.VARIANTS, 0)
    nodes = [json.loads(raw) for raw in rendered.nodes]
    pods: list[dict[str, Any]] = []
    final: list[dict[str, Any]] = []
    for name, change in sorted({**READ_CHANGES, **QUIET}.items()):
        for pod in _pods():
            mutated = _changed(pod, change)
            if mutated is None or (name in QUIET and pod["status"]["phase"] != "Running"):
                continue
            unique = f"{pod['metadata']['name']}-{len(pods)}"
            pod["metadata"]["name"] = mutated["metadata"]["name"] = unique
            pods.append(pod)
            final.append(mutated)
    lines = [json.dumps(p).encode() for p in pods]
    events = [json.dumps(p).encode() for p in final * 2]
    runs = []
    for skip in (True, False):
        clock = Clock(1_714_565_000.0)
        cache, books = _cache(clock, skip)
        cache.nodes.replace(nodes)
        for store in (cache.pods, cache.pending):
            store.replace([podwire.decode_pod(line) for line in lines])
        for line in events:
            clock.now += 7
            for store in (cache.pods, cache.pending):
                store.apply("MODIFIED", podwire.decode_pod(line))
        runs.append(
            (
                books.snapshot(clock.now),
                sorted(map(_pending, books.pending())),
                sorted(map(repr, cache.pending.items())),
                sorted(map(_strict, cache.pods.items())),
            )
        )
    assert runs[0] == runs[1]
    assert runs[0][0] and runs[0][1]  # books with rows and pending pods: the comparison reads something


def test_the_books_age_moves_on_an_event_that_changed_nothing_they_read() -> None:
    """An unchanged record still counts as a pod event for the books-age gauge (last_event)."""
    clock = Clock(1_714_565_000.0)
    cache, books = _cache(clock)
    pod = _pods()[0]
    cache.pods.apply("ADDED", pod)
    clock.now += 30
    quiet = _changed(pod, QUIET["readiness"])
    assert quiet is not None
    cache.pods.apply("MODIFIED", quiet)
    assert books.last_event == clock.now
