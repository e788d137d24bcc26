"""Would Karpenter launch a node of this NodePool for this pod? And if not, what to change.

Upstream: kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/nodeclaim.go` `CanAdd`
(taints, then `Compatible` with the well-known labels allowed undefined, then
`filterInstanceTypesByRequirements`: a type is kept when its requirements intersect, the pod's
requests plus the DaemonSet overhead fit its allocatable (`resources.Fits`: no allocatable below
zero, every request at most the allocatable) and minValues hold over the kept types),
`preferences.go` (each required term in turn; PreferNoSchedule taints are tolerated by relaxation,
so only NoSchedule and NoExecute taints decide), `pkg/utils/resources` `RequestsForPods` (a pod
requests one `pods`). NodePool limits and capacity shortages are transient and not judged here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from capacity.instances import known_types
from capacity.karpenter.facts import karpenter_facts
from capacity.karpenter.instance_labels import min_values_unmet
from capacity.karpenter.nodeclass import RAID0
from capacity.karpenter.requirements import Requirements, pod_alternatives
from capacity.karpenter.template import KarpenterTemplate, TypeOffer
from capacity.quantity import canonical_quantity
from capacity.resources import EPHEMERAL_STORAGE, POD_ENI, PODS, Resources
from capacity.taints import first_untolerated, parse_tolerations

Overhead = Callable[[TypeOffer], Mapping[str, int]]


class Shortfall(enum.Enum):
    TAINT = "taint not tolerated"
    REQUIREMENTS = "node selector or affinity incompatible with the NodePool"
    NO_INSTANCE_TYPE = "no allowed instance type matches the pod's requirements"
    MIN_VALUES = "minValues not met by the instance types that fit"
    EPHEMERAL_STORAGE = "no allowed instance type offers enough ephemeral-storage"
    # Karpenter's estimate fits, the NodePool's live nodes do not (live.py, cautions.py)
    LIVE_EPHEMERAL_STORAGE = "the NodePool's nodes offer less ephemeral-storage than Karpenter plans with"
    BRANCH_ENIS = "no allowed instance type offers enough branch ENIs"
    # the VPC resource controller manages no node labelled eks.amazonaws.com/compute-type=auto
    # (controllers/core/node_controller.go), and the EKS user guide says so (automode.py)
    AUTOMODE_NO_BRANCH_ENIS = "security groups for pods are not supported on EKS Auto Mode"
    RESOURCES = "no allowed instance type offers enough of a resource"


class Change(enum.Enum):
    """The field whose change would let the pod fit."""

    TOLERATE_TAINT = "pod spec.tolerations"
    POD_REQUIREMENTS = "pod spec.nodeSelector / spec.affinity"
    ROOT_VOLUME_SIZE = "EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    ROOT_VOLUME_FLAG = "EC2NodeClass spec.blockDeviceMappings[].rootVolume: true"
    INSTANCE_STORE_RAID0 = "EC2NodeClass spec.instanceStorePolicy: RAID0"
    AUTOMODE_EPHEMERAL_SIZE = "NodeClass spec.ephemeralStorage.size"
    INSTANCE_TYPE_REQUIREMENT = "NodePool spec.template.spec.requirements"


@dataclass(frozen=True, slots=True)
class Reason:
    nodepool: str
    shortfall: Shortfall
    changes: tuple[Change, ...]
    detail: str
    resource: str | None = None
    needed: int | None = None  # milli-units, requests plus DaemonSet overhead
    best_offered: int | None = None  # the most any allowed type offers


@dataclass(frozen=True, slots=True)
class NodePoolDecision:
    nodepool: str
    fits: bool
    instance_types: tuple[str, ...]  # the types a node could be launched as
    reasons: tuple[Reason, ...]


def fits(needed: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    """`resources.Fits`: a negative allocatable never fits; each request at most the allocatable."""
    if any(v < 0 for v in allocatable.values()):
        return False
    return all(v <= allocatable.get(k, 0) for k, v in needed.items())


def _needed(requests: Mapping[str, int], overhead: Mapping[str, int]) -> Resources:
    needed: Resources = {PODS: 1000, **requests}  # RequestsForPods: one pod
    for name, value in overhead.items():
        needed[name] = needed.get(name, 0) + value
    return needed


@dataclass(frozen=True, slots=True)
class _Ask:
    template: KarpenterTemplate
    requests: Mapping[str, int]
    overhead: Overhead

    def needed(self, offer: TypeOffer) -> Resources:
        return _needed(self.requests, self.overhead(offer))


def _ephemeral_changes(ask: _Ask, offers: list[TypeOffer]) -> tuple[Change, ...]:
    """RAID0 when some allowed NVMe type would then fit; rootVolume when a sized mapping is not
    the one pods write to; a larger root volume always."""
    template, options = ask.template, ask.template.nodeclass
    if options is None:
        return (Change.AUTOMODE_EPHEMERAL_SIZE,)
    changes = []
    if options.instance_store_policy != RAID0:
        raided = replace(options, instance_store_policy=RAID0)
        # a type without NVMe keeps its EBS volume under RAID0: it fits then only if it fits now
        if any(fits(ask.needed(o), template.allocatable_of(o.facts, raided)) for o in offers):
            changes.append(Change.INSTANCE_STORE_RAID0)
    marked = any(d.root_volume for d in options.block_devices)
    if not marked and any(d.volume_size_bytes for d in options.block_devices):
        changes.append(Change.ROOT_VOLUME_FLAG)
    changes.append(Change.ROOT_VOLUME_SIZE)
    return tuple(changes)


def _shortfall(ask: _Ask, offers: list[TypeOffer], resource: str) -> tuple[Shortfall, tuple[Change, ...]]:
    if resource == EPHEMERAL_STORAGE:
        return Shortfall.EPHEMERAL_STORAGE, _ephemeral_changes(ask, offers)
    if resource == POD_ENI:
        if ask.template.automode:  # no type of any requirement has one: nothing to change there
            return Shortfall.AUTOMODE_NO_BRANCH_ENIS, ()
        # the requirement is the field to change only when some type offers enough
        need = max(ask.needed(o)[POD_ENI] for o in offers)
        helps = bool(types_with_branch_enis(need, ask.template.branch_table))
        return Shortfall.BRANCH_ENIS, (Change.INSTANCE_TYPE_REQUIREMENT,) if helps else ()
    return Shortfall.RESOURCES, (Change.INSTANCE_TYPE_REQUIREMENT,)


def types_with_branch_enis(needed: int, branch_table: str) -> tuple[str, ...]:
    """Every known instance type Karpenter plans with at least `needed` (milli-units) branch ENIs."""
    found = []
    for name in known_types():
        facts = karpenter_facts(name, branch_table)
        if facts is not None and facts.branch_enis * 1000 >= needed:
            found.append(name)
    return tuple(found)


def _resource_reasons(ask: _Ask, offers: list[TypeOffer]) -> tuple[Reason, ...]:
    """Each resource no allowed type offers enough of, with the field to change."""
    name = ask.template.name
    reasons = []
    for resource in sorted({k for o in offers for k in ask.needed(o)}):
        if any(ask.needed(o)[resource] <= o.allocatable.get(resource, 0) for o in offers):
            continue
        need = max(ask.needed(o)[resource] for o in offers)
        best = max(o.allocatable.get(resource, 0) for o in offers)
        shortfall, changes = _shortfall(ask, offers, resource)
        wanted, offered = canonical_quantity(need, resource), canonical_quantity(best, resource)
        detail = f"{resource}: needs {wanted} with the DaemonSets, the allowed types offer at most {offered}"
        reasons.append(Reason(name, shortfall, changes, detail, resource, need, best))
    if not reasons:  # each resource fits some type, but no one type fits them all
        detail = "no single allowed instance type offers every requested resource at once"
        reasons.append(Reason(name, Shortfall.RESOURCES, (Change.INSTANCE_TYPE_REQUIREMENT,), detail))
    return tuple(reasons)


def _alternative(ask: _Ask, pod: Requirements) -> tuple[tuple[str, ...], tuple[Reason, ...]]:
    """The types one alternative of the pod's requirements could be launched as, or why none."""
    template = ask.template
    refused = template.nodepool.requirements.pod_compatible(pod)
    if refused is not None:
        detail = f"{refused.key}: {refused.refusal.value}"
        return (), (
            Reason(template.name, Shortfall.REQUIREMENTS, (Change.POD_REQUIREMENTS,), detail, refused.key),
        )
    merged = template.nodepool.requirements.add(pod)
    offers = [o for o in template.offers if not o.requirements.intersects(merged)]
    if not offers:
        changes = (Change.POD_REQUIREMENTS, Change.INSTANCE_TYPE_REQUIREMENT)
        detail = f"of {len(template.offers)} allowed instance types none matches the pod's requirements"
        return (), (Reason(template.name, Shortfall.NO_INSTANCE_TYPE, changes, detail),)
    fitting = [o for o in offers if fits(ask.needed(o), o.allocatable)]
    if not fitting:
        return (), _resource_reasons(ask, offers)
    unmet = min_values_unmet(merged, (o.requirements for o in fitting))
    if unmet:
        detail = ", ".join(f"{k}: {n} values" for k, n in sorted(unmet.items()))
        return (), (Reason(template.name, Shortfall.MIN_VALUES, (Change.INSTANCE_TYPE_REQUIREMENT,), detail),)
    return tuple(o.name for o in fitting), ()


def judge(
    template: KarpenterTemplate,
    pod_spec: Mapping[str, Any],
    requests: Mapping[str, int],
    daemon_overhead: Mapping[str, int] | Overhead | None = None,
) -> NodePoolDecision:
    """Whether some instance type of `template` takes a pod of `pod_spec` with `requests` (milli
    units, as capacity/requests.py gives them) beside the DaemonSet pods that would run there
    (`daemon_overhead`, fixed or per type); otherwise every reason, each naming the field to change."""
    if callable(daemon_overhead):
        overhead = daemon_overhead
    else:
        fixed = dict(daemon_overhead or {})
        overhead = lambda _offer: fixed  # noqa: E731
    tolerations = parse_tolerations(pod_spec.get("tolerations"), "spec.tolerations")
    taint = first_untolerated(template.taints, tolerations)
    if taint is not None:
        detail = f"{taint.key}={taint.value}:{taint.effect}"
        reason = Reason(template.name, Shortfall.TAINT, (Change.TOLERATE_TAINT,), detail)
        return NodePoolDecision(template.name, False, (), (reason,))
    ask = _Ask(template, requests, overhead)
    reasons: dict[Reason, None] = {}
    for alternative in pod_alternatives(pod_spec):
        types, why = _alternative(ask, alternative)
        if types:
            return NodePoolDecision(template.name, True, types, ())
        reasons.update(dict.fromkeys(why))
    return NodePoolDecision(template.name, False, (), tuple(reasons))
