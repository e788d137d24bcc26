"""List+watch that keeps a Store in step with the API, written by hand for speed and correctness.

The client's `Watch` helper drops the resourceVersion when it does not deserialize and its informer
lists unpaged into model objects; here each page and each watch line is parsed once with
`json.loads` and handed to the store's transform, so only compact records are kept.

Semantics follow client-go's reflector (tools/cache/reflector.go ListAndWatchWithContext): the
initial state, streamed (kube/watchlist.py) or listed in pages (the resourceVersions of
kube/relist.py), installed only when complete; then a watch from its resourceVersion with
bookmarks, watched again at once from the last resourceVersion seen when it ends, after a backoff
when it was refused or throttled, and a fresh initial state (after a backoff) when it ends in any
other way: 410 Gone, another error, or within a second without an event (kube/relist.py
AfterWatch). A server that cannot stream lists is remembered and listed.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import urllib3

from kube import relist
from kube.backoff import Backoff
from kube.client import KubeClient, KubeError, Resource, as_kube_client
from kube.liststream import BadList, ListReader
from kube.options import ReflectorOptions
from kube.pages import GcPause
from kube.reflector_stats import ReflectorStats
from kube.relist import AfterWatch
from kube.responses import InFlight
from kube.responses import abort as _abort
from kube.responses import chunks as _chunks
from kube.responses import lines as _lines
from kube.store import Store
from kube.store import project_page as _project_page
from kube.watchlist import InitialEvents, NoWatchList, WatchProgress, watch_list_enabled

log = logging.getLogger(__name__)


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): only a new list can continue."""


class Reflector:
    """Keeps `store` equal to the API's view of `resource` (optionally one namespace, selectors)."""

    def __init__(
        self,
        api: KubeClient | Any,
        resource: Resource,
        store: Store[Any],
        options: ReflectorOptions = ReflectorOptions(),
        *,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`options`: what to watch and the process's watch settings (kube/options.py);
        `rng` spreads watch timeouts and backoffs, `clock` times a watch (a very short one is
        relisted)."""
        watch = options.watch
        self.api = as_kube_client(api)
        self.resource = resource
        self.store = store
        self.path = resource.path(options.namespace)
        self.page_size = watch.page_size
        self.watch_timeout = watch.watch_timeout
        self.connect_timeout = watch.connect_timeout
        self.name = options.name or f"reflector-{resource.plural}"
        self.stats = ReflectorStats()
        self._decode_item = options.decoders.item
        self._decode_line = options.decoders.line
        self._decode_items = options.decoders.items
        selectors = (("labelSelector", options.label_selector), ("fieldSelector", options.field_selector))
        self._selectors = [(key, value) for key, value in selectors if value]
        self._rng = rng or random.Random()
        self._backoff = Backoff(watch.backoff_base, watch.backoff_cap, self._rng)
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._in_flight = InFlight(self._stop)
        self._thread: threading.Thread | None = None
        self._rv = ""
        self._watch_list = watch_list_enabled(os.environ) if watch.watch_list is None else watch.watch_list
        self.initial_events_quiet = watch.initial_events_quiet
        self.very_short_watch = watch.very_short_watch
        self._clock = clock
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
        self._in_flight.abort()
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
        # for one round after a streamed list failed oddly), then the watch, watched again while
        # it ends as streams end; RunWithContext backs off before each new initial state
        while not self._stop.is_set():
            retry_after: float | None = None
            streamed = self._need_list and self._watch_list and not self._list_once
            try:
                if self._need_list and not streamed and not self._list():
                    break  # stopped mid-list: the store keeps its previous state
                if self._watch(initial=streamed) is AfterWatch.REWATCH:
                    self._backoff.reset()
                    continue
                self._note_error(f"very short watch: no event within {self.very_short_watch:g}s")
                self._need_list = True  # client-go VeryShortWatchError ends `watch`: a relist
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
            except NoWatchList as err:
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
                if streamed and self._need_list and not relist.retriable(err):  # failed before installing
                    # client-go ListAndWatchWithContext: a failed watchList falls back to a list
                    # at once, making progress rather than deadlocking
                    self._list_once = True
                    continue
                if not self._need_list:  # the watch failed: only a 429 or a refusal is watched again
                    self._need_list = relist.after_watch_error(err) is AfterWatch.RELIST
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
        timeout = (self.connect_timeout, read_timeout)
        return self._in_flight.hold(self.api.open("GET", self.path, query, timeout=timeout))

    def _list(self) -> bool:
        """One complete paged list installed in the store; False when stopped before the end."""
        fresh: dict[str, dict[str, Any]] = {}
        token = ""
        restarted = False
        requested = relist.list_resource_version(self._rv, self._rv_unavailable)
        limit = relist.list_limit(requested, self._paginated, self.page_size)
        resource_version = ""
        while not self._stop.is_set():
            query = relist.list_query(requested, limit, self._selectors, token)
            try:
                page = self._read_page(query, fresh)
            except KubeError as err:
                if not token and (err.gone or relist.too_large(err)) and not self._rv_unavailable:
                    # client-go list(): the RV is unavailable, list again at once as a consistent
                    # read, with the same pager: unpaged when the first try was (an RV of its own)
                    self._rv_unavailable = True
                    requested = ""
                    fresh = {}
                    continue
                if not (err.gone and token) or restarted:
                    raise
                # the continue token expired: the snapshot is lost, start the list again
                self.stats.list_restarts += 1
                restarted = True
                fresh, token = {}, ""
                continue
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

    def _read_page(self, query: list[tuple[str, Any]], fresh: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """One list response, its items projected into `fresh` as they arrive (kube/liststream.py:
        a watch cache's unpaged answer is never held whole); returns its other top-level members."""
        response = self._open(query, read_timeout=60.0)
        reader = ListReader(_chunks(response, "ListInterrupted"), self._decode_item, self._decode_items)
        clean = False
        try:
            _project_page(self.store.project, reader.items(), fresh)
            clean = True
        except BadList as err:
            raise KubeError(response.status, "BadResponse", str(err)) from None
        finally:
            self._in_flight.done(response, clean)
        self.stats.last_contact = time.monotonic()
        return reader.members

    def _watch(self, initial: bool = False) -> AfterWatch:
        """Applies one watch stream's events; once it ends, whether to watch again at once or relist
        (its errors are raised).

        `initial`: a streamed list (client-go reflector.go watchList): the initial state arrives as
        events into a fresh snapshot, installed at the initial-events-end bookmark, and the stream
        then goes on as the watch. Until then the store keeps its previous state."""
        timeout = self.watch_timeout * (1.0 + self._rng.random())  # spread like client-go does
        if initial:
            rv = relist.stream_resource_version(self._rv, self._rv_unavailable)
            query = relist.stream_query(rv, max(1, int(timeout)), self._selectors)
        else:
            query = relist.watch_query(self._rv, max(1, int(timeout)), self._selectors)
        started = self._clock()  # before the request, as client-go starts its clock
        try:
            response = self._open(query, read_timeout=timeout + 30.0)
        except KubeError as err:
            if err.gone or relist.too_large(err):
                raise _Gone from None
            if initial and err.status in (400, 422):
                # before 1.27 an API server refuses resourceVersionMatch on a watch (422); from
                # 1.27 it refuses sendInitialEvents while its WatchList feature is off (422)
                # (apimachinery meta/internalversion/validation ValidateListOptions)
                raise NoWatchList(str(err)) from None
            raise
        stream = WatchProgress(None, started)
        paused = GcPause()
        if initial:
            shut = functools.partial(_abort, response)
            stream.snapshot = InitialEvents(self.store.project, shut, self.initial_events_quiet)
            paused.start()  # until the snapshot is installed, as a paged list's pages are read
        clean = False
        try:
            self._consume(response, stream, paused)
            clean = stream.snapshot is None or not stream.snapshot.stalled
        except (_Gone, NoWatchList, KubeError):
            raise
        except Exception as err:
            self._broken(err, stream.snapshot)
        finally:
            paused.end()
            if stream.snapshot is not None:
                stream.snapshot.close()
            self._in_flight.done(response, clean)
        if stream.snapshot is not None:
            if stream.snapshot.stalled:
                raise stream.snapshot.silence()
            raise NoWatchList("the stream ended before the initial-events-end bookmark")
        lasted = self._clock() - stream.started
        return relist.after_stream_end(stream.events, lasted, self.very_short_watch)

    def _broken(self, err: Exception, snapshot: InitialEvents | None) -> None:
        """A stream that broke: returns when that is just its end (client-go's StreamWatcher ends
        quietly on an unexpected or probable EOF), raises otherwise."""
        if snapshot is not None and snapshot.stalled:  # the watchdog shut the socket under a read
            raise snapshot.silence() from None
        if isinstance(err, ValueError):  # a line that is not JSON: client-go's decoding error
            raise KubeError(0, "WatchInterrupted", f"bad watch line: {err}") from None
        if not isinstance(err, (urllib3.exceptions.HTTPError, OSError)):
            raise err
        if snapshot is not None:  # cut before the initial state was complete
            raise KubeError(0, "WatchInterrupted", str(err)) from None
        log.info("%s: watch stream broken (%s)", self.name, err)

    def _consume(self, response: urllib3.BaseHTTPResponse, stream: WatchProgress, paused: GcPause) -> None:
        """The stream's events until it ends: into its snapshot until the end bookmark installs it
        (`paused` ends there), then into the store, counted on `stream`."""
        store = self.store
        stats = self.stats
        decode = self._decode_line
        for line in _lines(response):
            event = decode(line)
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code") or 0)
                if code == 410:
                    raise _Gone
                reason = str(obj.get("reason") or "WatchError")
                raise KubeError(code, reason, str(obj.get("message") or ""))
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if stream.snapshot is not None:
                stats.last_contact = time.monotonic()
                if stream.snapshot.take(kind, obj):
                    stream.snapshot.close()
                    paused.end()
                    self._install(stream.snapshot.fresh, rv or self._rv)
                    stats.streamed += 1
                    stats.bookmarks += 1
                    stream.snapshot, stream.started = None, self._clock()
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
            if not stream.events:
                self._backoff.reset()  # the watch works: a later failure backs off from the start
            stream.events += 1
            stats.last_contact = time.monotonic()
