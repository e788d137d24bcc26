"""Streamed lists (WatchList, Kubernetes 1.27+), the reflector's default way to read an initial state:
client-go's switch for them, the query, and the snapshot their initial events fill.

Models client-go tools/cache/reflector.go watchList and handleAnyWatch: one watch with
sendInitialEvents=true whose events fill a temporary store, installed at the BOOKMARK annotated
k8s.io/initial-events-end, after which the same watch goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kube.store import object_key

log = logging.getLogger(__name__)

# client-go's switch for streaming lists: the WatchListClient feature gate, which client-go reads from
# this environment variable (client-go features/envvar.go getEnabledMapFromEnvVar)
WATCH_LIST_ENV = "KUBE_FEATURE_WatchListClient"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"  # metav1.InitialEventsAnnotationKey
_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def watch_list_enabled(environ: Mapping[str, str]) -> bool:
    """Whether reflectors stream their initial state: on unless KUBE_FEATURE_WatchListClient is false.

    The variable is parsed as client-go parses it (strconv.ParseBool; a malformed value is logged and
    the default kept). fitguard's default is on, as client-go's is from 1.35
    (client-go features/known_features.go); a server without WatchList is detected and listed."""
    value = environ.get(WATCH_LIST_ENV)
    if value is None or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    log.warning("%s=%r is not a boolean; streaming lists stay on", WATCH_LIST_ENV, value)
    return True


class NoWatchList(Exception):
    """The server does not stream lists: it refused the request, or ignored it (no end bookmark)."""


class InitialEvents:
    """The snapshot a streamed list fills ({namespace: {name: record}}), installed by the caller only
    at the initial-events-end bookmark.

    A watchdog calls `abort` when no line arrived for `quiet` seconds: a server that ignores
    sendInitialEvents sends its state and then nothing, and must not hold the reflector forever
    (client-go only warns then: reflector.go initialEventsEndBookmarkTicker)."""

    def __init__(self, project: Callable[[Any], Any], abort: Callable[[], None], quiet: float) -> None:
        self.fresh: dict[str, dict[str, Any]] = {}
        self.project = project
        self.quiet = quiet
        self.stalled = False
        self._abort = abort
        self._last = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watchdog, name="initial-events-watchdog", daemon=True)
        self._thread.start()

    def take(self, kind: Any, obj: dict[str, Any]) -> bool:
        """One event of the initial phase; True at the end bookmark. The phase holds ADDED events
        only on a server that streams lists; the rest are applied as client-go's watchList applies
        them to its temporary store."""
        self._last = time.monotonic()
        ns, name = object_key(obj)
        if kind in {"ADDED", "MODIFIED"}:
            record = self.project(obj)
            if record is not None:
                self.fresh.setdefault(ns, {})[name] = record
                return False
            self.fresh.get(ns, {}).pop(name, None)
        elif kind == "DELETED":
            self.fresh.get(ns, {}).pop(name, None)
        elif kind == "BOOKMARK":
            meta = obj.get("metadata") or {}
            if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                return True
            # the API server sends the initial events, then this bookmark, and only then the
            # watch's own bookmarks (apiserver cacher/cache_watcher.go processInterval)
            raise NoWatchList("a bookmark came before the initial-events-end bookmark")
        return False

    def silence(self) -> NoWatchList:
        return NoWatchList(f"no initial-events-end bookmark after {self.quiet:g}s of silence")

    def _watchdog(self) -> None:
        while not self._done.wait(max(0.05, self._last + self.quiet - time.monotonic())):
            if time.monotonic() - self._last >= self.quiet and not self._done.is_set():
                self.stalled = True
                self._abort()
                return

    def close(self) -> None:
        self._done.set()


class WatchProgress:
    """One watch request as it goes: the initial-state snapshot it still fills (a streamed list),
    and the events and start of its watch part (client-go handleAnyWatch's eventCount and start,
    counted from the end bookmark for a streamed list, where client-go's `watch` takes it over)."""

    def __init__(self, snapshot: InitialEvents | None, started: float) -> None:
        self.snapshot = snapshot
        self.events = 0
        self.started = started
