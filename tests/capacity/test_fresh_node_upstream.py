"""The case tables of tests/upstream/ca_fresh_node.py (cluster-autoscaler's podsExpectedOnFreshNode and
the two SanitizedTemplateNodeInfoFrom* functions, restated from its source and unit tests) run
through fitguard's own functions, whole values compared: the requests and count of the pods on the
template, the DaemonSets marked running there, and the template's labels."""

from __future__ import annotations

from typing import Any

import pytest

from capacity import autoscaler_view as av
from capacity.estimate import remembered_node_view
from capacity.fresh_node import expected_pods, remembered_pods
from capacity.node_pods import DaemonSetRef, NodePods, RememberedPods, TemplatePods, pods_on_node
from capacity.taints import Taint
from capacity.template import View
from tests.upstream import ca_fresh_node as table


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for c in cases]


def _on_template(names: list[str]) -> TemplatePods:
    """upstream's wantPods as the whole value fitguard computes: the sum of their distinct
    requests and their count."""
    cpu = sum(table.CPU[name] for name in names)
    return TemplatePods({"cpu": cpu} if names else {}, len(names))


def _running(names: list[str]) -> tuple[DaemonSetRef, ...]:
    return tuple(DaemonSetRef(f"{n}-namespace", n, n) for n in names)


def example_node(labels: dict[str, str], taints: list[list[str]]) -> dict[str, Any]:
    """upstream's exampleNode: BuildTestNode("n", 1000, 10) with these labels and taints."""
    return {
        "metadata": {"name": "n", "labels": {**labels, "kubernetes.io/hostname": "n"}},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]},
        "status": {"allocatable": {"cpu": "1", "memory": "10", "pods": "100"}},
    }


@pytest.mark.parametrize("case", table.FROM_NODE_GROUP, ids=_ids(table.FROM_NODE_GROUP))
def test_pods_on_a_template_from_the_node_group(case: dict[str, Any]) -> None:
    """SanitizedTemplateNodeInfoFromNodeGroup: the node group's template node (its pods on node
    "n") sanitised, the DaemonSet pods chosen on it with forceDaemonSets, before the marker and the
    deprecated labels; the labels of the template fitguard publishes (no hostname: random)."""
    given = case["input"]
    built = View(
        {}, {**given["labels"], "kubernetes.io/hostname": ""}, tuple(Taint(*t) for t in given["taints"])
    )
    example = av.sanitized_example(built, "nodeGroupId")
    on_node = pods_on_node(given["pods"], "n")
    got = expected_pods(on_node, [table.DS[n] for n in given["daemonsets"]], example, force=True)
    assert got.pods == _on_template(case["expected"]["pods"])
    assert on_node.daemonsets == _running(case["expected"]["running"])
    if "labels" in case["expected"]:
        assert av.sanitized_template(built).labels == case["expected"]["labels"]


@pytest.mark.parametrize("case", table.FROM_NODE_INFO, ids=_ids(table.FROM_NODE_INFO))
def test_pods_on_a_template_from_a_live_node(case: dict[str, Any]) -> None:
    """SanitizedTemplateNodeInfoFromNodeInfo on the example node (its ToBeDeleted taint and three
    labels) with forceDaemonSets as given: the whole record cluster-autoscaler caches with the node
    (the node's pods, the DaemonSets running there, every pod on the template), and its labels."""
    given = case["input"]
    node = example_node(table.EXAMPLE_LABELS, [table.TO_BE_DELETED])
    found, ignored = remembered_pods(
        node,
        given["pods"],
        [table.DS[n] for n in given["daemonsets"]],
        group="nodeGroupId",
        force=given["force"],
    )
    expected = case["expected"]
    copied = [n for n in expected["pods"] if n.startswith("p") or n in expected["running"]]
    assert ignored == ()
    assert found == RememberedPods(
        NodePods(_on_template(copied), _running(expected["running"])), _on_template(expected["pods"])
    )
    if "labels" in expected:
        assert dict(remembered_node_view(node).labels) == expected["labels"]
