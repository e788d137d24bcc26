"""Choosing which node group to grow when several could take the pods: cluster-autoscaler's expanders.

- `least-waste` (cluster-autoscaler expander/waste/waste.go `BestOptions`): for each option, wasted
  cpu fraction (cpu of the new nodes - cpu the pods request) / cpu of the new nodes, the same for
  memory, summed; the least wins. A node's cpu and memory are its capacity, not its allocatable
  (`resourcesForNode` reads `Status.Capacity`). Among options left equal, cluster-autoscaler's chain
  falls back to the random expander (expander/factory/chain.go, expander_factory.go `Build`); we
  break ties by fewest nodes, then most pods, then the group's name (`TIE_BREAK`), so two replicas
  choose alike, and the choice says it was a tie.
- `priority` (expander/priority/priority.go): ConfigMap `cluster-autoscaler-priority-expander`, key
  `priorities`, a YAML map of integer priority to a list of regular expressions searched in the node
  group's name; only the options of the highest matching priority survive, a group no expression
  matches is not used; with no configuration every option survives.
Expanders chain: `priority,least-waste` filters by priority, then by waste.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import yaml

LEAST_WASTE = "least-waste"
PRIORITY = "priority"
EXPANDERS = (LEAST_WASTE, PRIORITY)
PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
PRIORITY_KEY = "priorities"

Priorities = Mapping[int, tuple[re.Pattern[str], ...]]


@dataclass(frozen=True, slots=True)
class Option:
    """Growing one group by `nodes` to take `pods` pods requesting `cpu` and `memory` (milli-units)."""

    group: str
    nodes: int
    pods: int
    cpu: int
    memory: int
    node_cpu: int  # one new node's cpu (milli-units)
    node_memory: int

    @property
    def waste(self) -> float:
        return _wasted(self.cpu, self.node_cpu * self.nodes) + _wasted(
            self.memory, self.node_memory * self.nodes
        )


def _wasted(requested: int, available: int) -> float:
    # a node offering none of the resource wastes all of it (cluster-autoscaler would divide by zero)
    return 1.0 if available <= 0 else (available - requested) / available


def parse_expanders(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in EXPANDERS]
    if unknown or not names:
        raise ValueError(f"expander must be a comma-separated list of {', '.join(EXPANDERS)}, not {text!r}")
    return names


def parse_priorities(text: str | None) -> dict[int, tuple[re.Pattern[str], ...]]:
    """The `priorities` value of the ConfigMap. Raises ValueError on anything cluster-autoscaler refuses."""
    if not text or not text.strip():
        return {}
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ValueError(f"priorities: not YAML: {err}") from None
    if not isinstance(raw, Mapping):
        raise ValueError("priorities: expected a map of priority to a list of regular expressions")
    result: dict[int, tuple[re.Pattern[str], ...]] = {}
    for key, patterns in raw.items():
        try:
            priority = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"priorities: {key!r} is not an integer") from None
        listed = [patterns] if isinstance(patterns, str) else patterns
        if not isinstance(listed, list):
            raise ValueError(f"priorities.{priority}: expected a list of regular expressions")
        try:
            result[priority] = tuple(re.compile(str(p)) for p in listed)
        except re.error as err:
            raise ValueError(f"priorities.{priority}: bad regular expression: {err}") from None
    return result


def priority_of(group: str, priorities: Priorities) -> int | None:
    """The highest priority whose expressions match the group's name; None when none does."""
    matched = [p for p, patterns in priorities.items() if any(rx.search(group) for rx in patterns)]
    return max(matched) if matched else None


def usable(group: str, expanders: Sequence[str], priorities: Priorities) -> bool:
    """Whether the expander chain may ever choose the group (the priority expander drops unmatched ones)."""
    return PRIORITY not in expanders or not priorities or priority_of(group, priorities) is not None


# fitguard's rule where cluster-autoscaler picks at random among the options the expanders left
TIE_BREAK = "fewest nodes, then most pods, then the group's name"


@dataclass(frozen=True, slots=True)
class Choice:
    """The option the expander chain chose: `scored` whether least-waste compared it, `tied` the other
    groups the chain left equal with it (by name), which `TIE_BREAK` decided between."""

    option: Option
    scored: bool = False
    tied: tuple[str, ...] = ()

    def explain(self) -> str:
        """How a tie was decided, for the plan ("" when the expanders left one option): the groups
        tied, on which least-waste score, and `TIE_BREAK`."""
        if not self.tied:
            return ""
        on = f" at least-waste {self.option.waste:.3f}" if self.scored else ""
        return (
            f"tied with {', '.join(self.tied)}{on}: fitguard takes {TIE_BREAK} "
            "where cluster-autoscaler picks at random"
        )


def best_option(options: Sequence[Option], expanders: Sequence[str], priorities: Priorities) -> Option | None:
    choice = choose(options, expanders, priorities)
    return None if choice is None else choice.option


def choose(options: Sequence[Option], expanders: Sequence[str], priorities: Priorities) -> Choice | None:
    """The expander chain over `options` (expander/factory/chain.go `BestOption`: each filter in
    turn, done once one option is left), then `TIE_BREAK` among those left."""
    survivors = list(options)
    scored = False
    for name in expanders:
        if len(survivors) <= 1:
            break
        if name == PRIORITY and priorities:
            ranked = [(priority_of(o.group, priorities), o) for o in survivors]
            top = max((p for p, _ in ranked if p is not None), default=None)
            survivors = [o for p, o in ranked if p is not None and p == top]
        elif name == LEAST_WASTE:
            least = min(o.waste for o in survivors)
            survivors = [o for o in survivors if o.waste == least]
            scored = True
    if not survivors:
        return None
    best = min(survivors, key=lambda o: (o.nodes, -o.pods, o.group))
    tied = tuple(sorted(o.group for o in survivors if o is not best))
    return Choice(best, scored, tied)
