"""Branch ENIs that EC2 holds and no pod claims: leaked, once unclaimed past the release window.

A branch ENI is claimed while a pod object lists its id in the `vpc.amazonaws.com/pod-eni`
annotation. A deleted pod's ENI is legitimately unclaimed for up to one release window (the VPC
resource controller's cooldown); past that it is a leak the scheduler and the books cannot see.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BranchEni:
    eni_id: str
    trunk_id: str  # the trunk ENI it hangs off (tag vpcresources.k8s.aws/trunk-eni-id)


@dataclass(frozen=True, slots=True)
class Leak:
    eni_id: str
    node: str  # "" when the trunk's instance is no node we know
    instance_id: str
    unclaimed_for: float  # seconds


@dataclass(frozen=True, slots=True)
class Audit:
    per_node: dict[str, int]  # branch ENIs EC2 holds per node
    leaks: tuple[Leak, ...]


class LeakTracker:
    """Remembers since when each unclaimed branch ENI has been unclaimed (no clock: `now` is given)."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._since: dict[str, float] = {}

    def audit(
        self,
        enis: Iterable[BranchEni],
        trunk_instances: Mapping[str, str],
        claimed: set[str],
        node_of_instance: Mapping[str, str],
        now: float,
    ) -> Audit:
        per_node: Counter[str] = Counter()
        unclaimed: dict[str, float] = {}
        leaks = []
        for eni in enis:
            instance = trunk_instances.get(eni.trunk_id, "")
            node = node_of_instance.get(instance, "")
            per_node[node] += 1
            if eni.eni_id in claimed:
                continue
            since = unclaimed[eni.eni_id] = self._since.get(eni.eni_id, now)
            if now - since > self.window:
                leaks.append(Leak(eni.eni_id, node, instance, now - since))
        self._since = unclaimed  # an ENI claimed again, or gone from EC2, starts afresh
        return Audit(dict(per_node), tuple(sorted(leaks, key=lambda leak: (leak.node, leak.eni_id))))
