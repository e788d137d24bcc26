"""Headroom, after the demand is placed: grow a group whose truly free resource is below its rule."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from capacity.packing import Bin
from capacity.plan_groups import PlanGroup
from capacity.plan_grow import Grown
from capacity.plan_types import Headroom, HeadroomLine, NodeFree
from capacity.quantity import format_quantity


def keep_headroom(
    *,
    rules: Sequence[Headroom],
    groups: Mapping[str, PlanGroup],
    node_bins: Sequence[Bin],
    way_bins: Sequence[Bin],
    grown: Grown,
    pos: Mapping[str, int],
    node_by_name: Mapping[str, NodeFree],
) -> list[HeadroomLine]:
    """Grows groups whose truly free `resource` (after the demand is placed, nodes on their way
    included) is below the rule's amount; one line per rule says what it found and did."""
    lines: list[HeadroomLine] = []
    for rule in rules:
        g = groups.get(rule.group)
        line = HeadroomLine(rule.group, rule.resource, format_quantity(rule.amount, rule.resource))
        if g is None:
            lines.append(dataclasses.replace(line, reason="no such scalable node group"))
            continue
        i = pos[rule.resource]
        free = sum(max(b.free[i], 0) for b in node_bins if node_by_name[b.target].node_group == rule.group)
        free += sum(max(b.free[i], 0) * b.count for b in way_bins if b.target == rule.group)
        already, bins, pods = grown.get(rule.group, (0, [], []))
        free += sum(max(b.free[i], 0) * b.count for b in bins)
        line = dataclasses.replace(line, free=format_quantity(free, rule.resource))
        short = rule.amount - free
        per_node = g.empty[i]
        if short <= 0:
            lines.append(dataclasses.replace(line, reason="enough is free"))
            continue
        if per_node <= 0:
            lines.append(
                dataclasses.replace(line, reason=f"a new node of {rule.group} offers no {rule.resource}")
            )
            continue
        if g.skip:
            reason = f"short by {format_quantity(short, rule.resource)}, {g.skip}"
            lines.append(dataclasses.replace(line, reason=reason))
            continue
        wanted = -(-short // per_node)
        allowed = min(wanted, g.limit - already)
        if allowed <= 0:
            reason = f"short by {format_quantity(short, rule.resource)}, {g.limit_reason}"
            lines.append(dataclasses.replace(line, reason=reason))
            continue
        bins = [*bins, Bin(rule.group, list(g.empty), allowed)]
        grown[rule.group] = (already + allowed, bins, pods)
        reason = (
            f"headroom: keep {line.want} {rule.resource} free in {rule.group}, "
            f"{line.free} is; {allowed} node(s) added"
        )
        lines.append(dataclasses.replace(line, added=allowed, reason=reason))
    return lines
