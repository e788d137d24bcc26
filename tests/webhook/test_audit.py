"""Audit findings become events off the request path (webhook/audit.py): what reaches the
recorder for each finding, the note cut at 1 kB, a full queue dropping (and counting) instead of
waiting, and a recorder that raises never stopping the writer. The recorder is a fake that keeps
what it is asked to write; waits are for the event itself."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kube.events import ObjectRef
from tests.waiting import eventually
from webhook.audit import MAX_NOTE, REASON, AuditEvents


class Recorder:
    """Keeps each warning it is asked to write; optionally raises on the first, or blocks until
    released."""

    def __init__(self, fail_first: bool = False, gate: threading.Event | None = None) -> None:
        self.written: list[tuple[ObjectRef, str, str, str]] = []
        self.threads: list[tuple[str, bool]] = []
        self.fail_first = fail_first
        self.gate = gate
        self.entered = threading.Event()

    def warning(self, ref: ObjectRef, reason: str, note: str, action: str = "") -> None:
        self.entered.set()
        self.threads.append((threading.current_thread().name, threading.current_thread().daemon))
        if self.gate is not None:
            self.gate.wait(30)
        if self.fail_first:
            self.fail_first = False
            raise RuntimeError("apiserver down")
        self.written.append((ref, reason, note, action))


def request(kind: Any, obj: Any) -> dict[str, Any]:
    return {"uid": "u", "kind": kind, "object": obj}


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "uid": "u-9"}}
DEPLOYMENT = {"metadata": {"name": "api", "namespace": "pay"}}


def test_each_finding_becomes_one_warning_event_about_its_object() -> None:
    """The reference names the object (kind from the request when the object lacks it), the reason
    is NoNodeGroupFits, the action Admit, and the note the message cut to 1,000 characters."""
    recorder = Recorder()
    events = AuditEvents(recorder)
    try:
        events.submit(request({"kind": "Pod"}, POD), "fits nowhere")
        events.submit(request({"group": "apps", "kind": "Deployment"}, DEPLOYMENT), "x" * 1500)
        events.submit(request("Pod", "not a map"), "odd")
        events.submit(request({"group": "apps"}, {"metadata": {"name": "x"}}), "no kind")
        eventually(lambda: len(recorder.written) == 4, "four events written")
    finally:
        events.close()
    assert recorder.written == [
        (ObjectRef("Pod", "web", "shop", "u-9", "v1"), "NoNodeGroupFits", "fits nowhere", "Admit"),
        (ObjectRef("Deployment", "api", "pay", "", "v1"), "NoNodeGroupFits", "x" * 1000, "Admit"),
        (ObjectRef("", "", "", "", "v1"), "NoNodeGroupFits", "odd", "Admit"),
        (ObjectRef("", "x", "", "", "v1"), "NoNodeGroupFits", "no kind", "Admit"),
    ]
    assert recorder.threads == [("fitguard-audit-events", True)] * 4
    assert (REASON, MAX_NOTE) == ("NoNodeGroupFits", 1000)


def test_a_recorder_that_raises_does_not_stop_the_writer(caplog: pytest.LogCaptureFixture) -> None:
    """The first write raises; the writer logs which object's event was lost and writes the next."""
    recorder = Recorder(fail_first=True)
    events = AuditEvents(recorder)
    with caplog.at_level(logging.ERROR, logger="webhook.audit"):
        try:
            events.submit(request({"kind": "Pod"}, POD), "first")
            events.submit(request({"kind": "Pod"}, POD), "second")
            eventually(lambda: len(recorder.written) == 1, "the second event written")
        finally:
            events.close()
    assert [note for _, _, note, _ in recorder.written] == ["second"]
    assert [r.getMessage() for r in caplog.records] == ["audit event for shop/web not written"]


def test_a_full_queue_drops_the_finding_and_counts_it() -> None:
    """With the writer held inside a write and a queue of one: the next finding waits in the queue,
    the one after is dropped at once and counted; once released, exactly the first two are written."""
    gate = threading.Event()
    recorder = Recorder(gate=gate)
    events = AuditEvents(recorder, capacity=1)
    dropped = REGISTRY.get_sample_value("fitguard_admission_audit_events_dropped_total") or 0.0
    try:
        events.submit(request({"kind": "Pod"}, POD), "one")
        assert recorder.entered.wait(30)
        events.submit(request({"kind": "Pod"}, POD), "two")
        events.submit(request({"kind": "Pod"}, POD), "three")
        assert REGISTRY.get_sample_value("fitguard_admission_audit_events_dropped_total") == dropped + 1
        gate.set()
        eventually(lambda: len(recorder.written) == 2, "two events written")
    finally:
        gate.set()
        events.close()
    assert [note for _, _, note, _ in recorder.written] == ["one", "two"]


def test_close_stops_the_writer_after_what_was_queued() -> None:
    """close() returns once the writer has written what was queued (no wait needed after it)."""
    recorder = Recorder()
    events = AuditEvents(recorder)
    events.submit(request({"kind": "Pod"}, POD), "last")
    events.close()
    assert [note for _, _, note, _ in recorder.written] == ["last"]


def test_the_default_queue_holds_1000_findings_and_drops_the_next() -> None:
    """With the default capacity and the writer held inside its first write: 1,000 more findings
    wait in the queue without a drop, the 1,001st is dropped and counted; once released, exactly
    the first and the 1,000 queued are written, in order."""
    gate = threading.Event()
    recorder = Recorder(gate=gate)
    events = AuditEvents(recorder)
    dropped = REGISTRY.get_sample_value("fitguard_admission_audit_events_dropped_total") or 0.0
    try:
        events.submit(request({"kind": "Pod"}, POD), "held")
        assert recorder.entered.wait(30)
        for i in range(1000):
            events.submit(request({"kind": "Pod"}, POD), str(i))
        assert REGISTRY.get_sample_value("fitguard_admission_audit_events_dropped_total") == dropped
        events.submit(request({"kind": "Pod"}, POD), "dropped")
        assert REGISTRY.get_sample_value("fitguard_admission_audit_events_dropped_total") == dropped + 1
        gate.set()
        eventually(lambda: len(recorder.written) == 1001, "1,001 events written")
    finally:
        gate.set()
        events.close()
    assert [note for _, _, note, _ in recorder.written] == ["held", *(str(i) for i in range(1000))]


class JoinRecordingThread(threading.Thread):
    """A real thread that also keeps the timeout of each join asked of it."""

    joins: list[float | None] = []

    def join(self, timeout: float | None = None) -> None:
        JoinRecordingThread.joins.append(timeout)
        super().join(timeout)


def test_close_waits_for_the_writer_at_most_five_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """close() bounds its wait for the writer (a writer stuck on the API server must not hold up
    the worker's shutdown): it joins the writer thread once, with a timeout of exactly 5 seconds.
    The writer here is not stuck, so nothing waits out the limit."""
    JoinRecordingThread.joins = []
    with monkeypatch.context() as patched:
        patched.setattr(threading, "Thread", JoinRecordingThread)
        events = AuditEvents(Recorder())
    events.submit(request({"kind": "Pod"}, POD), "last")
    events.close()
    assert JoinRecordingThread.joins == [5]
