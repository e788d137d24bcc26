"""Where the controller's sync and watch events spend CPU, in one process and without HTTP: the
benchmark's pods (tests/bench/bigcluster.py) fed to the cache's pod stores and the books exactly as
the pod reflector feeds them (kube/reflector.py `_read_page` for a paged list, `_consume` for a
streamed one and for watch events), with `json.loads` of the same bytes measured beside it.

    .venv/bin/python -m tests.bench.controller_cost --pods 30000 --events 10000 [--profile sync|events]

Not part of `make bench` (the probe there measures the same path through a socket); this one
isolates the controller's own work and, with --profile, prints cProfile's top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import time
from collections.abc import Callable, Iterator
from typing import Any

from controller.books import Books
from controller.cache import ClusterCache
from controller.settings import BooksOptions
from kube import podwire
from kube.liststream import ListReader
from kube.pages import GcPause
from kube.store import Fanout, project_page
from kube.watchlist import InitialEvents
from tests.bench import apiserve, bigcluster
from tests.bench.controller import quiet_events

CHUNK = 64 * 1024  # kube/responses.py _READ_SIZE


def _chunks(data: bytes) -> Iterator[bytes]:
    for start in range(0, len(data), CHUNK):
        yield data[start : start + CHUNK]


def _lines(data: list[bytes]) -> Iterator[bytes]:
    yield from data


class Stack:
    """The pod half of controller/cache.py with the books listening, as the reflector feeds it."""

    def __init__(self) -> None:
        self.cache = ClusterCache()
        self.books = Books(self.cache, BooksOptions(window=60.0))
        self.pods = Fanout([self.cache.pods, self.cache.pending])

    def paged(self, pages: list[bytes]) -> None:
        fresh: dict[str, dict[str, Any]] = {}
        for page in pages:
            reader = ListReader(_chunks(page), podwire.decode_pod, podwire.decode_items)
            project_page(self.pods.project, reader.items(), fresh)
        self.pods.replace_records(fresh, "1000")

    def streamed(self, lines: list[bytes]) -> None:
        snapshot = InitialEvents(self.pods.project, lambda: None, 600.0)
        paused = GcPause()
        paused.start()  # as kube/reflector.py `_watch` pauses it until the snapshot is installed
        try:
            for line in lines:
                event = podwire.decode_event(line)
                if snapshot.take(event.get("type"), event.get("object") or {}):
                    break
        finally:
            snapshot.close()
            paused.end()
        self.pods.replace_records(snapshot.fresh, "1000")

    def events(self, lines: list[bytes]) -> None:
        for line in lines:
            event = podwire.decode_event(line)
            obj = event.get("object") or {}
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            self.pods.apply(event["type"], obj, rv)


def _each(decode: Callable[[bytes], Any], data: list[bytes]) -> None:
    for item in data:
        decode(item)  # dropped at once, as tests/bench/baselines.py measures it


def _cpu(work: Callable[[], Any], profile: bool = False) -> float:
    gc.collect()
    profiler = cProfile.Profile() if profile else None
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    work()
    if profiler is not None:
        profiler.disable()
    spent = time.process_time() - started
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    return spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--profile", choices=("paged", "streamed", "events", "quiet"), default=None)
    args = parser.parse_args(argv)
    rendered = bigcluster.render(args.pods, args.events)
    pages = apiserve.render_list("PodList", rendered.pods, 500, 1000)
    initial = [b'{"type":"ADDED","object":' + item + b"}" for item in rendered.pods]
    initial.append(apiserve.initial_events_end("Pod", 1000))
    loads = _cpu(lambda: _each(json.loads, pages))
    line_loads = _cpu(lambda: _each(json.loads, rendered.events))
    figures: dict[str, float] = {"json.loads of the pages": loads}
    paged = Stack()
    figures["paged sync"] = _cpu(lambda: paged.paged(pages), args.profile == "paged")
    streamed = Stack()
    figures["streamed sync"] = _cpu(lambda: streamed.streamed(initial), args.profile == "streamed")
    gc.freeze()  # as ClusterCache.wait_synced does once synced
    events = rendered.events
    quiet = quiet_events(rendered.pods, events, len(events), 10**6)
    quiet_loads = _cpu(lambda: _each(json.loads, quiet))
    figures["events"] = _cpu(lambda: paged.events(events), args.profile == "events")
    figures["quiet events"] = _cpu(lambda: paged.events(quiet), args.profile == "quiet")
    for name, seconds in figures.items():
        print(f"{name:28} {seconds:7.3f} s CPU  {seconds / loads:5.3f} of json.loads")
    for name, spent, yardstick, count in (
        ("per watch event", figures["events"], line_loads, len(events)),
        ("per quiet watch event", figures["quiet events"], quiet_loads, len(quiet)),
    ):
        per_event, per_line = spent * 1e3 / max(1, count), yardstick * 1e3 / max(1, count)
        print(f"{name:28} {per_event:7.4f} ms      {per_event / per_line:5.3f} of json.loads")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
