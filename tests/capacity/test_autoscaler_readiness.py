"""cluster-autoscaler's reading of a node (capacity/autoscaler_readiness.py), the one rule the memory
record, the guard and the scaling driver share: `GetNodeReadiness` (conditions, the three not-ready
taints, the latest transition), and `isNodeGoodTemplateCandidate` with the NotReady copies
`obtainNodeLists` makes of startup-tainted and GPU-less GPU nodes. Each case is one node and the
whole answer."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.autoscaler_readiness import (
    NEVER,
    UNKNOWN,
    Readiness,
    is_template_candidate,
    node_readiness,
)
from capacity.template_taints import TaintOptions

T0 = 1_796_040_000.0  # 2026-11-30T12:00:00Z
OLD = "2026-11-30T11:00:00Z"  # an hour before T0
RECENT = "2026-11-30T11:59:30Z"  # 30 s before T0


# Not tests.objects.node: readiness is the subject, so each condition (and its transition time)
# is written out by the test.
def node(
    conditions: list[dict[str, Any]] | None = None,
    taints: list[dict[str, Any]] | None = None,
    *,
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
) -> dict[str, Any]:
    ready = [{"type": "Ready", "status": "True", "lastTransitionTime": OLD}]
    return {
        "metadata": {"name": "ip-1", "labels": labels or {"eks.amazonaws.com/nodegroup": "ng"}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "allocatable": allocatable or {"cpu": "2", "pods": "29"},
            "conditions": ready if conditions is None else conditions,
        },
    }


def cond(kind: str, status: str, at: str | None = OLD) -> dict[str, Any]:
    return {"type": kind, "status": status, **({"lastTransitionTime": at} if at else {})}


def at(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (node(), Readiness(True, at(OLD))),
        (node([cond("Ready", "True", None)]), Readiness(True, NEVER)),
        (node([cond("Ready", "False")]), Readiness(False, at(OLD))),
        (node([cond("Ready", "Unknown")]), Readiness(False, at(OLD))),
        (node([cond("Ready", "Maybe")]), Readiness(True, at(OLD))),  # only False and Unknown count
        (node([]), Readiness(False, NEVER)),  # no Ready condition: an error upstream, not ready
        (node([cond("Ready", "True"), cond("DiskPressure", "True", RECENT)]), Readiness(False, at(RECENT))),
        (node([cond("Ready", "True"), cond("NetworkUnavailable", "True")]), Readiness(False, at(OLD))),
        # a pressure condition that is False still moves the transition time
        (
            node([cond("Ready", "True"), cond("NetworkUnavailable", "False", RECENT)]),
            Readiness(True, at(RECENT)),
        ),
        # MemoryPressure and PIDPressure are not read at all
        (node([cond("Ready", "True"), cond("MemoryPressure", "True", RECENT)]), Readiness(True, at(OLD))),
        (
            node(
                taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": RECENT}]
            ),
            Readiness(False, at(RECENT)),
        ),
        (
            node(taints=[{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]),
            Readiness(False, at(OLD)),
        ),
        (
            node(taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
            Readiness(False, at(OLD)),
        ),
        # unreachable and memory pressure taints are not among GetNodeReadiness's three
        (
            node(taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
            Readiness(True, at(OLD)),
        ),
        (node([cond("Ready", "True", "yesterday")]), Readiness(True, UNKNOWN)),
    ],
    ids=[
        "ready",
        "ready-no-time",
        "ready-false",
        "ready-unknown",
        "ready-odd-status",
        "no-ready-condition",
        "disk-pressure",
        "network-unavailable",
        "pressure-false-moves-time",
        "memory-pressure-ignored",
        "not-ready-taint-time",
        "disk-pressure-taint",
        "network-unavailable-taint",
        "unreachable-taint-ignored",
        "unreadable-time",
    ],
)
def test_readiness_as_get_node_readiness_reads_it(raw: dict[str, Any], expected: Readiness) -> None:
    """Ready False or Unknown, DiskPressure or NetworkUnavailable True, or one of the three not-ready
    taints make a node not ready; the transition is the latest of those conditions' and taints'."""
    assert node_readiness(raw) == expected


GPU = {"eks.amazonaws.com/nodegroup": "ng", "k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"}


@pytest.mark.parametrize(
    ("raw", "options", "candidate"),
    [
        (node(), TaintOptions(), True),
        (node([cond("Ready", "True", RECENT)]), TaintOptions(), False),  # ready 30 s: not stable
        (node([cond("Ready", "True", "2026-11-30T11:58:59Z")]), TaintOptions(), True),  # 61 s
        (node([cond("Ready", "True", "2026-11-30T11:59:00Z")]), TaintOptions(), False),  # 60 s exactly
        (node([cond("Ready", "True"), cond("DiskPressure", "True")]), TaintOptions(), False),
        (node([cond("Ready", "True"), cond("NetworkUnavailable", "False", RECENT)]), TaintOptions(), False),
        (node(unschedulable=True), TaintOptions(), False),
        (
            node(taints=[{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}]),
            TaintOptions(),
            False,
        ),
        (
            node(taints=[{"key": "DeletionCandidateOfClusterAutoscaler", "effect": "PreferNoSchedule"}]),
            TaintOptions(),
            True,
        ),
        (
            node(
                taints=[{"key": "startup-taint.cluster-autoscaler.kubernetes.io/cni", "effect": "NoSchedule"}]
            ),
            TaintOptions(),
            False,
        ),
        (node(taints=[{"key": "example.com/booting", "effect": "NoSchedule"}]), TaintOptions(), True),
        (
            node(taints=[{"key": "example.com/booting", "effect": "NoSchedule"}]),
            TaintOptions(frozenset({"example.com/booting"})),
            False,
        ),
        (
            node(taints=[{"key": "NodeWithImpairedVolumes", "value": "true", "effect": "NoSchedule"}]),
            TaintOptions(),
            True,
        ),
        (node(labels=GPU), TaintOptions(), False),  # GPU label, no GPU allocatable yet
        (node(labels=GPU, allocatable={"nvidia.com/gpu": "0"}), TaintOptions(), False),
        (node(labels=GPU, allocatable={"amd.com/gpu": "1"}), TaintOptions(), True),
        (
            {
                "metadata": {"name": "x"},
                "status": {"conditions": [cond("Ready", "True")], "allocatable": {"cpu": "lots"}},
            },
            TaintOptions(),
            False,
        ),
    ],
    ids=[
        "ready-long",
        "ready-recently",
        "ready-61s",
        "ready-60s",
        "disk-pressure",
        "pressure-transition-recent",
        "cordoned",
        "to-be-deleted",
        "deletion-candidate-kept",
        "startup-prefix",
        "custom-taint",
        "startup-flag",
        "impaired-volumes-is-no-readiness-matter",
        "gpu-label-no-gpu",
        "gpu-zero",
        "gpu-amd",
        "unreadable-allocatable",
    ],
)
def test_a_good_template_candidate(raw: dict[str, Any], options: TaintOptions, candidate: bool) -> None:
    """isNodeGoodTemplateCandidate on the node obtainNodeLists hands on: ready, stable for more than
    a minute since the latest transition, schedulable, not being deleted by cluster-autoscaler, no
    startup taint (its flags' too), and a GPU node only once it advertises a GPU."""
    assert is_template_candidate(raw, T0, options) is candidate
