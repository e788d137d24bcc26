"""Phase 0 of the plan: each scalable group's fixed facts (what a new node offers, which pod shapes
fit it, how far it may grow and why it cannot grow now), and the order pods are packed in."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from capacity.expander import usable
from capacity.fit import check_fit
from capacity.packing import Shape
from capacity.plan_types import (
    BACKOFF,
    COOLDOWN,
    IN_PROGRESS,
    MAX_SIZE_REACHED,
    NO_TEMPLATE,
    NOT_IN_PRIORITIES,
    PER_SCALE_UP_REACHED,
    PlannerOptions,
)
from capacity.resources import PODS, Resources
from capacity.template import NodeGroupTemplate


class PlanGroup:
    """One scalable group's fixed facts for the plan."""

    __slots__ = ("accepts", "empty", "limit", "limit_reason", "refused", "skip", "template", "upcoming")

    def __init__(self, template: NodeGroupTemplate, empty: list[int]) -> None:
        self.template = template
        self.empty = empty
        self.skip = ""
        self.upcoming = 0
        self.limit = 0
        self.limit_reason = MAX_SIZE_REACHED
        self.accepts: dict[int, tuple[str, ...]] = {}  # shape index -> fit reasons (empty: fits)
        self.refused: list[int] = []  # shape indices that do not fit a new node of the group


def build_groups(
    templates: Iterable[NodeGroupTemplate],
    work: Sequence[Shape],
    vector: Callable[[Mapping[str, int]], list[int]],
    *,
    now: float,
    last_scale_up: Mapping[str, float],
    config: PlannerOptions,
) -> tuple[dict[str, PlanGroup], dict[str, str]]:
    """Every group's facts, by name, and the groups that cannot grow now with why."""
    groups: dict[str, PlanGroup] = {}
    skipped: dict[str, str] = {}
    for t in templates:
        g = groups[t.name] = PlanGroup(t, vector(new_node_free(t)))
        limits(g, now, last_scale_up.get(t.name), config)
        if g.skip:
            skipped[t.name] = g.skip
        for s in work:
            if t.actual is None:
                g.accepts[s.index] = (NO_TEMPLATE,)
            else:
                why = check_fit(s.shape.needs, t.actual, t.daemonset_overhead, t.daemonset_pods)
                g.accepts[s.index] = tuple(r.message for r in why)
            if g.accepts[s.index]:
                g.refused.append(s.index)
    return groups, skipped


def new_node_free(t: NodeGroupTemplate) -> Resources:
    """A new node of the group: its actual view less DaemonSets, pods as slots (milli-units)."""
    if t.actual is None:
        return {}
    free = {name: value - t.daemonset_overhead.get(name, 0) for name, value in t.actual.allocatable.items()}
    pods = t.actual.allocatable.get(PODS, 0) // 1000 - t.daemonset_pods
    free[PODS] = max(pods, 0) * 1000
    return free


def limits(g: PlanGroup, now: float, last: float | None, config: PlannerOptions) -> None:
    """Why the group cannot grow now (skip), how many nodes are on their way, and how far it may grow."""
    t = g.template
    unfinished = t.desired_size > t.nodes
    timed_out = unfinished and last is not None and now - last > config.provision_timeout
    if unfinished and not timed_out:
        g.upcoming = t.desired_size - t.nodes
    room = t.max_size - t.desired_size
    g.limit = max(min(room, config.max_nodes_per_scale_up), 0)
    g.limit_reason = MAX_SIZE_REACHED if room <= config.max_nodes_per_scale_up else PER_SCALE_UP_REACHED
    if timed_out:
        g.skip = BACKOFF
    elif room <= 0:
        g.skip = MAX_SIZE_REACHED
    elif unfinished:
        g.skip = IN_PROGRESS
    elif last is not None and now - last < config.cooldown:
        g.skip = COOLDOWN
    elif not usable(t.name, config.expanders, config.priorities):
        g.skip = NOT_IN_PRIORITIES


def fits_group(groups: Mapping[str, PlanGroup], s: Shape) -> Callable[[str], bool]:
    return lambda target: not groups[target].accepts[s.index]


def sort_decreasing(work: list[Shape], groups: Sequence[NodeGroupTemplate], resources: Sequence[str]) -> None:
    """Largest first: each request as a fraction of the largest node offering it, summed."""
    largest = [1] * len(resources)
    for t in groups:
        if t.actual is not None:
            for i, name in enumerate(resources):
                largest[i] = max(largest[i], t.actual.allocatable.get(name, 0))
    work.sort(key=lambda s: (-sum(r / m for r, m in zip(s.req, largest, strict=True)), s.index))
