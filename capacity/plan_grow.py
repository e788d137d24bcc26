"""Phase 3 of the plan: new nodes, one group at a time: every candidate group's option is estimated,
the best few are packed exactly, and the expander chooses among those; again until no group helps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capacity.demand import PodRef
from capacity.expander import PRIORITY, Option, choose, priority_of
from capacity.packing import Bin, Shape, pack_new_nodes
from capacity.plan_groups import PlanGroup
from capacity.plan_types import PlannerOptions
from capacity.resources import CPU, MEMORY

Grown = dict[str, tuple[int, list[Bin], list[PodRef]]]  # group -> (nodes added, their bins, pods)
Choices = dict[str, str]  # group -> the tie its choice broke, if any (capacity.expander.Choice.explain)


def grow(
    work: Sequence[Shape], groups: Mapping[str, PlanGroup], config: PlannerOptions, pos: Mapping[str, int]
) -> tuple[Grown, dict[tuple[int, str], str], Choices]:
    """Grows one group at a time until no group helps: every candidate's option is estimated, the
    best `SHORTLIST` are packed exactly, and the expander chooses among those."""
    grown: Grown = {}
    choices: Choices = {}
    limited: dict[tuple[int, str], str] = {}  # (shape, group) -> why the group's limit left it out
    by_index = {s.index: s for s in work}
    candidates = [g for g in groups.values() if not g.skip and g.limit > 0]
    while candidates and any(s.remaining for s in work):
        shortlist = _shortlist(candidates, work, by_index, config, pos)
        options: dict[str, tuple[Option, list[Bin], list[tuple[Shape, int]], list[Shape]]] = {}
        memo: dict[tuple[Any, ...], Any] = {}
        for g in shortlist:
            result = _option(g, work, memo)
            if result is None:
                continue
            opened, bins, placements, capped = result
            cpu = sum(s.shape.needs.requests.get(CPU, 0) * n for s, n in placements)
            memory = sum(s.shape.needs.requests.get(MEMORY, 0) * n for s, n in placements)
            pods = sum(n for _, n in placements)
            options[g.template.name] = (_as_option(g, opened, pods, cpu, memory), bins, placements, capped)
        choice = choose([o for o, *_ in options.values()], config.expanders, config.priorities)
        if choice is None:
            break
        best = choice.option
        if choice.tied:
            choices[best.group] = choice.explain()
        _, bins, placements, capped = options[best.group]
        taken: list[PodRef] = []
        for s, n in placements:
            taken.extend(s.take(n))
        grown[best.group] = (best.nodes, bins, taken)
        for s in capped:
            limited[(s.index, best.group)] = groups[best.group].limit_reason
        candidates = [g for g in candidates if g.template.name != best.group]
    return grown, limited, choices


# How many groups per round are packed exactly (the rest only estimated): exact packing of every
# group is what costs, and the expander's choice is nearly always among the best estimates.
SHORTLIST = 8


def _as_option(g: PlanGroup, nodes: int, pods: int, cpu: int, memory: int) -> Option:
    """The option scored on the new node's capacity (expander/waste/waste.go resourcesForNode)."""
    view = g.template.actual
    node_cpu, node_memory = (view.capacity_of(CPU), view.capacity_of(MEMORY)) if view else (0, 0)
    return Option(g.template.name, nodes, pods, cpu, memory, node_cpu, node_memory)


def _shortlist(
    candidates: Sequence[PlanGroup],
    work: Sequence[Shape],
    by_index: Mapping[int, Shape],
    config: PlannerOptions,
    pos: Mapping[str, int],
) -> list[PlanGroup]:
    """The candidates worth packing exactly, ranked by a fluid estimate: the nodes the group's free
    vector needs to hold the total request of the pods that fit it (a lower bound of FFD)."""
    if len(candidates) <= SHORTLIST:
        return list(candidates)
    total = [0] * len(work[0].req) if work else []
    # each unplaced shape's total request, computed once per round rather than once per group
    left = {s.index: [s.remaining * r for r in s.req] for s in work if s.remaining}
    for shape_total in left.values():
        total = [t + v for t, v in zip(total, shape_total, strict=True)]
    estimates: list[tuple[Option, PlanGroup]] = []
    for g in candidates:
        need = list(total)
        for i in g.refused:
            vector = left.get(i)
            if vector is not None:
                need = [t - v for t, v in zip(need, vector, strict=True)]
        nodes = max(
            (-(-t // e) if e > 0 else 0 for t, e in zip(need, g.empty, strict=True) if t > 0), default=0
        )
        if nodes <= 0:
            continue
        share = min(1.0, g.limit / nodes)
        option = _as_option(
            g, min(nodes, g.limit), 1, int(need[pos[CPU]] * share), int(need[pos[MEMORY]] * share)
        )
        estimates.append((option, g))
    return _best_estimates(estimates, config)


def _best_estimates(estimates: Sequence[tuple[Option, PlanGroup]], config: PlannerOptions) -> list[PlanGroup]:
    """The first `SHORTLIST` by (priority when the priority expander is used, estimated waste), and
    every estimate equal to the last of them on both: the estimate is a fluid bound (optimistic for
    a group its limit caps), so it ranks but never decides between equals; exact packing does."""
    with_priority = PRIORITY in config.expanders and bool(config.priorities)

    def rank(e: tuple[Option, PlanGroup]) -> tuple[int, float]:
        priority = (priority_of(e[0].group, config.priorities) or 0) if with_priority else 0
        return -priority, e[0].waste

    ranked = sorted(estimates, key=lambda e: (*rank(e), e[0].nodes, e[0].group))
    if len(ranked) <= SHORTLIST:
        return [g for _, g in ranked]
    cut = rank(ranked[SHORTLIST - 1])
    return [g for i, (o, g) in enumerate(ranked) if i < SHORTLIST or rank((o, g)) == cut]


def _option(
    g: PlanGroup, work: Sequence[Shape], memo: dict[tuple[Any, ...], Any]
) -> tuple[int, list[Bin], list[tuple[Shape, int]], list[Shape]] | None:
    """Growing `g` by as few nodes as take every remaining pod that fits it (up to its limit):
    (nodes, their bins, pods per shape, shapes the limit left out). Groups alike share the packing."""
    fitting = [s for s in work if s.remaining and not g.accepts[s.index]]
    if not fitting:
        return None
    key = (tuple(g.empty), g.limit, tuple((s.index, s.remaining) for s in fitting))
    cached = memo.get(key)
    if cached is None:
        cached = memo[key] = pack_new_nodes(g.empty, g.limit, fitting)
    opened, frees, counts, capped = cached
    if opened == 0:
        return None
    by_index = {s.index: s for s in fitting}
    bins = [Bin(g.template.name, list(free), n) for free, n in frees]
    return opened, bins, [(by_index[i], n) for i, n in counts], [by_index[i] for i in capped]
