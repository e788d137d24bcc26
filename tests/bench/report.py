"""The summary: each figure as an absolute and, where issue 9 sets a target, as a ratio to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    section: str
    figure: str
    value: float | None
    unit: str
    target: float | None = None
    at_most: bool = True  # the target is a ceiling (times, memory) or, when False, a floor

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.target:
            return None
        return self.value / self.target

    @property
    def meets(self) -> bool | None:
        if self.value is None or self.target is None:
            return None
        return self.value <= self.target if self.at_most else self.value >= self.target

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "figure": self.figure,
            "value": self.value,
            "unit": self.unit,
            "target": self.target,
            "targetIs": None if self.target is None else ("max" if self.at_most else "min"),
            "ratioToTarget": None if self.ratio is None else round(self.ratio, 3),
            "meets": self.meets,
        }


# issue 19's targets, measured with the server pinned to one CPU
PINNED_RATIO_TARGET = 0.9
PINNED_P99_TARGET_MS = 3.0


def _latency_rows(label: str, fixed: dict[str, Any], target: float | None) -> list[Row]:
    rate = fixed["rate"]
    return [
        Row("admission", f"{label} p99 at {rate}/s", fixed["p99Ms"], "ms", target),
        Row("admission", f"{label} p50 at {rate}/s", fixed["p50Ms"], "ms"),
        Row("admission", f"{label} p99.9 at {rate}/s", fixed["p999Ms"], "ms"),
    ]


def _admission_pinned(data: dict[str, Any]) -> list[Row]:
    server, load = (",".join(str(c) for c in data[k]) for k in ("serverCpus", "loadCpus"))
    where = f"1 worker on CPU {server}, load on CPU {load}"
    rows = []
    for endpoint in ("mutate", "validate"):
        ours, empty = data["fitguard"][endpoint], data["empty"][endpoint]
        ratio = ours["ratioToEmpty"]
        rows.append(
            Row(
                "admission",
                f"/{endpoint} / empty handler, median of {data['rounds']} rounds "
                f"(min..max {ratio['min']:.3f}..{ratio['max']:.3f}; {where})",
                ratio["median"],
                "x",
                PINNED_RATIO_TARGET,
                at_most=False,
            )
        )
        for name, figures in (("fitguard", ours), ("empty handler", empty)):
            per_second = figures["perSecond"]
            rows.append(
                Row(
                    "admission",
                    f"{name} /{endpoint} reviews/s, median (min..max "
                    f"{per_second['min']:,.0f}..{per_second['max']:,.0f})",
                    per_second["median"],
                    "/s",
                )
            )
        for fixed in ours["fixed"]:
            target = PINNED_P99_TARGET_MS if fixed["rate"] == 500 else None
            rows += _latency_rows(f"/{endpoint}", fixed, target)
        for fixed in empty["fixed"]:
            rows += _latency_rows(f"empty handler /{endpoint}", fixed, None)
        rows += _latency_ratio_rows(endpoint, ours["fixed"], empty["fixed"])
    return rows


def _latency_ratio_rows(endpoint: str, ours: list[dict[str, Any]], empty: list[dict[str, Any]]) -> list[Row]:
    """fitguard's p99 over the empty handler's at each rate both ran, in the same run: the share of
    the latency that is fitguard's own, whatever the machine's load did to both."""
    theirs = {fixed["rate"]: fixed for fixed in empty}
    return [
        Row(
            "admission",
            f"/{endpoint} p99 / empty handler p99, at {fixed['rate']}/s",
            round(fixed["p99Ms"] / theirs[fixed["rate"]]["p99Ms"], 3),
            "x",
        )
        for fixed in ours
        if fixed["rate"] in theirs and theirs[fixed["rate"]]["p99Ms"]
    ]


def _admission(data: dict[str, Any]) -> list[Row]:
    if data.get("mode") == "pinned":
        return _admission_pinned(data)
    rows = []
    for endpoint in ("mutate", "validate"):
        ours, empty = data["fitguard"][endpoint], data["empty"][endpoint]
        rows.append(
            Row("admission", f"/{endpoint} reviews/s at saturation", ours["saturation"]["perSecond"], "/s")
        )
        rows.append(
            Row("admission", f"empty handler /{endpoint} reviews/s", empty["saturation"]["perSecond"], "/s")
        )
        rows.append(
            Row("admission", f"/{endpoint} / empty handler", ours["ratioToEmpty"], "x", 0.70, at_most=False)
        )
        for fixed in ours["fixed"]:
            rate = fixed["rate"]
            target = 5.0 if rate == 500 else None
            rows.append(Row("admission", f"/{endpoint} p99 at {rate}/s", fixed["p99Ms"], "ms", target))
            rows.append(Row("admission", f"/{endpoint} p50 at {rate}/s", fixed["p50Ms"], "ms"))
            rows.append(Row("admission", f"/{endpoint} p99.9 at {rate}/s", fixed["p999Ms"], "ms"))
    return rows


def _controller(data: dict[str, Any]) -> list[Row]:
    scales = data["scales"]
    counts = sorted(scales, key=int)
    rows = []
    for count in counts:
        run = scales[count]
        top = count == counts[-1] and int(count) >= 150_000
        label = f"{int(count) // 1000}k pods"
        rows.append(
            Row("controller", f"{label}: initial sync", run["syncSeconds"], "s", 20.0 if top else None)
        )
        rows.append(Row("controller", f"{label}: peak RSS", run["peakRssMb"], "MB", 200.0 if top else None))
        rows.append(Row("controller", f"{label}: RSS after sync", run["rssSyncedMb"], "MB"))
        rows.append(
            Row("controller", f"{label}: full reconcile", run["reconcileSeconds"], "s", 1.0 if top else None)
        )
        rows.append(
            Row(
                "controller",
                f"{label}: CPU per watch event",
                run.get("eventCpuMs"),
                "ms",
                0.1 if top else None,
            )
        )
        rows.append(Row("controller", f"{label}: watch events/s", run.get("eventsPerSecond"), "/s"))
        rows += _against_decoding(label, run, top)
    if len(counts) >= 3:
        # linear growth: the cost of each extra pod over the upper interval of scales is within
        # 1.5x of its cost over the lower one (marginal, so fixed costs do not flatter it)
        low, mid, top = (scales[c] for c in (counts[0], counts[-2], counts[-1]))
        pods = [int(counts[0]), int(counts[-2]), int(counts[-1])]
        for figure, key in (("sync time", "syncSeconds"), ("memory", "rssSyncedMb")):
            lower = (mid[key] - low[key]) / (pods[1] - pods[0])
            upper = (top[key] - mid[key]) / (pods[2] - pods[1])
            ratio = upper / lower if lower > 0 else None
            rows.append(Row("controller", f"{figure} per extra pod, upper/lower interval", ratio, "x", 1.5))
    for count, run in sorted((data.get("streamed") or {}).items(), key=lambda item: int(item[0])):
        label = f"{int(count) // 1000}k pods, streamed lists"
        paged = scales.get(count) or {}
        rows.append(Row("controller", f"{label}: initial sync", run["syncSeconds"], "s"))
        rows.append(Row("controller", f"{label}: sync CPU", run["syncCpuSeconds"], "s"))
        if paged.get("syncCpuSeconds"):
            ratio = run["syncCpuSeconds"] / paged["syncCpuSeconds"]
            rows.append(Row("controller", f"{label}: sync CPU / paged sync CPU", ratio, "x"))
        rows.append(Row("controller", f"{label}: peak RSS", run["peakRssMb"], "MB"))
        rows.append(Row("controller", f"{label}: CPU per watch event", run.get("eventCpuMs"), "ms"))
        top = count == counts[-1] and int(count) >= 150_000
        rows += [row for row in _against_decoding(label, run, top) if row.unit == "x"]  # ratios only
    for key, lists in (("command", "paged lists"), ("commandStreamed", "streamed lists")):
        command = data.get(key)
        if not command:
            continue
        label = f"`fitguard controller` as deployed, {command['pods'] // 1000}k pods, {lists}"
        target = 160.0 if command["pods"] >= 150_000 else None
        rows.append(Row("controller", f"{label}: peak RSS (VmHWM)", command["peakRssMb"], "MB", target))
        rows.append(Row("controller", f"{label}: start to /readyz", command["secondsToReady"], "s"))
    fake = data.get("fakekube")
    if fake:
        rows.append(
            Row("controller", f"sync of {fake['pods']} pods via tests/fakekube", fake["syncSeconds"], "s")
        )
    return rows


def _against_decoding(label: str, run: dict[str, Any], top: bool) -> list[Row]:
    """The sync and the watch events as ratios to json.loads of the same bytes (tests/bench/baselines.py)."""
    if "jsonLoadsSeconds" not in run:
        return []
    return [
        Row("controller", f"{label}: json.loads of the list pages (CPU)", run["jsonLoadsSeconds"], "s"),
        Row("controller", f"{label}: same, GC paused", run["jsonLoadsGcPausedSeconds"], "s"),
        Row("controller", f"{label}: pod pages, schema decode (CPU)", run["podPagesSchemaSeconds"], "s"),
        Row("controller", f"{label}: sync / json.loads", run["syncOverJsonLoads"], "x", 0.5 if top else None),
        Row("controller", f"{label}: sync CPU / json.loads", run["syncCpuOverJsonLoads"], "x"),
        Row("controller", f"{label}: json.loads per watch line", run.get("eventJsonLoadsMs"), "ms"),
        Row(
            "controller",
            f"{label}: CPU per watch event / json.loads",
            run.get("eventCpuOverJsonLoads"),
            "x",
            0.5 if top else None,
        ),
        Row(
            "controller",
            f"{label}: CPU per status update the books do not read",
            run.get("quietEventCpuMs"),
            "ms",
        ),
        Row("controller", f"{label}: same / json.loads", run.get("quietEventCpuOverJsonLoads"), "x"),
        Row(
            "controller",
            f"{label}: CPU per event, half of each / json.loads",
            run.get("mixedEventCpuOverJsonLoads"),
            "x",
        ),
    ]


def rows_for(results: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    from tests.bench import workers  # its rows live beside its measurement

    builders = {"admission": _admission, "controller": _controller, "workers": workers.rows}
    for name, build in builders.items():
        data = results.get(name)
        if data is None:
            continue
        if "error" in data:
            rows.append(Row(name, f"failed: {data['error']}", None, ""))
            continue
        rows += build(data)
    fit = results.get("fit")
    if fit and "error" not in fit:
        rows.append(
            Row("fit", f"check_fit per pod, {fit['templates']} templates", fit["checkFitMsPerPod"], "ms", 1.0)
        )
        rows.append(
            Row("fit", f"judge_all per pod, {fit['templates']} templates", fit["judgeAllMsPerPod"], "ms")
        )
    elif fit:
        rows.append(Row("fit", f"failed: {fit['error']}", None, ""))
    planner = results.get("planner")
    if planner and "error" not in planner:
        pods = planner["pendingPods"]
        rows.append(
            Row(
                "planner",
                f"plan {pods} pending pods, {planner['templates']} groups",
                planner["totalSeconds"],
                "s",
                2.0,
            )
        )
        rows.append(Row("planner", "of which grouping into shapes", planner["shapeSeconds"], "s"))
    elif planner:
        rows.append(Row("planner", f"failed: {planner['error']}", None, ""))
    return rows


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def table(rows: list[Row]) -> str:
    header = ("section", "figure", "value", "target", "ratio", "meets")
    lines = [header]
    for row in rows:
        target = (
            ""
            if row.target is None
            else ("<= " if row.at_most else ">= ") + _number(row.target) + f" {row.unit}"
        )
        meets = {True: "yes", False: "NO", None: ""}[row.meets]
        ratio = "" if row.ratio is None else f"{row.ratio:.2f}"
        lines.append(
            (row.section, row.figure, f"{_number(row.value)} {row.unit}".strip(), target, ratio, meets)
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )
