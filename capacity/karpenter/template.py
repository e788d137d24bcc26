"""A NodePool and its node class, as the nodes Karpenter could launch for it: per instance type the
NodePool's requirements allow, the allocatable Karpenter computes and the labels the node would
carry; the NodePool's taints (startup taints not counted).

Upstream: kubernetes-sigs/karpenter `nodeclaimtemplate.go` `NewNodeClaimTemplate`, `nodeclaim.go`
`filterInstanceTypesByRequirements`; aws/karpenter-provider-aws `instancetype/types.go`
`NewInstanceType` (see allocatable.py, instance_labels.py); EKS Auto Mode in automode.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capacity.instances import known_types
from capacity.karpenter.allocatable import instance_capacity
from capacity.karpenter.amifamily import AmiFamily
from capacity.karpenter.automode import automode_capacity, automode_class_from_object, is_automode
from capacity.karpenter.discovered import with_discovered_memory
from capacity.karpenter.facts import NEWEST_BRANCH_TABLE, KarpenterFacts
from capacity.karpenter.instance_labels import allowed_types
from capacity.karpenter.nodeclass import KarpenterOptions, NodeClassOptions, nodeclass_from_object
from capacity.karpenter.nodepool import NodePoolTemplate, nodepool_template
from capacity.karpenter.requirements import Requirements
from capacity.resources import Resources
from capacity.taints import Taint


@dataclass(frozen=True, slots=True)
class TypeOffer:
    """One instance type a NodePool may launch."""

    facts: KarpenterFacts
    allocatable: Mapping[str, int]
    requirements: Requirements  # the type's own (computeRequirements)
    labels: Mapping[str, str]  # the NodePool's labels and the type's single-valued ones

    @property
    def name(self) -> str:
        return self.facts.name


@dataclass(frozen=True, slots=True)
class KarpenterTemplate:
    nodepool: NodePoolTemplate
    automode: bool
    family: AmiFamily
    nodeclass: NodeClassOptions | None  # None for Auto Mode
    karpenter: KarpenterOptions
    discovered: Mapping[str, int]  # instance type -> a joined node's memory (discovered.py)
    branch_table: str  # the Karpenter commit whose branch-ENI table the offers use
    offers: tuple[TypeOffer, ...]
    min_values_unmet: Mapping[str, int]
    unknown_types: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.nodepool.name

    @property
    def taints(self) -> tuple[Taint, ...]:
        return self.nodepool.taints

    def allocatable_of(self, facts: KarpenterFacts, nodeclass: NodeClassOptions | None = None) -> Resources:
        """The allocatable of `facts` under this template's class, or under `nodeclass` instead (what
        a change to the EC2NodeClass would give)."""
        memory = self.discovered.get(facts.name)
        return _allocatable(facts, nodeclass or self.nodeclass, self.karpenter, memory)


def _allocatable(
    facts: KarpenterFacts, nodeclass: NodeClassOptions | None, karpenter: KarpenterOptions, memory: int | None
) -> Resources:
    if nodeclass is None:
        raise ValueError("an Auto Mode template has no EC2NodeClass to change")
    return with_discovered_memory(instance_capacity(facts, nodeclass, karpenter), memory).allocatable()


def _labels(requirements: Requirements) -> dict[str, str]:
    return {
        k: next(iter(r.values)) for k, r in requirements.items() if not r.complement and len(r.values) == 1
    }


def build_template(
    nodepool: Mapping[str, Any],
    nodeclass: Mapping[str, Any],
    *,
    karpenter: KarpenterOptions | None = None,
    names: Iterable[str] | None = None,
    branch_table: str = NEWEST_BRANCH_TABLE,
    discovered: Mapping[str, int] | None = None,
) -> KarpenterTemplate:
    """The template of `nodepool` with its class `nodeclass` (an EC2NodeClass, or an Auto Mode
    NodeClass when the NodePool's nodeClassRef names one), over `names` (every known type by
    default). `discovered`: per type, the memory of a joined node (`discovered_memory`), which
    replaces the estimate. Raises NodeClassError / RequirementError naming a field that cannot be read."""
    karpenter = karpenter or KarpenterOptions()
    discovered = dict(discovered or {})
    pool = nodepool_template(nodepool)
    ref = ((((nodepool.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef")) or {}
    automode = is_automode(ref)
    options = None if automode else nodeclass_from_object(nodeclass, karpenter.node_class_cel)
    family = AmiFamily.AL2023 if options is None else options.family
    allowed = allowed_types(pool.requirements, family, names or known_types(), branch_table)
    auto_class = automode_class_from_object(nodeclass) if automode else None
    offers = []
    for facts, type_requirements in zip(allowed.types, allowed.requirements, strict=True):
        if auto_class is not None:
            auto = automode_capacity(facts, auto_class, karpenter)
            allocatable = with_discovered_memory(auto, discovered.get(facts.name)).allocatable()
        else:
            allocatable = _allocatable(facts, options, karpenter, discovered.get(facts.name))
        offers.append(
            TypeOffer(facts, allocatable, type_requirements, {**_labels(type_requirements), **pool.labels})
        )
    return KarpenterTemplate(
        pool,
        automode,
        family,
        options,
        karpenter,
        discovered,
        branch_table,
        tuple(offers),
        allowed.min_values_unmet,
        allowed.unknown,
    )
