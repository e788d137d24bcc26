"""One watch: which events a watcher sees, from which resourceVersion, with bookmarks and 410s."""

from __future__ import annotations

import time
from typing import Any

from .errors import ApiError, status_object
from .registry import ResourceType
from .selectors import Predicate
from .store import Store, StoredEvent
from .verbs import parse_rv

Event = dict[str, Any]  # {"type": ..., "object": ...}, one line of the stream


def error_event(error: ApiError) -> Event:
    return {"type": "ERROR", "object": status_object(error.code, error.reason, error.message)}


def expired_event(message: str) -> Event:
    return error_event(ApiError(410, "Expired", message))


class WatchSession:
    """The events of one watch request, produced batch by batch; ends after an ERROR event.

    A resourceVersion absent or "0" starts with synthetic ADDED events for the current objects;
    an explicit one replays the retained history after it, or is 410 Expired if too old.
    """

    def __init__(
        self,
        store: Store,
        rt: ResourceType,
        matches: Predicate,
        resource_version: str | None,
        *,
        bookmark_interval: float | None,
    ) -> None:
        self.store, self.rt, self.matches = store, rt, matches
        self.bookmark_interval = bookmark_interval  # None: the client did not ask for bookmarks
        self.finished = False
        self._start = resource_version
        self._cursor = 0
        self._last_bookmark = time.monotonic()

    def start(self) -> list[Event]:
        """The first batch: synthetic ADDED events, or the retained changes after the start RV."""
        if self._start in (None, "", "0"):
            items, self._cursor = self.store.list(self.rt)
            return [{"type": "ADDED", "object": obj} for obj in items if self.matches(obj)]
        self._cursor = parse_rv(self._start)
        return self.poll(0.0)

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

    def _bookmark(self) -> Event:
        meta = {"resourceVersion": str(self._cursor)}
        return {
            "type": "BOOKMARK",
            "object": {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": meta},
        }

    def seconds_to_bookmark(self) -> float | None:
        if self.bookmark_interval is None:
            return None
        return max(0.0, self._last_bookmark + self.bookmark_interval - time.monotonic())
