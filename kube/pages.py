"""Decoding list pages with the cyclic GC paused: a page of 500 pods makes ~200k containers with no
cycles, and collections triggered midway scan the whole heap for nothing."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off for the block. Whichever thread paused it first turns it back on."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class GcPause:
    """The cyclic GC off from `start` to `end`, for a span that is not one block: a streamed list's
    initial events, installed in the middle of the stream they arrive on (measured at the
    benchmark's pods: about a tenth of that phase's CPU went to collections scanning the growing
    snapshot). `end` is idempotent; whichever pause started first turns the GC back on."""

    def __init__(self) -> None:
        self._resume = False

    def start(self) -> None:
        self._resume = gc.isenabled()
        gc.disable()

    def end(self) -> None:
        if self._resume:
            self._resume = False
            gc.enable()


def decode_page(data: bytes) -> Any:
    """json.loads of a list page with the GC paused (measured: a quarter of the sync time of 150k
    pods went to collections otherwise)."""
    with gc_paused():
        return json.loads(data)
