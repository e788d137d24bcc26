"""Per-thread tallies of the webhook's metrics, moved into prometheus_client's series off the
review's path.

A prometheus_client write takes a lock, and in multiprocess mode also checks the process id and
packs the value into the worker's mmap'd file (prometheus_client/values.py, MmapedValue.inc): the
six writes of each review (in-flight up and down, the duration's sum and bucket, two counters)
cost about 10 µs. Here a review adds to plain dicts of its own thread instead: each has one
writer, so no lock is taken, and under the GIL another thread's `dict.copy()` or `list(...)` sees
every entry as it was before or after an update, never half-written. `Tally.flush` adds what
changed since the last flush to the series, one write per series that changed, whatever the
number of reviews: on each scrape this process serves (webhook/metrics.py `render`), every
`interval` seconds from a daemon thread of the process, when the process exits, and before the
in-process registry is read (`FlushFirst`).

A key is `(metric, *label values)`; the series is `metric.labels(*label values)`, or the metric
itself when it has no labels.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)

Key = tuple[Any, ...]
FLUSH_SECONDS = 1.0


class ThreadTally:
    """What one thread counted since it started. Only that thread writes it."""

    __slots__ = ("busy", "counts", "observed", "thread")

    def __init__(self, thread: threading.Thread) -> None:
        self.counts: dict[Key, int] = {}
        # per histogram series: [sum, the count of each bucket (the last is +Inf)]
        self.observed: dict[Key, list[float]] = {}
        self.busy: dict[Key, int] = {}  # a gauge of what this thread is doing now (in flight)
        self.thread = weakref.ref(thread)

    def count(self, key: Key) -> None:
        counts = self.counts
        counts[key] = counts.get(key, 0) + 1

    def enter(self, key: Key) -> None:
        busy = self.busy
        busy[key] = busy.get(key, 0) + 1

    def leave(self, key: Key) -> None:
        self.busy[key] -= 1

    def observe(self, key: Key, bounds: tuple[float, ...], amount: float) -> None:
        """As Histogram.observe: the sum, and the first bucket whose bound is >= `amount`
        (`bounds` ends with +Inf)."""
        cells = self.observed.get(key)
        if cells is None:
            cells = self.observed[key] = [0.0] * (len(bounds) + 1)
        cells[0] += amount
        cells[bisect_left(bounds, amount) + 1] += 1


class Tally:
    """Every thread's tally in this process, and what of it the series already hold."""

    def __init__(self, interval: float = FLUSH_SECONDS) -> None:
        self.interval = interval
        self._reset()
        os.register_at_fork(after_in_child=self._reset)
        atexit.register(self.flush)

    def _reset(self) -> None:
        """Nothing counted: at start, and in a forked child (the parent's reviews are the
        parent's; prometheus_client starts the child's files at zero too)."""
        self._local = threading.local()
        self._threads: list[ThreadTally] = []
        # what finished threads counted (no one writes it any more), and what was flushed
        self._retired = ThreadTally(threading.current_thread())
        self._flushed: dict[Key, Any] = {}
        self._flusher: threading.Thread | None = None
        self._lock = threading.Lock()  # registration and flushing only, never a review

    def mine(self) -> ThreadTally:
        """This thread's tally (made, and the process's flusher started, on its first use)."""
        try:
            return self._local.tally
        except AttributeError:
            return self._register()

    def _register(self) -> ThreadTally:
        tally = ThreadTally(threading.current_thread())
        with self._lock:
            self._threads.append(tally)
            if self._flusher is None and self.interval > 0:
                self._flusher = threading.Thread(target=self._flush_every, name="metrics-flush", daemon=True)
                self._flusher.start()
        self._local.tally = tally
        return tally

    def _flush_every(self) -> None:
        stop = threading.Event()  # never set: a daemon thread ends with its process
        while not stop.wait(self.interval):
            try:
                self.flush()
            except Exception:  # a full metrics volume must not end the flushing for good
                log.exception("could not write the admission metrics")

    def flush(self) -> None:
        """Adds to each series what its key counted since the last flush."""
        with self._lock:
            counts, observed, busy = self._totals()
            for key, total in counts.items():
                delta = total - self._flushed.get(key, 0)
                if delta:
                    series(key).inc(delta)
                    self._flushed[key] = total
            for key, cells in observed.items():
                self._flush_histogram(key, cells)
            for key, now in busy.items():
                if self._flushed.get(key) != now:
                    series(key).set(now)
                    self._flushed[key] = now

    def _flush_histogram(self, key: Key, cells: list[float]) -> None:
        before = self._flushed.get(key) or [0.0] * len(cells)
        if cells == before:
            return
        child = series(key)
        # Histogram.observe writes these two (prometheus_client/metrics.py, Histogram._metric_init
        # and observe); tests/webhook/test_tally.py checks the exposition against observe's
        child._sum.inc(cells[0] - before[0])
        for bucket, (now, then) in enumerate(zip(cells[1:], before[1:], strict=True)):
            if now != then:
                child._buckets[bucket].inc(now - then)
        self._flushed[key] = cells

    def _totals(self) -> tuple[dict[Key, int], dict[Key, list[float]], dict[Key, int]]:
        """Every thread's counts summed, with those of finished threads folded in for good."""
        live = []
        for tally in self._threads:
            thread = tally.thread()
            if thread is None or not thread.is_alive():
                _add_into(self._retired, tally)  # it writes no more
            else:
                live.append(tally)
        self._threads = live
        total = ThreadTally(threading.current_thread())
        for tally in (self._retired, *live):
            _add_into(total, tally)
        return total.counts, total.observed, total.busy


def _add_into(total: ThreadTally, tally: ThreadTally) -> None:
    for key, count in tally.counts.copy().items():
        total.counts[key] = total.counts.get(key, 0) + count
    for key, cells in tally.observed.copy().items():
        summed = total.observed.setdefault(key, [0.0] * len(cells))
        for i, value in enumerate(list(cells)):
            summed[i] += value
    for key, now in tally.busy.copy().items():
        total.busy[key] = total.busy.get(key, 0) + now


def series(key: Key) -> Any:
    """The prometheus_client series of a key."""
    metric, *labels = key
    return metric.labels(*labels) if labels else metric


class FlushFirst:
    """A collector that yields nothing and flushes the tally: registered before the metrics, the
    in-process registry's readers (`get_sample_value`, `generate_latest`) see every review."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def describe(self) -> Iterable[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        self.tally.flush()
        return iter(())
