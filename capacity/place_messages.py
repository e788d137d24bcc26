"""The words of a verdict that judged live nodes: a pinned pod's denial, and the line every denial
ends with that names the whole set judged, so a person can see that nothing was left out."""

from __future__ import annotations

from collections.abc import Sequence

from capacity.fit import PodNeeds, Reason
from capacity.placement import NodeVerdict
from capacity.quantity import format_capacity, format_quantity, format_request

MAX_NAMES = 12  # beyond this many a list of names stops being read


def names(items: Sequence[str], limit: int = MAX_NAMES) -> str:
    """`a, b, c` or `a, b, ... and 7 more`."""
    shown = ", ".join(items[:limit])
    rest = len(items) - limit
    return f"{shown} and {rest} more" if rest > 0 else shown


def explain_node(verdict: NodeVerdict, needs: PodNeeds) -> str:
    """One line per node: each reason and what a person can do about it."""
    return f"node {verdict.node}: " + "; ".join(_explain(reason, needs) for reason in verdict.reasons)


def _explain(reason: Reason, needs: PodNeeds) -> str:
    if reason.taint is not None:
        t = reason.taint
        value = f"={t.value}" if t.value else ""
        return f"{reason.message}: add a toleration for {t.key}{value}:{t.effect}"
    if not reason.resource:
        return f"{reason.message}: its labels do not match the pod's node selector or affinity"
    if reason.resource == "pods":
        return f"{reason.message}: it allows {format_quantity(reason.allocatable)} pods"
    name = reason.resource
    wanted = format_request(needs.requests.get(name, reason.requested), name)
    have = format_capacity(reason.allocatable, name)
    return f"{reason.message}: requests {wanted}, the node has {have} allocatable: request less"


def pinned_denial(judged: Sequence[NodeVerdict], needs: PodNeeds, subject: str = "pod") -> str:
    """A pod tied to named nodes, none of which can ever run it."""
    lines = [
        f"{subject} does not fit the node it is bound to"
        if len(judged) == 1
        else f"{subject} does not fit any of the {len(judged)} nodes it is bound to"
    ]
    lines += [explain_node(v, needs) for v in judged[:MAX_NAMES]]
    if len(judged) > MAX_NAMES:
        lines.append(f"and {len(judged) - MAX_NAMES} more nodes")
    return "\n".join(lines)


def judged_line(groups: Sequence[str], nodes: int, node_pools: int = 0) -> str:
    """What a denial judged: every node group by name, the live nodes counted, the NodePools."""
    group_part = f"{counted(len(groups), 'node group')} ({names(groups)})" if groups else "no node groups"
    pools = counted(node_pools, "Karpenter NodePool") if node_pools else "no Karpenter NodePools"
    return f"judged every place it could run: {group_part}, {counted(nodes, 'live node')}, {pools}"


def counted(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
