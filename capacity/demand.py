"""Which unschedulable pods are fitguard's to scale for (its demand), and which are not, with why.

- `blind` scope (default): a pod that no node group's cluster-autoscaler view can serve but some
  group's actual view can. cluster-autoscaler builds a group's node from one of its live nodes when
  it has any (labels included: sanitised, but fitguard's exhausted label is not among what it drops),
  else from the live node it remembers while it does, else from the ASG's tags (the autoscaler
  view). So a pod-eni pod carrying the guard affinity
  `fitguard.io/branch-eni-exhausted DoesNotExist` fits no template of a group whose nodes are all
  exhausted: cluster-autoscaler is blind to it too.
- `all` scope: every unschedulable pod (clusters that run without cluster-autoscaler).

Identical pods (same requests, node constraints and tolerations) are one `PodShape`: judged once,
packed together. Pure: raw pod objects in, shapes out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capacity.fit import PodNeeds, check_fit
from capacity.names import EXHAUSTED_LABEL, IGNORE_LABEL
from capacity.template import NodeGroupTemplate, View

BLIND = "blind"
ALL = "all"
SCOPES = (BLIND, ALL)
SCALABLE_PROVIDERS = frozenset({"aws-asg", "eks-managed"})


@dataclass(frozen=True, slots=True)
class PodRef:
    """Which pod: enough to name it in a plan and to write an event on it."""

    namespace: str
    name: str
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class PodShape:
    """Pods that ask exactly the same of a node."""

    key: str
    needs: PodNeeds
    pods: list[PodRef] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Skipped:
    """Unschedulable pods that are not fitguard's demand, and why (one line)."""

    shape: PodShape
    why: str


@dataclass(frozen=True, slots=True)
class Demand:
    shapes: list[PodShape]
    skipped: list[Skipped]
    malformed: list[tuple[PodRef, str]]

    @property
    def pod_count(self) -> int:
        return sum(len(s.pods) for s in self.shapes)


def is_unschedulable(pod: Mapping[str, Any]) -> bool:
    """PodScheduled is False with reason Unschedulable, unbound, not being deleted, not opted out."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return False
    if (status.get("phase") or "Pending") != "Pending":
        return False
    if (meta.get("labels") or {}).get(IGNORE_LABEL) == "true":
        return False
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    )


# The parts of a spec that decide where a pod fits: two pods equal in these are packed as one shape.
_SHAPE_FIELDS = ("containers", "initContainers", "overhead", "resources", "nodeSelector", "tolerations")


def shape_key(spec: Mapping[str, Any]) -> str:
    parts: dict[str, Any] = {}
    for name in _SHAPE_FIELDS:
        value = spec.get(name)
        if name in ("containers", "initContainers") and isinstance(value, list):
            value = [[c.get("resources"), c.get("restartPolicy")] for c in value if isinstance(c, Mapping)]
        parts[name] = value
    affinity = spec.get("affinity")
    if isinstance(affinity, Mapping):
        node_affinity = affinity.get("nodeAffinity")
        if isinstance(node_affinity, Mapping):
            parts["affinity"] = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)


def pending_shapes(pods: Iterable[Mapping[str, Any]]) -> tuple[list[PodShape], list[tuple[PodRef, str]]]:
    """The unschedulable pods grouped into shapes (first-seen order), and the malformed ones."""
    shapes: dict[str, PodShape] = {}
    malformed: list[tuple[PodRef, str]] = []
    for pod in pods:
        if not is_unschedulable(pod):
            continue
        meta = pod.get("metadata") or {}
        ref = PodRef(
            str(meta.get("namespace") or "default"), str(meta.get("name") or ""), str(meta.get("uid") or "")
        )
        spec = pod.get("spec") or {}
        try:
            key = shape_key(spec)
            shape = shapes.get(key)
            if shape is None:
                shape = shapes[key] = PodShape(key, PodNeeds.from_spec(spec))
        except (TypeError, ValueError) as err:
            malformed.append((ref, str(err)))
            continue
        shape.pods.append(ref)
    return list(shapes.values()), malformed


def is_scalable(template: NodeGroupTemplate) -> bool:
    """An ASG or managed node group: something SetDesiredCapacity can grow (manual capacity is not)."""
    return template.provider in SCALABLE_PROVIDERS


def autoscaler_sees(template: NodeGroupTemplate, exhausted: bool) -> View | None:
    """The node cluster-autoscaler would add to the group: built from a live node when it has one
    (with the exhausted label when its nodes carry it), else from the live node it still remembers
    (capacity/autoscaler_memory.py), else from the tags. None: none it can add."""
    if not is_scalable(template) or template.max_size <= template.desired_size:
        return None
    if template.nodes > 0 and template.actual is not None:
        if not exhausted:
            return template.actual
        labels = {**template.actual.labels, EXHAUSTED_LABEL: "true"}
        return View(template.actual.allocatable, labels, template.actual.taints, template.actual.source)
    if template.remembered is not None:
        return template.remembered
    return template.autoscaler


def fits_view(needs: PodNeeds, template: NodeGroupTemplate, view: View | None) -> bool:
    return view is not None and not check_fit(needs, view, *template.overhead_of(view))


def classify(
    shapes: Sequence[PodShape],
    templates: Iterable[NodeGroupTemplate],
    scope: str = BLIND,
    exhausted_groups: frozenset[str] | set[str] = frozenset(),
    malformed: Sequence[tuple[PodRef, str]] = (),
) -> Demand:
    """Splits the shapes into demand and the rest.

    `exhausted_groups`: groups whose ready nodes all carry the exhausted label (whichever node
    cluster-autoscaler picks to build the group's template from, the label comes with it).
    """
    if scope not in SCOPES:
        raise ValueError(f"scaling scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    groups = sorted((t for t in templates if is_scalable(t)), key=lambda t: t.name)
    if scope == ALL:
        return Demand(list(shapes), [], list(malformed))
    seen_by_autoscaler = [(t, autoscaler_sees(t, t.name in exhausted_groups)) for t in groups]
    demand: list[PodShape] = []
    skipped: list[Skipped] = []
    for shape in shapes:
        served = next((t.name for t, view in seen_by_autoscaler if fits_view(shape.needs, t, view)), None)
        if served is not None:
            skipped.append(Skipped(shape, f"cluster-autoscaler can serve it with a node of {served}"))
            continue
        if not any(fits_view(shape.needs, t, t.actual) for t in groups):
            skipped.append(Skipped(shape, "no node group's real node fits it"))
            continue
        demand.append(shape)
    return Demand(demand, skipped, list(malformed))
