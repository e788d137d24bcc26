"""capacity/guard_nodes.py: the guard's node from the books, whole. Which scaler a node's group
belongs to follows the label that names the group in the books (capacity/records.py
NODE_GROUP_LABELS, first found): a node whose group is a Karpenter NodePool is not
cluster-autoscaler's, whatever other label it carries after it."""

from __future__ import annotations

import pytest

from capacity.branch_eni import NodeSummary
from capacity.guard import GuardNode
from capacity.guard_nodes import guard_node
from capacity.records import project_node
from capacity.resources import POD_ENI
from tests import objects

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("labels", "group", "autoscaled"),
    [
        ({"karpenter.sh/nodepool": "general"}, "general", False),
        ({"karpenter.sh/provisioner-name": "legacy"}, "legacy", False),
        ({"eks.amazonaws.com/nodegroup": "", "karpenter.sh/nodepool": "general"}, "general", False),
        ({"eks.amazonaws.com/nodegroup": "ng", "karpenter.sh/nodepool": "general"}, "ng", True),
        ({"alpha.eksctl.io/nodegroup-name": "ng-x", "karpenter.sh/nodepool": "general"}, "ng-x", True),
        ({"eks.amazonaws.com/nodegroup": "ng"}, "ng", True),
        ({}, "", True),
    ],
    ids=["nodepool", "provisioner", "empty-eks-label", "eks-first", "eksctl-first", "eks", "none"],
)
def test_a_node_is_karpenters_when_a_karpenter_label_names_its_group(
    labels: dict[str, str], group: str, autoscaled: bool
) -> None:
    """The whole GuardNode of a ready node with these labels: its group as the books name it, its
    counts from the books' row, its view as the record projects it, and `autoscaled` False exactly
    when the label naming its group is Karpenter's (then no lift or spare applies: capacity/guard.py)."""
    raw = objects.node(
        "n1", {"cpu": "2", "pods": "29", POD_ENI: "3"}, instance_type="m5.large", labels=labels
    )
    record = project_node(raw)
    row = NodeSummary("n1", record.node_group, "m5.large", capacity=3, in_use=1, held=2, waiting=0)
    assert guard_node(row, record, 0, NOW) == GuardNode(
        "n1", group, 3, 1, 2, 0, True, record.view, autoscaled=autoscaled
    )
    assert record.node_group == group
