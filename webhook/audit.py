"""Audit findings (mode `audit`) become Kubernetes events, written off the request path.

The request thread only enqueues; one background thread per worker writes through kube/events.py,
which de-duplicates and rate-limits. A full queue drops the finding (counted): admission latency
never depends on the API server's.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Mapping
from typing import Any

from webhook import metrics

log = logging.getLogger(__name__)
REASON = "NoNodeGroupFits"
MAX_NOTE = 1000  # events.k8s.io/v1 limits `note` to 1 kB


class AuditEvents:
    """Queue of (object reference, note) written by a daemon thread through an EventRecorder."""

    def __init__(self, recorder: Any, capacity: int = 1000) -> None:
        self._recorder = recorder
        self._queue: queue.Queue[tuple[Any, str] | None] = queue.Queue(maxsize=capacity)
        self._thread = threading.Thread(target=self._drain, name="fitguard-audit-events", daemon=True)
        self._thread.start()

    def submit(self, request: Mapping[str, Any], message: str) -> None:
        from kube.events import ObjectRef

        obj = request.get("object")
        kind = request.get("kind")
        ref = ObjectRef.of(
            obj if isinstance(obj, Mapping) else {},
            kind=str(kind.get("kind", "")) if isinstance(kind, Mapping) else "",
        )
        try:
            self._queue.put_nowait((ref, message[:MAX_NOTE]))
        except queue.Full:
            metrics.AUDIT_DROPPED.inc()

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            ref, note = item
            try:
                self._recorder.warning(ref, REASON, note, action="Admit")
            except Exception:  # the recorder never raises by contract; this thread must not die
                log.exception("audit event for %s/%s not written", ref.namespace, ref.name)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)
