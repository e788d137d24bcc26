"""Per-module mutation results of the last `make mutation` run (mutmut's mutants/*.meta files).

    python scripts/mutation_summary.py [--survivors]

Prints one row per module: mutants, killed (a test failed, timed out or pytest errored), survived,
not reached (no selected test runs the function), not run yet, and the score killed / (killed +
survived + not reached). `--survivors` lists the surviving mutants' names (`mutmut show NAME` shows
each diff).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KILLED = {1, 3, 36, -24, 24, 152, 255, 37}  # mutmut's stats.py: killed, pytest error, timeouts
SURVIVED = {0}
NOT_REACHED = {5, 33}


def rows(root: Path) -> list[tuple[str, dict[str, int], list[str]]]:
    result = []
    for meta in sorted(root.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:
            continue
        counts = {"mutants": len(codes), "killed": 0, "survived": 0, "not reached": 0, "not run": 0}
        survivors = []
        for name, code in sorted(codes.items()):
            if code is None:
                counts["not run"] += 1
            elif code in KILLED:
                counts["killed"] += 1
            elif code in SURVIVED:
                counts["survived"] += 1
                survivors.append(name)
            elif code in NOT_REACHED:
                counts["not reached"] += 1
        module = str(meta.relative_to(root))[: -len(".meta")]
        result.append((module, counts, survivors))
    return result


def score(counts: dict[str, int]) -> str:
    judged = counts["killed"] + counts["survived"] + counts["not reached"]
    return f"{100 * counts['killed'] / judged:.1f}%" if judged else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    parser.add_argument("--root", type=Path, default=Path("mutants"))
    args = parser.parse_args(argv)
    found = rows(args.root)
    if not found:
        print("no mutation results: run `make mutation` first", file=sys.stderr)
        return 1
    columns = ["mutants", "killed", "survived", "not reached", "not run"]
    print(f"| module | {' | '.join(columns)} | score |")
    print(f"| --- |{' ---: |' * (len(columns) + 1)}")
    for module, counts, _ in found:
        print(f"| {module} | {' | '.join(str(counts[c]) for c in columns)} | {score(counts)} |")
    if args.survivors:
        for module, _, survivors in found:
            for name in survivors:
                print(f"{module}: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
