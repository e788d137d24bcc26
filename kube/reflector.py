"""List+watch that keeps a Store in step with the API, written by hand for speed and correctness.

The client's `Watch` helper drops the resourceVersion when it does not deserialize and its informer
lists unpaged into model objects; here each page and each watch line is parsed once with
`json.loads` and handed to the store's transform, so only compact records are kept.

Semantics follow client-go's reflector (tools/cache/reflector.go): the initial state, installed only
when complete, then a watch from its resourceVersion with bookmarks, resumed from the last
resourceVersion seen after an error, and a fresh initial state when the server answers 410 Gone.

The initial state comes one of two ways (ListAndWatchWithContext):
- streamed (WatchList, Kubernetes 1.27+; client-go's watchList): one watch with sendInitialEvents=true
  whose ADDED events fill a fresh snapshot, installed at the BOOKMARK annotated
  k8s.io/initial-events-end; the same stream then goes on as the watch. The API server sends the
  objects one at a time, so neither side holds the whole list at once.
- paged lists (client-go's list and the tools/pager pager), with the resourceVersion client-go's
  relistResourceVersion chooses: "0" first (any state, answered from the API server's watch cache),
  the last synced one for a relist, "" (a consistent read) after a 410 or a too-large RV.
Streaming is the default; a server that refuses or ignores it is remembered and listed from then on.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3

from kube.client import KubeClient, KubeError, Resource, as_kube_client
from kube.store import Store, object_key

log = logging.getLogger(__name__)

_READ_SIZE = 64 * 1024
_MAX_RETRY_AFTER = 300.0  # a server asking for more than this is not waited on blindly
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


@dataclass
class ReflectorStats:
    """Counters for metrics; written by the reflector's thread only."""

    lists: int = 0  # complete initial states installed in the store (paged or streamed)
    relists: int = 0  # lists after the first (410 Gone)
    streamed: int = 0  # of those, streamed (WatchList)
    stream_fallbacks: int = 0  # streamed lists given up for paged ones (the server lacks WatchList)
    list_restarts: int = 0  # paged lists started over because a continue token expired
    restarts: int = 0  # watches re-opened after an error (resuming from the last resourceVersion)
    events: int = 0  # ADDED, MODIFIED, DELETED events applied
    bookmarks: int = 0
    errors: int = 0
    last_error: str = ""
    last_backoff: float = 0.0  # seconds of the last wait before retrying
    last_contact: float = 0.0  # time.monotonic() of the last list page or watch line


class Backoff:
    """Capped exponential backoff with jitter, honouring a server's Retry-After."""

    def __init__(self, base: float = 0.8, cap: float = 30.0, rng: random.Random | None = None) -> None:
        self.base = base
        self.cap = cap
        self.attempt = 0
        self._rng = rng or random.Random()

    def next_delay(self, retry_after: float | None = None) -> float:
        delay = min(self.cap, self.base * (2**self.attempt))
        self.attempt += 1
        delay = delay / 2 + self._rng.random() * delay / 2  # jitter keeps replicas from retrying in step
        if retry_after is not None:
            delay = max(delay, min(retry_after, _MAX_RETRY_AFTER))
        return delay

    def reset(self) -> None:
        self.attempt = 0


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): only a new list can continue."""


class _NoWatchList(Exception):
    """The server does not stream lists: it refused the request, or ignored it (no end bookmark)."""


def _too_large(err: KubeError) -> bool:
    """The 504 a list or watch gets for a resourceVersion the API server has not reached yet
    (client-go reflector.go isTooLargeResourceVersionError: the ResourceVersionTooLarge cause, or
    the message older servers send)."""
    if err.status != 504:
        return False
    details = err.body.get("details") or {}
    causes = (details.get("causes") or []) if isinstance(details, dict) else []
    if any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes):
        return True
    return "Too large resource version" in err.message


def _retriable(err: KubeError) -> bool:
    """Worth retrying the same request after a backoff (client-go reflector.go isWatchErrorRetriable:
    connection refused, 429); other failures of a streamed list fall back to a paged one."""
    return err.status == 429 or (err.status == 0 and err.reason != "WatchInterrupted")


class _Initial:
    """The snapshot a streamed list fills, installed only at the initial-events-end bookmark.

    A watchdog ends the stream when no line arrived for `quiet` seconds: a server that ignores
    sendInitialEvents sends its state and then nothing, and must not hold the reflector forever
    (client-go only warns then: reflector.go initialEventsEndBookmarkTicker)."""

    def __init__(self, store: Store[Any], response: urllib3.BaseHTTPResponse, quiet: float) -> None:
        self.fresh: dict[str, dict[str, Any]] = {}
        self.project = store.project
        self.quiet = quiet
        self.stalled = False
        self._last = time.monotonic()
        self._done = threading.Event()
        self._response = response
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
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if annotations.get(INITIAL_EVENTS_END) == "true":
                return True
            # the API server sends the initial events, then this bookmark, and only then the
            # watch's own bookmarks (apiserver cacher/cache_watcher.go processInterval)
            raise _NoWatchList("a bookmark came before the initial-events-end bookmark")
        return False

    def _watchdog(self) -> None:
        while not self._done.wait(max(0.05, self._last + self.quiet - time.monotonic())):
            if time.monotonic() - self._last >= self.quiet and not self._done.is_set():
                self.stalled = True
                _abort(self._response)
                return

    def close(self) -> None:
        self._done.set()


class Reflector:
    """Keeps `store` equal to the API's view of `resource` (optionally one namespace, selectors)."""

    def __init__(
        self,
        api: KubeClient | Any,
        resource: Resource,
        store: Store[Any],
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        page_size: int = 500,
        watch_timeout: float = 300.0,
        backoff_base: float = 0.8,
        backoff_cap: float = 30.0,
        connect_timeout: float = 5.0,
        rng: random.Random | None = None,
        name: str = "",
        watch_list: bool | None = None,
        initial_events_quiet: float = 30.0,
    ) -> None:
        """`watch_list`: stream the initial state (None: as KUBE_FEATURE_WatchListClient says, on by
        default), falling back to paged lists for good when the server does not stream;
        `initial_events_quiet`: seconds without a line before a streamed list is given up."""
        self.api = as_kube_client(api)
        self.resource = resource
        self.store = store
        self.path = resource.path(namespace)
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.connect_timeout = connect_timeout
        self.name = name or f"reflector-{resource.plural}"
        self.stats = ReflectorStats()
        selectors = (("labelSelector", label_selector), ("fieldSelector", field_selector))
        self._selectors = [(key, value) for key, value in selectors if value]
        self._rng = rng or random.Random()
        self._backoff = Backoff(backoff_base, backoff_cap, self._rng)
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._lock = threading.Lock()
        self._current: urllib3.BaseHTTPResponse | None = None
        self._thread: threading.Thread | None = None
        self._rv = ""
        self._watch_list = watch_list_enabled(os.environ) if watch_list is None else watch_list
        self.initial_events_quiet = initial_events_quiet
        self._need_list = True
        self._list_once = False  # a streamed list failed oddly: one paged list (client-go's fallback)
        self._rv_unavailable = False  # client-go's isLastSyncResourceVersionUnavailable
        self._paginated = False  # client-go's paginatedResult: an RV "0" list came back in pages

    # -- public API ---------------------------------------------------------------------------

    def start(self) -> Reflector:
        if self._thread is not None:
            raise RuntimeError(f"{self.name} already started")
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stops promptly, even in the middle of a list body or a watch stream (its socket is shut).
        A request still waiting for its headers ends at its timeout; its answer is then dropped."""
        self._stop.set()
        with self._lock:
            current = self._current
        if current is not None:
            _abort(current)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def resource_version(self) -> str:
        return self._rv

    @property
    def streaming(self) -> bool:
        """Whether the next initial state is to be streamed (False once the server lacked it)."""
        return self._watch_list

    # -- the loop -----------------------------------------------------------------------------

    def _run(self) -> None:
        # client-go ListAndWatchWithContext: the initial state streamed, or listed in pages (also
        # for one round after a streamed list failed oddly), then the watch, resumed until a 410
        while not self._stop.is_set():
            retry_after: float | None = None
            streamed = self._need_list and self._watch_list and not self._list_once
            try:
                if self._need_list and not streamed and not self._list():
                    break  # stopped mid-list: the store keeps its previous state
                if self._watch(initial=streamed):
                    self._backoff.reset()
                    continue
                retry_after = None  # a watch that ended at once with nothing: back off below
            except _Gone:
                log.info("%s: resourceVersion %s is gone, relisting", self.name, self._rv)
                if self._need_list:
                    # the initial state itself was refused its RV: ask for the most recent one
                    # (client-go watchList: setIsLastSyncResourceVersionUnavailable)
                    self._rv_unavailable = True
                self._need_list = True
                if self._backoff.attempt == 0:
                    self._backoff.attempt = 1  # relist at once the first time, back off if it loops
                    continue
            except _NoWatchList as err:
                if self._stop.is_set():
                    break
                # remembered: this server does not stream lists, so the reflector stops asking
                log.info("%s: streamed list unavailable (%s); using paged lists", self.name, err)
                self._watch_list = False
                self.stats.stream_fallbacks += 1
                continue
            except KubeError as err:
                if self._stop.is_set():
                    break
                self._note_error(str(err))
                if streamed and self._need_list and not _retriable(err):  # failed before installing
                    # client-go ListAndWatchWithContext: a failed watchList falls back to a list
                    # at once, making progress rather than deadlocking
                    self._list_once = True
                    continue
                self._need_list = self._need_list or err.gone
                retry_after = err.retry_after
            except Exception as err:  # a bug or an odd answer must not kill the cache for good
                if self._stop.is_set():
                    break
                log.exception("%s: unexpected failure", self.name)
                self._note_error(f"{type(err).__name__}: {err}")
            if self._stop.is_set():
                break
            delay = self._backoff.next_delay(retry_after)
            self.stats.last_backoff = delay
            log.info("%s: retrying in %.2fs (last error: %s)", self.name, delay, self.stats.last_error)
            if self._stop.wait(delay):
                break
            if not self._need_list:
                self.stats.restarts += 1

    def _note_error(self, message: str) -> None:
        self.stats.errors += 1
        self.stats.last_error = message
        log.warning("%s: %s", self.name, message)

    def _open(self, query: list[tuple[str, Any]], read_timeout: float) -> urllib3.BaseHTTPResponse:
        response = self.api.open("GET", self.path, query, timeout=(self.connect_timeout, read_timeout))
        with self._lock:
            self._current = response
        if self._stop.is_set():  # stop() ran before the response was registered
            _abort(response)
        return response

    def _done(self, response: urllib3.BaseHTTPResponse, clean: bool) -> None:
        with self._lock:
            self._current = None
        if clean and not self._stop.is_set():  # a socket stop() shut must not go back to the pool
            response.release_conn()
        else:
            _abort(response)

    def _list_rv(self) -> str:
        """client-go reflector.go relistResourceVersion: "" (a consistent read) once the last RV was
        refused, "0" (any state, from the watch cache) for the first list, else the last synced RV."""
        if self._rv_unavailable:
            return ""
        return self._rv or "0"

    def _list_limit(self, resource_version: str) -> int:
        """The page size (0: unpaged) client-go's list() gives its pager. An RV other than "" or "0"
        is listed unpaged so that the watch cache answers it (a limit would make it an exact read,
        from etcd), unless an RV "0" list came back paginated (no watch cache to prefer); the watch
        cache ignores the limit of an RV "0" list anyway."""
        if self._paginated or resource_version in ("", "0"):
            return self.page_size
        return 0

    def _list(self) -> bool:
        """One complete paged list installed in the store; False when stopped before the end."""
        fresh: dict[str, dict[str, Any]] = {}
        token = ""
        restarted = False
        requested = self._list_rv()
        limit = self._list_limit(requested)
        resource_version = ""
        while not self._stop.is_set():
            # client-go's pager clears the RV on continued pages: the token carries the snapshot,
            # and an RV beside it is a 400 (tools/pager/pager.go ListWithAlloc)
            query: list[tuple[str, Any]] = [] if token or not requested else [("resourceVersion", requested)]
            if limit:
                query.append(("limit", limit))
            query.extend(self._selectors)
            if token:
                query.append(("continue", token))
            try:
                page = self._read_page(query)
            except KubeError as err:
                if not token and (err.gone or _too_large(err)) and not self._rv_unavailable:
                    # client-go list(): the RV is unavailable, list again at once as a consistent read
                    self._rv_unavailable = True
                    requested, limit = "", self.page_size
                    continue
                if not (err.gone and token) or restarted:
                    raise
                # the continue token expired: the snapshot is lost, start the list again
                self.stats.list_restarts += 1
                restarted = True
                fresh, token = {}, ""
                continue
            project = self.store.project
            for obj in page.get("items") or ():
                record = project(obj)
                if record is not None:
                    ns, name = object_key(obj)
                    fresh.setdefault(ns, {})[name] = record
            meta = page.get("metadata") or {}
            resource_version = str(meta.get("resourceVersion") or resource_version)
            token = str(meta.get("continue") or "")
            if token and requested == "0":
                self._paginated = True  # no watch cache answered it: keep paging relists
            if not token:
                self._list_once = False
                self._install(fresh, resource_version)
                return True
        return False

    def _install(self, fresh: dict[str, dict[str, Any]], resource_version: str) -> None:
        """A complete initial state becomes the store's, and its RV the one to watch from."""
        self.store.replace_records(fresh, resource_version)
        self._rv = resource_version
        self._rv_unavailable = False
        self._need_list = False
        self.stats.lists += 1
        if self._synced.is_set():
            self.stats.relists += 1
        self._synced.set()

    def _read_page(self, query: list[tuple[str, Any]]) -> dict[str, Any]:
        response = self._open(query, read_timeout=60.0)
        clean = False
        try:
            data = response.read()
            clean = True
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            raise KubeError(0, "ListInterrupted", str(err)) from None
        finally:
            self._done(response, clean)
        self.stats.last_contact = time.monotonic()
        try:
            page = _decode_page(data)
        except ValueError as err:
            raise KubeError(response.status, "BadResponse", f"list page is not JSON: {err}") from None
        if not isinstance(page, dict):
            raise KubeError(response.status, "BadResponse", "list page is not an object")
        return page

    def _watch(self, initial: bool = False) -> bool:
        """Applies one watch stream's events; True when it made progress (worth resuming at once).

        `initial`: a streamed list (client-go reflector.go watchList): the initial state arrives as
        events into a fresh snapshot, installed at the initial-events-end bookmark, and the stream
        then goes on as the watch. Until then the store keeps its previous state."""
        timeout = self.watch_timeout * (1.0 + self._rng.random())  # spread like client-go does
        query: list[tuple[str, Any]]
        if initial:
            query = [
                ("watch", "1"),
                ("sendInitialEvents", "true"),
                ("resourceVersionMatch", "NotOlderThan"),
                # client-go rewatchResourceVersion: the most recent state ("") at first or once the
                # last RV was refused, else a state not older than the last synced one
                ("resourceVersion", "" if self._rv_unavailable else self._rv),
                ("allowWatchBookmarks", "true"),
                ("timeoutSeconds", max(1, int(timeout))),
                *self._selectors,
            ]
            query = [(key, value) for key, value in query if value != ""]  # an empty RV is left out
        else:
            query = [
                ("watch", "true"),
                ("allowWatchBookmarks", "true"),
                ("resourceVersion", self._rv),
                ("timeoutSeconds", max(1, int(timeout))),
                *self._selectors,
            ]
        try:
            response = self._open(query, read_timeout=timeout + 30.0)
        except KubeError as err:
            if err.gone or _too_large(err):
                raise _Gone from None
            if initial and err.status in (400, 422):
                # before 1.27 an API server refuses resourceVersionMatch on a watch (422); from
                # 1.27 it refuses sendInitialEvents while its WatchList feature is off (422)
                # (apimachinery meta/internalversion/validation ValidateListOptions)
                raise _NoWatchList(str(err)) from None
            raise
        opened = time.monotonic()
        progressed = False
        clean = False
        store = self.store
        stats = self.stats
        snapshot = _Initial(store, response, self.initial_events_quiet) if initial else None
        try:
            for line in _lines(response):
                event = json.loads(line)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code") or 0)
                    if code == 410:
                        raise _Gone
                    reason = str(obj.get("reason") or "WatchError")
                    raise KubeError(code, reason, str(obj.get("message") or ""))
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                if snapshot is not None:
                    stats.last_contact = time.monotonic()
                    if not snapshot.take(kind, obj):
                        continue
                    snapshot.close()
                    self._install(snapshot.fresh, rv or self._rv)
                    stats.streamed += 1
                    stats.bookmarks += 1
                    snapshot = None
                    progressed = True
                    continue
                if kind == "BOOKMARK":
                    if rv:
                        store.advance(rv)
                        self._rv = rv
                    stats.bookmarks += 1
                elif kind in ("ADDED", "MODIFIED", "DELETED"):
                    store.apply(kind, obj, rv)
                    if rv:
                        self._rv = rv
                    stats.events += 1
                else:
                    log.warning("%s: ignoring watch event of type %r", self.name, kind)
                    continue
                progressed = True
                stats.last_contact = time.monotonic()
            clean = snapshot is None or not snapshot.stalled
        except (_Gone, _NoWatchList, KubeError):
            raise
        except Exception as err:
            if snapshot is not None and snapshot.stalled:  # the watchdog shut the socket under a read
                silence = f"no initial-events-end bookmark after {snapshot.quiet:g}s of silence"
                raise _NoWatchList(silence) from None
            if isinstance(err, (urllib3.exceptions.HTTPError, OSError)):
                raise KubeError(0, "WatchInterrupted", str(err)) from None
            if isinstance(err, ValueError):  # a line cut short: the stream broke mid-object
                raise KubeError(0, "WatchInterrupted", f"bad watch line: {err}") from None
            raise
        finally:
            if snapshot is not None:
                snapshot.close()
            self._done(response, clean)
        if snapshot is not None:
            if snapshot.stalled:
                raise _NoWatchList(f"no initial-events-end bookmark after {snapshot.quiet:g}s of silence")
            raise _NoWatchList("the stream ended before the initial-events-end bookmark")
        # a quiet watch that ran its course is fine; one the server ends at once must not spin
        return progressed or time.monotonic() - opened >= 1.0


def _decode_page(data: bytes) -> Any:
    """json.loads with the cyclic GC paused: a page of 500 pods makes ~200k containers with no
    cycles, and collections triggered midway scan the whole heap (measured: a quarter of the sync
    time of 150k pods). Whichever thread paused it first turns it back on."""
    paused = gc.isenabled()
    gc.disable()
    try:
        return json.loads(data)
    finally:
        if paused:
            gc.enable()


def _lines(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """Newline-delimited lines of a streamed body, as soon as each one is complete."""
    pending = b""
    while True:
        chunk = response.read1(_READ_SIZE)  # whatever has arrived, chunked or not
        if not chunk:
            break
        if pending:
            chunk = pending + chunk
        lines = chunk.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _abort(response: urllib3.BaseHTTPResponse) -> None:
    """Ends a response from any thread: shutting the socket wakes a read blocked in another."""
    try:
        response.shutdown()
    except (ValueError, RuntimeError, OSError):
        log.debug("response already released; closing it is enough")
    try:
        response.close()
    except (OSError, urllib3.exceptions.HTTPError):
        log.debug("closing an aborted response failed", exc_info=True)
