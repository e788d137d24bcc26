"""The manager, in the shape controller-runtime's `pkg/manager` gave Go operators: it owns the cache
(controller/cache.py), the Lease (kube/leader.py) and the status server, and runs the runnables:
those that do not need the lease on every replica from the start, those that do only while this
replica leads. A leader that loses the lease stops its runnables at once (the elector sets their
stop event the moment the renew deadline passes) and the process exits, as controllers built on
client-go do, so nothing half-done continues under a new leader.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from typing import TYPE_CHECKING, Protocol

from controller.cache import ClusterCache
from kube.leader import LeaderCallbacks, LeaderElector, default_identity
from kube.options import LeaderOptions

if TYPE_CHECKING:
    from cmdline.statushttp import StatusPort
    from kube.client import KubeClient

log = logging.getLogger(__name__)
FIRST_SYNC = 60.0  # seconds a new leader waits for the stores' first lists before acting anyway


class Runnable(Protocol):
    """controller-runtime's Runnable with LeaderElectionRunnable's one question."""

    name: str
    needs_leader: bool

    def run(self, stop: threading.Event) -> None:
        """Works until `stop` is set."""
        ...


class Manager:
    def __init__(
        self,
        api: KubeClient,
        cache: ClusterCache,
        leadership: LeaderOptions | None,
        status: StatusPort,
    ) -> None:
        self.api = api
        self.cache = cache
        self.status = status
        self.identity = default_identity()
        self.runnables: list[Runnable] = []
        self.elector: LeaderElector | None = None
        if leadership is not None:  # None: no election, this replica always leads
            options = dataclasses.replace(leadership, exit_on_loss=True)
            callbacks = LeaderCallbacks(on_started_leading=self._lead)
            self.elector = LeaderElector(api, options, callbacks, identity=self.identity)

    def add(self, runnable: Runnable) -> Runnable:
        self.runnables.append(runnable)
        return runnable

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def run(self, stop: threading.Event) -> None:
        """Serves, fills the cache, runs every replica's runnables, and the leader's while leading."""
        self.status.start()
        self.cache.start(self.api)
        self._start([r for r in self.runnables if not r.needs_leader], stop)
        try:
            if self.elector is not None:
                self.elector.start()
                stop.wait()
            else:
                self._lead(stop)
        finally:
            if self.elector is not None:
                self.elector.stop()
            self.cache.stop()
            self.status.stop()

    def _lead(self, stop: threading.Event) -> None:
        """The leader's runnables until `stop` (shutdown, or the lease lost)."""
        log.info("leading", extra={"identity": self.identity})
        if not self.cache.wait_synced(FIRST_SYNC):
            log.warning("leading before every store listed", extra={"waiting": self.cache.waiting_for()})
        self._start([r for r in self.runnables if r.needs_leader], stop)
        stop.wait()

    @staticmethod
    def _start(runnables: list[Runnable], stop: threading.Event) -> None:
        for runnable in runnables:
            threading.Thread(target=runnable.run, args=(stop,), name=runnable.name, daemon=True).start()
