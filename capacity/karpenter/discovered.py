"""A joined node's real memory replaces Karpenter's estimate for its instance type.

Upstream: aws/karpenter-provider-aws `pkg/providers/instancetype/instancetype.go`
`UpdateInstanceTypeCapacityFromNode` (called by `pkg/controllers/providers/instancetype/capacity`
for each registered node of a NodeClaim: the node's `status.capacity.memory` is cached per instance
type and the EC2NodeClass's AMIs, replaced only by a value at most as large: the smallest seen
wins), `discoveredCapacityCacheKey`, and `get` (a cached value replaces `Capacity[memory]`; the
overhead, computed from the estimate, is left as it was). The cache lives 60 days
(`pkg/cache/cache.go` `DiscoveredCapacityCacheTTL`) in the controller's memory.

Simplified: the AMI part of the key is not checked (a node of an AMI the class no longer selects
still counts); nodes are matched to the class by the `karpenter.k8s.aws/ec2nodeclass` label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from capacity.karpenter.allocatable import InstanceCapacity
from capacity.karpenter.labels import INSTANCE_TYPE, NODECLASS
from capacity.quantity import QuantityError, parse_quantity
from capacity.resources import MEMORY


def discovered_memory(nodes: Iterable[Mapping[str, Any]], nodeclass: str) -> dict[str, int]:
    """Per instance type, the smallest memory capacity (milli-units) of the class's nodes; a node
    without the labels or a readable capacity is skipped."""
    smallest: dict[str, int] = {}
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(NODECLASS) != nodeclass or not labels.get(INSTANCE_TYPE):
            continue
        raw = ((node.get("status") or {}).get("capacity") or {}).get(MEMORY)
        try:
            memory = parse_quantity(raw)
        except (QuantityError, TypeError):
            continue
        name = str(labels[INSTANCE_TYPE])
        smallest[name] = min(memory, smallest.get(name, memory))
    return smallest


def with_discovered_memory(capacity: InstanceCapacity, memory: int | None) -> InstanceCapacity:
    """`capacity` with its memory replaced by a discovered one (the overhead unchanged)."""
    if memory is None:
        return capacity
    return replace(capacity, capacity={**capacity.capacity, MEMORY: memory})
