"""What one `fitguard check` costs: a state file written as `fitguard state export` writes it (a
`kind: List` with its provenance annotations; 500 node group templates is about 600 KB) and a
manifest of Deployments, judged by the deployed command in a child process. Wall time, CPU time
(user + system: the figure to compare on a shared machine) and peak RSS of the child, best of
`--runs`.

    .venv/bin/python -m tests.bench.check_cost [--templates 500,5000] [--deployments 1,2000] [--runs 3]
    .venv/bin/python -m tests.bench.check_cost --write DIR --templates 500 --deployments 2000

`--write DIR` only writes the inputs (state-<templates>.yaml, deployments-<n>.yaml) and prints the
command that judges them. Benchmarks are not tests: the exit status is 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from capacity.names import EXPORTED_AT, EXPORTED_CLUSTER, EXPORTED_CONTEXT, EXPORTED_SERVER
from tests.bench import synth

SEED = 11
DEPLOYMENT_BYTES = 3000  # a pod spec of about 3 KB: env, volumes, probes


class _NoAliases(yaml.SafeDumper):
    """Shared objects written out each time, as kubectl and `fitguard state export` write them."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def state_text(templates: int) -> str:
    """A state as `fitguard state export` writes it: a List with its provenance, in YAML."""
    annotations = {
        EXPORTED_AT: "2026-12-01T00:00:00Z",
        EXPORTED_CONTEXT: "bench",
        EXPORTED_CLUSTER: "bench",
        EXPORTED_SERVER: "https://bench.example:6443",
    }
    state = {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": annotations},
        "items": synth.state_objects(templates),
    }
    header = "# fitguard state: read by `fitguard check --state` and `fitguard webhook --state`\n"
    return header + yaml.dump(state, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def deployments_text(count: int) -> str:
    """`count` Deployments in the synthetic namespaces, as YAML documents."""
    rng = random.Random(SEED)
    docs = []
    for i in range(count):
        _, obj = synth.deployment(rng, DEPLOYMENT_BYTES)
        obj["metadata"]["name"] = f"{obj['metadata']['name']}-{i}"
        docs.append(obj)
    return yaml.dump_all(docs, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def write_inputs(directory: Path, templates: int, deployments: int) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    state = directory / f"state-{templates}.yaml"
    manifests = directory / f"deployments-{deployments}.yaml"
    if not state.exists():
        state.write_text(state_text(templates), encoding="utf-8")
    if not manifests.exists():
        manifests.write_text(deployments_text(deployments), encoding="utf-8")
    return state, manifests


def command(state: Path, manifests: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fitguard",
        "check",
        "-f",
        str(manifests),
        "--state",
        str(state),
        "-o",
        "json",
    ]


def run_once(state: Path, manifests: Path) -> dict[str, float]:
    """One check in a child of its own (a fresh child per run: ru_maxrss of the children is a
    maximum over all of them, so each run is measured by a wrapper process)."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False); "
        "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *command(state, manifests)], capture_output=True, text=True, check=True
    )
    seconds, cpu, rss_kb = done.stdout.split()
    return {"seconds": float(seconds), "cpuSeconds": float(cpu), "peakRssMB": int(rss_kb) / 1024}


def measure(templates: int, deployments: int, runs: int, directory: Path) -> dict[str, Any]:
    state, manifests = write_inputs(directory, templates, deployments)
    results = [run_once(state, manifests) for _ in range(runs)]
    best = min(results, key=lambda r: r["cpuSeconds"])
    return {
        "templates": templates,
        "stateKB": round(state.stat().st_size / 1024),
        "deployments": deployments,
        "seconds": round(min(r["seconds"] for r in results), 2),
        "cpuSeconds": round(best["cpuSeconds"], 2),
        "cpuMsPerDeployment": round(best["cpuSeconds"] * 1000 / deployments, 2) if deployments > 1 else None,
        "peakRssMB": round(max(r["peakRssMB"] for r in results)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--templates", default="500,5000")
    parser.add_argument("--deployments", default="1,2000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", type=Path, metavar="DIR")
    args = parser.parse_args(argv)
    templates = [int(n) for n in args.templates.split(",")]
    deployments = [int(n) for n in args.deployments.split(",")]
    if args.write is not None:
        for t in templates:
            for d in deployments:
                state, manifests = write_inputs(args.write, t, d)
                print(" ".join(command(state, manifests)))
        return 0
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="fitguard-check-bench-") as tmp:
        rows = [measure(t, d, args.runs, Path(tmp)) for t in templates for d in deployments]
    machine = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "load": os.getloadavg()[0]}
    print(
        json.dumps({"machine": machine, "rows": rows, "wallSeconds": round(time.time() - started)}, indent=2)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
