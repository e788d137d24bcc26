"""The controller side of the scale benchmark, run in a freshly spawned process so its resident
memory is the controller's alone: its cache, books and books reconciler as tests/books_stack.py
composes them (controller/cache.py's reflectors list+watch into compact records, the branch ENI
books listen) against an API server URL; sync time, RSS, watch event cost, reconcile time.

Messages to the parent over a Pipe: ("synced", figures) once the lists are installed, then
("done", figures); the parent releases the watch events between the two.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any


def rss_mb() -> tuple[float, float]:
    """(resident now, peak resident) in MiB, from /proc/self/status."""
    fields: dict[str, float] = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def probe(
    url: str,
    events: int,
    conn: Any,
    event_timeout: float = 60.0,
    watch_list: bool | None = None,
    quiet_events: int = 0,
) -> None:
    """`watch_list`: streamed lists (True) or paged ones (False), through client-go's switch, the
    KUBE_FEATURE_WatchListClient variable the reflectors read; None leaves the environment alone.
    `quiet_events`: how many more events follow the first `events` (status updates the books do
    not read, tests/bench/controller.py quiet_events), their CPU measured apart."""
    rss_start, _ = rss_mb()
    from kubernetes import client

    from kube.watchlist import WATCH_LIST_ENV
    from tests.books_stack import books_stack

    if watch_list is not None:
        os.environ[WATCH_LIST_ENV] = "true" if watch_list else "false"

    configuration = client.Configuration(host=url)
    configuration.proxy = None
    api = client.ApiClient(configuration)
    rss_imported, _ = rss_mb()
    live = books_stack(api, dry_run=True)

    seen = {"count": 0, "armed": False, "first": 0.0, "last": 0.0, "cpuAtFirstBatch": 0.0}
    finished = threading.Event()
    quiet_done = threading.Event()

    def count(event: str, old: Any, new: Any) -> None:
        if not seen["armed"]:
            return  # the list's own notifications are part of the sync
        now = time.perf_counter()
        if not seen["count"]:
            seen["first"] = now
        seen["count"] += 1
        if seen["count"] <= events:
            seen["last"] = now
        if seen["count"] == events:
            seen["cpuAtFirstBatch"] = time.process_time()  # the process's, whichever thread reads it
            finished.set()
        if seen["count"] >= events + quiet_events:
            quiet_done.set()

    live.pods.add_listener(count)
    wall, cpu = time.perf_counter(), time.process_time()
    live.start(page_size=500)
    synced = live.wait_synced(600)
    sync_seconds, sync_cpu = time.perf_counter() - wall, time.process_time() - cpu
    gc.collect()
    # as the deployed controller's cache does once synced (controller/cache.py wait_synced): the
    # records leave the GC's generations, and a full collection during the events does not walk
    # them (without it the events' figures varied with where such a collection fell)
    gc.freeze()
    rss_synced, peak_synced = rss_mb()
    figures: dict[str, Any] = {
        "synced": synced,
        "pods": len(live.pods),
        "nodes": len(live.nodes),
        "rejected": live.pods.rejected + live.nodes.rejected,
        "syncSeconds": sync_seconds,
        "syncCpuSeconds": sync_cpu,
        "rssStartMb": rss_start,
        "rssImportedMb": rss_imported,
        "rssSyncedMb": rss_synced,
        "peakRssSyncedMb": peak_synced,
    }
    seen["armed"] = True
    conn.send(("synced", figures))
    if events:
        cpu = time.process_time()
        got = finished.wait(event_timeout)
        # waiting costs no CPU: this is the events' cost, up to the first batch's last one
        event_cpu = seen["cpuAtFirstBatch"] - cpu if got else time.process_time() - cpu
        span = seen["last"] - seen["first"]
        if quiet_events:
            quiet_got = quiet_done.wait(event_timeout)
            quiet_cpu = time.process_time() - seen["cpuAtFirstBatch"]
            figures.update(
                quietEventsApplied=seen["count"] - events,
                quietEventsComplete=quiet_got,
                quietEventCpuMs=quiet_cpu * 1000 / max(1, seen["count"] - events),
            )
        figures.update(
            eventsApplied=min(seen["count"], events),
            eventsComplete=got,
            eventCpuMs=event_cpu * 1000 / max(1, seen["count"]),
            eventsPerSecond=seen["count"] / span if span > 0 else None,
            podsAfterEvents=len(live.pods),
        )
    reconciles = []
    for _ in range(3):
        started = time.perf_counter()
        live.reconcile()
        reconciles.append(time.perf_counter() - started)
    rows = live.books.snapshot()
    gc.collect()
    rss_end, peak_end = rss_mb()
    figures.update(
        reconcileSeconds=min(reconciles),
        reconcileSecondsAll=reconciles,
        nodesInBooks=len(rows),
        branchEnisHeld=sum(r.held for r in rows),
        branchEnisInUse=sum(r.in_use for r in rows),
        rssEndMb=rss_end,
        peakRssMb=peak_end,
    )
    live.stop()
    conn.send(("done", figures))
