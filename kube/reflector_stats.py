"""The reflector's counters, read by metrics."""

from __future__ import annotations

from dataclasses import dataclass


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
