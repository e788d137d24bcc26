"""What decoding the same bytes costs, measured in the same run as the controller: the yardstick the
controller's sync and watch events are given as ratios to (issue 19: absolute times move twofold
between machines, ratios to `json.loads` of the same bytes do not).

Process CPU time (`time.process_time`), not wall time, so a busy machine slows both sides alike.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from kube import podwire


def _cpu(work: Callable[[], Any]) -> float:
    gc.collect()
    started = time.process_time()
    work()
    return time.process_time() - started


def _each(decode: Callable[[bytes], Any], chunks: Iterable[bytes]) -> Callable[[], None]:
    def run() -> None:
        for chunk in chunks:
            decode(chunk)  # the value is dropped at once: only the decode is measured

    return run


def _paused(run: Callable[[], None]) -> Callable[[], None]:
    def paused() -> None:
        gc.disable()
        try:
            run()
        finally:
            gc.enable()

    return paused


def decode_costs(pod_pages: list[bytes], node_pages: list[bytes], lines: list[bytes]) -> dict[str, Any]:
    """CPU seconds of `json.loads` over every list page (GC on, and paused as kube/reflector.py
    pauses it), of the pod schema decoder over the pod pages, and ms per watch line of each."""
    pages = [*pod_pages, *node_pages]
    figures: dict[str, Any] = {
        "listPagesBytes": sum(len(p) for p in pages),
        "jsonLoadsSeconds": _cpu(_each(json.loads, pages)),
        "jsonLoadsGcPausedSeconds": _cpu(_paused(_each(json.loads, pages))),
        "podPagesJsonLoadsSeconds": _cpu(_each(json.loads, pod_pages)),
        "podPagesSchemaSeconds": _cpu(_each(podwire.decode_page, pod_pages)),
    }
    if lines:
        figures["eventJsonLoadsMs"] = _cpu(_each(json.loads, lines)) * 1000 / len(lines)
        figures["eventSchemaMs"] = _cpu(_each(podwire.decode_event, lines)) * 1000 / len(lines)
    return figures


def line_cost(lines: list[bytes]) -> float:
    """ms of `json.loads` per watch line."""
    return _cpu(_each(json.loads, lines)) * 1000 / max(1, len(lines))


def ratios(figures: dict[str, Any]) -> dict[str, Any]:
    """The controller's figures over the decode costs of the same bytes (None when not measured)."""
    loads = figures.get("jsonLoadsSeconds") or 0.0
    per_line = figures.get("eventJsonLoadsMs") or 0.0
    event = figures.get("eventCpuMs")
    quiet, quiet_line = figures.get("quietEventCpuMs"), figures.get("quietEventJsonLoadsMs") or 0.0
    mixed = None
    if event is not None and quiet is not None and per_line and quiet_line:
        # half the events, half status updates the books do not read: CPU adds up
        mixed = (event + quiet) / (per_line + quiet_line)
    return {
        "syncOverJsonLoads": figures["syncSeconds"] / loads if loads else None,
        "syncCpuOverJsonLoads": figures["syncCpuSeconds"] / loads if loads else None,
        "eventCpuOverJsonLoads": event / per_line if event is not None and per_line else None,
        "quietEventCpuOverJsonLoads": quiet / quiet_line if quiet is not None and quiet_line else None,
        "mixedEventCpuOverJsonLoads": mixed,
    }
