"""The requirements (labels) Karpenter gives each instance type, and which types a set of
requirements allows.

Upstream: aws/karpenter-provider-aws `pkg/providers/instancetype/types.go` `computeRequirements`,
`getOS`, `getArchitecture`; kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/
nodeclaim.go` `filterInstanceTypesByRequirements` (`compatible`: the type's requirements intersect
the NodeClaim's) and `pkg/cloudprovider/types.go` `SatisfiesMinValues`.

Not modelled, so never a reason to exclude a type: zones, region and capacity type (they belong to
offerings, which fitguard does not know), and, for a type the published reference does not list,
the labels only EC2 can say (processor, bandwidths, GPU names): those keys are left unconstrained.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from capacity.karpenter.amifamily import AmiFamily
from capacity.karpenter.facts import NEWEST_BRANCH_TABLE, KarpenterFacts, karpenter_facts
from capacity.karpenter.labels import ARCH, AWS, INSTANCE_TYPE, OS, WINDOWS_BUILD
from capacity.karpenter.requirement import Operator, Requirement
from capacity.karpenter.requirements import Requirements

_SCHEME = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")  # instanceTypeScheme
_WINDOWS_BUILDS = {
    AmiFamily.WINDOWS2019: "10.0.17763",
    AmiFamily.WINDOWS2022: "10.0.20348",
    AmiFamily.WINDOWS2025: "10.0.26100",
}
# keys computeRequirements sets from EC2 facts the reference carries for fitguard
STORED = tuple(
    f"{AWS}/{suffix}"
    for suffix in (
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-encryption-in-transit-supported",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
    )
)
_NONE_RESERVED = tuple(
    f"{AWS}/{s}"
    for s in ("capacity-reservation-id", "capacity-reservation-type", "capacity-reservation-interruptible")
)


def _one(key: str, value: str | None) -> Requirement:
    """A label with one value, or DoesNotExist when the type has none."""
    if value is None:
        return Requirement.of(key, Operator.DOES_NOT_EXIST)
    return Requirement.of(key, Operator.IN, (value,))


def _os(facts: KarpenterFacts, family: AmiFamily) -> tuple[Requirement, Requirement]:
    """getOS: Windows only on amd64 (else no OS at all); the Windows build for Windows families."""
    if not family.is_windows:
        return Requirement.of(OS, Operator.IN, ("linux",)), _one(WINDOWS_BUILD, None)
    systems = ("windows",) if facts.architecture == "amd64" else ()
    return Requirement.of(OS, Operator.IN, systems), _one(WINDOWS_BUILD, _WINDOWS_BUILDS[family])


def _from_name(name: str) -> list[Requirement]:
    scheme = _SCHEME.match(name)
    parts = name.split(".")
    family_part = parts[0]
    return [
        _one(f"{AWS}/instance-category", scheme[1] if scheme else None),
        _one(f"{AWS}/instance-generation", scheme[3] if scheme else None),
        _one(f"{AWS}/instance-family", family_part if len(parts) == 2 else None),
        _one(f"{AWS}/instance-size", parts[1] if len(parts) == 2 else None),
        _one(f"{AWS}/instance-capability-flex", "true" if "-flex" in family_part else "false"),
    ]


def instance_requirements(facts: KarpenterFacts, family: AmiFamily = AmiFamily.AL2023) -> Requirements:
    """`computeRequirements` for `facts` under an EC2NodeClass of `family` (offerings left out)."""
    os_requirement, build = _os(facts, family)
    found: list[Requirement] = [
        Requirement.of(INSTANCE_TYPE, Operator.IN, (facts.name,)),
        Requirement.of(ARCH, Operator.IN, (facts.architecture,)),
        os_requirement,
        build,
        _one(f"{AWS}/instance-cpu", str(facts.vcpu)),
        _one(f"{AWS}/instance-memory", str(facts.memory_mib)),
        _one(f"{AWS}/instance-local-nvme", None if facts.local_nvme_gb is None else str(facts.local_nvme_gb)),
        Requirement.of(f"{AWS}/instance-tenancy", Operator.IN, ("default", "dedicated")),
        *(_one(key, None) for key in _NONE_RESERVED),
        *_from_name(facts.name),
    ]
    if facts.hypervisor is not None:
        found.append(_one(f"{AWS}/instance-hypervisor", facts.hypervisor))
    if facts.labels is not None:
        found.extend(_one(key, facts.labels.get(key)) for key in STORED)
    return Requirements(found)


@dataclass(frozen=True, slots=True)
class Allowed:
    """The instance types a NodePool's requirements allow, and minValues they leave unmet."""

    types: tuple[KarpenterFacts, ...]
    requirements: tuple[Requirements, ...]  # each allowed type's own, in the same order
    min_values_unmet: Mapping[str, int]  # key -> distinct values the allowed types offer
    unknown: tuple[str, ...]  # names asked for that fitguard has no facts for


def min_values_unmet(requirements: Requirements, allowed: Iterable[Requirements]) -> dict[str, int]:
    """`SatisfiesMinValues` over every allowed type: each key with minValues needs that many
    distinct values among them; the keys short of it, with the count they reach."""
    wanted = {key: r.min_values for key, r in requirements.items() if r.min_values is not None}
    seen: dict[str, set[str]] = {key: set() for key in wanted}
    for type_requirements in allowed:
        for key in wanted:
            requirement = type_requirements.get(key)
            if requirement is not None and not requirement.complement:
                seen[key] |= requirement.values
    return {key: len(seen[key]) for key, need in wanted.items() if len(seen[key]) < need}


def allowed_types(
    requirements: Requirements,
    family: AmiFamily,
    names: Iterable[str],
    branch_table: str = NEWEST_BRANCH_TABLE,
) -> Allowed:
    """The types among `names` whose requirements intersect `requirements` (`compatible`)."""
    kept: list[tuple[KarpenterFacts, Requirements]] = []
    unknown = []
    for name in names:
        facts = karpenter_facts(name, branch_table)
        if facts is None:
            unknown.append(name)
            continue
        type_requirements = instance_requirements(facts, family)
        if not type_requirements.intersects(requirements):
            kept.append((facts, type_requirements))
    unmet = min_values_unmet(requirements, (r for _, r in kept))
    return Allowed(tuple(f for f, _ in kept), tuple(r for _, r in kept), unmet, tuple(unknown))
