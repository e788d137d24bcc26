"""`python -m tests.bench` (`make bench`): every benchmark, a table of figures against the targets of
issue 9, and bench/results.json. Benchmarks never fail the build: the exit status is 0 whatever
the figures are (a benchmark that crashes is reported as such and the others still run).

    python -m tests.bench [--only admission,controller,fit,planner,workers] [--duration S] [--rate-duration S]
                          [--scales 10000,50000,150000] [--events N] [--loadgen auto|wrk|python]
                          [--admission-mode pinned|unpinned] [--rounds N] [--round-duration S]
                          [--replica-workers 1,2,4] [--replica-nodes N] [--replica-templates N]
                          [--replica-list-paths streamed,paged]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.bench import admission, capacity_cost, command_rss, controller, workers
from tests.bench.report import rows_for, table

SECTIONS = ("admission", "controller", "fit", "planner", "workers")


def machine() -> dict[str, Any]:
    model = ""
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections (default: all)")
    parser.add_argument(
        "--admission-mode",
        choices=admission.MODES,
        default=admission.default_mode(),
        help="pinned: one server CPU, the load on the others, alternating rounds (default with 2+ CPUs); "
        "unpinned: nothing pinned, one saturation run per app",
    )
    parser.add_argument("--rounds", type=int, default=5, help="pinned: alternating saturation rounds")
    parser.add_argument(
        "--round-duration", type=float, default=4.0, help="pinned: seconds of each saturation run of a round"
    )
    parser.add_argument(
        "--duration", type=float, default=10.0, help="unpinned: seconds of each saturation run"
    )
    parser.add_argument("--rate-duration", type=float, default=10.0, help="seconds of each fixed-rate run")
    parser.add_argument("--rates", default="100,500,1000", help="fixed rates, reviews per second")
    parser.add_argument("--workers", type=int, default=2, help="unpinned: gunicorn workers (default: 2)")
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--scales", default="10000,50000,150000", help="pod counts of the controller runs")
    parser.add_argument("--events", type=int, default=10_000, help="watch events sent after each sync")
    parser.add_argument(
        "--command-pods",
        type=int,
        default=150_000,
        help="pods served to the whole `fitguard controller` command for its peak RSS (0: skip)",
    )
    parser.add_argument("--fakekube-pods", type=int, default=5_000, help="pods synced through tests/fakekube")
    parser.add_argument(
        "--replica-workers", default="1,2,4", help="workers: gunicorn worker counts of one webhook replica"
    )
    parser.add_argument("--replica-nodes", type=int, default=5000, help="workers: Nodes the webhook watches")
    parser.add_argument(
        "--replica-templates", type=int, default=2000, help="workers: NodeGroupTemplates the webhook watches"
    )
    parser.add_argument(
        "--replica-list-paths", default="streamed,paged", help="workers: how the fake answers lists"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results.json"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    only = [s for s in args.only.split(",") if s]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {', '.join(sorted(unknown))}; choose from {', '.join(SECTIONS)}")
    results: dict[str, Any] = {
        "machine": machine(),
        "command": "python -m tests.bench " + " ".join(sys.argv[1:]),
    }
    say = print

    def section(name: str, work: Callable[[], Any]) -> None:
        if name not in only:
            return
        say(f"[{name}]")
        started = time.perf_counter()
        try:
            results[name] = work()
        except Exception as err:  # one broken benchmark must not hide the figures of the others
            traceback.print_exc()
            results[name] = {"error": f"{type(err).__name__}: {err}"}
        say(f"[{name}] {time.perf_counter() - started:.1f} s")

    with tempfile.TemporaryDirectory(prefix="fitguard-bench-") as workdir:
        options = admission.AdmissionOptions(
            duration=args.duration,
            rate_duration=args.rate_duration,
            rates=tuple(int(r) for r in args.rates.split(",") if r),
            workers=args.workers,
            loadgen=args.loadgen,
            mode=args.admission_mode,
            rounds=args.rounds,
            round_duration=args.round_duration,
        )
        section("admission", lambda: admission.run(options, Path(workdir), say))

    def scales() -> dict[str, Any]:
        runs = {}
        for pods in (int(p) for p in args.scales.split(",") if p):
            say(f"  {pods} pods")
            runs[str(pods)] = controller.at_scale(pods, args.events)
        streamed = {}
        for pods in (int(p) for p in args.scales.split(",") if p):
            say(f"  {pods} pods, streamed lists")
            streamed[str(pods)] = controller.at_scale(pods, args.events, streaming=True)
        figures: dict[str, Any] = {"scales": runs, "streamed": streamed}
        if args.fakekube_pods:
            say(f"  {args.fakekube_pods} pods through tests/fakekube")
            figures["fakekube"] = controller.through_fakekube(args.fakekube_pods)
        if args.command_pods:
            say(f"  the fitguard controller command as deployed, {args.command_pods} pods, paged lists")
            figures["command"] = command_rss.command_rss(args.command_pods)
            say(f"  the fitguard controller command as deployed, {args.command_pods} pods, streamed lists")
            figures["commandStreamed"] = command_rss.command_rss(args.command_pods, streaming=True)
        return figures

    section("controller", scales)
    section(
        "workers",
        lambda: workers.run(
            tuple(int(n) for n in args.replica_workers.split(",") if n),
            args.replica_nodes,
            args.replica_templates,
            say=say,
            list_paths=tuple(p for p in args.replica_list_paths.split(",") if p),
        ),
    )
    section("fit", capacity_cost.fit_cost)
    section("planner", capacity_cost.planner_cost)

    rows = rows_for(results)
    results["summary"] = [row.to_json() for row in rows]
    say("")
    say(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    say(f"\nfigures written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
