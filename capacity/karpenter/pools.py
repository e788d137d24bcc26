"""A pod no node group serves, judged against the Karpenter NodePools that might launch a node for it,
and the words of a denial that names each NodePool and the field to change.

A NodePool is judged only by the template the controller published for it (capacity/karpenter/
published.py), and only while that NodePool is Ready; a NodePool without one, or whose template or
the pod's requirements cannot be read, is not judged: the pod is then admitted unjudged, since
Karpenter might launch a node for it. NodePool limits and capacity shortages are transient and are
no part of the judgement (capacity/karpenter/fit.py).

Every NodePool is judged (Karpenter may launch a node of any that takes the pod, by weight), so
the cautions of each one that takes it are said (capacity/karpenter/cautions.py): types the VPC
resource controller does not trunk for a pod that needs a branch ENI, and types whose live nodes
offer less ephemeral-storage than Karpenter plans with. A NodePool all of whose types for the pod
are short on nodes launched under the EC2NodeClass as it is refuses the pod.

An EKS Auto Mode NodePool is not judged on a branch ENI: security groups for pods are unsupported
there by the guide's Considerations and the VPC resource controller's node reconciler, but the
guide's newer `auto-sgp` page (Kubernetes 1.36 and later, through Dynamic Resource Allocation) gives
pods branch ENIs there by a mechanism fitguard does not model (docs/upstream.md). Such a NodePool
is judged on everything else; if the pod would fit but for its branch ENI, it is unjudged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capacity.karpenter.cautions import Caution, CautionKind, cautions, live_refusal, live_shorts
from capacity.karpenter.fit import NodePoolDecision, Reason, judge
from capacity.karpenter.published import PublishedNodePool
from capacity.place_messages import names
from capacity.quantity import format_quantity
from capacity.resources import EPHEMERAL_STORAGE, POD_ENI

# types named in one warning, the rest counted, so a warning stays whole (256 characters)
MAX_TYPES = 3
MAX_SHORT_TYPES = 2  # each with its two numbers


@dataclass(frozen=True, slots=True)
class PoolsVerdict:
    admitted: bool  # some NodePool would launch a node for it
    unjudged: tuple[str, ...]  # NodePools fitguard could not judge (no template, not Ready, unreadable)
    refused: tuple[NodePoolDecision, ...]  # the others, each with its reasons
    cautions: tuple[Caution, ...] = ()  # of the NodePools that take it


def judge_pools(
    names: Iterable[str],
    published: Mapping[str, PublishedNodePool],
    spec: Mapping[str, Any],
    requests: Mapping[str, int],
) -> PoolsVerdict:
    """Each NodePool of `names` by its published template (`published`: by NodePool name); the pod
    is admitted when one takes it, with the cautions of every one that does."""
    unjudged: list[str] = []
    refused: list[NodePoolDecision] = []
    taking: list[str] = []
    found: list[Caution] = []
    for name in sorted(set(names)):
        record = published.get(name)
        if record is None or not record.ready:
            unjudged.append(name)
            continue
        beyond_model = record.automode and requests.get(POD_ENI, 0) > 0
        asked = {k: v for k, v in requests.items() if k != POD_ENI} if beyond_model else requests
        try:
            decision = judge(record.rebuild(), spec, asked, record.overhead_of)
        except (TypeError, ValueError):  # a template or requirement that cannot be read: never a denial
            unjudged.append(name)
            continue
        if not decision.fits:
            refused.append(decision)
            continue
        if beyond_model:  # it would fit but for its branch ENI, which fitguard does not model there
            unjudged.append(name)
            continue
        shorts = live_shorts(record, decision, requests)
        refusal = live_refusal(decision, shorts)
        if refusal is not None:
            refused.append(refusal)
            continue
        taking.append(name)
        found.extend(cautions(record, decision, requests, shorts))
    if taking:
        return PoolsVerdict(True, (), (), tuple(found))
    return PoolsVerdict(False, tuple(unjudged), tuple(refused))


def reason_words(reason: Reason) -> str:
    """`ephemeral-storage: needs 18Gi with the DaemonSets, the allowed types offer at most 17Gi:
    change EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize`."""
    head = f"{reason.shortfall.value} ({reason.detail})"
    if not reason.changes:
        return head
    return f"{head}: change {' or '.join(c.value for c in reason.changes)}"


def pool_lines(refused: Sequence[NodePoolDecision]) -> list[str]:
    """One line per NodePool refused, each reason with the field to change."""
    return [f"NodePool {d.nodepool}: " + "; ".join(reason_words(r) for r in d.reasons) for d in refused]


def caution_lines(found: Sequence[Caution]) -> list[str]:
    """One warning per caution, naming the NodePool and at most MAX_TYPES types (the rest counted)."""
    return [_caution_words(c) for c in found]


def _caution_words(caution: Caution) -> str:
    pool = f"NodePool {caution.nodepool}"
    if caution.kind is CautionKind.NOT_TRUNKED:
        return (
            f"{pool} may launch {names(list(caution.instance_types), MAX_TYPES)} for this pod: Karpenter "
            "counts their branch ENIs, the VPC resource controller does not trunk them (the pod would wait); "
            "exclude them in spec.template.spec.requirements"
        )
    shown = [
        f"{s.instance_type} (Karpenter plans {_down(s.estimate)}, "
        f"{'its nodes offer' if s.live.current else 'nodes of an earlier EC2NodeClass offer'} "
        f"{_down(s.live.allocatable)})"
        for s in caution.shorts
    ]
    needed = format_quantity(max(s.needed for s in caution.shorts), EPHEMERAL_STORAGE, "up")
    return (
        f"{pool} may launch {names(shown, MAX_SHORT_TYPES)} for this pod, which needs {needed} of "
        f"{EPHEMERAL_STORAGE} there: it would not fit"
    )


def _down(milli: int) -> str:
    return format_quantity(milli, EPHEMERAL_STORAGE, "down")
