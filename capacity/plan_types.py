"""The planner's vocabulary: its inputs (existing nodes' free capacity, headroom rules, options),
its outputs (scale-ups, pods no scale-up helps, the plan) and the reasons it gives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.demand import PodRef
from capacity.expander import LEAST_WASTE, Priorities
from capacity.quantity import parse_quantity
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, POD_ENI, Resources
from capacity.taints import Taint

MAX_SIZE_REACHED = "max node group size reached"  # cluster-autoscaler's MaxLimitReachedReason
BACKOFF = "in backoff after failed scale-up"  # cluster-autoscaler's BackoffReason
IN_PROGRESS = "scale-up in progress"
COOLDOWN = "in cooldown after a recent scale-up"
PER_SCALE_UP_REACHED = "max nodes per scale-up reached"
NOT_IN_PRIORITIES = "not in the priority expander's configuration"
NO_TEMPLATE = "no node template"
# cluster-autoscaler's --max-nodes-per-scaleup default
DEFAULT_MAX_NODES_PER_SCALE_UP = 1000
# the ASG's DefaultCooldown default (AWS Auto Scaling User Guide, "Scaling cooldowns")
DEFAULT_COOLDOWN = 300.0
# cluster-autoscaler's --max-node-provision-time default
DEFAULT_PROVISION_TIMEOUT = 900.0
HEADROOM_RESOURCES = {"pod-eni": POD_ENI, CPU: CPU, MEMORY: MEMORY, EPHEMERAL_STORAGE: EPHEMERAL_STORAGE}


@dataclass(frozen=True, slots=True)
class NodeFree:
    """An existing, schedulable node and what is truly free on it (milli-units, `pods` as slots)."""

    name: str
    node_group: str
    free: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class Headroom:
    """Keep at least `amount` (milli-units) of `resource` truly free in `group`."""

    group: str
    resource: str
    amount: int


def parse_headroom(text: str) -> list[Headroom]:
    """`GROUP:pod-eni=9` or `GROUP:pod-eni=9,cpu=4,memory=8Gi,ephemeral-storage=100Gi`."""
    group, sep, rest = text.partition(":")
    if not sep or not group or not rest:
        raise ValueError(f"headroom {text!r}: expected GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT]")
    rules = []
    for item in rest.split(","):
        name, eq, amount = item.strip().partition("=")
        if not eq or name not in HEADROOM_RESOURCES:
            names = ", ".join(HEADROOM_RESOURCES)
            raise ValueError(
                f"headroom {text!r}: {item!r} is not RESOURCE=AMOUNT with RESOURCE one of {names}"
            )
        resource = HEADROOM_RESOURCES[name]
        value = parse_quantity(amount, f"headroom.{name}")
        if value < 0:
            raise ValueError(f"headroom {text!r}: {name} must not be negative")
        rules.append(Headroom(group, resource, value))
    return rules


@dataclass(frozen=True)
class PlannerOptions:
    expanders: tuple[str, ...] = (LEAST_WASTE,)
    priorities: Priorities = field(default_factory=dict)
    max_nodes_per_scale_up: int = DEFAULT_MAX_NODES_PER_SCALE_UP
    cooldown: float = DEFAULT_COOLDOWN
    provision_timeout: float = DEFAULT_PROVISION_TIMEOUT
    headroom: tuple[Headroom, ...] = ()


@dataclass(frozen=True)
class ScaleUp:
    node_group: str
    from_size: int
    to_size: int
    max_size: int
    pods: tuple[PodRef, ...] = ()
    reasons: tuple[str, ...] = ()  # "pods", or a headroom line
    tie_break: str = ""  # the tie between groups its choice broke (capacity.expander.Choice.explain)

    def info(self) -> str:
        """cluster-autoscaler's ScaleUpInfo as its events print it: `{ng-batch 0->1 (max: 10)}`."""
        return f"{{{self.node_group} {self.from_size}->{self.to_size} (max: {self.max_size})}}"

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeGroup": self.node_group,
            "from": self.from_size,
            "to": self.to_size,
            "maxSize": self.max_size,
            "pods": [p.key for p in self.pods],
            "reasons": list(self.reasons),
            **({"tieBreak": self.tie_break} if self.tie_break else {}),
        }


@dataclass(frozen=True)
class NotHelped:
    """Pods of one shape no scale-up helps, with each group's reasons."""

    pods: tuple[PodRef, ...]
    reasons: Mapping[str, tuple[str, ...]]

    def message(self) -> str:
        counts: dict[str, int] = {}
        for reasons in self.reasons.values():
            for reason in reasons:
                counts[reason] = counts.get(reason, 0) + 1
        if not counts:
            return "pod didn't trigger scale-up: no node group can be scaled"
        parts = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
        return "pod didn't trigger scale-up: " + ", ".join(f"{n} {reason}" for reason, n in parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "pods": [p.key for p in self.pods],
            "message": self.message(),
            "reasons": {group: list(r) for group, r in sorted(self.reasons.items())},
        }


@dataclass(frozen=True)
class HeadroomLine:
    """What one headroom rule found and did: `free` is absent when the group is not scalable."""

    node_group: str
    resource: str
    want: str  # the rule's amount, as a quantity
    added: int = 0  # nodes added for it
    free: str | None = None  # truly free after the demand is placed, as a quantity
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        free = {"free": self.free} if self.free is not None else {}
        return {
            "nodeGroup": self.node_group,
            "resource": self.resource,
            "want": self.want,
            "added": self.added,
            **free,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Plan:
    scale_ups: tuple[ScaleUp, ...] = ()
    on_existing: Mapping[str, tuple[PodRef, ...]] = field(default_factory=dict)  # node -> pods
    on_the_way: Mapping[str, tuple[PodRef, ...]] = field(default_factory=dict)  # group -> pods
    not_helped: tuple[NotHelped, ...] = ()
    skipped_groups: Mapping[str, str] = field(default_factory=dict)  # group -> why it cannot grow now
    headroom: tuple[HeadroomLine, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "scaleUps": [s.to_json() for s in self.scale_ups],
            "onExistingNodes": {n: [p.key for p in pods] for n, pods in sorted(self.on_existing.items())},
            "onNodesOnTheirWay": {g: [p.key for p in pods] for g, pods in sorted(self.on_the_way.items())},
            "notTriggerScaleUp": [n.to_json() for n in self.not_helped],
            "skippedGroups": dict(sorted(self.skipped_groups.items())),
            "headroom": [h.to_json() for h in self.headroom],
        }
