"""The scale-up plan: first-fit decreasing bin packing of the demand onto what exists, then onto
what is coming, then onto new nodes chosen group by group by the expander; and headroom.

Supply, in the order it is used:
1. existing nodes' true free capacity (allocatable - requests of their pods - branch ENIs held by
   finished pods: the books), given as `NodeFree`;
2. nodes on their way: a group whose desired size is above its ready nodes gets that many empty
   nodes of its actual view, unless its last scale-up is older than `provision_timeout` (then the
   nodes are not coming and the group is in backoff, as cluster-autoscaler's max-node-provision-time);
3. new nodes of each group's actual view less its DaemonSet overhead, grown one group at a time:
   every group packs all remaining pods (an option), the expander picks one, its pods are removed,
   again until no group helps. A group grows at most once per plan.

Limits: max size, `max_nodes_per_scale_up`, a per-group cooldown after its last scale-up, one
unfinished scale-up per group. Every pod not helped gets cluster-autoscaler's NotTriggerScaleUp
message: the reasons per group, counted (`pod didn't trigger scale-up: 1 max node group size
reached, 2 Insufficient ephemeral-storage`). Pure and clock-free: the caller passes `now`.

Bins with the same free capacity are one class with a count, and identical pods are one shape, so
10,000 pods over 500 groups pack in a fraction of a second.

This module runs the phases in order; each lives in its own module: the vocabulary in
capacity/plan_types.py, the groups' facts in capacity/plan_groups.py, new nodes in
capacity/plan_grow.py, headroom in capacity/plan_headroom.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from capacity.demand import PodRef, PodShape, is_scalable
from capacity.packing import Bin, Shape, first_fit, nonzero_indices
from capacity.plan_groups import PlanGroup, build_groups, fits_group, sort_decreasing
from capacity.plan_grow import Grown, grow
from capacity.plan_headroom import keep_headroom
from capacity.plan_types import (
    BACKOFF,
    COOLDOWN,
    IN_PROGRESS,
    MAX_SIZE_REACHED,
    Headroom,
    HeadroomLine,
    NodeFree,
    NotHelped,
    Plan,
    PlannerOptions,
    ScaleUp,
    parse_headroom,
)
from capacity.resources import CPU, MEMORY, PODS
from capacity.taints import first_untolerated
from capacity.template import NodeGroupTemplate

# the planner's public names, wherever they are defined
__all__ = [
    "BACKOFF",
    "COOLDOWN",
    "IN_PROGRESS",
    "MAX_SIZE_REACHED",
    "Headroom",
    "HeadroomLine",
    "NodeFree",
    "NotHelped",
    "Plan",
    "PlannerOptions",
    "ScaleUp",
    "parse_headroom",
    "plan",
]


def plan(
    shapes: Sequence[PodShape],
    templates: Iterable[NodeGroupTemplate],
    nodes: Iterable[NodeFree] = (),
    *,
    now: float,
    last_scale_up: Mapping[str, float] | None = None,
    config: PlannerOptions | None = None,
) -> Plan:
    """The plan for this cycle. `last_scale_up`: when each group was last grown (epoch seconds)."""
    config = config or PlannerOptions()
    groups_all = sorted((t for t in templates if is_scalable(t)), key=lambda t: t.name)
    nodes = list(nodes)
    resources = _resource_index(shapes, config.headroom)
    pos = {name: i for i, name in enumerate(resources)}

    def vector(values: Mapping[str, int]) -> list[int]:
        return [values.get(name, 0) for name in resources]

    work = _work(shapes, resources)
    sort_decreasing(work, groups_all, resources)
    groups, skipped = build_groups(
        groups_all, work, vector, now=now, last_scale_up=last_scale_up or {}, config=config
    )

    # 1. existing nodes' true free capacity
    node_bins = [Bin(n.name, vector({**n.free, PODS: n.free.get(PODS, 0)})) for n in nodes]
    node_by_name = {n.name: n for n in nodes}
    on_existing = _place_on_existing(work, node_bins, node_by_name)

    # 2. nodes on their way
    way_bins = [Bin(g.template.name, list(g.empty), g.upcoming) for g in groups.values() if g.upcoming > 0]
    on_the_way = _place_on_the_way(work, way_bins, groups)

    # 3. new nodes, one group at a time
    grown, limited, choices = grow(work, groups, config, pos)

    headroom_lines = keep_headroom(
        rules=config.headroom,
        groups=groups,
        node_bins=node_bins,
        way_bins=way_bins,
        grown=grown,
        pos=pos,
        node_by_name=node_by_name,
    )
    return Plan(
        scale_ups=_scale_ups(grown, groups, headroom_lines, choices),
        on_existing={k: tuple(v) for k, v in on_existing.items()},
        on_the_way={k: tuple(v) for k, v in on_the_way.items()},
        not_helped=_not_helped(work, groups, grown, limited),
        skipped_groups=skipped,
        headroom=tuple(headroom_lines),
    )


def _resource_index(shapes: Sequence[PodShape], headroom: Sequence[Headroom]) -> list[str]:
    names = {PODS, CPU, MEMORY}
    for shape in shapes:
        names.update(name for name, _ in shape.needs.checked)
    names.update(h.resource for h in headroom)
    return sorted(names)


def _work(shapes: Sequence[PodShape], resources: Sequence[str]) -> list[Shape]:
    """Each pod shape with its request vector over `resources` (a pod takes one `pods` slot)."""
    work: list[Shape] = []
    for i, shape in enumerate(shapes):
        req = {name: shape.needs.requests.get(name, 0) for name in resources}
        req[PODS] = 1000
        work.append(Shape(i, shape, tuple(req[name] for name in resources)))
    return work


def _place_on_existing(
    work: Sequence[Shape], node_bins: list[Bin], node_by_name: Mapping[str, NodeFree]
) -> dict[str, list[PodRef]]:
    """Phase 1: pods first-fit onto existing nodes whose labels and taints they accept."""
    on_existing: dict[str, list[PodRef]] = {}
    for s in work:
        needs = s.shape.needs
        cache: dict[str, bool] = {}

        def accepts(target: str, needs: Any = needs, cache: dict[str, bool] = cache) -> bool:
            ok = cache.get(target)
            if ok is None:
                node = node_by_name[target]
                ok = cache[target] = needs.node_match(node.labels) and (
                    first_untolerated(node.taints, needs.tolerations) is None
                )
            return ok

        _first_fit_into(on_existing, node_bins, s, accepts)
    return on_existing


def _place_on_the_way(
    work: Sequence[Shape], way_bins: list[Bin], groups: Mapping[str, PlanGroup]
) -> dict[str, list[PodRef]]:
    """Phase 2: the pods left first-fit onto empty nodes of groups already growing."""
    on_the_way: dict[str, list[PodRef]] = {}
    for s in work:
        if s.remaining:
            _first_fit_into(on_the_way, way_bins, s, fits_group(groups, s))
    return on_the_way


def _first_fit_into(
    placed_pods: dict[str, list[PodRef]], bins: list[Bin], s: Shape, accepts: Callable[[str], bool]
) -> None:
    """The shape's remaining pods first-fit onto `bins` it `accepts`, recorded by bin target."""
    _, placed = first_fit(bins, s.req, nonzero_indices(s.req), s.remaining, accepts)
    for target, n in placed:
        placed_pods.setdefault(target, []).extend(s.take(n))


def _scale_ups(
    grown: Grown,
    groups: Mapping[str, PlanGroup],
    headroom_lines: Sequence[HeadroomLine],
    choices: Mapping[str, str],
) -> tuple[ScaleUp, ...]:
    """One scale-up per grown group, by name, with its pods, the headroom rules that grew it and
    the tie its choice broke, if any."""
    scale_ups = []
    for name, (added, _, pods) in sorted(grown.items()):
        t = groups[name].template
        reasons = (["pods"] if pods else []) + [
            h.reason for h in headroom_lines if h.node_group == name and h.added
        ]
        scale_ups.append(
            ScaleUp(
                name,
                t.desired_size,
                t.desired_size + added,
                t.max_size,
                tuple(pods),
                tuple(reasons),
                choices.get(name, ""),
            )
        )
    return tuple(scale_ups)


def _not_helped(
    work: Sequence[Shape],
    groups: Mapping[str, PlanGroup],
    grown: Grown,
    limited: Mapping[tuple[int, str], str],
) -> tuple[NotHelped, ...]:
    """The pods of each shape still unplaced, with every group's reason, in the shapes' order."""
    not_helped = []
    for s in sorted(work, key=lambda s: s.index):
        if not s.remaining:
            continue
        reasons: dict[str, tuple[str, ...]] = {}
        for g in groups.values():
            name = g.template.name
            fit = g.accepts[s.index]
            if g.skip:
                reasons[name] = (g.skip,)
            elif fit:
                reasons[name] = fit
            elif (s.index, name) in limited:
                reasons[name] = (limited[(s.index, name)],)
            elif g.limit <= 0:
                reasons[name] = (g.limit_reason,)
            else:
                reasons[name] = (MAX_SIZE_REACHED if name in grown else "no scale-up chosen",)
        not_helped.append(NotHelped(tuple(s.shape.pods[s.cursor :]), reasons))
    return tuple(not_helped)
