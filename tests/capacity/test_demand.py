"""Which unschedulable pods are fitguard's demand: in `blind` scope only those cluster-autoscaler
cannot see (tags missing, or its live-node template carrying the exhausted label), in `all` every one."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from capacity.demand import (
    ALL,
    BLIND,
    PodRef,
    autoscaler_sees,
    classify,
    is_unschedulable,
    pending_shapes,
    shape_key,
)
from capacity.names import EXHAUSTED_LABEL
from capacity.quantity_grammar import FORMAT_WRONG
from capacity.resources import POD_ENI
from capacity.template import NodeGroupTemplate, View
from tests import objects

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
    spec = {"affinity": affinity} if affinity else {}
    return {**objects.pod(name, requests, **spec), "status": UNSCHEDULABLE}


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


SHAPED_SPEC: dict[str, Any] = {
    "containers": [
        {"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}}, "restartPolicy": "Always"},
        "junk",
    ],
    "initContainers": [{"name": "i", "image": "y", "resources": {"limits": {"memory": "1Gi"}}}],
    "overhead": {"cpu": "10m"},
    "nodeSelector": {"zone": "a"},
    "tolerations": [{"key": "k", "operator": "Exists"}],
    "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
        "podAffinity": {"ignored": True},
    },
    "priority": 5,
    "serviceAccountName": "ignored",
}


def test_a_shape_key_is_what_decides_where_a_pod_fits_and_nothing_else() -> None:
    """shape_key keeps each container's resources and restart policy (not its name or image), the
    pod's overhead, resources, node selector, tolerations and required node affinity, in canonical
    JSON; names, images, priority and other affinities do not count."""
    assert shape_key(SHAPED_SPEC) == (
        '{"affinity":{"nodeSelectorTerms":[]},'
        '"containers":[[{"requests":{"cpu":"1"}},"Always"]],'
        '"initContainers":[[{"limits":{"memory":"1Gi"}},null]],'
        '"nodeSelector":{"zone":"a"},"overhead":{"cpu":"10m"},"resources":null,'
        '"tolerations":[{"key":"k","operator":"Exists"}]}'
    )
    assert shape_key({}) == (
        '{"containers":null,"initContainers":null,"nodeSelector":null,"overhead":null,"resources":null,'
        '"tolerations":null}'
    )
    assert shape_key({"containers": "x", "affinity": {"nodeAffinity": "x"}}) == (
        '{"containers":"x","initContainers":null,"nodeSelector":null,"overhead":null,"resources":null,'
        '"tolerations":null}'
    )


@pytest.mark.parametrize(
    ("change", "unschedulable"),
    [
        ({}, True),
        ({"spec": {"nodeName": "n1"}}, False),
        ({"metadata": {"deletionTimestamp": "2026-11-30T12:00:00Z"}}, False),
        ({"status": {**UNSCHEDULABLE, "phase": "Running"}}, False),
        ({"status": {**UNSCHEDULABLE, "phase": "Pending"}}, True),
        ({"metadata": {"labels": {"fitguard.io/ignore": "true"}}}, False),
        ({"metadata": {"labels": {"fitguard.io/ignore": "false"}}}, True),
        (
            {
                "status": {
                    "conditions": [{"type": "PodScheduled", "status": "True", "reason": "Unschedulable"}]
                }
            },
            False,
        ),
        (
            {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Unschedulable"}]}},
            False,
        ),
        (
            {
                "status": {
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]
                }
            },
            False,
        ),
        ({"status": {"conditions": ["junk", *UNSCHEDULABLE["conditions"]]}}, True),
        ({"status": {}}, False),
    ],
)
def test_only_a_pending_pod_the_scheduler_gave_up_on_is_unschedulable(
    change: dict, unschedulable: bool
) -> None:
    """PodScheduled False with reason Unschedulable, no node, not being deleted, Pending (or no
    phase yet), not opted out with fitguard.io/ignore=true."""
    base = {"metadata": {"namespace": "default", "name": "p"}, "spec": {}, "status": UNSCHEDULABLE}
    assert is_unschedulable({**base, **change}) is unschedulable


def test_pending_pods_group_into_shapes_in_first_seen_order() -> None:
    """Equal shapes share one PodShape; refs name the namespace (default when missing), name and
    uid; scheduled pods are left out; a malformed pod is reported with its reason, not raised."""

    def raw(name: str, cpu: str, **meta: str) -> dict[str, Any]:
        spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
        return {"metadata": {"name": name, **meta}, "spec": spec, "status": UNSCHEDULABLE}

    placed = {**raw("placed", "1"), "spec": {"nodeName": "n1"}}
    pods = [
        raw("a", "1", uid="u-a"),
        raw("b", "2", namespace="ml"),
        placed,
        raw("c", "1"),
        raw("bad", "lots"),
    ]
    shapes, malformed = pending_shapes(pods)
    assert [(s.key, s.pods) for s in shapes] == [
        (shape_key(pods[0]["spec"]), [PodRef("default", "a", "u-a"), PodRef("default", "c", "")]),
        (shape_key(pods[1]["spec"]), [PodRef("ml", "b", "")]),
    ]
    assert [s.needs.requests for s in shapes] == [{"cpu": 1000}, {"cpu": 2000}]
    assert malformed == [
        (
            PodRef("default", "bad", ""),
            "spec.containers[0].resources.requests.cpu: invalid quantity 'lots' (" + FORMAT_WRONG + ")",
        )
    ]
    bare, none = pending_shapes([{"status": UNSCHEDULABLE}])
    assert ([(s.key, s.pods, s.needs.requests) for s in bare], none) == (
        [(shape_key({}), [PodRef("default", "", "")], {})],
        [],
    )


def test_the_node_cluster_autoscaler_would_add() -> None:
    """autoscaler_sees: none for a manual group or one at its max size; a live node (even one), with
    the exhausted label when the group's nodes carry it; else the tag-built view."""
    live = group("ng", nodes=1)
    assert autoscaler_sees(live, exhausted=False) is live.actual
    assert live.actual is not None
    assert autoscaler_sees(live, exhausted=True) == View(
        live.actual.allocatable, {EXHAUSTED_LABEL: "true"}, live.actual.taints, "manual"
    )
    node = View({"cpu": 1000}, {"a": "b"}, (), "live-node")
    seen = NodeGroupTemplate("ng", "aws-asg", max_size=10, nodes=1, actual=node)
    assert autoscaler_sees(seen, exhausted=True) == View(
        {"cpu": 1000}, {"a": "b", EXHAUSTED_LABEL: "true"}, (), "live-node"
    )
    at_zero = group("ng")
    assert autoscaler_sees(at_zero, exhausted=True) is at_zero.autoscaler
    full = NodeGroupTemplate("full", "aws-asg", max_size=2, desired_size=2, autoscaler=View({"cpu": 1}))
    assert autoscaler_sees(full, exhausted=False) is None
    manual = NodeGroupTemplate("m", "manual", max_size=2, autoscaler=View({"cpu": 1}))
    assert autoscaler_sees(manual, exhausted=False) is None


def test_classify_judges_with_the_template_pods_and_keeps_every_shape() -> None:
    """A pod that fits the tag-built node only without cluster-autoscaler's template pods (DaemonSets
    plus kube-proxy) is not served by it; a shape no real node fits is skipped and the next shape is
    still judged; `all` scope takes every shape; the malformed ones pass through; a bad scope is
    refused with the whole message."""
    ds = {"daemonSetOverhead": {"cpu": "200m", "pods": "2"}}
    spec = {
        "provider": "aws-asg",
        "maxSize": 10,
        "actual": {"allocatable": {"cpu": "1930m", "pods": "29", "ephemeral-storage": "45Gi"}},
        "autoscaler": {"allocatable": {"cpu": "2", "pods": "110"}},
        **ds,
    }
    ng = NodeGroupTemplate.from_object({"metadata": {"name": "ng"}, "spec": spec})
    shapes, malformed = pending_shapes(
        [pod("bad", {"cpu": "x"}), pod("big", {"cpu": "1750m"}), pod("disk", {"ephemeral-storage": "30Gi"})]
    )
    assert [r.name for r in shapes[0].pods] == ["big"]
    result = classify(shapes, [ng], BLIND, malformed=malformed)
    assert [(s.shape, s.why) for s in result.skipped] == [(shapes[0], "no node group's real node fits it")]
    assert (result.shapes, result.malformed) == ([shapes[1]], malformed)
    everything = classify(shapes, [ng], ALL, malformed=malformed)
    assert (everything.shapes, everything.skipped, everything.malformed) == (shapes, [], malformed)
    with pytest.raises(ValueError) as raised:
        classify([], [], "some")
    assert str(raised.value) == "scaling scope must be one of blind, all, not 'some'"


def test_shape_keys_write_values_json_cannot_as_text() -> None:
    """A value JSON has no type for (a date a YAML loader made) is written as its text."""
    assert shape_key({"nodeSelector": {"since": date(2026, 1, 1)}}) == (
        '{"containers":null,"initContainers":null,"nodeSelector":{"since":"2026-01-01"},"overhead":null,'
        '"resources":null,"tolerations":null}'
    )
