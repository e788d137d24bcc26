"""Node group templates: what a new node of a group offers, seen two ways (docs/design.md failure 1).

- The actual view: what a node really offers (a live node's allocatable, or an estimate from the
  launch template's instance type and root volume, or what a person wrote down).
- The autoscaler view: what cluster-autoscaler builds for the group when it has no node, from the
  instance type and the ASG's `k8s.io/cluster-autoscaler/node-template/*` tags only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from capacity.karpenter.published import PublishedNodePool
from capacity.names import API_VERSION, TEMPLATE_KIND
from capacity.node_pods import RememberedPods
from capacity.quantity import MILLI
from capacity.resources import CPU, MEMORY, Resources, parse_resources, to_display, to_quantities
from capacity.string_maps import string_map
from capacity.taints import Taint
from capacity.template_pods import template_node_pods

SOURCES = ("live-node", "launch-template", "manual", "tags", "autoscaler-memory")
# The capacity a view publishes: what cluster-autoscaler's least-waste expander scores a node by
# (expander/waste/waste.go resourcesForNode reads Status.Capacity cpu and memory, nothing else).
SCORED_CAPACITY = (CPU, MEMORY)
MIB = 2**20
# The actual view's allocatable in the units a person reads, written beside it and never read back
# (manifests/crds/nodegrouptemplates.yaml's printer columns show it).
DISPLAY_FIELD = "display"


def live_capacity(node: Mapping[str, Any]) -> Resources:
    """A live node's `status.capacity` cpu and memory (milli-units). Raises ValueError/TypeError."""
    raw = (node.get("status") or {}).get("capacity") or {}
    if not isinstance(raw, Mapping):
        raise TypeError("status.capacity: expected a map")
    return parse_resources({k: raw[k] for k in SCORED_CAPACITY if k in raw}, "status.capacity")


def instance_capacity(vcpus: int, memory_mib: int) -> Resources:
    """A new node's capacity from its instance type: its vCPUs and memory, as cluster-autoscaler's
    AWS provider builds a template's (aws_manager.go buildNodeFromTemplate)."""
    return {CPU: vcpus * MILLI, MEMORY: memory_mib * MIB * MILLI}


@dataclass(frozen=True, slots=True)
class View:
    """A node as one party sees it: allocatable (milli-units), labels, taints, and its source;
    `capacity` the cpu and memory of the node's `status.capacity` where known (least-waste scores
    those: capacity/expander.py)."""

    allocatable: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    source: str = "manual"
    capacity: Resources = field(default_factory=dict)
    # What the fit check compiles from this view (views are immutable, and a pod is checked
    # against hundreds of them per review): see capacity.fit.offer_of.
    memo: dict[int, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def from_object(cls, raw: Mapping[str, Any], field_path: str, default_source: str) -> View:
        taints = raw.get("taints") or []
        if not isinstance(taints, list):
            raise TypeError(f"{field_path}.taints: expected a list")
        labels = string_map(raw.get("labels") or {}, f"{field_path}.labels")
        return cls(
            allocatable=parse_resources(raw.get("allocatable"), f"{field_path}.allocatable"),
            labels=labels,
            taints=tuple(Taint.from_object(t) for t in taints if isinstance(t, Mapping)),
            source=str(raw.get("source") or default_source),
            capacity=parse_resources(raw.get("capacity"), f"{field_path}.capacity"),
        )

    def capacity_of(self, name: str) -> int:
        """The node's capacity of `name`; its allocatable where the view names no capacity of it, as
        cluster-autoscaler's AWS node built from tags has (aws_manager.go buildNodeFromTemplate sets
        allocatable to the capacity map itself)."""
        value = self.capacity.get(name)
        return self.allocatable.get(name, 0) if value is None else value

    def to_object(self, with_source: bool = True) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        if with_source:
            obj["source"] = self.source
        obj["allocatable"] = to_quantities(self.allocatable)
        if self.capacity:
            obj["capacity"] = to_quantities(self.capacity)
        obj["labels"] = dict(sorted(self.labels.items()))
        obj["taints"] = [t.to_object() for t in self.taints]
        return obj


@dataclass(frozen=True, slots=True)
class AutoscalerMemory:
    """cluster-autoscaler's memory of the group (capacity/autoscaler_memory.py decides it): the live
    node it keeps as the group's template, when fitguard last saw such a node, and whether the
    running cluster-autoscaler remembers it now, with the reason. Times are RFC 3339, "" if none."""

    remembers: bool = False
    reason: str = ""
    view: View | None = None  # the remembered template: the live node as last seen
    last_seen: str = ""
    autoscaler: str = ""  # namespace/name of the cluster-autoscaler pod observed
    started: str = ""  # when its process started
    expires: str = ""  # when it forgets the node unless it restarts first
    # The pods on the template cluster-autoscaler cached from the node (capacity/fresh_node.py);
    # None in a record written before fitguard kept them.
    pods: RememberedPods | None = None

    @classmethod
    def from_object(cls, raw: Mapping[str, Any], field_path: str) -> AutoscalerMemory:
        remembers = raw.get("remembers", False)
        if not isinstance(remembers, bool):
            raise TypeError(f"{field_path}.remembers: expected a boolean")
        view = None
        if raw.get("allocatable") is not None:
            view = View.from_object(raw, field_path, "live-node")
        texts = {}
        for key in ("reason", "lastSeen", "autoscaler", "started", "expires"):
            value = raw.get(key) or ""
            if not isinstance(value, str):
                raise TypeError(f"{field_path}.{key}: expected a string")
            texts[key] = value
        for key in ("lastSeen", "started", "expires"):
            if texts[key] and not _is_time(texts[key]):
                raise ValueError(f"{field_path}.{key}: expected an RFC 3339 time, got {texts[key]!r}")
        if remembers and (view is None or not texts["lastSeen"]):
            raise ValueError(f"{field_path}: remembers a template it does not carry (allocatable, lastSeen)")
        return cls(
            remembers,
            texts["reason"],
            view,
            texts["lastSeen"],
            texts["autoscaler"],
            texts["started"],
            texts["expires"],
            RememberedPods.from_object(raw, field_path),
        )

    def to_object(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"remembers": self.remembers, "reason": self.reason}
        if self.view is not None:
            obj.update(self.view.to_object(with_source=False))
        for key, value in (
            ("lastSeen", self.last_seen),
            ("autoscaler", self.autoscaler),
            ("started", self.started),
            ("expires", self.expires),
        ):
            if value:
                obj[key] = value
        if self.pods is not None:
            obj.update(self.pods.to_object())
        return obj


class ScaleFromZero(enum.StrEnum):
    """Who grows the group from zero nodes, and so which view the webhook judges it by."""

    AUTOSCALER = "autoscaler"  # cluster-autoscaler, from its own template
    FITGUARD = "fitguard"  # fitguard's scaling driver (--scaling=on), from the actual view


FITGUARD = ScaleFromZero.FITGUARD


@dataclass(frozen=True, slots=True)
class NodeGroupTemplate:
    name: str
    provider: str = "manual"
    instance_types: tuple[str, ...] = ()
    min_size: int = 0
    max_size: int = 0
    desired_size: int = 0
    nodes: int = 0  # ready nodes
    actual: View | None = None
    autoscaler: View | None = None
    daemonset_overhead: Resources = field(default_factory=dict)
    daemonset_pods: int = 0
    scale_from_zero: ScaleFromZero = ScaleFromZero.AUTOSCALER
    # What cluster-autoscaler's node built from tags already runs (capacity.template_pods): its
    # kube-proxy mirror pod and the DaemonSets that match the autoscaler view. When not given:
    # the DaemonSet overhead above plus that kube-proxy pod.
    autoscaler_overhead: Resources | None = None
    autoscaler_overhead_pods: int | None = None
    memory: AutoscalerMemory | None = None
    # Every live node of the group, ready or not, by name: what tells the webhook a node of a known
    # group from capacity it does not model (capacity/placement.py Membership).
    node_names: tuple[str, ...] = ()
    # A Karpenter NodePool's template (provider karpenter): what the webhook judges it by
    # (capacity/karpenter/published.py); None for every other group.
    karpenter: PublishedNodePool | None = None
    # What cluster-autoscaler builds the next node from while it remembers the group (with no node):
    # computed once, so the fit check's memo on the view lives as long as the template.
    remembered: View | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale_from_zero", ScaleFromZero(self.scale_from_zero))
        # Set once, so the fit check's memo (keyed by the overhead object) keeps working.
        if self.autoscaler_overhead is None or self.autoscaler_overhead_pods is None:
            requests, pods = template_node_pods(self.daemonset_overhead, self.daemonset_pods)
            object.__setattr__(self, "autoscaler_overhead", requests)
            object.__setattr__(self, "autoscaler_overhead_pods", pods)
        object.__setattr__(self, "remembered", self._remembered())

    def overhead_of(self, view: View | None) -> tuple[Resources, int]:
        """What a new node of `view` already runs: on the autoscaler view, cluster-autoscaler's
        template pods; on the remembered node, the pods cluster-autoscaler cached with it (a record
        without them: the DaemonSet pods); on any other view, the DaemonSet pods."""
        if view is not None and view is self.autoscaler:
            return self.autoscaler_overhead or {}, self.autoscaler_overhead_pods or 0
        memory = self.memory
        if view is not None and view is self.remembered and memory is not None and memory.pods is not None:
            return memory.pods.template.requests, memory.pods.template.count
        return self.daemonset_overhead, self.daemonset_pods

    def _remembered(self) -> View | None:
        """The remembered node, plus each resource of the tag-built template it lacks, as
        AsgTagResourceNodeInfoProvider.Process adds them (cluster-autoscaler's AWS provider)."""
        memory = self.memory
        if memory is None or not memory.remembers or memory.view is None or self.provider == "manual":
            return None
        allocatable = dict(memory.view.allocatable)
        for name, value in (self.autoscaler.allocatable if self.autoscaler is not None else {}).items():
            allocatable.setdefault(name, value)
        return View(allocatable, memory.view.labels, memory.view.taints, "autoscaler-memory")

    @property
    def instance_type(self) -> str:
        """The type a new node gets: the first override, as cluster-autoscaler assumes."""
        return self.instance_types[0] if self.instance_types else ""

    def judged_view(self, with_memory: bool = True) -> tuple[View | None, str]:
        """The view that will really be used for a new pod, and why (docs/design.md, validating webhook).

        Live nodes: the actual view. No node: the autoscaler view, unless fitguard scales the group
        from zero itself, nothing autoscales it (manual capacity), or cluster-autoscaler still
        remembers a live node of the group (`with_memory`; False: what holds once it restarts).
        Max size 0 serves nothing.
        """
        if self.max_size <= 0 and self.nodes <= 0:
            return None, "max size is 0"
        if self.nodes > 0:
            return self.actual, "live nodes"
        if self.scale_from_zero is ScaleFromZero.FITGUARD:
            return self.actual, "fitguard scales it from zero"
        if with_memory and self.remembered is not None:
            return self.remembered, "no nodes: cluster-autoscaler remembers a live node of the group"
        if self.provider == "manual" or self.autoscaler is None:
            return self.actual, "no autoscaler view"
        return self.autoscaler, "no nodes: cluster-autoscaler builds the node from tags"

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> NodeGroupTemplate:
        """Parses a NodeGroupTemplate object as the API returns it. Raises ValueError/TypeError."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
            raise TypeError("metadata and spec must be maps")
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("metadata.name: required")
        overhead = dict(spec.get("daemonSetOverhead") or {})
        pods = overhead.pop("pods", 0)
        on_template = spec.get("autoscalerOverhead")
        template_pods = None
        if isinstance(on_template, Mapping):
            on_template = dict(on_template)
            template_pods = int(on_template.pop("pods", 0))
        actual = spec.get("actual")
        autoscaler = spec.get("autoscaler")
        memory = spec.get("autoscalerMemory")
        if memory is not None and not isinstance(memory, Mapping):
            raise TypeError("spec.autoscalerMemory: expected a map")
        karpenter = spec.get("karpenter")
        if karpenter is not None and not isinstance(karpenter, Mapping):
            raise TypeError("spec.karpenter: expected a map")
        return cls(
            name=name,
            provider=str(spec.get("provider") or "manual"),
            instance_types=tuple(str(t) for t in spec.get("instanceTypes") or ()),
            min_size=_int(spec, "minSize"),
            max_size=_int(spec, "maxSize"),
            desired_size=_int(spec, "desiredSize"),
            nodes=_int(spec, "nodes"),
            node_names=_names(spec.get("nodeNames"), "spec.nodeNames"),
            actual=View.from_object(actual, "spec.actual", "manual") if isinstance(actual, Mapping) else None,
            autoscaler=(
                View.from_object(autoscaler, "spec.autoscaler", "tags")
                if isinstance(autoscaler, Mapping)
                else None
            ),
            daemonset_overhead=parse_resources(overhead, "spec.daemonSetOverhead"),
            daemonset_pods=int(pods),
            scale_from_zero=_scale_from_zero(spec.get("scaleFromZero")),
            memory=(
                AutoscalerMemory.from_object(memory, "spec.autoscalerMemory") if memory is not None else None
            ),
            autoscaler_overhead=(
                parse_resources(on_template, "spec.autoscalerOverhead") if template_pods is not None else None
            ),
            autoscaler_overhead_pods=template_pods,
            karpenter=PublishedNodePool.from_object(karpenter) if karpenter is not None else None,
        )

    def to_object(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "provider": self.provider,
            "instanceTypes": list(self.instance_types),
            "minSize": self.min_size,
            "maxSize": self.max_size,
            "desiredSize": self.desired_size,
            "nodes": self.nodes,
        }
        if self.node_names:
            spec["nodeNames"] = list(self.node_names)
        if self.actual is not None:
            spec["actual"] = self.actual.to_object()
            # what `kubectl get ngt` prints: a live node's allocatable is often a byte count no
            # binary suffix divides (19136439364), shown beside a launch template's 44Gi otherwise
            spec[DISPLAY_FIELD] = to_display(self.actual.allocatable)
        elif self.karpenter is not None:
            spec[DISPLAY_FIELD] = to_display(self.karpenter.most_offered())
        if self.autoscaler is not None:
            spec["autoscaler"] = self.autoscaler.to_object(with_source=False)
        overhead: dict[str, Any] = to_quantities(self.daemonset_overhead)
        if self.daemonset_pods:
            overhead["pods"] = str(self.daemonset_pods)
        spec["daemonSetOverhead"] = overhead
        on_template: dict[str, Any] = to_quantities(self.autoscaler_overhead or {})
        on_template["pods"] = str(self.autoscaler_overhead_pods or 0)
        spec["autoscalerOverhead"] = on_template
        spec["scaleFromZero"] = self.scale_from_zero
        if self.memory is not None:
            spec["autoscalerMemory"] = self.memory.to_object()
        if self.karpenter is not None:
            spec["karpenter"] = self.karpenter.to_object()
        return {
            "apiVersion": API_VERSION,
            "kind": TEMPLATE_KIND,
            "metadata": {"name": self.name},
            "spec": spec,
        }


def _is_time(text: str) -> bool:
    """An RFC 3339 time with its offset (`2026-11-30T12:00:00Z`)."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).tzinfo is not None
    except ValueError:
        return False


def _names(raw: object, field_path: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise TypeError(f"{field_path}: expected a list of names")
    return tuple(raw)


def _int(spec: Mapping[str, Any], key: str) -> int:
    value = spec.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"spec.{key}: expected an integer")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"spec.{key}: expected an integer, got {value!r}") from None


def _scale_from_zero(value: object) -> ScaleFromZero:
    """spec.scaleFromZero (the CRD allows the two values; absent is cluster-autoscaler)."""
    try:
        return ScaleFromZero(str(value or ScaleFromZero.AUTOSCALER))
    except ValueError:
        raise ValueError(f"spec.scaleFromZero: {value!r} is neither autoscaler nor fitguard") from None
