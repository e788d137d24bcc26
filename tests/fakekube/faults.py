"""Fault injection and the request log: what a test arranges to go wrong, and what the server saw."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

FaultKind = Literal["delay", "throttle", "fail", "expire_watch", "close_watch"]


@dataclass(frozen=True)
class Match:
    """Which requests a fault applies to; None matches anything."""

    method: str | None = None
    path: str | None = None  # a substring of the URL path
    watch: bool | None = None

    def matches(self, method: str, path: str, watch: bool) -> bool:
        return (
            (self.method is None or self.method.upper() == method)
            and (self.path is None or self.path in path)
            and (self.watch is None or self.watch == watch)
        )


@dataclass
class Fault:
    """One armed fault; `remaining` None means until cleared."""

    kind: FaultKind
    match: Match
    remaining: int | None
    seconds: float = 0.0  # delay
    retry_after: int = 1  # throttle
    code: int = 500  # fail
    reason: str = "InternalError"  # fail: the Status reason
    message: str = "Internal error injected by the test"  # fail: the Status message
    after_events: int = 0  # close_watch
    abrupt: bool = False  # close_watch: drop the TCP connection instead of ending the stream
    error: int = 0  # close_watch: end with an ERROR event of this code (0: none)


@dataclass(frozen=True)
class Decision:
    """What the server does to one request: wait, then maybe answer with a fault."""

    delay: float = 0.0
    answer: Fault | None = None


class Faults:
    """Thread-safe list of armed faults; each matching request consumes one use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: list[Fault] = []

    def _arm(self, fault: Fault) -> Fault:
        if fault.remaining is not None and fault.remaining < 1:
            raise ValueError("a fault's count is at least 1, or None for every matching request")
        with self._lock:
            self._armed.append(fault)
        return fault

    def delay(
        self,
        seconds: float,
        *,
        method: str | None = None,
        path: str | None = None,
        watch: bool | None = None,
        count: int | None = 1,
    ) -> Fault:
        """Hold matching requests `seconds` before serving them normally (or with another fault)."""
        return self._arm(Fault("delay", Match(method, path, watch), count, seconds=seconds))

    def throttle(
        self,
        retry_after: int = 1,
        *,
        method: str | None = None,
        path: str | None = None,
        watch: bool | None = None,
        count: int | None = 1,
    ) -> Fault:
        """Answer 429 TooManyRequests with `Retry-After: retry_after` and a Status body."""
        return self._arm(Fault("throttle", Match(method, path, watch), count, retry_after=retry_after))

    def fail(
        self,
        code: int = 500,
        *,
        method: str | None = None,
        path: str | None = None,
        watch: bool | None = None,
        count: int | None = 1,
        reason: str = "InternalError",
        message: str = "Internal error injected by the test",
    ) -> Fault:
        """Answer `code` (500 InternalError by default) with a Status body of that reason and message
        (a 410 "Expired", or a 504 "Timeout" saying "Too large resource version", as servers send)."""
        fault = Fault("fail", Match(method, path, watch), count, code=code, reason=reason, message=message)
        return self._arm(fault)

    def expire_next_watch(self, *, path: str | None = None, count: int | None = 1) -> Fault:
        """Answer matching watches with one ERROR event carrying a 410 Expired Status, then end."""
        return self._arm(Fault("expire_watch", Match("GET", path, True), count))

    def close_watch_after(
        self,
        events: int,
        *,
        path: str | None = None,
        abrupt: bool = False,
        count: int | None = 1,
        error: int = 0,
    ) -> Fault:
        """End matching watches after `events` events (bookmarks not counted).

        abrupt=False ends the chunked stream cleanly, as a server-side timeout does; abrupt=True
        drops the connection mid-stream, which the client sees as a protocol error; `error` sends
        an ERROR event with a Status of that code first (410: Expired, else InternalError).
        """
        match = Match("GET", path, True)
        return self._arm(Fault("close_watch", match, count, after_events=events, abrupt=abrupt, error=error))

    def drop_next_watch(
        self, *, path: str | None = None, abrupt: bool = False, count: int | None = 1
    ) -> Fault:
        """End the next matching watch before its first event."""
        return self.close_watch_after(0, path=path, abrupt=abrupt, count=count)

    def clear(self) -> None:
        with self._lock:
            self._armed.clear()

    def armed(self) -> list[Fault]:
        with self._lock:
            return list(self._armed)

    def take(self, method: str, path: str, watch: bool) -> Decision:
        """Consume the first matching delay and the first matching answering fault."""
        with self._lock:
            delay = next(
                (f for f in self._armed if f.kind == "delay" and f.match.matches(method, path, watch)), None
            )
            answer = next(
                (f for f in self._armed if f.kind != "delay" and f.match.matches(method, path, watch)), None
            )
            for fault in (delay, answer):
                if fault is not None and fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining == 0:
                        self._armed.remove(fault)
        return Decision(delay.seconds if delay else 0.0, answer)


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server received it."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any  # parsed JSON, the raw text when it is not JSON, None when empty
    watch: bool
    fault: str | None = None  # the kind of the fault that answered it ("delay" if only delayed)


@dataclass
class RequestLog:
    """Every request received, in order, for assertions."""

    _records: list[RequestRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def find(
        self, method: str | None = None, path: str | None = None, watch: bool | None = None
    ) -> list[RequestRecord]:
        """The records matching like a fault matcher does (path is a substring)."""
        match = Match(method, path, watch)
        with self._lock:
            return [r for r in self._records if match.matches(r.method, r.path, r.watch)]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
