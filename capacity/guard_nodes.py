"""The guard's view of a node from the books (capacity/guard.py `GuardNode`): its branch ENI counts,
whether cluster-autoscaler may build its group's template from it (the one rule of
capacity/autoscaler_readiness.py), and whether its group may be cluster-autoscaler's at all."""

from __future__ import annotations

from collections.abc import Mapping

from capacity.autoscaler_readiness import Readiness, is_good_candidate
from capacity.branch_eni import NodeSummary
from capacity.guard import GuardNode
from capacity.records import NODE_GROUP_LABELS, NodeRecord
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions

# Karpenter's NodePool labels (capacity/records.py NODE_GROUP_LABELS): cluster-autoscaler neither
# scales nor remembers such a group, and Karpenter builds its new nodes from the NodePool.
KARPENTER_LABELS = ("karpenter.sh/nodepool", "karpenter.sh/provisioner-name")


def karpenters(labels: Mapping[str, str]) -> bool:
    """Whether the label that names the node's group (the first of NODE_GROUP_LABELS it carries, as
    the books read it) is Karpenter's: the group is then a NodePool."""
    named_by = next((key for key in NODE_GROUP_LABELS if labels.get(key)), "")
    return named_by in KARPENTER_LABELS


def guard_node(
    row: NodeSummary,
    record: NodeRecord,
    leaked: int,
    now: float,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> GuardNode:
    """The node as the guard judges it at `now`, with the running cluster-autoscaler's taint options."""
    readiness = Readiness(record.ready, record.ready_since)
    labels = record.view.labels if record.view is not None else {}
    return GuardNode(
        row.name,
        row.node_group,
        row.capacity,
        row.in_use,
        row.held,
        leaked,
        is_good_candidate(readiness, record.view, record.unschedulable, now, taint_options),
        record.view,
        autoscaled=not karpenters(labels),
    )
