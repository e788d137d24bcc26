"""The requests the reflector makes (lists, streamed lists, watches): which resourceVersion and page
size they ask for, their queries, and how it reads the errors that change them: client-go's choices
(tools/cache/reflector.go, tools/pager/pager.go), as pure functions."""

from __future__ import annotations

from enum import Enum
from typing import Any

from kube.client import KubeError

Query = list[tuple[str, Any]]


def list_query(resource_version: str, limit: int, selectors: list[tuple[str, str]], token: str) -> Query:
    """One list page. client-go's pager clears the RV on continued pages: the token carries the
    snapshot, and an RV beside it is a 400 (tools/pager/pager.go ListWithAlloc)."""
    query: Query = [] if token or not resource_version else [("resourceVersion", resource_version)]
    if limit:
        query.append(("limit", limit))
    query.extend(selectors)
    if token:
        query.append(("continue", token))
    return query


def watch_query(resource_version: str, timeout_seconds: int, selectors: list[tuple[str, str]]) -> Query:
    """A watch from a resourceVersion, with bookmarks."""
    return [
        ("watch", "true"),
        ("allowWatchBookmarks", "true"),
        ("resourceVersion", resource_version),
        ("timeoutSeconds", timeout_seconds),
        *selectors,
    ]


def stream_query(resource_version: str, timeout_seconds: int, selectors: list[tuple[str, str]]) -> Query:
    """The request of a streamed list (client-go watchList's ListOptions); an empty RV is left out."""
    query: Query = [
        ("watch", "1"),
        ("sendInitialEvents", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", timeout_seconds),
        *selectors,
    ]
    return [(key, value) for key, value in query if value != ""]


def list_resource_version(last_synced: str, unavailable: bool) -> str:
    """client-go relistResourceVersion: "" (a consistent read) once the last RV was refused, "0"
    (any state, from the watch cache) for the first list, else the last synced RV."""
    if unavailable:
        return ""
    return last_synced or "0"


def stream_resource_version(last_synced: str, unavailable: bool) -> str:
    """client-go rewatchResourceVersion: the most recent state ("") at first or once the last RV was
    refused, else a state not older than the last synced one."""
    return "" if unavailable else last_synced


def list_limit(resource_version: str, paginated: bool, page_size: int) -> int:
    """The page size (0: unpaged) client-go's list() gives its pager. An RV other than "" or "0" is
    listed unpaged so that the watch cache answers it (a limit would make it an exact read, from
    etcd), unless an RV "0" list came back paginated (`paginated`: no watch cache to prefer); the
    watch cache ignores the limit of an RV "0" list anyway."""
    if paginated or resource_version in ("", "0"):
        return page_size
    return 0


def too_large(err: KubeError) -> bool:
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


def retriable(err: KubeError) -> bool:
    """Worth opening the same watch again after a backoff (client-go reflector.go
    isWatchErrorRetriable: the connection refused, or 429); any other failure of a streamed list
    falls back to a paged one, and of a watch ends it for a relist."""
    return err.status == 429 or err.refused


class AfterWatch(Enum):
    """What follows a watch (client-go reflector.go `watch`, and `RunWithContext`'s backoff between
    two `ListAndWatchWithContext` runs)."""

    REWATCH = "rewatch"  # it ended as a stream ends: watch again at once from the last RV
    RETRY = "retry"  # 429 or refused: back off, then watch again from the last RV
    RELIST = "relist"  # any other end: back off, then a new initial state


def after_stream_end(events: int, seconds: float, very_short: float) -> AfterWatch:
    """A stream that ended (cleanly, or its connection dropped: client-go's StreamWatcher closes on
    an unexpected or probable EOF): watched again at once, unless it lasted under `very_short`
    seconds without a single event (client-go reflector.go handleAnyWatch VeryShortWatchError),
    which `watch` does not survive."""
    return AfterWatch.REWATCH if events or seconds >= very_short else AfterWatch.RELIST


def after_watch_error(err: KubeError) -> AfterWatch:
    """A watch that failed to open, or carried an ERROR event (410s aside: they relist too, at the
    last RV): client-go reflector.go `watch` backs off and watches again on 429 or a refused
    connection, and returns on anything else, InternalError included (its retry of internal
    errors is off unless MaxInternalErrorRetryDuration is set)."""
    return AfterWatch.RETRY if retriable(err) else AfterWatch.RELIST
