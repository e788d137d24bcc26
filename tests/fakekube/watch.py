"""One watch: which events a watcher sees, from which resourceVersion, with bookmarks and 410s."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from .errors import ApiError, status_object
from .registry import ResourceType
from .selectors import Predicate
from .store import Store, StoredEvent
from .verbs import parse_rv

Event = dict[str, Any]  # {"type": ..., "object": ...}, one line of the stream
INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # metav1.InitialEventsAnnotationKey


def error_event(error: ApiError) -> Event:
    return {"type": "ERROR", "object": status_object(error.code, error.reason, error.message)}


def expired_event(message: str) -> Event:
    return error_event(ApiError(410, "Expired", message))


class WatchSession:
    """The events of one watch request, produced batch by batch; ends after an ERROR event.

    Without sendInitialEvents (the legacy watch), a resourceVersion absent or "0" starts with
    synthetic ADDED events for the current objects; an explicit one replays the retained history
    after it, or is 410 Expired if too old. With sendInitialEvents=true (a WatchList request), the
    initial ADDED events are the state at the most recent RV (unset), any RV ("0") or one not older
    than the given RV, then, when bookmarks are allowed, a BOOKMARK annotated
    k8s.io/initial-events-end at that RV (apiserver pkg/storage/cacher/cacher.go Watch,
    setInitialEventsEndBookmarkIfRequested; cache_watcher.go processInterval sends the initial
    events, then that bookmark, then the live events). sendInitialEvents=false starts at the RV
    with no initial events.
    """

    def __init__(
        self,
        store: Store,
        rt: ResourceType,
        matches: Predicate,
        resource_version: str | None,
        *,
        bookmark_interval: float | None,
        send_initial_events: bool | None = None,
    ) -> None:
        self.store, self.rt, self.matches = store, rt, matches
        self.bookmark_interval = bookmark_interval  # None: the client did not ask for bookmarks
        self.send_initial_events = send_initial_events
        self.finished = False
        self._start = resource_version
        self._cursor = 0
        self._last_bookmark = time.monotonic()

    def start(self) -> Iterator[Event]:
        """The first batch, produced one event at a time: synthetic ADDED events (streamed from a
        snapshot of references, so the server's memory stays flat), or the retained changes after
        the start RV. Call it once the request is validated (too_large() checked)."""
        start = self._start
        if self.send_initial_events is False:
            self._cursor = self.store.resource_version if start in (None, "", "0") else parse_rv(start or "0")
            return iter(self.poll(0.0))
        if self.send_initial_events or start in (None, "", "0"):
            objects, self._cursor = self.store.snapshot(self.rt)
            return self._initial(objects, end_bookmark=bool(self.send_initial_events))
        self._cursor = parse_rv(start or "0")
        return iter(self.poll(0.0))

    def too_large(self) -> int | None:
        """A WatchList's RV the store has not reached (the watch cache answers 504 for it), else None."""
        if not self.send_initial_events or self._start in (None, "", "0"):
            return None
        wanted = parse_rv(self._start or "0")
        return wanted if wanted > self.store.resource_version else None

    def _initial(self, objects: list[dict[str, Any]], *, end_bookmark: bool) -> Iterator[Event]:
        for obj in objects:
            if self.matches(obj):
                yield {"type": "ADDED", "object": obj}
        if end_bookmark and self.bookmark_interval is not None:
            self._last_bookmark = time.monotonic()
            yield self._bookmark(initial_events_end=True)

    def poll(self, wait: float) -> list[Event]:
        """The next changes (waiting up to `wait` s for one), then a bookmark if one is due."""
        try:
            stored, now_rv = self.store.events_after(self.rt, self._cursor, wait)
        except ApiError as error:
            self.finished = True
            return [error_event(error)]
        events = [event for change in stored if (event := self._seen_as(change)) is not None]
        self._cursor = now_rv
        due = (
            self.bookmark_interval is not None
            and time.monotonic() - self._last_bookmark >= self.bookmark_interval
        )
        if due:
            self._last_bookmark = time.monotonic()
            events.append(self._bookmark())
        return events

    def _seen_as(self, change: StoredEvent) -> Event | None:
        # A change that moves an object into or out of the selection is ADDED or DELETED for this
        # watcher, as the apiserver's watch cache filters (cacheWatcher.convertToWatchEvent).
        now = self.matches(change.obj)
        before = change.prev is not None and self.matches(change.prev)
        if change.type == "DELETED":
            return {"type": "DELETED", "object": change.obj} if before else None
        if now and before:
            return {"type": "MODIFIED", "object": change.obj}
        if now:
            return {"type": "ADDED", "object": change.obj}
        if before:
            return {"type": "DELETED", "object": change.obj}
        return None

    def _bookmark(self, *, initial_events_end: bool = False) -> Event:
        meta: dict[str, Any] = {"resourceVersion": str(self._cursor)}
        if initial_events_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        return {
            "type": "BOOKMARK",
            "object": {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta},
        }

    def seconds_to_bookmark(self) -> float | None:
        if self.bookmark_interval is None:
            return None
        return max(0.0, self._last_bookmark + self.bookmark_interval - time.monotonic())
