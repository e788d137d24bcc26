"""The live branch ENI books: pods and nodes watched into Stores, the books updated per event, and
the leader's actions on them (exhausted-node label, events, metrics).

Every replica keeps warm books; only the leader (`is_leader()`) writes labels and events, so a
follower that takes over acts from books that are already complete.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from capacity.branch_eni import (
    COOLDOWN,
    COOLDOWN_KEY,
    DEFAULT_WAITING_GRACE,
    BranchEniBooks,
    NodeSummary,
    Waiting,
    configured_cooldown,
    release_window,
    release_window_from_configmap,
)
from capacity.branch_eni_words import held_message, waiting_message
from capacity.guard import (
    DEFAULT_GRACE,
    GuardDecision,
    GuardState,
    PendingPod,
    decide,
    pending_pod,
)
from capacity.guard_nodes import guard_node
from capacity.names import EXHAUSTED_LABEL, VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
from capacity.records import NodeRecord, PodRecord, discovery_node, project_node, project_pod
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.books_metrics import register_metrics
from kube import podwire
from kube.api import get_config_map
from kube.client import NODES, PODS, ApiLike, KubeError, as_kube_client
from kube.events import EventRecorder, ObjectRef, TokenBucket
from kube.patch import remove_node_label, set_node_label
from kube.reflector import Reflector
from kube.store import Fanout, Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BooksDecision:
    """One thing the leader did or chose not to do, with its reason (also logged)."""

    action: str  # label-set, label-removed, label-deferred, label-failed
    node: str
    reason: str


class LiveBooks:
    """Books fed by list+watch; `reconcile()` applies the leader's decisions."""

    def __init__(
        self,
        api: ApiLike,
        *,
        release: str = COOLDOWN,
        window: float | None = None,
        waiting_grace: float = DEFAULT_WAITING_GRACE,
        is_leader: Callable[[], bool] = lambda: True,
        recorder: EventRecorder | None = None,
        dry_run: bool = False,
        label_rate: float = 5.0,
        label_burst: float = 10.0,
        rewrite_after: float = 60.0,
        clock: Callable[[], float] = time.time,
        registry: CollectorRegistry | None = None,
        guard_grace: float = DEFAULT_GRACE,
        scaled_groups: Callable[[], frozenset[str] | None] = frozenset,
        autoscaler_taints: Callable[[], TaintOptions] = lambda: DEFAULT_TAINT_CONFIG,
    ) -> None:
        self.api = as_kube_client(api)
        self.clock = clock
        self.is_leader = is_leader
        self.dry_run = dry_run
        self.recorder = recorder
        self._fixed_window = window
        self.cooldown: float | None = None  # as last read from the ConfigMap; None before the first read
        self.books = BranchEniBooks(
            release=release, window=window or release_window(), waiting_grace=waiting_grace
        )
        self.pods: Store[PodRecord] = Store("pods", project_pod)
        self.nodes: Store[NodeRecord] = Store("nodes", project_node)
        # the same node watch keeps discovery's slim copy of each node (controller/source.py)
        self.node_objects: Store[dict[str, Any]] = Store("nodes (discovery)", discovery_node)
        self.pods.add_listener(self._on_pod)
        self.nodes.add_listener(self._on_node)
        self._lock = threading.Lock()  # the books have one writer at a time: listeners or reconcile
        self._labels = TokenBucket(label_rate, label_burst, clock())
        self._rewrite_after = rewrite_after
        self._written: dict[str, tuple[bool, float]] = {}  # node -> (exhausted, when we wrote it)
        self._exhausted_noted: set[str] = set()
        self._waiting_noted: dict[str, set[tuple[str, str]]] = {}  # node -> pods already reported
        self.last_event = 0.0  # wall time the books last changed (books age in metrics)
        self._reflectors: list[Reflector] = []
        self._frozen = False  # the first synced books moved out of the GC's generations
        # the exhausted-node guard (capacity/guard.py): its memory between passes and its last word
        self.guard_grace = guard_grace
        self.scaled_groups = scaled_groups
        self.autoscaler_taints = autoscaler_taints  # the running cluster-autoscaler's, as last seen
        self.guard_state = GuardState()
        self.guard: GuardDecision | None = None
        self._pending_pods: dict[tuple[str, str], PodRecord] = {}
        self.leaked: dict[str, int] = {}  # node -> leaked branch ENIs (--verify-with-ec2), set by the loop
        self.registry = registry or CollectorRegistry()
        self.guard_lifts, self.reconcile_seconds = register_metrics(self, self.registry)

    # -- feeding the books ---------------------------------------------------------------------

    def _on_pod(self, event: str, old: PodRecord | None, new: PodRecord | None) -> None:
        now = self.clock()
        with self._lock:
            if event == "DELETED" and old is not None:
                self.books.delete_pod(old, now)
            elif new is not None:
                self.books.update_pod(new, now)
            self.last_event = now
            # the guard's pending pods, kept here so a pass need not walk every pod
            pod = new or old
            if pod is not None:
                key = (pod.namespace, pod.name)
                if event != "DELETED" and new is not None and new.pending_spec is not None and not new.node:
                    self._pending_pods[key] = new
                else:
                    self._pending_pods.pop(key, None)

    def _on_node(self, event: str, old: NodeRecord | None, new: NodeRecord | None) -> None:
        with self._lock:
            if event == "DELETED" and old is not None:
                self.books.remove_node(old.name)
                self._written.pop(old.name, None)
            elif new is not None:
                self.books.set_node(new)
            self.last_event = self.clock()

    def read_window(self) -> float:
        """The release window from ConfigMap kube-system/amazon-vpc-cni (unless fixed), as the VPC
        resource controller reads it: at the first read a missing ConfigMap or value is the default;
        after it, the cooldown held is kept (capacity/branch_eni.py release_window_from_configmap)."""
        if self._fixed_window is not None:
            return self._fixed_window
        try:
            config_map = get_config_map(self.api, VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME)
        except KubeError as err:
            if not err.not_found:
                log.warning(
                    "reading the VPC CNI ConfigMap failed, keeping the window", extra={"error": str(err)}
                )
                return self.books.window
            config_map = {}
        data = config_map.get("data")
        data = data if isinstance(data, Mapping) else None
        if configured_cooldown(data) is None:
            log.info(
                "branch-eni-cooldown absent or unreadable",
                extra={"value": (data or {}).get(COOLDOWN_KEY), "keeping": self.cooldown},
            )
        read = release_window_from_configmap(data, self.cooldown)
        if read.seconds != self.books.window or self.cooldown is None:
            log.info(
                "branch ENI release window",
                extra={"window_seconds": read.seconds, "cooldown_seconds": read.cooldown},
            )
        self.cooldown = read.cooldown
        with self._lock:
            self.books.window = read.seconds
        return read.seconds

    def start(self, page_size: int = 500) -> LiveBooks:
        """Starts the pod and node reflectors (threads); `wait_synced` before trusting the books."""
        self.read_window()
        self._reflectors = [
            Reflector(
                self.api,
                NODES,
                Fanout([self.nodes, self.node_objects]),
                page_size=page_size,
                name="books-nodes",
            ).start(),
            Reflector(
                self.api, PODS, self.pods, page_size=page_size, name="books-pods", **podwire.DECODERS
            ).start(),  # pods parsed for the fields the records read only
        ]
        return self

    def waiting_for(self) -> list[str]:
        """The caches the books need whose first list has not completed: both of them until then,
        however far start-up has come (before `start`, while it reads the VPC CNI ConfigMap)."""
        return [store.kind for store in (self.nodes, self.pods) if not store.synced]

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Whether both caches completed their first list, waiting up to `timeout` s (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.waiting_for():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        if not self._frozen:
            # the first complete books leave the GC's generations (as webhook/server.py's caches)
            self._frozen = True
            gc.freeze()
        return True

    def stop(self) -> None:
        for reflector in self._reflectors:
            reflector.stop()

    def snapshot(self, now: float | None = None) -> list[NodeSummary]:
        now = self.clock() if now is None else now
        with self._lock:
            self.books.expire(now)
            return self.books.node_summary(now)

    # -- the leader's actions ------------------------------------------------------------------

    def reconcile(self, now: float | None = None) -> list[BooksDecision]:
        """One pass: labels and events for every node (the leader only); returns what it did."""
        start = time.monotonic()
        now = self.clock() if now is None else now
        rows = self.snapshot(now)
        decisions: list[BooksDecision] = []
        # Before the first complete list of pods and nodes the books show ENIs as free that are not:
        # acting then would remove rightful exhausted labels.
        if self.is_leader() and self.wait_synced(0):
            guard = self._guard(rows, now)
            for row in rows:
                decision = self._label(
                    row, now, guard.labels.get(row.name, False), guard.reasons.get(row.name, "")
                )
                if decision is not None:
                    decisions.append(decision)
                self._events(row, now)
            self._guard_events(guard)
            if self.recorder is not None:
                self.recorder.flush()
        self.reconcile_seconds.observe(time.monotonic() - start)
        return decisions

    def _guard(self, rows: list[NodeSummary], now: float) -> GuardDecision:
        """The guard's decision for this pass (pure: capacity/guard.py), kept for /snapshotz."""
        options = self.autoscaler_taints()
        nodes = [
            guard_node(row, record, self.leaked.get(row.name, 0), now, options)
            for row in rows
            if (record := self.nodes.get("", row.name)) is not None
        ]
        guard = decide(
            nodes,
            self._pending(),
            self.guard_state,
            now,
            grace=self.guard_grace,
            scaled_groups=self.scaled_groups(),
            taint_options=options,
        )
        self.guard_state, self.guard = guard.state, guard
        return guard

    def _pending(self) -> list[PendingPod]:
        """Unschedulable pod-eni pods from the watch (their records keep what placement needs)."""
        pending = []
        with self._lock:
            records = list(self._pending_pods.values())
        for pod in records:
            try:
                pending.append(
                    pending_pod(pod.namespace, pod.name, pod.uid, pod.unschedulable or "", pod.pending_spec)
                )
            except (TypeError, ValueError) as err:
                log.warning(
                    "pending pod unreadable, not guarded for", extra={"pod": pod.name, "error": str(err)}
                )
        return pending

    def _guard_events(self, guard: GuardDecision) -> None:
        """The guard stepping aside is told on the pods and the nodes; its return on the nodes."""
        for verdict in guard.lifted_now:
            self.guard_lifts.labels(node_group=verdict.group).inc()
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
        guard = self.guard
        if guard is None:
            return {"graceSeconds": self.guard_grace, "groups": {}, "nodes": {}}
        return {
            "graceSeconds": self.guard_grace,
            "groups": {name: verdict.to_json() for name, verdict in sorted(guard.groups.items())},
            "nodes": {
                name: {"labelled": guard.labels[name], "reason": guard.reasons[name]}
                for name in sorted(guard.labels)
            },
        }

    def _label(self, row: NodeSummary, now: float, want: bool, reason: str) -> BooksDecision | None:
        node = self.nodes.get("", row.name)
        if node is None:
            return None
        if not row.capacity and not node.exhausted:
            return None  # no pod-eni capacity (or unknown): the label would mean nothing
        written = self._written.get(row.name)
        if node.exhausted == want:
            self._written.pop(row.name, None)  # the watch shows our write: nothing left to remember
            return None
        if written is not None and written[0] == want and now - written[1] < self._rewrite_after:
            return None  # written already; the watch has not shown it yet
        reason = held_message(row) if want and row.held else reason  # names the holding pods
        if not self._labels.take(now):
            log.info("label write deferred", extra={"node": row.name, "exhausted": want, "why": "rate limit"})
            return BooksDecision("label-deferred", row.name, "rate limit")
        action = "label-set" if want else "label-removed"
        try:
            if not self.dry_run:
                if want:
                    set_node_label(self.api, row.name, EXHAUSTED_LABEL, "true")
                else:
                    remove_node_label(self.api, row.name, EXHAUSTED_LABEL)
        except KubeError as err:
            log.warning("label write failed", extra={"node": row.name, "exhausted": want, "error": str(err)})
            return BooksDecision("label-failed", row.name, str(err))
        self._written[row.name] = (want, now)
        log.info(action, extra={"node": row.name, "node_group": row.node_group, "reason": reason})
        return BooksDecision(action, row.name, reason)

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
        pod = self.pods.get(waiting.namespace, waiting.pod)
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

    def run(self, stop: threading.Event, interval: float = 5.0, window_refresh: float = 300.0) -> None:
        """Reconciles every `interval` seconds until `stop` is set (the controller's loop)."""
        refreshed = time.monotonic()
        while not stop.wait(interval):
            if time.monotonic() - refreshed >= window_refresh:
                self.read_window()
                refreshed = time.monotonic()
            try:
                self.reconcile()
            except Exception:  # one failed pass must not end the loop; the next one retries
                log.exception("branch ENI reconcile failed")
