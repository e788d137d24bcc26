"""capacity/placement.py's parts judged alone, whole values: a Node as the webhook keeps it, the
kubelet's view of it, a pod's pin, group membership."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.placement import UNSCHEDULABLE_TAINT, LiveNode, Membership, Pin, pin_of
from capacity.selectors import NODE_NAME_FIELD
from capacity.taints import Taint
from capacity.template import View

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "n-1",
        "labels": {"kubernetes.io/hostname": "n-1", "eks.amazonaws.com/nodegroup": "ng"},
    },
    "spec": {
        "taints": [
            {"key": "dedicated", "value": "x", "effect": "NoSchedule"},
            {"key": "gone", "effect": "NoExecute"},
        ]
    },
    "status": {"allocatable": {"cpu": "1930m", "pods": "29"}, "capacity": {"cpu": "2"}, "conditions": []},
}
DEDICATED = Taint("dedicated", "x", "NoSchedule")
GONE = Taint("gone", "", "NoExecute")


def test_a_node_is_kept_as_the_scheduler_sees_it() -> None:
    """Allocatable in milli-units, labels with its name where matchFields reads it, its taints;
    the kubelet's view keeps only the NoExecute ones."""
    node = LiveNode.from_object(NODE)
    labels = {"kubernetes.io/hostname": "n-1", "eks.amazonaws.com/nodegroup": "ng", NODE_NAME_FIELD: "n-1"}
    assert node == LiveNode(
        "n-1", View({"cpu": 1930, "pods": 29000}, labels, (DEDICATED, GONE), "node"), False
    )
    assert node.kubelet_view() == View({"cpu": 1930, "pods": 29000}, labels, (GONE,), "node")


@pytest.mark.parametrize(
    ("spec", "taints", "cordoned"),
    [
        ({"unschedulable": True}, (UNSCHEDULABLE_TAINT,), True),
        (
            {
                "unschedulable": True,
                "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
            },
            (UNSCHEDULABLE_TAINT,),
            True,
        ),
        ({"unschedulable": "true"}, (), False),
        ({"unschedulable": False}, (), False),
    ],
)
def test_a_cordoned_node_carries_the_unschedulable_taint_once(
    spec: dict[str, Any], taints: tuple[Taint, ...], cordoned: bool
) -> None:
    """spec.unschedulable: true (and only the boolean) adds the taint the NodeUnschedulable filter
    reads, unless the node controller already put it there."""
    node = LiveNode.from_object({"metadata": {"name": "n"}, "spec": spec})
    assert (node.view.taints, node.unschedulable) == (taints, cordoned)


@pytest.mark.parametrize(
    ("obj", "error", "match"),
    [
        ({"metadata": "x"}, TypeError, r"^metadata, spec and status must be maps$"),
        ({"metadata": {"name": "n"}, "spec": ["x"]}, TypeError, r"^metadata, spec and status must be maps$"),
        ({"metadata": {"name": "n"}, "status": "x"}, TypeError, r"^metadata, spec and status must be maps$"),
        ({"metadata": {}}, ValueError, r"^metadata\.name: required$"),
        ({"metadata": {"name": 7}}, ValueError, r"^metadata\.name: required$"),
        ({"metadata": {"name": "n"}, "spec": {"taints": "x"}}, TypeError, r"^spec\.taints: expected a list$"),
        (
            {"metadata": {"name": "n"}, "status": {"allocatable": ["cpu"]}},
            TypeError,
            r"^status\.allocatable: expected a map$",
        ),
        (
            {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "lots"}}},
            ValueError,
            r"status\.allocatable\.cpu",
        ),
        ({"metadata": {"name": "n", "labels": "x"}}, TypeError, r"metadata\.labels"),
    ],
)
def test_a_node_the_api_would_not_hold_is_refused_naming_the_field(
    obj: dict[str, Any], error: type, match: str
) -> None:
    """The store counts it malformed and goes on (kube/store.py): the message says what is wrong."""
    with pytest.raises(error, match=match):
        LiveNode.from_object(obj)


def test_an_empty_node_has_nothing_but_its_name() -> None:
    """No labels, taints or allocatable: an empty view (it serves no pod that requests anything)."""
    node = LiveNode.from_object({"metadata": {"name": "bare"}})
    assert node == LiveNode("bare", View({}, {NODE_NAME_FIELD: "bare"}, (), "node"))
    assert node.labels == {NODE_NAME_FIELD: "bare"}


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


FIELD = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n-1"]}]}
HOST = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["h-1", "h-2"]}]}


@pytest.mark.parametrize(
    ("spec", "pin"),
    [
        ({"nodeName": "n-9"}, Pin(node_name="n-9")),
        ({"nodeName": "n-9", **affinity(HOST)}, Pin(node_name="n-9")),
        ({"nodeName": ""}, None),
        ({}, None),
        (affinity(FIELD), Pin(names=frozenset({"n-1"}))),
        (affinity(HOST), Pin(hostnames=frozenset({"h-1", "h-2"}))),
        (affinity(FIELD, HOST), Pin(names=frozenset({"n-1"}), hostnames=frozenset({"h-1", "h-2"}))),
        # one term that names no node lets the pod go anywhere it matches
        (affinity(FIELD, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}), None),
        (affinity({"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}), None),
        (
            affinity(
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["h"]}
                    ]
                }
            ),
            None,
        ),
        (affinity({"matchFields": [{"key": "metadata.name", "operator": "In", "values": []}]}), None),
        (affinity({"matchFields": [{"key": "spec.x", "operator": "In", "values": ["n"]}]}), None),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}
                    }
                }
            },
            None,
        ),
        ({"affinity": "x"}, None),
    ],
)
def test_a_pod_is_pinned_only_when_every_term_names_its_nodes(spec: dict[str, Any], pin: Pin | None) -> None:
    """nodeName pins alone; otherwise every required term must name nodes, by matchFields
    metadata.name In or kubernetes.io/hostname In, and the pin is the union of the names."""
    assert pin_of(spec) == pin


def test_a_node_belongs_to_the_group_that_lists_it_else_the_one_its_label_names() -> None:
    """spec.nodeNames first; EKS's node group label only when it names a known group."""
    membership = Membership({"a": "ng-listed"}, frozenset({"ng-listed", "ng-eks"}))

    def node(name: str, group: str = "") -> LiveNode:
        labels = {"eks.amazonaws.com/nodegroup": group} if group else {}
        return LiveNode.from_object({"metadata": {"name": name, "labels": labels}})

    assert membership.group_of(node("a", "ng-eks")) == "ng-listed"
    assert membership.group_of(node("b", "ng-eks")) == "ng-eks"
    assert membership.group_of(node("c", "ng-unknown")) == ""
    assert membership.group_of(node("d")) == ""
