"""capacity/placement.py's parts judged alone, whole values: a Node as the webhook keeps it, the
kubelet's view of it, a pod's pin, group and NodePool membership, each live node's DaemonSet
overhead."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.karpenter.published import PublishedNodePool
from capacity.placement import (
    NO_OVERHEAD,
    UNSCHEDULABLE_TAINT,
    LiveNode,
    Membership,
    Pin,
    overheads_of,
    pin_of,
)
from capacity.selectors import NODE_NAME_FIELD
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate, View

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


def live(name: str, labels: dict[str, str]) -> LiveNode:
    return LiveNode.from_object({"metadata": {"name": name, "labels": labels}})


POOL_LABEL = "karpenter.sh/nodepool"
TYPE_LABEL = "node.kubernetes.io/instance-type"


def test_a_karpenter_node_belongs_to_its_nodepool_only_when_fitguard_judges_that_nodepool() -> None:
    """A node whose `karpenter.sh/nodepool` names a NodePool with a judged template is that
    NodePool's; one naming another NodePool is of no group (capacity fitguard does not model); a
    node group's listing or label comes first."""
    membership = Membership({"a": "ng-listed"}, frozenset({"ng-listed", "ng-eks"}), frozenset({"kp"}))
    assert membership.group_of(live("k", {POOL_LABEL: "kp"})) == "kp"
    assert (
        membership.template_group(live("k", {POOL_LABEL: "kp"})),
        membership.pool_of(live("k", {POOL_LABEL: "kp"})),
    ) == ("", "kp")
    assert membership.group_of(live("o", {POOL_LABEL: "other"})) == ""
    assert membership.group_of(live("a", {POOL_LABEL: "kp"})) == "ng-listed"
    assert (
        membership.group_of(live("b", {"eks.amazonaws.com/nodegroup": "ng-eks", POOL_LABEL: "kp"}))
        == "ng-eks"
    )
    assert Membership({}, frozenset()).group_of(live("k", {POOL_LABEL: "kp"})) == ""


def test_each_live_node_is_judged_less_its_group_or_nodepool_daemonsets() -> None:
    """A node group's node: the group's DaemonSets and their count; a NodePool's node: what the
    controller published for its instance type, else the NodePool's most common set, `pods` split
    off as a count (published in milli-units); a node of neither: nothing. One object per NodePool
    and type, so the nodes of one type share their offer's memo."""
    group = NodeGroupTemplate("ng", daemonset_overhead={"cpu": 200}, daemonset_pods=2)
    record = PublishedNodePool(
        "kp", "default", "EC2NodeClass", {}, {},
        overhead={"cpu": 100, "pods": 1000},
        overheads={"m5.large": {"cpu": 150, "memory": 2**20 * 1000, "pods": 2000}},
    )  # fmt: skip
    membership = Membership({}, frozenset({"ng"}), frozenset({"kp"}))
    of = overheads_of(membership, [group], {"kp": record})
    m5 = [live(f"k{i}", {POOL_LABEL: "kp", TYPE_LABEL: "m5.large"}) for i in (1, 2)]
    assert of(m5[0]) == ({"cpu": 150, "memory": 2**20 * 1000}, 2)
    assert of(m5[0]) is of(m5[1])
    assert of(live("k3", {POOL_LABEL: "kp", TYPE_LABEL: "t3.large"})) == ({"cpu": 100}, 1)
    assert of(live("k4", {POOL_LABEL: "kp"})) == ({"cpu": 100}, 1)
    assert of(live("n1", {"eks.amazonaws.com/nodegroup": "ng"})) == ({"cpu": 200}, 2)
    assert of(live("x", {POOL_LABEL: "other", TYPE_LABEL: "m5.large"})) == NO_OVERHEAD == ({}, 0)
