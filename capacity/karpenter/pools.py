"""A pod no node group serves, judged against the Karpenter NodePools that might launch a node for it,
and the words of a denial that names each NodePool and the field to change.

A NodePool is judged only by the template the controller published for it (capacity/karpenter/
published.py), and only while that NodePool is Ready; a NodePool without one, or whose template or
the pod's requirements cannot be read, is not judged: the pod is then admitted unjudged, since
Karpenter might launch a node for it. NodePool limits and capacity shortages are transient and are
no part of the judgement (capacity/karpenter/fit.py).

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

from capacity.karpenter.fit import NodePoolDecision, Reason, judge
from capacity.karpenter.published import PublishedNodePool
from capacity.resources import POD_ENI


@dataclass(frozen=True, slots=True)
class PoolsVerdict:
    admitted: bool  # some NodePool would launch a node for it
    unjudged: tuple[str, ...]  # NodePools fitguard could not judge (no template, not Ready, unreadable)
    refused: tuple[NodePoolDecision, ...]  # the others, each with its reasons


def judge_pools(
    names: Iterable[str],
    published: Mapping[str, PublishedNodePool],
    spec: Mapping[str, Any],
    requests: Mapping[str, int],
) -> PoolsVerdict:
    """Each NodePool of `names` by its published template (`published`: by NodePool name); the
    first that takes the pod admits it."""
    unjudged, refused = [], []
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
        if decision.fits and beyond_model:
            unjudged.append(name)
        elif decision.fits:
            return PoolsVerdict(True, (), ())
        else:
            refused.append(decision)
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
