"""The branch ENI books, kept from the cache's pod and node stores (controller/cache.py) on every
replica, so a follower that takes over acts from books that are already complete. What the leader
does with them (labels, events, the guard) is controller/books_reconciler.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from capacity.branch_eni import (
    COOLDOWN_KEY,
    BranchEniBooks,
    NodeSummary,
    configured_cooldown,
    release_window,
    release_window_from_configmap,
)
from capacity.guard import PendingPod, pending_pod
from capacity.names import VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
from capacity.records import NodeRecord, PodRecord
from controller.cache import ClusterCache, ConfigMapUnreadable
from controller.settings import BooksOptions

log = logging.getLogger(__name__)


class Books:
    """Books fed by the cache's listeners; reads are consistent snapshots. As a runnable of every
    replica, it reads the release window again from time to time."""

    name = "books-window"
    needs_leader = False

    def __init__(
        self, cache: ClusterCache, settings: BooksOptions, clock: Callable[[], float] = time.time
    ) -> None:
        self.cache = cache
        self.settings = settings
        self.clock = clock
        self.cooldown: float | None = None  # as last read from the ConfigMap; None before the first read
        self.model = BranchEniBooks(
            release=settings.release,
            window=settings.window or release_window(),
            waiting_grace=settings.waiting_grace,
        )
        self._lock = threading.Lock()  # one writer at a time: the listeners, or an expiry
        self.last_event = 0.0  # wall time the books last changed (books age in metrics)
        self._pending_pods: dict[tuple[str, str], PodRecord] = {}  # the guard's, kept per event
        self._leaked: dict[str, int] = {}  # node -> branch ENIs EC2 says leaked (--verify-with-ec2)
        cache.pods.add_listener(self._on_pod)
        cache.nodes.add_listener(self._on_node)
        cache.before_fill(self.read_window)

    # -- fed by the cache ---------------------------------------------------------------------

    def _on_pod(self, event: str, old: PodRecord | None, new: PodRecord | None) -> None:
        now = self.clock()
        if new is old:  # the store kept its record (kube/store.py `same`): nothing the books read moved
            self.last_event = now
            return
        with self._lock:
            if event == "DELETED" and old is not None:
                self.model.delete_pod(old, now)
            elif new is not None:
                self.model.update_pod(new, now)
            self.last_event = now
            # the guard's pending pods, kept here so a pass need not walk every pod
            pod = new or old
            if pod is not None:
                key = (pod.namespace, pod.name)
                if new is not None and new.pending_spec is not None and not new.node:  # None: deleted
                    self._pending_pods[key] = new
                else:
                    self._pending_pods.pop(key, None)

    def _on_node(self, event: str, old: NodeRecord | None, new: NodeRecord | None) -> None:
        with self._lock:
            if event == "DELETED" and old is not None:
                self.model.remove_node(old.name)
            elif new is not None:
                self.model.set_node(new)
            self.last_event = self.clock()

    def read_window(self) -> float:
        """The release window from ConfigMap kube-system/amazon-vpc-cni (unless fixed), as the VPC
        resource controller reads it: at the first read a missing ConfigMap or value is the default;
        after it, the cooldown held is kept (capacity/branch_eni.py release_window_from_configmap)."""
        if self.settings.window is not None:
            return self.settings.window
        try:
            config_map = self.cache.config_map(VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME) or {}
        except ConfigMapUnreadable as err:
            log.warning("reading the VPC CNI ConfigMap failed, keeping the window", extra={"error": str(err)})
            return self.model.window
        data = config_map.get("data")
        data = data if isinstance(data, Mapping) else None
        if configured_cooldown(data) is None:
            log.info(
                "branch-eni-cooldown absent or unreadable",
                extra={"value": (data or {}).get(COOLDOWN_KEY), "keeping": self.cooldown},
            )
        read = release_window_from_configmap(data, self.cooldown)
        if read.seconds != self.model.window or self.cooldown is None:
            log.info(
                "branch ENI release window",
                extra={"window_seconds": read.seconds, "cooldown_seconds": read.cooldown},
            )
        self.cooldown = read.cooldown
        with self._lock:
            self.model.window = read.seconds
        return read.seconds

    def note_leaks(self, leaked: Mapping[str, int]) -> None:
        """What the last EC2 verification found leaked, per node (the guard counts them held)."""
        self._leaked = dict(leaked)

    # -- read by the reconcilers, the metrics and /snapshotz ----------------------------------

    @property
    def window(self) -> float:
        return self.model.window

    def leaked(self, node: str) -> int:
        return self._leaked.get(node, 0)

    def synced(self) -> bool:
        """Both the pod and the node store completed their first list: before that the books show
        branch ENIs as free that are not."""
        return self.cache.pods.synced and self.cache.nodes.synced

    def snapshot(self, now: float | None = None) -> list[NodeSummary]:
        now = self.clock() if now is None else now
        with self._lock:
            self.model.expire(now)
            return self.model.node_summary(now)

    def true_free(self, now: float | None = None) -> dict[str, int | None]:
        """Truly free branch ENIs per node (the planner counts held ENIs and advertised capacity)."""
        return {row.name: row.true_free for row in self.snapshot(now)}

    def pending(self) -> list[PendingPod]:
        """Unschedulable pod-eni pods from the watch (their records keep what placement needs)."""
        found = []
        with self._lock:
            records = list(self._pending_pods.values())
        for pod in records:
            try:
                found.append(
                    pending_pod(pod.namespace, pod.name, pod.uid, pod.unschedulable or "", pod.pending_spec)
                )
            except (TypeError, ValueError) as err:
                log.warning(
                    "pending pod unreadable, not guarded for", extra={"pod": pod.name, "error": str(err)}
                )
        return found

    def run(self, stop: threading.Event) -> None:
        """Every replica: the release window read again every `window_refresh` seconds."""
        while not stop.wait(self.settings.window_refresh):
            self.read_window()
