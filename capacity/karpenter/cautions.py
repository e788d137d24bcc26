"""What may still go wrong for a pod a NodePool admits: typed cautions, and the live-storage refusal.

Two risks Karpenter's own plan does not see:

- **A type the VPC resource controller does not trunk.** Karpenter offers
  `vpc.amazonaws.com/pod-eni` only where its own copy of the resource controller's table says the
  type is trunking-compatible (aws/karpenter-provider-aws `pkg/providers/instancetype/types.go`
  `awsPodENI`, reading `Limits` of `zz_generated.vpclimits.go`), so it never launches a type its
  table gives no branch ENIs for a pod that requests one (`resources.Fits` in `CanAdd`). What
  remains is the two tables disagreeing: a type Karpenter's table (compiled into its release) trunks
  and the resource controller's (aws/amazon-vpc-resource-controller-k8s `pkg/aws/vpc/limits.go`,
  `IsTrunkingCompatible`, compiled into the controller the cluster runs) does not. Karpenter may
  launch one; the resource controller never attaches a trunk ENI, the node never advertises
  pod-eni, the NodeClaim stays uninitialised (kubernetes-sigs/karpenter
  `pkg/controllers/nodeclaim/lifecycle/initialization.go` `RequestedResourcesRegistered`) and the pod
  waits. So the types named are those among the ones Karpenter would launch for the pod (it fits
  them by Karpenter's numbers) that fitguard's resource-controller table does not trunk.
- **Live nodes below the estimate** (live.py): a type whose live nodes offer less ephemeral-storage
  than the pod needs, though Karpenter's estimate fits it.

When every type a NodePool would launch for the pod is short on its live nodes and each of those
readings comes from nodes launched under the EC2NodeClass as it is, the NodePool refuses the pod
(`live_refusal`); otherwise the short types are a caution: admitted, with a warning.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capacity.instances import lookup
from capacity.karpenter.fit import Change, NodePoolDecision, Reason, Shortfall
from capacity.karpenter.live import LiveStorage
from capacity.karpenter.published import PublishedNodePool
from capacity.place_messages import names
from capacity.quantity import format_quantity
from capacity.resources import EPHEMERAL_STORAGE, POD_ENI


class CautionKind(enum.Enum):
    NOT_TRUNKED = "types the VPC resource controller does not trunk"
    LIVE_STORAGE = "types whose live nodes offer less ephemeral-storage than Karpenter plans with"


@dataclass(frozen=True, slots=True)
class LiveShort:
    """A type Karpenter would launch for the pod whose live nodes offer less than the pod needs."""

    instance_type: str
    needed: int  # ephemeral-storage, milli-units, with the DaemonSets
    estimate: int  # Karpenter's allocatable
    live: LiveStorage


@dataclass(frozen=True, slots=True)
class Caution:
    nodepool: str
    kind: CautionKind
    instance_types: tuple[str, ...]
    shorts: tuple[LiveShort, ...] = ()  # LIVE_STORAGE only


def untrunked(types: Sequence[str]) -> tuple[str, ...]:
    """The types the VPC resource controller's table does not list as trunking-compatible (a type
    fitguard does not know is left out: Karpenter offers no template of it here)."""
    found = []
    for name in types:
        facts = lookup(name)
        if facts is not None and not facts.trunking:
            found.append(name)
    return tuple(found)


def live_shorts(
    record: PublishedNodePool, decision: NodePoolDecision, requests: Mapping[str, int]
) -> tuple[LiveShort, ...]:
    """Each type of `decision` (those Karpenter would launch for the pod) whose live nodes offer
    less ephemeral-storage than the pod and the DaemonSets need there."""
    offers = {o.name: o for o in record.rebuild().offers}
    shorts = []
    for name in decision.instance_types:
        live, offer = record.live.get(name), offers.get(name)
        if live is None or offer is None:
            continue
        needed = requests.get(EPHEMERAL_STORAGE, 0) + record.overhead_of(offer).get(EPHEMERAL_STORAGE, 0)
        if needed > live.allocatable:
            shorts.append(LiveShort(name, needed, offer.allocatable.get(EPHEMERAL_STORAGE, 0), live))
    return tuple(shorts)


def live_refusal(decision: NodePoolDecision, shorts: Sequence[LiveShort]) -> NodePoolDecision | None:
    """The NodePool refusing the pod, when every type it would launch for it is short on live nodes
    launched under the class as it is; None when one is not (then a caution, never a denial)."""
    if len(shorts) != len(decision.instance_types) or not all(s.live.current for s in shorts):
        return None
    needed = max(s.needed for s in shorts)
    best = max(s.live.allocatable for s in shorts)
    detail = (
        f"{EPHEMERAL_STORAGE}: needs {_amount(needed, 'up')} with the DaemonSets; Karpenter plans "
        + names(
            [
                f"{s.instance_type} with {_amount(s.estimate)}, its nodes offer {_amount(s.live.allocatable)}"
                for s in shorts
            ],
            3,
        )
    )
    reason = Reason(
        decision.nodepool,
        Shortfall.LIVE_EPHEMERAL_STORAGE,
        (Change.ROOT_VOLUME_SIZE,),
        detail,
        EPHEMERAL_STORAGE,
        needed,
        best,
    )
    return NodePoolDecision(decision.nodepool, False, (), (reason,))


def _amount(milli: int, rounding: str = "down") -> str:
    """Bytes as a person reads them: what a node offers rounded down, what a pod needs up."""
    return format_quantity(milli, EPHEMERAL_STORAGE, rounding)


def cautions(
    record: PublishedNodePool,
    decision: NodePoolDecision,
    requests: Mapping[str, int],
    shorts: Sequence[LiveShort],
) -> tuple[Caution, ...]:
    """The cautions of a NodePool that takes the pod: types it may launch that never give the pod
    its branch ENI (when it requests one), and types whose live nodes are short."""
    found = []
    if requests.get(POD_ENI, 0) > 0:
        risky = untrunked(decision.instance_types)
        if risky:
            found.append(Caution(record.nodepool, CautionKind.NOT_TRUNKED, risky))
    if shorts:
        types = tuple(s.instance_type for s in shorts)
        found.append(Caution(record.nodepool, CautionKind.LIVE_STORAGE, types, tuple(shorts)))
    return tuple(found)
