"""Leader election on a coordination.k8s.io/v1 Lease, with raw GET/PUT.

The algorithm is client-go's (tools/leaderelection/leaderelection.go): a lease is free when it has
no holder or when its record has not changed for `leaseDurationSeconds` as seen on this process's
monotonic clock (so clock skew between nodes does not matter); writes carry the resourceVersion, so
two candidates cannot both win. Unlike the client's LeaseLock, a leader that cannot renew within
`renew_deadline` stops acting at once: `is_leader()` turns False on the clock alone, a watchdog
fires `on_stopped_leading` even while a renew call hangs, and `exit_on_loss` ends the process.
"""

from __future__ import annotations

import logging
import math
import os
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kube.client import LEASES, KubeClient, KubeError, as_kube_client
from kube.events import micro_time
from kube.options import LeaderOptions

log = logging.getLogger(__name__)


def default_identity() -> str:
    """Pod name (POD_NAME from the downward API, else the hostname) plus a random suffix, so a
    restarted container never mistakes its predecessor's lease for its own."""
    pod = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{pod}_{secrets.token_hex(4)}"


@dataclass(frozen=True)
class LeaderCallbacks:
    """What runs as leadership comes and goes (client-go leaderelection.go LeaderCallbacks).
    `on_started_leading` runs on a thread of its own with an Event set when leadership ends;
    `on_stopped_leading` runs once leadership is lost or given up. A callback that raises is
    logged."""

    on_started_leading: Callable[[threading.Event], None] | None = None
    on_stopped_leading: Callable[[], None] | None = None


class LeaderElector:
    """Campaigns for `namespace/name` until stopped; leads while it renews in time."""

    def __init__(
        self,
        api: KubeClient | Any,
        options: LeaderOptions = LeaderOptions(),
        callbacks: LeaderCallbacks = LeaderCallbacks(),
        *,
        identity: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`options`: the Lease and the durations (kube/options.py, checked there); `identity`:
        this candidate's, default_identity() when empty; `clock`: the wall clock, only for the
        times written into the Lease."""
        self.api = as_kube_client(api)
        self.name = name = options.name
        self.namespace = namespace = options.namespace
        self.path = LEASES.path(namespace, name)
        self.collection = LEASES.path(namespace)
        self.identity = identity or default_identity()
        self.lease_duration = options.lease_duration
        self.renew_deadline = options.renew_deadline
        self.retry_period = options.retry_period
        self.on_started_leading = callbacks.on_started_leading
        self.on_stopped_leading = callbacks.on_stopped_leading
        self.exit_on_loss = options.exit_on_loss
        self.clock = clock
        self.observed_holder = ""
        self.terms = 0  # times this elector became leader (a metric)
        self._exit: Callable[[int], None] = os._exit  # replaced in tests
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._leading = False
        self._renewed_at = 0.0  # monotonic time a successful renew was sent
        self._work_stop = threading.Event()
        self._observed: tuple[str, str, str] = ("", "", "")
        self._observed_at = 0.0
        self._thread: threading.Thread | None = None
        # a hung call ends by the deadline
        self._timeout = (min(2.0, options.retry_period * 2), options.renew_deadline)

    # -- public API ---------------------------------------------------------------------------

    def start(self) -> LeaderElector:
        if self._thread is not None:
            raise RuntimeError("leader elector already started")
        self._thread = threading.Thread(target=self._run, name=f"leader-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        """Stops campaigning; a leader stops acting and (with `release`) frees the lease at once."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        was_leading = self._leading
        self._lose("shutting down", exiting=False)
        if release and was_leading:
            self._release()

    def is_leader(self) -> bool:
        """True only while the last successful renew is younger than the renew deadline."""
        with self._lock:
            return self._leading and time.monotonic() - self._renewed_at < self.renew_deadline

    # -- the loop -----------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                won = self._try_acquire_or_renew()
            except Exception:  # a bug here must not leave a leader that thinks it still leads
                log.exception("lease %s/%s: unexpected failure", self.namespace, self.name)
                won = False
            if won and not self._leading:
                self._become_leader()
            wait = self.retry_period
            if not self._leading:
                wait *= 1.0 + 0.2 * random.random()  # candidates spread out, as client-go jitters
            self._stop.wait(wait)

    def _try_acquire_or_renew(self) -> bool:
        sent_at = time.monotonic()
        now = micro_time(self.clock())
        try:
            lease = self.api.request("GET", self.path, timeout=self._timeout)
        except KubeError as err:
            if err.not_found:
                return self._create(sent_at, now)
            log.warning("lease %s/%s: cannot read: %s", self.namespace, self.name, err)
            return False
        spec = lease.get("spec") or {}
        meta = lease.get("metadata") or {}
        holder = str(spec.get("holderIdentity") or "")
        self._observe(holder, str(spec.get("renewTime") or ""), str(meta.get("resourceVersion") or ""))
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity:
            if self._leading:
                self._lose(f"lease taken by {holder}")
            if time.monotonic() < self._observed_at + duration:
                return False
            log.info("lease %s/%s: holder %s expired", self.namespace, self.name, holder)
        transitions = int(spec.get("leaseTransitions") or 0)
        fresh = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "acquireTime": spec.get("acquireTime") if holder == self.identity else now,
            "renewTime": now,
            "leaseTransitions": transitions if holder == self.identity else transitions + 1,
        }
        body = {**lease, "spec": {**spec, **fresh}}
        try:
            self.api.request("PUT", self.path, body=body, timeout=self._timeout)
        except KubeError as err:
            log.info("lease %s/%s: %s failed: %s", self.namespace, self.name, "renew", err)
            return False
        return self._renewed(sent_at)

    def _create(self, sent_at: float, now: str) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": math.ceil(self.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            self.api.request("POST", self.collection, body=body, timeout=self._timeout)
        except KubeError as err:
            log.info("lease %s/%s: create failed: %s", self.namespace, self.name, err)
            return False
        return self._renewed(sent_at)

    def _renewed(self, sent_at: float) -> bool:
        with self._lock:
            if self._leading and sent_at - self._renewed_at >= self.renew_deadline:
                return False  # too late: the watchdog has or is about to let go
            self._renewed_at = sent_at
        self.observed_holder = self.identity
        return True

    def _observe(self, holder: str, renew_time: str, resource_version: str) -> None:
        record = (holder, renew_time, resource_version)
        if record != self._observed:
            self._observed = record
            self._observed_at = time.monotonic()
        self.observed_holder = holder

    # -- leading ------------------------------------------------------------------------------

    def _become_leader(self) -> None:
        with self._lock:
            if time.monotonic() - self._renewed_at >= self.renew_deadline:
                return
            self._leading = True
            self._work_stop = threading.Event()
            self.terms += 1
            term, work_stop = self.terms, self._work_stop
        log.info("lease %s/%s: %s is the leader", self.namespace, self.name, self.identity)
        threading.Thread(target=self._watchdog, args=(term,), name="leader-watchdog", daemon=True).start()
        if self.on_started_leading is not None:
            threading.Thread(
                target=self._lead, args=(work_stop,), name=f"leading-{self.name}", daemon=True
            ).start()

    def _lead(self, work_stop: threading.Event) -> None:
        assert self.on_started_leading is not None
        try:
            self.on_started_leading(work_stop)
        except Exception:
            log.exception("on_started_leading failed")

    def _watchdog(self, term: int) -> None:
        """Lets go the moment the renew deadline passes, whatever the renew call is doing."""
        while True:
            with self._lock:
                if not self._leading or term != self.terms:
                    return
                remaining = self._renewed_at + self.renew_deadline - time.monotonic()
            if remaining <= 0:
                self._lose("renew deadline passed")
                return
            self._work_stop.wait(remaining)

    def _lose(self, why: str, exiting: bool = True) -> None:
        with self._lock:
            if not self._leading:
                return
            self._leading = False
            work_stop = self._work_stop
        work_stop.set()
        log.warning("lease %s/%s: %s stops leading: %s", self.namespace, self.name, self.identity, why)
        if self.on_stopped_leading is not None:
            try:
                self.on_stopped_leading()
            except Exception:
                log.exception("on_stopped_leading failed")
        if self.exit_on_loss and exiting:
            self._exit(1)  # whatever the leader's threads are doing, they stop here

    def _release(self) -> None:
        """Frees the lease for a quick takeover: no holder, a one-second duration (client-go's
        ReleaseOnCancel)."""
        try:
            lease = self.api.request("GET", self.path, timeout=self._timeout)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = micro_time(self.clock())
            spec = {**spec, "holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": now}
            self.api.request("PUT", self.path, body={**lease, "spec": spec}, timeout=self._timeout)
        except KubeError as err:
            log.warning("lease %s/%s: release failed: %s", self.namespace, self.name, err)
