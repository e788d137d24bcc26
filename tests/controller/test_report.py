"""The discovery cycle's typed report (controller/report.py) keeps the JSON contract of
`fitguard controller --once -o json` byte for byte: a whole report of the demo cluster (state file,
its ASGs in moto, scaling planned with three headroom rules: one that adds a node, one satisfied,
one naming no group) is compared with the one the dict-built report printed before the report
was typed (tests/golden/controller_once_demo.json). The only values that vary, the `lastSeen` time
of cluster-autoscaler's memory records, are checked to be timestamps and then masked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from capacity.planner import PlannerOptions, parse_headroom
from controller.compose import aws_clients
from controller.run import ControllerOptions, run_once
from controller.scaling_cli import build_driver
from controller.scaling_options import ScalingOptions
from fitguard.demo_seed import seed_moto

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden" / "controller_once_demo.json"
LAST_SEEN = re.compile(r'"lastSeen": "(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"')
HEADROOM = ("ng-general:pod-eni=40", "ng-burst:cpu=1", "ng-none:cpu=1")


def demo_report() -> Any:
    options = ControllerOptions(state=str(EXAMPLES / "cluster.yaml"), cluster_name="demo")
    clients = aws_clients("")
    planner = PlannerOptions(headroom=tuple(h for text in HEADROOM for h in parse_headroom(text)))
    driver = build_driver(ScalingOptions(mode="plan", planner=planner), clients.autoscaling)
    assert driver is not None
    return run_once(options, clients=clients, driver=driver)


@pytest.mark.slow
def test_the_once_report_prints_the_same_json_as_before_it_was_typed(aws: Any) -> None:
    """json.dumps(report.to_json(), indent=2), as the CLI prints it, is the golden text."""
    seed_moto(EXAMPLES / "aws-seed.yaml")
    printed = json.dumps(demo_report().to_json(), indent=2) + "\n"
    assert len(LAST_SEEN.findall(printed)) == 2
    masked = LAST_SEEN.sub('"lastSeen": "<the cycle\'s time>"', printed)
    assert masked == GOLDEN.read_text(encoding="utf-8")
