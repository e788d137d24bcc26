"""The leader's pass over the branch ENI books: the guard decides which nodes carry the exhausted
label (capacity/guard.py, pure), the label writer applies it (controller/labels.py), and events say
what changed. Needs the lease: a follower keeps its books warm and does nothing else."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from capacity.branch_eni import NodeSummary, Waiting
from capacity.branch_eni_words import held_message, waiting_message
from capacity.guard import GuardDecision, GuardState, decide
from capacity.guard_nodes import guard_node
from capacity.records import NodeRecord
from controller.books import Books
from controller.books_metrics import BooksMetrics
from controller.labels import BooksDecision, LabelWant, LabelWriter
from controller.settings import BooksOptions
from kube.events import EventRecorder, ObjectRef

log = logging.getLogger(__name__)
ScaledGroups = Callable[[], "frozenset[str] | None"]  # groups fitguard scales itself (None: not yet known)


class BooksReconciler:
    """Runs every `reconcile_interval` while leading; `reconcile()` is one pass."""

    name = "books"
    needs_leader = True

    def __init__(
        self,
        books: Books,
        writer: LabelWriter,
        recorder: EventRecorder | None,
        scaled_groups: ScaledGroups = frozenset,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.books = books
        self.settings: BooksOptions = books.settings
        self.writer = writer
        self.recorder = recorder
        self.scaled_groups = scaled_groups
        self.guard_state = GuardState()
        self.guard: GuardDecision | None = None  # the last pass's, with its reasons (/snapshotz)
        self._exhausted_noted: set[str] = set()
        self._waiting_noted: dict[str, set[tuple[str, str]]] = {}  # node -> pods already reported
        # a deleted node's write is forgotten: back under the same name, it is a new node
        books.cache.nodes.add_listener(self._on_node)
        self.metrics = BooksMetrics(books, self, registry or CollectorRegistry())

    def _on_node(self, event: str, old: NodeRecord | None, new: NodeRecord | None) -> None:
        if event == "DELETED" and old is not None:
            self.writer.seen(old.name)

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.settings.reconcile_interval):
            try:
                self.reconcile()
            except Exception:  # one failed pass must not end the loop; the next one retries
                log.exception("branch ENI reconcile failed")

    def reconcile(self, now: float | None = None) -> list[BooksDecision]:
        """One pass: labels and events for every node; returns what it did. Nothing before the books
        are synced: they would show ENIs as free that are not and remove rightful labels."""
        start = time.monotonic()
        now = self.books.clock() if now is None else now
        decisions: list[BooksDecision] = []
        if self.books.synced():
            rows = self.books.snapshot(now)
            guard = self._guard(rows, now)
            for row in rows:
                want = guard.labels.get(row.name, False)
                decision = self._label(row, now, want, guard.reasons.get(row.name, ""))
                if decision is not None:
                    decisions.append(decision)
                self._events(row, now)
            self._guard_events(guard)
            if self.recorder is not None:
                self.recorder.flush()
        self.metrics.reconcile_seconds.observe(time.monotonic() - start)
        return decisions

    def _guard(self, rows: list[NodeSummary], now: float) -> GuardDecision:
        """The guard's decision for this pass (pure: capacity/guard.py)."""
        options = self.books.cache.autoscaler_taints()
        nodes_store = self.books.cache.nodes
        nodes = [
            guard_node(row, record, self.books.leaked(row.name), now, options)
            for row in rows
            if (record := nodes_store.get("", row.name)) is not None
        ]
        guard = decide(
            nodes,
            self.books.pending(),
            self.guard_state,
            now,
            grace=self.settings.guard_grace,
            scaled_groups=self.scaled_groups(),
            taint_options=options,
        )
        self.guard_state, self.guard = guard.state, guard
        return guard

    def _label(self, row: NodeSummary, now: float, want: bool, reason: str) -> BooksDecision | None:
        node = self.books.cache.nodes.get("", row.name)
        if node is None:
            return None
        if not row.capacity and not node.exhausted:
            return None  # no pod-eni capacity (or unknown): the label would mean nothing
        if node.exhausted == want:
            self.writer.seen(row.name)
            return None
        reason = held_message(row) if want and row.held else reason  # names the holding pods
        wanted = LabelWant(row.name, want, reason, row.node_group)
        if self.writer.pending(wanted, now):
            return None
        return self.writer.apply(wanted, now)

    def _guard_events(self, guard: GuardDecision) -> None:
        """The guard stepping aside is told on the pods and the nodes; its return on the nodes."""
        for verdict in guard.lifted_now:
            self.metrics.guard_lifts.labels(node_group=verdict.group).inc()
            log.warning("guard lifted", extra={"node_group": verdict.group, "reason": verdict.reason})
            for pod in verdict.pods:
                ref = ObjectRef("Pod", pod.name, pod.namespace, pod.uid)
                self._emit(ref, "BranchENIGuardSteppedAside", verdict.reason, warning=False)
            for name in verdict.nodes:
                self._emit(
                    ObjectRef("Node", name), "BranchENIGuardSteppedAside", verdict.reason, warning=False
                )
        for verdict in guard.restored_now:
            note = f"the exhausted-node guard applies again to {verdict.group}: {verdict.reason}"
            for name in verdict.nodes:
                self._emit(ObjectRef("Node", name), "BranchENIGuardRestored", note, warning=False)

    def guard_json(self) -> dict[str, Any]:
        """The guard's last decision with its reasons (for /snapshotz)."""
        guard, grace = self.guard, self.settings.guard_grace
        if guard is None:
            return {"graceSeconds": grace, "groups": {}, "nodes": {}}
        return {
            "graceSeconds": grace,
            "groups": {name: verdict.to_json() for name, verdict in sorted(guard.groups.items())},
            "nodes": {
                name: {"labelled": guard.labels[name], "reason": guard.reasons[name]}
                for name in sorted(guard.labels)
            },
        }

    def _events(self, row: NodeSummary, now: float) -> None:
        """Events on changes of state only; the recorder de-duplicates and rate-limits them."""
        exhausted = bool(row.capacity) and row.true_free is not None and row.true_free <= 0 and row.held > 0
        if exhausted and row.name not in self._exhausted_noted:
            self._exhausted_noted.add(row.name)
            self._emit(ObjectRef("Node", row.name), "BranchENIsHeld", held_message(row), warning=True)
        elif not exhausted and row.name in self._exhausted_noted:
            self._exhausted_noted.discard(row.name)
            note = f"{row.true_free} of {row.capacity} branch ENIs are free again"
            self._emit(ObjectRef("Node", row.name), "BranchENIsReleased", note, warning=False)
        waiting_now = {(w.namespace, w.pod): w for w in row.waiting_pods}
        noted = self._waiting_noted.get(row.name, set())
        for key, waiting in waiting_now.items():
            if key not in noted:
                self._emit_waiting(row, waiting, now)
        self._waiting_noted[row.name] = set(waiting_now)  # a pod that waits again is news again

    def _emit_waiting(self, row: NodeSummary, waiting: Waiting, now: float) -> None:
        pod = self.books.cache.pods.get(waiting.namespace, waiting.pod)
        ref = ObjectRef("Pod", waiting.pod, waiting.namespace, pod.uid if pod else "")
        self._emit(ref, "WaitingForBranchENI", waiting_message(row, waiting, now), warning=True)

    def _emit(self, ref: ObjectRef, reason: str, note: str, *, warning: bool) -> None:
        log.info("event", extra={"kind": ref.kind, "object": ref.name, "reason": reason, "note": note})
        if self.recorder is None:
            return
        if warning:
            self.recorder.warning(ref, reason, note, action="BranchENIAccounting")
        else:
            self.recorder.normal(ref, reason, note, action="BranchENIAccounting")
