"""Events (events.k8s.io/v1) a person can act on, de-duplicated and rate-limited.

De-duplication follows client-go's events recorder (tools/events/event_broadcaster.go): events with
the same type, action, reason, reporting controller and instance, regarding and related object are
one Event; the first occurrence creates it, a repeat within the window turns it into a series
(count 2, then more) written as a patch of `series`, and a series is finished once quiet for 6
minutes. Rate limits follow the legacy recorder's spam filter (tools/record/events_cache.go: per
object, a burst of 25 refilled at one per 5 minutes), plus a global bucket. Recording never raises.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kube.client import EVENTS, MERGE_PATCH, KubeClient, KubeError, as_kube_client
from kube.options import EventOptions

NOTE_LIMIT = 1024  # events.k8s.io/v1 validation: note is at most 1 kB
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ObjectRef:
    """What an Event is about (an ObjectReference)."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"

    @classmethod
    def of(cls, obj: Mapping[str, Any], kind: str = "", api_version: str = "") -> ObjectRef:
        """The reference to a raw object (list items lack kind and apiVersion: pass them then)."""
        meta = obj.get("metadata") or {}
        return cls(
            kind=str(obj.get("kind") or kind),
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid") or ""),
            api_version=str(obj.get("apiVersion") or api_version or "v1"),
        )

    def to_json(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref


class TokenBucket:
    """`burst` tokens, refilled at `rate` per second; time comes from the caller."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.last = now

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + max(0.0, now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def full(self, now: float) -> bool:
        return self.tokens + max(0.0, now - self.last) * self.rate >= self.burst


@dataclass
class EventStats:
    created: int = 0
    series_updates: int = 0
    rate_limited: int = 0
    failed: int = 0  # refused by the API or unreachable: logged, never raised


@dataclass(frozen=True)
class _Key:
    """What makes two occurrences one Event (client-go's eventKey; the note is not part of it)."""

    regarding: ObjectRef
    reason: str
    event_type: str
    action: str
    related: ObjectRef | None


@dataclass
class _Seen:
    """An Event already written, and what its series should say."""

    name: str
    namespace: str
    body: dict[str, Any]
    count: int = 1
    last_observed: float = 0.0
    written_count: int = 1  # the series count the API last accepted
    lock: threading.Lock = field(default_factory=threading.Lock)


def micro_time(epoch: float) -> str:
    """metav1.MicroTime as the API prints it."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRecorder:
    """Writes Events for one reporting instance. `dry_run` sends nothing and keeps what it would."""

    def __init__(
        self,
        api: KubeClient | Any | None,
        reporting_instance: str,
        options: EventOptions = EventOptions(),
        *,
        dry_run: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`options`: who reports and the de-duplication window and rate limits (kube/options.py);
        `api` None is a dry run."""
        self.api = as_kube_client(api) if api is not None else None
        self.dry_run = dry_run or api is None
        self.options = options
        self.reporting_controller = options.reporting_controller
        self.reporting_instance = reporting_instance[:128]
        self.clock = clock
        self.window = options.window
        self.timeout = options.timeout
        self.stats = EventStats()
        # {"verb", "event", "dryRun"} of every write, sent or not
        self.recent: deque[dict[str, Any]] = deque(maxlen=options.history)
        self._global = TokenBucket(options.rate, options.burst, clock())
        self._buckets: dict[tuple[str, str, str], TokenBucket] = {}
        self._seen: dict[_Key, _Seen] = {}
        self._lock = threading.Lock()
        self._sequence = 0
        self._last_prune = clock()

    def normal(self, regarding: ObjectRef, reason: str, note: str, action: str = "Reconcile") -> None:
        self.record(regarding, reason, note, event_type="Normal", action=action)

    def warning(self, regarding: ObjectRef, reason: str, note: str, action: str = "Reconcile") -> None:
        self.record(regarding, reason, note, event_type="Warning", action=action)

    def record(
        self,
        regarding: ObjectRef,
        reason: str,
        note: str,
        *,
        event_type: str = "Normal",
        action: str = "Reconcile",
        related: ObjectRef | None = None,
    ) -> None:
        """One occurrence. Never raises: a refusal is logged and counted in `stats.failed`."""
        try:
            self._record(_Key(regarding, reason, event_type, action, related), note)
        except Exception:  # recording is best effort by contract: the caller's work goes on
            self.stats.failed += 1
            log.exception("recording event %s on %s/%s failed", reason, regarding.kind, regarding.name)

    def flush(self) -> None:
        """Writes series counts held back by the rate limits (call it now and then)."""
        with self._lock:
            pending = [seen for seen in self._seen.values() if seen.count > seen.written_count]
        for seen in pending:
            try:
                self._write_series(seen)
            except Exception:  # same contract as record()
                self.stats.failed += 1
                log.exception("flushing event series %s failed", seen.name)

    # -- internals ----------------------------------------------------------------------------

    def _record(self, key: _Key, note: str) -> None:
        now = self.clock()
        regarding = key.regarding
        with self._lock:
            self._prune(now)
            seen = self._seen.get(key)
            if seen is not None and now - seen.last_observed > self.window:
                seen = None  # the series is over: a new occurrence starts a new Event
            if seen is not None:
                seen.count += 1
                seen.last_observed = now
            allowed = self._allow(regarding, now)
            if seen is None and not allowed:
                self.stats.rate_limited += 1
                log.info("event %s on %s/%s rate-limited", key.reason, regarding.kind, regarding.name)
                return
            if seen is None:
                seen = self._new_event(key, note, now)
                self._seen[key] = seen
                create = True
            else:
                create = False
        if create:
            self._create(seen)
        elif allowed:
            self._write_series(seen)
        else:
            self.stats.rate_limited += 1  # the count is kept and goes out with the next write

    def _allow(self, regarding: ObjectRef, now: float) -> bool:
        bucket_key = (regarding.kind, regarding.namespace, regarding.name)
        bucket = self._buckets.get(bucket_key)
        if bucket is None:
            limits = self.options
            bucket = self._buckets[bucket_key] = TokenBucket(
                limits.per_object_rate, limits.per_object_burst, now
            )
        # both must have a token; the per-object one is asked first so one noisy object
        # cannot drain the global bucket for everybody else
        return bucket.take(now) and self._global.take(now)

    def _prune(self, now: float) -> None:
        """Forgets finished series and idle buckets so memory follows the live objects."""
        if now - self._last_prune < 30.0:
            return
        self._last_prune = now
        for key in [k for k, seen in self._seen.items() if now - seen.last_observed > self.window]:
            del self._seen[key]
        for bucket_key in [k for k, bucket in self._buckets.items() if bucket.full(now)]:
            del self._buckets[bucket_key]

    def _new_event(self, key: _Key, note: str, now: float) -> _Seen:
        self._sequence += 1
        # cluster-scoped objects' events live in "default", as client-go puts them
        regarding = key.regarding
        namespace = regarding.namespace or "default"
        name = f"{regarding.name}.{int(now * 1e9):x}{self._sequence:x}"
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": key.action[:128],
            "reason": key.reason[:128],
            "note": note[:NOTE_LIMIT],
            "type": key.event_type,
            "regarding": regarding.to_json(),
        }
        if key.related is not None:
            body["related"] = key.related.to_json()
        return _Seen(name=name, namespace=namespace, body=body, last_observed=now)

    def _create(self, seen: _Seen) -> None:
        with seen.lock:
            body = dict(seen.body)
            if seen.count > 1:
                body["series"] = {"count": seen.count, "lastObservedTime": micro_time(seen.last_observed)}
            if self._send("create", body, lambda: self._post(seen, body)):
                self.stats.created += 1
                seen.written_count = seen.count

    def _write_series(self, seen: _Seen) -> None:
        with seen.lock:
            count, observed = seen.count, seen.last_observed
            if count <= seen.written_count:
                return
            patch = {"series": {"count": count, "lastObservedTime": micro_time(observed)}}
            path = EVENTS.path(seen.namespace, seen.name)

            def send() -> None:
                assert self.api is not None
                try:
                    self.api.request(
                        "PATCH", path, body=patch, content_type=MERGE_PATCH, timeout=self.timeout
                    )
                except KubeError as err:
                    if not err.not_found:
                        raise
                    # the Event expired or was deleted: write it again whole, as client-go does
                    self._post(seen, {**seen.body, **patch})

            if self._send(
                "patch", {"metadata": {"name": seen.name, "namespace": seen.namespace}, **patch}, send
            ):
                self.stats.series_updates += 1
                seen.written_count = count

    def _post(self, seen: _Seen, body: dict[str, Any]) -> None:
        assert self.api is not None
        self.api.request("POST", EVENTS.path(seen.namespace), body=body, timeout=self.timeout)

    def _send(self, verb: str, event: dict[str, Any], send: Callable[[], None]) -> bool:
        self.recent.append({"verb": verb, "event": event, "dryRun": self.dry_run})
        if self.dry_run:
            return True
        try:
            send()
        except KubeError as err:
            self.stats.failed += 1
            log.warning("event %s refused: %s", event.get("metadata", {}).get("name"), err)
            return False
        return True
