"""Branch ENIs as the scheduler and the VPC resource controller count them, through the public
paths: `fitguard report` and `fitguard controller --once -o json --state` (moto for AWS, no node
groups). A node's capacity is what it advertises (allocatable vpc.amazonaws.com/pod-eni), none when
it advertises none whatever its instance type could; a held branch ENI waits the cooldown of the
amazon-vpc-cni ConfigMap. The report and the planner agree on both."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from fitguard.cli import main
from tests import objects
from tests.awsfixtures import AwsEnvironment
from tests.objects import rfc3339

POD_ENI = "vpc.amazonaws.com/pod-eni"
CAPTURED = "2024-05-01T12:00:00Z"


def node(name: str, pod_eni: str | None, os: str = "linux") -> dict[str, Any]:
    """An m5.large (9 branch interfaces in the VPC resource controller's table), Ready."""
    allocatable = {"cpu": "1930m", "memory": "7220Mi", "pods": "29", "ephemeral-storage": "18Gi"}
    if pod_eni is not None:
        allocatable[POD_ENI] = pod_eni
    return objects.node(
        name, allocatable, group="ng", instance_type="m5.large", labels={"kubernetes.io/os": os}
    )


def finished_job(name: str, node_name: str, at: float) -> dict[str, Any]:
    """A Succeeded pod that got one branch ENI (the controller's annotation) and finished at `at`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "batch",
            "uid": f"uid-{name}",
            "annotations": {POD_ENI: json.dumps([{"eniId": f"eni-{name}"}])},
        },
        "spec": {
            "nodeName": node_name,
            "containers": [
                {"name": "main", "resources": {"limits": {POD_ENI: "1"}, "requests": {POD_ENI: "1"}}}
            ],
        },
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [
                {"name": "main", "state": {"terminated": {"exitCode": 0, "finishedAt": rfc3339(at)}}}
            ],
        },
    }


def pending(name: str) -> dict[str, Any]:
    """An unschedulable pod asking for one branch ENI."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "resources": {
                        "limits": {POD_ENI: "1"},
                        "requests": {"cpu": "100m", POD_ENI: "1"},
                    },
                }
            ]
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def vpc_cni(cooldown: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
        "data": {"branch-eni-cooldown": cooldown},
    }


def write(tmp_path: Path, items: list[dict[str, Any]], captured: str | None = None) -> str:
    document: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": items}
    if captured:
        document["metadata"] = {"annotations": {"fitguard.io/captured-at": captured}}
    path = tmp_path / "state.json"
    path.write_text(json.dumps(document))
    return str(path)


def once(capsys: pytest.CaptureFixture[str], state: str) -> dict[str, Any]:
    argv = ["controller", "--once", "--dry-run", "-o", "json", "--state", state]
    argv += ["--scaling", "plan", "--scaling-scope", "all", "--sync-autoscaler-tags", "off"]
    code = main(argv, only="controller")
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def report(capsys: pytest.CaptureFixture[str], state: str) -> dict[str, Any]:
    code = main(["report", "--snapshot", state, "-o", "json"], only="report")
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def books_row(
    name: str,
    capacity: int,
    *,
    in_use: int = 0,
    held_by: tuple[str, ...] = (),
    next_release: float | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "nodeGroup": "ng",
        "instanceType": "m5.large",
        "capacity": capacity,
        "inUse": in_use,
        "held": len(held_by),
        "schedulerFree": max(capacity - in_use, 0),
        "trueFree": max(capacity - in_use - len(held_by), 0),
        "waiting": 0,
        "heldBy": list(held_by),
        "waitingPods": [],
        "nextReleaseSeconds": next_release,
        "lacking": max(in_use + len(held_by) - capacity, 0),
    }


def plan(on_existing: dict[str, list[str]], not_helped: list[str]) -> dict[str, Any]:
    """The whole `scaling` answer for pods planned onto existing nodes or helped by no group (there
    are no node groups here)."""
    return {
        "scaleUps": [],
        "onExistingNodes": on_existing,
        "onNodesOnTheirWay": {},
        "notTriggerScaleUp": (
            [
                {
                    "pods": not_helped,
                    "message": "pod didn't trigger scale-up: no node group can be scaled",
                    "reasons": {},
                }
            ]
            if not_helped
            else []
        ),
        "skippedGroups": {},
        "headroom": [],
        "unschedulablePods": len(not_helped) + sum(len(p) for p in on_existing.values()),
        "demandPods": len(not_helped) + sum(len(p) for p in on_existing.values()),
        "notDemand": [],
        "outcomes": {},
        "errors": {},
    }


def test_a_node_that_advertises_no_pod_eni_offers_none(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, aws: AwsEnvironment
) -> None:
    """Two m5.large nodes, one Windows (no pod-eni advertised), one without a trunk ENI yet (none
    advertised either): the report gives both capacity 0, and the planner places the pending pod
    that asks for a branch ENI on neither. A third that advertises 9 takes it."""
    items = [node("win", None, os="windows"), node("no-trunk", None), pending("web")]
    state = write(tmp_path, items, CAPTURED)
    assert report(capsys, state)["nodes"] == [books_row("no-trunk", 0), books_row("win", 0)]
    assert once(capsys, state)["scaling"] == plan({}, ["shop/web"])

    state = write(tmp_path, [*items, node("trunked", "9")], CAPTURED)
    assert report(capsys, state)["nodes"] == [
        books_row("no-trunk", 0),
        books_row("trunked", 9),
        books_row("win", 0),
    ]
    assert once(capsys, state)["scaling"] == plan({"trunked": ["shop/web"]}, [])


def test_the_planner_and_the_report_wait_the_configured_cooldown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, aws: AwsEnvironment
) -> None:
    """A node advertising 1 branch ENI whose only one a job released 100 s ago: with
    branch-eni-cooldown 120 (window 150 s) it is still held, so the pending pod fits no node; with
    the default 60 s (window 90 s) it is free and the pod goes there. The report agrees."""
    finished_at = time.time() - 100  # `--once` reads the books at the current time
    items = [node("n1", "1"), finished_job("job-a", "n1", finished_at), pending("web")]

    captured = rfc3339(finished_at + 100)  # whole seconds, as finishedAt is written
    long_state = write(tmp_path, [*items, vpc_cni("120")], captured)
    assert report(capsys, long_state) == {
        "nodes": [books_row("n1", 1, held_by=("job-a",), next_release=50.0)],
        "releaseModel": "cooldown",
        "releaseWindowSeconds": 150.0,
        "now": captured,
        "skipped": 0,
    }
    assert once(capsys, long_state)["scaling"] == plan({}, ["shop/web"])

    default_state = write(tmp_path, [*items, vpc_cni("not a number")], captured)
    assert report(capsys, default_state) == {
        "nodes": [books_row("n1", 1)],
        "releaseModel": "cooldown",
        "releaseWindowSeconds": 90.0,
        "now": captured,
        "skipped": 0,
    }
    assert once(capsys, default_state)["scaling"] == plan({"n1": ["shop/web"]}, [])
