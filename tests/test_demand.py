"""Which unschedulable pods are fitguard's demand: in `blind` scope only those cluster-autoscaler
cannot see (tags missing, or its live-node template carrying the exhausted label), in `all` every one."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.demand import ALL, BLIND, classify, is_unschedulable, pending_shapes
from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI
from capacity.template import NodeGroupTemplate

UNSCHEDULABLE = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
GUARD = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]}
            ]
        }
    }
}


def pod(name: str, requests: dict[str, str], affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if affinity:
        spec["affinity"] = affinity
    return {"metadata": {"namespace": "default", "name": name}, "spec": spec, "status": UNSCHEDULABLE}


def group(
    name: str, *, nodes: int = 0, storage_tag: str | None = None, pod_eni_tag: str | None = None
) -> NodeGroupTemplate:
    tags = {"cpu": "2", "memory": "8Gi", "pods": "110"}
    if storage_tag:
        tags["ephemeral-storage"] = storage_tag
    if pod_eni_tag:
        tags[POD_ENI] = pod_eni_tag
    actual = {"cpu": "1930m", "memory": "7220Mi", "pods": "29", "ephemeral-storage": "45Gi", POD_ENI: "9"}
    spec = {
        "provider": "aws-asg",
        "maxSize": 10,
        "desiredSize": nodes,
        "nodes": nodes,
        "actual": {"allocatable": actual},
        "autoscaler": {"allocatable": tags},
    }
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def test_only_pods_the_scheduler_gave_up_on_count() -> None:
    assert is_unschedulable(pod("a", {"cpu": "1"}))
    bound = pod("b", {"cpu": "1"})
    bound["spec"]["nodeName"] = "n1"
    assert not is_unschedulable(bound)
    ignored = pod("c", {"cpu": "1"})
    ignored["metadata"]["labels"] = {"fitguard.io/ignore": "true"}
    assert not is_unschedulable(ignored)
    assert not is_unschedulable({"metadata": {"name": "d"}, "spec": {}, "status": {}})


def test_storage_pod_is_blind_demand_while_the_groups_are_at_zero_without_the_tag() -> None:
    shapes, _ = pending_shapes([pod("scratch", {"cpu": "100m", "ephemeral-storage": "30Gi"})])
    demand = classify(shapes, [group("ng-a"), group("ng-b")], BLIND)
    assert [s.key for s in demand.shapes] == [shapes[0].key]


def test_a_correct_tag_hands_the_pod_to_cluster_autoscaler() -> None:
    shapes, _ = pending_shapes([pod("scratch", {"cpu": "100m", "ephemeral-storage": "30Gi"})])
    demand = classify(shapes, [group("ng-a", storage_tag="45Gi"), group("ng-b")], BLIND)
    assert demand.shapes == []
    assert demand.skipped[0].why == "cluster-autoscaler can serve it with a node of ng-a"


def test_a_wrong_tag_value_is_still_blind() -> None:
    shapes, _ = pending_shapes([pod("scratch", {"cpu": "100m", "ephemeral-storage": "30Gi"})])
    assert classify(shapes, [group("ng-a", storage_tag="20Gi")], BLIND).shapes != []


def test_guarded_pod_eni_pods_are_blind_when_the_live_nodes_are_exhausted() -> None:
    """cluster-autoscaler templates a group with nodes from a live node, exhausted label included:
    the guard affinity then fits no template, whatever the tags say."""
    shapes, _ = pending_shapes([pod("sg", {"cpu": "100m", POD_ENI: "1"}, GUARD)])
    templates = [group("ng-sg", nodes=2, pod_eni_tag="9")]
    assert classify(shapes, templates, BLIND, exhausted_groups={"ng-sg"}).shapes != []
    # not exhausted: cluster-autoscaler's template from the live node fits, it is not ours
    assert classify(shapes, templates, BLIND, exhausted_groups=set()).shapes == []


def test_all_scope_takes_every_unschedulable_pod() -> None:
    shapes, _ = pending_shapes([pod("plain", {"cpu": "1"}), pod("huge", {"cpu": "64"})])
    templates = [group("ng-a", storage_tag="45Gi")]
    assert len(classify(shapes, templates, ALL).shapes) == 2
    blind = classify(shapes, templates, BLIND)
    assert blind.shapes == []
    assert sorted(s.why for s in blind.skipped) == [
        "cluster-autoscaler can serve it with a node of ng-a",
        "no node group's real node fits it",
    ]


def test_malformed_pods_are_reported_not_raised() -> None:
    bad = pod("bad", {"cpu": "lots"})
    shapes, malformed = pending_shapes([bad])
    assert shapes == [] and malformed[0][0].name == "bad" and "cpu" in malformed[0][1]


def test_unknown_scope_is_refused() -> None:
    with pytest.raises(ValueError, match="scaling scope"):
        classify([], [], "some")
