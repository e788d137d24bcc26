"""How far a long `fitguard check` has got, for a person watching a terminal: one line on standard
error, rewritten in place (`checked 12,000 of 110,000 objects`), at most a few times a second, and
erased when the check ends. Nothing is written when standard error is not a terminal (CI logs,
pipes) or for an input too small to wait for."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

# Fewer objects are judged in well under a second: no line for them.
MIN_OBJECTS = 500
# How often the line is rewritten, in seconds: often enough to move, rarely enough to cost nothing.
INTERVAL = 0.25


class Progress:
    """`step()` after each object judged, `done()` at the end (it erases the line)."""

    def __init__(
        self,
        total: int,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        min_objects: int = MIN_OBJECTS,
    ) -> None:
        self.total = total
        self.count = 0
        self._stream = stream
        self._clock = clock
        self._on = total >= min_objects and _is_terminal(stream)
        self._next = clock() + INTERVAL
        self._shown = False

    def step(self) -> None:
        self.count += 1
        if not self._on:
            return
        now = self._clock()
        if now < self._next:
            return
        self._next = now + INTERVAL
        self._stream.write(f"\rchecked {self.count:,} of {self.total:,} objects")
        self._stream.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            self._stream.write("\r\x1b[K")  # back to the line's start, erased to its end
            self._stream.flush()
            self._shown = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
