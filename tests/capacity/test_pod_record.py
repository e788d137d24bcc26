"""The pod record's layout (capacity/pod_record.py): every field reads back what it was given, what
replicas share is one object for all of them, and a pod with nothing rare carries no optional part."""

from __future__ import annotations

import copy

import pytest

from capacity import pod_record
from capacity.pod_record import POD_FIELDS, PodRecord
from capacity.records import project_pod
from tests.capacity.record_bytes import bytes_per_record

GIVEN = {
    "uid": "u-1",
    "namespace": "ns",
    "name": "p",
    "node": "n1",
    "phase": "Succeeded",
    "pod_eni": 2,
    "eni_count": 3,
    "eni_ids": ("eni-1", "eni-2", "eni-3"),
    "started": True,
    "finished_at": 1.0,
    "deleted_at": 2.0,
    "created_at": 3.0,
    "scheduled_at": 4.0,
    "owner_kind": "Job",
    "owner_name": "job-a",
    "keep": True,
    "unschedulable": "0/3 nodes are available",
    "cpu": 5,
    "memory": 6,
    "ephemeral_storage": 7,
    "pending_spec": {"containers": []},
}


def test_every_field_reads_back_what_it_was_given() -> None:
    """Each field by its own name, against a written-out distinct value: a field read from another
    one's place (the shared or the optional tuple) would read another value here. Comparing two
    records could not show it, since both sides would read the same wrong place."""
    assert set(GIVEN) == set(POD_FIELDS)
    record = PodRecord(**GIVEN)  # type: ignore[arg-type]
    assert {f: getattr(record, f) for f in POD_FIELDS} == GIVEN
    assert record.fields() == tuple(GIVEN[f] for f in POD_FIELDS)
    defaults = PodRecord("u", "ns", "p")
    assert (defaults.finished_at, defaults.deleted_at, defaults.keep, defaults.unschedulable) == (
        None,
        None,
        False,
        None,
    )
    assert (defaults.pending_spec, defaults.cpu, defaults.pod_eni, defaults.owner_kind) == (None, 0, 0, "")


@pytest.mark.parametrize("field", ["finished_at", "deleted_at", "keep", "unschedulable", "pending_spec"])
def test_records_differing_in_one_rare_field_differ(field: str) -> None:
    """A rare field set alone is kept (not mistaken for "nothing rare") and makes the records unequal."""
    one = PodRecord("u", "ns", "p", **{field: GIVEN[field]})  # type: ignore[arg-type]
    assert getattr(one, field) == GIVEN[field]
    assert one != PodRecord("u", "ns", "p")


def test_a_falsy_keep_that_is_not_false_is_kept_as_given() -> None:
    """Only exactly False counts as no keep label: a record reads back the value it was given."""
    assert PodRecord("u", "ns", "p", keep=0).keep == 0  # type: ignore[arg-type]
    assert PodRecord("u", "ns", "p", keep=0)._rare is not None  # type: ignore[arg-type]


def test_records_equal_in_every_field_are_equal_however_their_slots_hold_them() -> None:
    """Equality is by field: a record given keep=0 (kept in its rare part) equals one given
    keep=False (no rare part), and two records differing in one field are unequal both ways."""
    falsy = PodRecord("u", "ns", "p", node="n1", keep=0)  # type: ignore[arg-type]
    plain = PodRecord("u", "ns", "p", node="n1")
    assert falsy == plain and plain == falsy
    assert PodRecord("u", "ns", "p", node="n2") != plain
    assert PodRecord("u", "ns", "p", node="n1", cpu=1) != plain


def _replicas(count: int, template: dict[str, object]) -> list[dict[str, object]]:
    pods = []
    for i in range(count):
        raw = copy.deepcopy(template)
        raw["metadata"]["name"] = f"web-{i:05d}"  # type: ignore[index]
        raw["metadata"]["uid"] = f"6c1f2a8e-0d3b-4a55-9b1e-{i:012d}"  # type: ignore[index]
        pods.append(raw)
    return pods


RUNNING = {
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "creationTimestamp": "2024-05-01T12:00:00Z",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d4b9c", "controller": True}],
    },
    "spec": {
        "nodeName": "n1",
        "containers": [{"resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}],
    },
    "status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]},
}


def test_replicas_share_their_owner_and_requests_and_carry_no_rare_part() -> None:
    """Running replicas of one workload: one shared (owner, requests) object for all of them, no
    optional part; the memo, once full, starts again and still gives equal values."""
    first, second = (project_pod(raw) for raw in _replicas(2, RUNNING))
    assert first._shared is second._shared
    assert (first._rare, second._rare) == (None, None)
    assert (first.owner_kind, first.owner_name, first.cpu, first.memory) == (
        "ReplicaSet",
        "web-7d4b9c",
        250,
        256 * 1024 * 1024 * 1000,
    )


def test_a_full_shape_memo_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the limit the memo is emptied: sharing is lost for a while, the values never are."""
    monkeypatch.setattr(pod_record, "_SHARED_SHAPES", 1)
    monkeypatch.setattr(pod_record, "_shapes", {})
    a = PodRecord("u", "ns", "a", cpu=1)
    b = PodRecord("u", "ns", "b", cpu=2)
    assert (a.cpu, b.cpu) == (1, 2)
    assert len(pod_record._shapes) == 1


def test_a_value_of_another_type_is_not_shared_with_an_equal_int() -> None:
    """1.0 == 1 as dict keys: a float request must not come back as the int another record gave."""
    PodRecord("u", "ns", "a", cpu=1)
    assert type(PodRecord("u", "ns", "b", cpu=1.0).cpu) is float  # type: ignore[arg-type]


def test_a_running_replica_costs_its_record_alone() -> None:
    """tracemalloc over 2,000 replicas projected from their decoded objects (whose name and uid
    strings the records keep, so they are not counted): what grows per pod is the record (12
    slots, 128 B) and the list's slot; nothing of the owner, the requests or the times per pod.
    Written at 141 B; the 21-slot dataclass it replaced measured 212 B."""
    raws = _replicas(2000, RUNNING)
    assert bytes_per_record(raws) < 180


def test_one_branch_eni_is_kept_as_its_id_and_read_back_as_a_tuple() -> None:
    """The common case of a pod with branch ENIs (one) is kept without a tuple around the id; every
    count reads back as the tuple it was given."""
    one = PodRecord("u", "ns", "p", eni_ids=("eni-1",))
    assert one._eni_ids == "eni-1"
    assert one.eni_ids == ("eni-1",)
    assert PodRecord("u", "ns", "p", eni_ids=("eni-1", "eni-2")).eni_ids == ("eni-1", "eni-2")
    assert PodRecord("u", "ns", "p").eni_ids == ()
    assert one == PodRecord("u", "ns", "p", eni_ids=("eni-1",))
    assert one != PodRecord("u", "ns", "p", eni_ids=("eni-2",))


def test_pods_waiting_with_the_same_message_share_it() -> None:
    """The scheduler's message, equal for many pending pods, is one object for all of them."""
    message = "0/5000 nodes are available: 5000 Insufficient cpu."
    a = PodRecord("u", "ns", "a", unschedulable="".join(message))
    b = PodRecord("u", "ns", "b", unschedulable="".join([message[:10], message[10:]]))
    assert a.unschedulable == message and a.unschedulable is b.unschedulable


def test_a_message_met_first_reads_back_and_a_full_memo_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a fresh process (the memo empty: a warm one would hide a miss written wrongly), the first
    pod with a message keeps it; past the limit the memo is emptied and the next message still
    reads back whole."""
    monkeypatch.setattr(pod_record, "_texts", {})
    monkeypatch.setattr(pod_record, "_SHARED_SHAPES", 1)
    first = PodRecord("u", "ns", "a", unschedulable="0/3 nodes are available: 3 Insufficient cpu.")
    second = PodRecord("u", "ns", "b", unschedulable="0/3 nodes are available: 3 Too many pods.")
    assert first.unschedulable == "0/3 nodes are available: 3 Insufficient cpu."
    assert second.unschedulable == "0/3 nodes are available: 3 Too many pods."
    assert pod_record._texts == {second.unschedulable: second.unschedulable}
