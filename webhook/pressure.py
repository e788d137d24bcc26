"""Whether one worker's admission port can answer now, for /readyz: the worker's front loop records
what it does, the status port's thread asks. The clock is passed in, so the judgement is testable.

A review is answered late when a whole request waits for a thread (every thread busy), when new
connections wait in the kernel's backlog (the worker holds --max-connections), or when the front
loop that accepts and reads them has stopped turning. Each held longer than SATURATION_SECONDS
makes the worker not ready, so the Service sends the apiserver to the other replicas.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

# The apiserver gives /mutate 3 s in all (manifests/base/webhook-configurations.yaml): a review that
# waited 1 s before any work on it began is already a third of the way to being dropped.
SATURATION_SECONDS = 1.0
# The front loop turns at least once a second (gunicorn's gthread select timeout) when idle.
LOOP_SILENCE_SECONDS = 3.0


@dataclass(frozen=True)
class PressureLimits:
    threads: int
    connections: int  # --max-connections of this worker


class Pressure:
    """Thread-safe: the front loop and the worker threads write, the status thread reads."""

    def __init__(self, limits: PressureLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._queued: deque[float] = deque()  # when each request still waiting for a thread came
        self._full_since: float | None = None  # since when every connection slot is taken
        self._turned: float | None = None  # the front loop's last turn; None before the first

    def submitted(self, now: float) -> None:
        """A whole request was handed to the thread pool (which starts them in this order)."""
        with self._lock:
            self._queued.append(now)

    def started(self) -> None:
        """A thread took the oldest waiting request."""
        with self._lock:
            if self._queued:
                self._queued.popleft()

    def turned(self, now: float, connections: int) -> None:
        """The front loop turned, holding `connections` connections."""
        with self._lock:
            self._turned = now
            if connections < self.limits.connections:
                self._full_since = None
            elif self._full_since is None:
                self._full_since = now

    def blocked(self, now: float) -> list[str]:
        """Why this worker's admission port cannot answer in time; empty when it can."""
        with self._lock:
            oldest = self._queued[0] if self._queued else None
            waiting = len(self._queued)
            full_since, turned = self._full_since, self._turned
        reasons = []
        if oldest is not None and now - oldest > SATURATION_SECONDS:
            reasons.append(
                f"admission threads (all {self.limits.threads} busy: {waiting} reviews waiting, "
                f"the oldest for {now - oldest:.1f} s)"
            )
        if full_since is not None and now - full_since > SATURATION_SECONDS:
            reasons.append(
                f"admission connections (all {self.limits.connections} held for "
                f"{now - full_since:.1f} s; new ones wait in the backlog)"
            )
        if turned is None:  # the status port answers while the worker still loads the app
            reasons.append("admission front loop (not started: the worker is starting)")
        elif now - turned > LOOP_SILENCE_SECONDS:
            reasons.append(f"admission front loop (silent for {now - turned:.1f} s)")
        return reasons
