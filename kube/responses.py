"""Reading and ending streamed HTTP responses (list bodies, watch streams) from any thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import urllib3

from kube.client import KubeError

log = logging.getLogger(__name__)

_READ_SIZE = 64 * 1024


def lines(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
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


def chunks(response: urllib3.BaseHTTPResponse, reason: str) -> Iterator[bytes]:
    """A body's bytes as they arrive; a connection cut or shut mid-body is KubeError `reason`."""
    while True:
        try:
            chunk = response.read1(_READ_SIZE)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as err:
            raise KubeError(0, reason, str(err)) from None
        if not chunk:
            return
        yield chunk


def abort(response: urllib3.BaseHTTPResponse) -> None:
    """Ends a response from any thread: shutting the socket wakes a read blocked in another."""
    try:
        response.shutdown()
    except (ValueError, RuntimeError, OSError):
        log.debug("response already released; closing it is enough")
    try:
        response.close()
    except (OSError, urllib3.exceptions.HTTPError):
        log.debug("closing an aborted response failed", exc_info=True)


class InFlight:
    """The one response a thread is reading, which another thread shuts to stop it at once."""

    def __init__(self, stopping: threading.Event) -> None:
        self._stopping = stopping
        self._lock = threading.Lock()
        self._current: urllib3.BaseHTTPResponse | None = None

    def hold(self, response: urllib3.BaseHTTPResponse) -> urllib3.BaseHTTPResponse:
        with self._lock:
            self._current = response
        if self._stopping.is_set():  # the stop came before the response was held
            abort(response)
        return response

    def done(self, response: urllib3.BaseHTTPResponse, clean: bool) -> None:
        with self._lock:
            self._current = None
        if clean and not self._stopping.is_set():  # a shut socket must not go back to the pool
            response.release_conn()
        else:
            abort(response)

    def abort(self) -> None:
        with self._lock:
            current = self._current
        if current is not None:
            abort(current)
