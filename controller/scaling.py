"""The scaling driver: demand and supply read from the cluster and the ASGs, the pure planner run on
them, and the plan carried out (`--scaling=on`), merely told (`plan`, the default) or skipped (`off`).

Idempotent under restarts and leader changes: the plan starts from the ASG's desired size as AWS
reports it now, a scale-up whose nodes have not joined yet takes its pods (the planner's nodes on
their way), and each scale-up leaves the tag `fitguard.io/last-scale-up` = `<target>@<epoch>` on the
ASG, from which the cooldown and the provision timeout are measured by whichever replica leads next.
A group is raised only while its desired size is still the one the plan started from: a second
controller that planned from the same state finds it changed and does nothing.

fitguard only ever raises a desired size, never above the max size (checked here: moto and a stale
plan would not stop it), never lowers one.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from capacity.autoscaler_readiness import is_template_candidate
from capacity.demand import ALL, BLIND, classify, is_scalable, pending_shapes
from capacity.expander import Priorities, usable
from capacity.names import EXHAUSTED_LABEL, TERMINAL_PHASES
from capacity.planner import NodeFree, Plan, PlannerOptions, ScaleUp, plan
from capacity.records import NODE_GROUP_LABELS
from capacity.resources import POD_ENI, PODS, parse_resources
from capacity.string_maps import string_map
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate
from controller.aws.asgs import AsgGroups
from controller.aws.clients import AWS_ERRORS, describe_error
from controller.scaling_options import OFF, ON, PLAN, ScalingOptions
from kube.events import EventRecorder, ObjectRef

log = logging.getLogger(__name__)
# Event reasons on the pods of a scale-up: cluster-autoscaler's for one made, fitguard's for a plan.
TRIGGERED = "TriggeredScaleUp"
PLANNED = "ScaleUpPlanned"


class Outcome(enum.Enum):
    """What became of one scale-up of the plan."""

    SCALED = "scaled"  # the desired capacity raised
    SKIPPED = "skipped"  # the ASG moved since the plan, or is at its max size: re-planned next cycle
    FAILED = "failed"  # AWS refused or failed
    PLANNED = "planned"  # --scaling=plan: told, not made
    OFF = "off"  # not the leader's to make


@dataclass(frozen=True)
class ScaleUpOutcome:
    outcome: Outcome
    detail: str = ""  # "2->4" for one made, why for one skipped or failed

    def __str__(self) -> str:
        """The word (and detail) of `--once -o json`'s `outcome`: "scaled 2->4", "skipped: why"."""
        if self.outcome is Outcome.SCALED:
            return f"{self.outcome.value} {self.detail}"
        return f"{self.outcome.value}: {self.detail}" if self.detail else self.outcome.value


def groups_to_mark(
    templates: Iterable[NodeGroupTemplate], config: ScalingOptions, priorities: Priorities | None = None
) -> set[str]:
    """The groups whose NodeGroupTemplate gets `spec.scaleFromZero: fitguard`: those fitguard will
    grow itself (scaling on, an ASG or managed group with an actual view that the expander may choose,
    with the priority expander's `priorities` as last read when given)."""
    if config.mode != ON:
        return set()
    planner = planner_with(config, priorities)
    return {
        t.name
        for t in templates
        if is_scalable(t)
        and t.actual is not None
        and t.max_size > 0
        and usable(t.name, planner.expanders, planner.priorities)
    }


def planner_with(config: ScalingOptions, priorities: Priorities | None) -> PlannerOptions:
    """The planner's options with the priority expander's ConfigMap as last read (None: the flags')."""
    return (
        config.planner if priorities is None else dataclasses.replace(config.planner, priorities=priorities)
    )


# -- reading the cluster ------------------------------------------------------------------------


def _group_of(labels: Mapping[str, str]) -> str:
    return next((labels[k] for k in NODE_GROUP_LABELS if labels.get(k)), "")


def exhausted_groups(nodes: Iterable[Mapping[str, Any]], now: float) -> set[str]:
    """Groups whose good template candidates all carry the exhausted label (cluster-autoscaler's
    template too): the one rule of capacity/autoscaler_readiness.py, as the guard judges them."""
    seen: dict[str, bool] = {}
    for node in nodes:
        if not is_template_candidate(node, now):
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        group = _group_of(labels)
        if group:
            seen[group] = seen.get(group, True) and labels.get(EXHAUSTED_LABEL) == "true"
    return {g for g, all_exhausted in seen.items() if all_exhausted}


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def node_free(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Any],
    true_free_pod_eni: Mapping[str, int | None] | None = None,
) -> list[NodeFree]:
    """Existing ready, schedulable nodes with what is truly free on them: allocatable less the
    requests of their non-terminated pods (`pods`: PodRecords), pod-eni from the books when known."""
    used: dict[str, dict[str, int]] = {}
    for pod in pods:
        if not pod.node or pod.phase in TERMINAL_PHASES:
            continue
        u = used.setdefault(pod.node, {})
        u["cpu"] = u.get("cpu", 0) + pod.cpu
        u["memory"] = u.get("memory", 0) + pod.memory
        u["ephemeral-storage"] = u.get("ephemeral-storage", 0) + pod.ephemeral_storage
        u[POD_ENI] = u.get(POD_ENI, 0) + pod.pod_eni * 1000
        u[PODS] = u.get(PODS, 0) + 1000
    result = []
    books = true_free_pod_eni or {}
    for node in nodes:
        meta = node.get("metadata") or {}
        spec = node.get("spec") or {}
        if not _ready(node) or spec.get("unschedulable"):
            continue
        name = str(meta.get("name") or "")
        try:
            free = parse_resources((node.get("status") or {}).get("allocatable"), "status.allocatable")
        except (TypeError, ValueError) as err:
            log.warning("node %s: allocatable unreadable, not counted as free capacity: %s", name, err)
            continue
        for resource, value in used.get(name, {}).items():
            free[resource] = free.get(resource, 0) - value
        if books.get(name) is not None:
            free[POD_ENI] = max(int(books[name] or 0), 0) * 1000
        labels = string_map(meta.get("labels") or {}, "metadata.labels")
        taints = tuple(Taint.from_object(t) for t in spec.get("taints") or [] if isinstance(t, Mapping))
        result.append(NodeFree(name, _group_of(labels), free, labels, taints))
    return result


# -- the cycle ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CycleFacts:
    """What the cycle knows beside the cluster's objects: the books' truly free branch ENIs per node,
    each group's ASG name (where it is not the group's), the priority expander's last reading."""

    true_free_pod_eni: Mapping[str, int | None] | None = None
    asg_names: Mapping[str, str] | None = None
    priorities: Priorities | None = None


NO_FACTS = CycleFacts()


@dataclass
class Cycle:
    """One cycle's inputs as planned and its plan; `act` fills `outcomes`."""

    plan: Plan
    templates: dict[str, NodeGroupTemplate]
    asg_names: dict[str, str]
    pods: dict[str, dict[str, Any]]  # "namespace/name" -> the raw pod (for events)
    unschedulable: int
    demand: int
    skipped: list[dict[str, Any]]
    asg_error: str = ""  # why the ASGs could not be read (the plan then starts from the templates)
    outcomes: dict[str, ScaleUpOutcome] = field(default_factory=dict)  # group -> its scale-up's fate


class ScalingDriver:
    """One per controller; only the leader calls `act` with writes allowed."""

    def __init__(
        self,
        config: ScalingOptions,
        asgs: AsgGroups | None = None,
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.config = config
        self.asgs = asgs  # None: plan from the published templates alone
        self.recorder = recorder
        self.registry = registry or CollectorRegistry()
        self.scale_ups_total = Counter(
            "fitguard_scale_ups", "Scale-ups fitguard carried out", ["node_group"], registry=self.registry
        )
        self.unschedulable = Gauge(
            "fitguard_unschedulable_pods",
            "Unschedulable pods: all of them, and those cluster-autoscaler is blind to",
            ["scope"],
            registry=self.registry,
        )
        self.planned_nodes = Gauge(
            "fitguard_planned_scale_up_nodes",
            "Nodes the last plan adds per node group",
            ["node_group"],
            registry=self.registry,
        )

    def plan_cycle(
        self,
        templates: Iterable[NodeGroupTemplate],
        pods: Iterable[Mapping[str, Any]],
        nodes: Sequence[Mapping[str, Any]],
        pod_records: Iterable[Any] = (),
        *,
        now: float,
        facts: CycleFacts = NO_FACTS,
    ) -> Cycle:
        """Reads the ASGs (when a client is set) and plans. `pods`: raw pods (only the unschedulable
        ones are read); `pod_records`: PodRecords of bound pods, for the nodes' free capacity."""
        asg_names, true_free_pod_eni = facts.asg_names, facts.true_free_pod_eni
        current = {t.name: t for t in templates}
        names = {name: (asg_names or {}).get(name, name) for name, t in current.items() if is_scalable(t)}
        asg_error = ""
        last: dict[str, float] = {}
        if self.asgs is not None and names and self.config.mode != OFF:
            try:
                states = self.asgs.describe(sorted(set(names.values())))
            except AWS_ERRORS as err:
                asg_error = describe_error("DescribeAutoScalingGroups", err)
                log.error("reading the ASGs failed, planning from the published templates: %s", asg_error)
                states = {}
            for group, asg in names.items():
                state = states.get(asg)
                if state is None:
                    continue
                current[group] = dataclasses.replace(
                    current[group], desired_size=state.desired, max_size=state.max_size
                )
                if state.last_scale_up is not None:
                    last[group] = state.last_scale_up
        raw = {_pod_key(p): p for p in pods}
        shapes, malformed = pending_shapes(raw.values())
        for ref, why in malformed:
            log.warning("pod %s unreadable, not planned for: %s", ref.key, why)
        exhausted = exhausted_groups(nodes, now)
        blind = classify(shapes, current.values(), BLIND, exhausted)
        demand = blind if self.config.scope == BLIND else classify(shapes, current.values(), ALL, exhausted)
        unschedulable = sum(len(s.pods) for s in shapes)
        self.unschedulable.labels(scope=ALL).set(unschedulable)
        self.unschedulable.labels(scope=BLIND).set(blind.pod_count)
        free = node_free(nodes, pod_records, true_free_pod_eni)
        planner = planner_with(self.config, facts.priorities)
        result = plan(demand.shapes, current.values(), free, now=now, last_scale_up=last, config=planner)
        skipped = [{"pods": [p.key for p in s.shape.pods], "why": s.why} for s in demand.skipped]
        return Cycle(result, current, names, raw, unschedulable, demand.pod_count, skipped, asg_error)

    def act(self, cycle: Cycle, *, now: float) -> list[dict[str, Any]]:
        """Carries the plan out as the mode says (only the leader acts); returns the `scaleUps` list
        of `--once -o json`."""
        self.planned_nodes.clear()
        for s in cycle.plan.scale_ups:
            self.planned_nodes.labels(node_group=s.node_group).set(s.to_size - s.from_size)
        for s in cycle.plan.scale_ups:
            log.info(
                "scale-up %s: %s for %d pods (%s)",
                self.config.mode,
                s.info(),
                len(s.pods),
                "; ".join(s.reasons),
            )
            if self.config.mode == ON:
                cycle.outcomes[s.node_group] = self._scale(cycle, s, now)
            else:
                cycle.outcomes[s.node_group] = ScaleUpOutcome(
                    Outcome.PLANNED if self.config.mode == PLAN else Outcome.OFF
                )
        for n in cycle.plan.not_helped:
            log.info("%d pods not helped: %s", len(n.pods), n.message())
        if self.config.mode != OFF:
            self._events(cycle)
        return [
            {**s.to_json(), "outcome": _word(cycle.outcomes.get(s.node_group))} for s in cycle.plan.scale_ups
        ]

    def _scale(self, cycle: Cycle, s: ScaleUp, now: float) -> ScaleUpOutcome:
        """SetDesiredCapacity if the ASG is still where the plan started."""
        asg = cycle.asg_names.get(s.node_group, s.node_group)
        asgs = self.asgs
        if asgs is None:
            return ScaleUpOutcome(Outcome.FAILED, "no Auto Scaling client")
        try:
            state = asgs.describe([asg]).get(asg)
            if state is None:
                return ScaleUpOutcome(Outcome.FAILED, f"ASG {asg} not found")
            if state.desired != s.from_size:
                # someone (another replica, cluster-autoscaler, a person) moved it since: re-plan next cycle
                why = f"desired is {state.desired}, the plan started from {s.from_size}"
                return ScaleUpOutcome(Outcome.SKIPPED, why)
            target = min(s.to_size, state.max_size)
            if target <= state.desired:
                return ScaleUpOutcome(Outcome.SKIPPED, f"already at max size {state.max_size}")
            asgs.set_desired(asg, target)
        except AWS_ERRORS as err:
            reason = describe_error("SetDesiredCapacity", err)
            log.error("scale-up of %s failed: %s", s.node_group, reason)
            return ScaleUpOutcome(Outcome.FAILED, reason)
        self.scale_ups_total.labels(node_group=s.node_group).inc()
        try:
            asgs.note_scale_up(asg, target, now)
        except AWS_ERRORS as err:
            # the scale-up stands; only the cooldown after a restart is lost
            log.warning(
                "tagging %s with its scale-up failed: %s", asg, describe_error("CreateOrUpdateTags", err)
            )
        return ScaleUpOutcome(Outcome.SCALED, f"{state.desired}->{target}")

    def _events(self, cycle: Cycle) -> None:
        if self.recorder is None:
            return
        for s in cycle.plan.scale_ups:
            made = cycle.outcomes.get(s.node_group)
            outcome = made.outcome if made is not None else None
            # cluster-autoscaler's own reason only for a desired capacity really raised (as its
            # processors/status/eventing_scale_up_processor.go records it for a successful scale-up
            # only); a plan gets a reason of ours, so nothing counting TriggeredScaleUp is misled
            if outcome is Outcome.SCALED:
                reason, note = TRIGGERED, f"pod triggered scale-up: [{s.info()}]"
            elif outcome is Outcome.PLANNED:
                reason, note = PLANNED, f"scale-up planned, not made (--scaling=plan): [{s.info()}]"
            else:
                continue
            for ref in s.pods:
                self._record(cycle, ref.key, reason, note)
        for n in cycle.plan.not_helped:
            note = n.message()
            for ref in n.pods:
                self._record(cycle, ref.key, "NotTriggerScaleUp", note)

    def _record(self, cycle: Cycle, key: str, reason: str, note: str) -> None:
        pod = cycle.pods.get(key)
        if pod is not None and self.recorder is not None:
            self.recorder.normal(ObjectRef.of(pod, "Pod", "v1"), reason, note, action="ScaleUp")


def scale_ups_json(cycle: Cycle) -> dict[str, Any]:
    """The whole decision for `-o json` and `/snapshotz`: the plan with its reasons."""
    return {
        **cycle.plan.to_json(),
        "unschedulablePods": cycle.unschedulable,
        "demandPods": cycle.demand,
        "notDemand": cycle.skipped,
        "outcomes": {group: str(outcome) for group, outcome in sorted(cycle.outcomes.items())},
        "errors": {"": cycle.asg_error} if cycle.asg_error else {},  # the JSON contract's key
    }


def _word(outcome: ScaleUpOutcome | None) -> str:
    return str(outcome) if outcome is not None else ""
