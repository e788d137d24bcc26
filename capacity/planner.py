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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capacity.demand import PodRef, PodShape, is_scalable
from capacity.expander import LEAST_WASTE, PRIORITY, Option, Priorities, best_option, priority_of, usable
from capacity.fit import check_fit
from capacity.packing import Bin, Shape, first_fit, nonzero_indices, pack_new_nodes
from capacity.quantity import format_quantity, parse_quantity
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, POD_ENI, PODS, Resources
from capacity.taints import Taint, first_untolerated
from capacity.template import NodeGroupTemplate

MAX_SIZE_REACHED = "max node group size reached"  # cluster-autoscaler's MaxLimitReachedReason
BACKOFF = "in backoff after failed scale-up"  # cluster-autoscaler's BackoffReason
IN_PROGRESS = "scale-up in progress"
COOLDOWN = "in cooldown after a recent scale-up"
PER_SCALE_UP_REACHED = "max nodes per scale-up reached"
NOT_IN_PRIORITIES = "not in the priority expander's configuration"
NO_TEMPLATE = "no node template"
# cluster-autoscaler's --max-nodes-per-scaleup default
DEFAULT_MAX_NODES_PER_SCALE_UP = 1000
# the ASG's DefaultCooldown default (AWS Auto Scaling User Guide, "Scaling cooldowns")
DEFAULT_COOLDOWN = 300.0
# cluster-autoscaler's --max-node-provision-time default
DEFAULT_PROVISION_TIMEOUT = 900.0
HEADROOM_RESOURCES = {"pod-eni": POD_ENI, CPU: CPU, MEMORY: MEMORY, EPHEMERAL_STORAGE: EPHEMERAL_STORAGE}


@dataclass(frozen=True, slots=True)
class NodeFree:
    """An existing, schedulable node and what is truly free on it (milli-units, `pods` as slots)."""

    name: str
    node_group: str
    free: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class Headroom:
    """Keep at least `amount` (milli-units) of `resource` truly free in `group`."""

    group: str
    resource: str
    amount: int


def parse_headroom(text: str) -> list[Headroom]:
    """`GROUP:pod-eni=9` or `GROUP:pod-eni=9,cpu=4,memory=8Gi,ephemeral-storage=100Gi`."""
    group, sep, rest = text.partition(":")
    if not sep or not group or not rest:
        raise ValueError(f"headroom {text!r}: expected GROUP:RESOURCE=AMOUNT[,RESOURCE=AMOUNT]")
    rules = []
    for item in rest.split(","):
        name, eq, amount = item.strip().partition("=")
        if not eq or name not in HEADROOM_RESOURCES:
            names = ", ".join(HEADROOM_RESOURCES)
            raise ValueError(
                f"headroom {text!r}: {item!r} is not RESOURCE=AMOUNT with RESOURCE one of {names}"
            )
        resource = HEADROOM_RESOURCES[name]
        value = parse_quantity(amount, f"headroom.{name}")
        if value < 0:
            raise ValueError(f"headroom {text!r}: {name} must not be negative")
        rules.append(Headroom(group, resource, value))
    return rules


@dataclass(frozen=True)
class PlannerOptions:
    expanders: tuple[str, ...] = (LEAST_WASTE,)
    priorities: Priorities = field(default_factory=dict)
    max_nodes_per_scale_up: int = DEFAULT_MAX_NODES_PER_SCALE_UP
    cooldown: float = DEFAULT_COOLDOWN
    provision_timeout: float = DEFAULT_PROVISION_TIMEOUT
    headroom: tuple[Headroom, ...] = ()


@dataclass(frozen=True)
class ScaleUp:
    node_group: str
    from_size: int
    to_size: int
    max_size: int
    pods: tuple[PodRef, ...] = ()
    reasons: tuple[str, ...] = ()  # "pods", or a headroom line

    def info(self) -> str:
        """cluster-autoscaler's ScaleUpInfo as its events print it: `{ng-batch 0->1 (max: 10)}`."""
        return f"{{{self.node_group} {self.from_size}->{self.to_size} (max: {self.max_size})}}"

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeGroup": self.node_group,
            "from": self.from_size,
            "to": self.to_size,
            "maxSize": self.max_size,
            "pods": [p.key for p in self.pods],
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class NotHelped:
    """Pods of one shape no scale-up helps, with each group's reasons."""

    pods: tuple[PodRef, ...]
    reasons: Mapping[str, tuple[str, ...]]

    def message(self) -> str:
        counts: dict[str, int] = {}
        for reasons in self.reasons.values():
            for reason in reasons:
                counts[reason] = counts.get(reason, 0) + 1
        if not counts:
            return "pod didn't trigger scale-up: no node group can be scaled"
        parts = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]))
        return "pod didn't trigger scale-up: " + ", ".join(f"{n} {reason}" for reason, n in parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "pods": [p.key for p in self.pods],
            "message": self.message(),
            "reasons": {group: list(r) for group, r in sorted(self.reasons.items())},
        }


@dataclass(frozen=True)
class Plan:
    scale_ups: tuple[ScaleUp, ...] = ()
    on_existing: Mapping[str, tuple[PodRef, ...]] = field(default_factory=dict)  # node -> pods
    on_the_way: Mapping[str, tuple[PodRef, ...]] = field(default_factory=dict)  # group -> pods
    not_helped: tuple[NotHelped, ...] = ()
    skipped_groups: Mapping[str, str] = field(default_factory=dict)  # group -> why it cannot grow now
    headroom: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "scaleUps": [s.to_json() for s in self.scale_ups],
            "onExistingNodes": {n: [p.key for p in pods] for n, pods in sorted(self.on_existing.items())},
            "onNodesOnTheirWay": {g: [p.key for p in pods] for g, pods in sorted(self.on_the_way.items())},
            "notTriggerScaleUp": [n.to_json() for n in self.not_helped],
            "skippedGroups": dict(sorted(self.skipped_groups.items())),
            "headroom": list(self.headroom),
        }


class _Group:
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
    last_scale_up = last_scale_up or {}
    groups_all = sorted((t for t in templates if is_scalable(t)), key=lambda t: t.name)
    nodes = list(nodes)
    resources = _resource_index(shapes, config.headroom)
    pos = {name: i for i, name in enumerate(resources)}

    def vector(values: Mapping[str, int]) -> list[int]:
        return [values.get(name, 0) for name in resources]

    work: list[Shape] = []
    for i, shape in enumerate(shapes):
        req = {name: shape.needs.requests.get(name, 0) for name in resources}
        req[PODS] = 1000
        work.append(Shape(i, shape, tuple(req[name] for name in resources)))
    _sort_decreasing(work, groups_all, resources)

    groups: dict[str, _Group] = {}
    skipped: dict[str, str] = {}
    for t in groups_all:
        g = groups[t.name] = _Group(t, vector(_new_node_free(t)))
        _limits(g, now, last_scale_up.get(t.name), config)
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

    # 1. existing nodes' true free capacity
    node_bins = [Bin(n.name, vector({**n.free, PODS: n.free.get(PODS, 0)})) for n in nodes]
    node_by_name = {n.name: n for n in nodes}
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

        _, placed = first_fit(node_bins, s.req, nonzero_indices(s.req), s.remaining, accepts)
        for target, n in placed:
            on_existing.setdefault(target, []).extend(s.take(n))

    # 2. nodes on their way
    way_bins = [Bin(g.template.name, list(g.empty), g.upcoming) for g in groups.values() if g.upcoming > 0]
    on_the_way: dict[str, list[PodRef]] = {}
    for s in work:
        if s.remaining:
            _, placed = first_fit(
                way_bins, s.req, nonzero_indices(s.req), s.remaining, _fits_group(groups, s)
            )
            for target, n in placed:
                on_the_way.setdefault(target, []).extend(s.take(n))

    # 3. new nodes, one group at a time
    grown, limited = _grow(work, groups, config, pos)

    headroom_lines = _headroom(
        rules=config.headroom,
        groups=groups,
        node_bins=node_bins,
        way_bins=way_bins,
        grown=grown,
        pos=pos,
        node_by_name=node_by_name,
    )
    scale_ups = []
    for name, (added, _, pods) in sorted(grown.items()):
        t = groups[name].template
        reasons = (["pods"] if pods else []) + [
            h["reason"] for h in headroom_lines if h["nodeGroup"] == name and h["added"]
        ]
        scale_ups.append(
            ScaleUp(name, t.desired_size, t.desired_size + added, t.max_size, tuple(pods), tuple(reasons))
        )

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

    return Plan(
        scale_ups=tuple(scale_ups),
        on_existing={k: tuple(v) for k, v in on_existing.items()},
        on_the_way={k: tuple(v) for k, v in on_the_way.items()},
        not_helped=tuple(not_helped),
        skipped_groups=skipped,
        headroom=tuple(headroom_lines),
    )


Grown = dict[str, tuple[int, list[Bin], list[PodRef]]]  # group -> (nodes added, their bins, pods)


def _grow(
    work: Sequence[Shape], groups: Mapping[str, _Group], config: PlannerOptions, pos: Mapping[str, int]
) -> tuple[Grown, dict[tuple[int, str], str]]:
    """Grows one group at a time until no group helps: every candidate's option is estimated, the
    best `SHORTLIST` are packed exactly, and the expander chooses among those."""
    grown: Grown = {}
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
        best = best_option([o for o, *_ in options.values()], config.expanders, config.priorities)
        if best is None:
            break
        _, bins, placements, capped = options[best.group]
        taken: list[PodRef] = []
        for s, n in placements:
            taken.extend(s.take(n))
        grown[best.group] = (best.nodes, bins, taken)
        for s in capped:
            limited[(s.index, best.group)] = groups[best.group].limit_reason
        candidates = [g for g in candidates if g.template.name != best.group]
    return grown, limited


# How many groups per round are packed exactly (the rest only estimated): exact packing of every
# group is what costs, and the expander's choice is nearly always among the best estimates.
SHORTLIST = 8


def _as_option(g: _Group, nodes: int, pods: int, cpu: int, memory: int) -> Option:
    allocatable = g.template.actual.allocatable if g.template.actual else {}
    return Option(
        g.template.name, nodes, pods, cpu, memory, allocatable.get(CPU, 0), allocatable.get(MEMORY, 0)
    )


def _shortlist(
    candidates: Sequence[_Group],
    work: Sequence[Shape],
    by_index: Mapping[int, Shape],
    config: PlannerOptions,
    pos: Mapping[str, int],
) -> list[_Group]:
    """The candidates worth packing exactly, ranked by a fluid estimate: the nodes the group's free
    vector needs to hold the total request of the pods that fit it (a lower bound of FFD)."""
    if len(candidates) <= SHORTLIST:
        return list(candidates)
    total = [0] * len(work[0].req) if work else []
    # each unplaced shape's total request, computed once per round rather than once per group
    left = {s.index: [s.remaining * r for r in s.req] for s in work if s.remaining}
    for vector in left.values():
        total = [t + v for t, v in zip(total, vector, strict=True)]
    estimates: list[tuple[Option, _Group]] = []
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
    ranked = sorted(estimates, key=lambda e: (e[0].waste, e[0].nodes, e[0].group))
    if PRIORITY in config.expanders and config.priorities:
        ranked.sort(key=lambda e: -(priority_of(e[1].template.name, config.priorities) or 0))
    return [g for _, g in ranked[:SHORTLIST]]


def _resource_index(shapes: Sequence[PodShape], headroom: Sequence[Headroom]) -> list[str]:
    names = {PODS, CPU, MEMORY}
    for shape in shapes:
        names.update(name for name, _ in shape.needs.checked)
    names.update(h.resource for h in headroom)
    return sorted(names)


def _new_node_free(t: NodeGroupTemplate) -> Resources:
    """A new node of the group: its actual view less DaemonSets, pods as slots (milli-units)."""
    if t.actual is None:
        return {}
    free = {name: value - t.daemonset_overhead.get(name, 0) for name, value in t.actual.allocatable.items()}
    pods = t.actual.allocatable.get(PODS, 0) // 1000 - t.daemonset_pods
    free[PODS] = max(pods, 0) * 1000
    return free


def _limits(g: _Group, now: float, last: float | None, config: PlannerOptions) -> None:
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


def _fits_group(groups: Mapping[str, _Group], s: Shape) -> Any:
    return lambda target: not groups[target].accepts[s.index]


def _sort_decreasing(
    work: list[Shape], groups: Sequence[NodeGroupTemplate], resources: Sequence[str]
) -> None:
    """Largest first: each request as a fraction of the largest node offering it, summed."""
    largest = [1] * len(resources)
    for t in groups:
        if t.actual is not None:
            for i, name in enumerate(resources):
                largest[i] = max(largest[i], t.actual.allocatable.get(name, 0))
    work.sort(key=lambda s: (-sum(r / m for r, m in zip(s.req, largest, strict=True)), s.index))


def _option(
    g: _Group, work: Sequence[Shape], memo: dict[tuple[Any, ...], Any]
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


def _headroom(
    *,
    rules: Sequence[Headroom],
    groups: Mapping[str, _Group],
    node_bins: Sequence[Bin],
    way_bins: Sequence[Bin],
    grown: dict[str, tuple[int, list[Bin], list[PodRef]]],
    pos: Mapping[str, int],
    node_by_name: Mapping[str, NodeFree],
) -> list[dict[str, Any]]:
    """Grows groups whose truly free `resource` (after the demand is placed, nodes on their way
    included) is below the rule's amount; one line per rule says what it found and did."""
    lines: list[dict[str, Any]] = []
    for rule in rules:
        g = groups.get(rule.group)
        line: dict[str, Any] = {
            "nodeGroup": rule.group,
            "resource": rule.resource,
            "want": format_quantity(rule.amount, rule.resource),
            "added": 0,
        }
        lines.append(line)
        if g is None:
            line["reason"] = "no such scalable node group"
            continue
        i = pos[rule.resource]
        free = sum(max(b.free[i], 0) for b in node_bins if node_by_name[b.target].node_group == rule.group)
        free += sum(max(b.free[i], 0) * b.count for b in way_bins if b.target == rule.group)
        already, bins, pods = grown.get(rule.group, (0, [], []))
        free += sum(max(b.free[i], 0) * b.count for b in bins)
        line["free"] = format_quantity(free, rule.resource)
        short = rule.amount - free
        per_node = g.empty[i]
        if short <= 0:
            line["reason"] = "enough is free"
            continue
        if per_node <= 0:
            line["reason"] = f"a new node of {rule.group} offers no {rule.resource}"
            continue
        if g.skip:
            line["reason"] = f"short by {format_quantity(short, rule.resource)}, {g.skip}"
            continue
        wanted = -(-short // per_node)
        allowed = min(wanted, g.limit - already)
        if allowed <= 0:
            line["reason"] = f"short by {format_quantity(short, rule.resource)}, {g.limit_reason}"
            continue
        bins = [*bins, Bin(rule.group, list(g.empty), allowed)]
        grown[rule.group] = (already + allowed, bins, pods)
        line["added"] = allowed
        line["reason"] = (
            f"headroom: keep {line['want']} {rule.resource} free in {rule.group}, "
            f"{line['free']} is; {allowed} node(s) added"
        )
    return lines
