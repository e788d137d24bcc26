"""Where a pod could run besides a new node of a known group, and when fitguard must not judge it.

fitguard's rule for every verdict: deny only when it knows every place the pod could run and none
of them serves it. The places are the live nodes (`LiveNode`), the node groups' next nodes
(capacity/serve.py), the Karpenter NodePools (capacity/karpenter/pools.py) and capacity it does not
model (nodes of no known group or NodePool).
This module answers the first and the last, and names the cases fitguard leaves alone
(`Abstention`).

Upstream, restated (docs/upstream.md has the commits):
- A pod with `spec.nodeName` never meets the scheduler: the kubelet admits it
  (pkg/kubelet/lifecycle/predicate.go generalFilter: noderesources.Fits against allocatable, the
  node name, node affinity and selector; of the taints only NoExecute ones, via
  TolerationsTolerateTaintsWithFilter).
- The scheduler's filters on a live node: NodeName, NodeAffinity (matchFields included),
  TaintToleration (NoSchedule and NoExecute), NodeUnschedulable (a cordoned node takes only pods
  tolerating `node.kubernetes.io/unschedulable:NoSchedule`, nodeunschedulable.go Filter),
  NodeResourcesFit. fitguard compares requests with allocatable less the DaemonSets of the node's
  group, never less the pods that happen to run there: a pod that fits once they finish is the
  scheduler's to place, not fitguard's to refuse.
- The DaemonSet controller pins each pod to its node with a required `matchFields metadata.name
  In [node]` term (pkg/controller/daemon/util/daemonset_util.go
  ReplaceDaemonSetPodNodeNameNodeAffinity) and adds tolerations (AddOrUpdateDaemonPodTolerations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from capacity.fit import LIVE_NODE_SOURCE, PodNeeds, Reason, check_fit
from capacity.karpenter.published import PublishedNodePool
from capacity.quantity import milli_to_units, parse_quantity
from capacity.resources import PODS, Resources
from capacity.selectors import required_node_terms, with_node_name
from capacity.string_maps import string_map
from capacity.taints import Taint, first_untolerated
from capacity.template import NodeGroupTemplate, View

HOSTNAME_LABEL = "kubernetes.io/hostname"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"
DEFAULT_SCHEDULER = "default-scheduler"
MIRROR_ANNOTATION = (
    "kubernetes.io/config.mirror"  # a static pod's mirror (kubetypes.ConfigMirrorAnnotationKey)
)
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
NO_EXECUTE = "NoExecute"


class Abstention(Enum):
    """Why fitguard admitted an object without judging it: the value is the metric label and the
    audit annotation, `why` what the person applying it reads."""

    OTHER_SCHEDULER = "other-scheduler"
    STATIC_POD = "static-pod"
    UNKNOWN_NODE = "unknown-node"
    UNMODELED_NODES = "unmodeled-nodes"
    NODEPOOLS = "karpenter-nodepools"

    @property
    def why(self) -> str:
        return _WHY[self]


_WHY = {
    Abstention.OTHER_SCHEDULER: "another scheduler places it",
    Abstention.STATIC_POD: "it is the mirror of a static pod the kubelet already runs",
    Abstention.UNKNOWN_NODE: "it is pinned to a node fitguard does not know",
    Abstention.UNMODELED_NODES: "it could run on nodes of no node group fitguard knows",
    Abstention.NODEPOOLS: "Karpenter NodePools may launch a node for it, and fitguard does not model them",
}


def not_judged(abstention: Abstention, subject: str, detail: str = "") -> str:
    """The warning an abstention gives: what was not checked and why, in one line."""
    more = f" ({detail})" if detail else ""
    return f"fitguard did not check this {subject}: {abstention.why}{more}"


@dataclass(frozen=True, slots=True)
class LiveNode:
    """A node as the scheduler sees it: `view` carries its allocatable, its labels with its name
    where matchFields reads it, and its taints with the unschedulable taint of a cordoned node."""

    name: str
    view: View
    unschedulable: bool = False

    @property
    def labels(self) -> Mapping[str, str]:
        return self.view.labels

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> LiveNode:
        """Raises ValueError/TypeError on a node the API would not hold."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not isinstance(meta, Mapping) or not isinstance(spec, Mapping) or not isinstance(status, Mapping):
            raise TypeError("metadata, spec and status must be maps")
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("metadata.name: required")
        raw_taints = spec.get("taints") or []
        if not isinstance(raw_taints, list):
            raise TypeError("spec.taints: expected a list")
        taints = tuple(Taint.from_object(t) for t in raw_taints if isinstance(t, Mapping))
        unschedulable = spec.get("unschedulable") is True
        if unschedulable and UNSCHEDULABLE_TAINT not in taints:
            taints += (UNSCHEDULABLE_TAINT,)
        allocatable = status.get("allocatable") or {}
        if not isinstance(allocatable, Mapping):
            raise TypeError("status.allocatable: expected a map")
        view = View(
            {str(k): parse_quantity(v, f"status.allocatable.{k}") for k, v in allocatable.items()},
            with_node_name(string_map(meta.get("labels") or {}, "metadata.labels"), name),
            taints,
            LIVE_NODE_SOURCE,
        )
        return cls(name, view, unschedulable)

    def kubelet_view(self) -> View:
        """What the kubelet checks a pod bound by `spec.nodeName` against: NoExecute taints only."""
        view = self.view
        return View(
            view.allocatable,
            view.labels,
            tuple(t for t in view.taints if t.effect == NO_EXECUTE),
            LIVE_NODE_SOURCE,
        )


@dataclass(frozen=True, slots=True)
class Pin:
    """The nodes a pod is tied to: by `spec.nodeName`, or by every required node affinity term
    naming nodes (matchFields metadata.name In, or kubernetes.io/hostname In)."""

    node_name: str = ""
    names: frozenset[str] = frozenset()
    hostnames: frozenset[str] = frozenset()


def pin_of(spec: Mapping[str, Any]) -> Pin | None:
    """The pod's pin, or None when the scheduler may place it on nodes it does not name."""
    node_name = spec.get("nodeName")
    if isinstance(node_name, str) and node_name:
        return Pin(node_name=node_name)
    terms = required_node_terms(spec)
    if not terms:
        return None
    names: set[str] = set()
    hostnames: set[str] = set()
    for term in terms:
        named = _named_in(term.get("matchFields"), "metadata.name")
        hosts = _named_in(term.get("matchExpressions"), HOSTNAME_LABEL)
        if not named and not hosts:
            return None  # this term lets the pod go to nodes it does not name
        names |= named
        hostnames |= hosts
    return Pin(names=frozenset(names), hostnames=frozenset(hostnames))


def _named_in(requirements: object, key: str) -> frozenset[str]:
    """The values of an `In` requirement on `key` (ANDed requirements: one names the nodes)."""
    for expr in requirements if isinstance(requirements, list) else []:
        if isinstance(expr, Mapping) and expr.get("key") == key and expr.get("operator") == "In":
            values = expr.get("values")
            if isinstance(values, list) and values:
                return frozenset(str(v) for v in values)
    return frozenset()


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One live node judged for a pod: empty reasons when it serves."""

    node: str
    reasons: tuple[Reason, ...]

    @property
    def serves(self) -> bool:
        return not self.reasons


@dataclass(frozen=True, slots=True)
class PinnedVerdict:
    """A pinned pod's verdict: the nodes it names, judged, or the names fitguard does not know."""

    unknown: tuple[str, ...]
    judged: tuple[NodeVerdict, ...]

    @property
    def serves(self) -> bool:
        return bool(self.unknown) or any(v.serves for v in self.judged)


def judge_pinned(needs: PodNeeds, pin: Pin, nodes: Mapping[str, LiveNode]) -> PinnedVerdict:
    """Each node the pin names, judged as its binder judges it (the kubelet for nodeName, the
    scheduler otherwise) against its allocatable; the names no known node answers to."""
    if pin.node_name:
        node = nodes.get(pin.node_name)
        if node is None:
            return PinnedVerdict((pin.node_name,), ())
        return PinnedVerdict((), (NodeVerdict(node.name, tuple(check_fit(needs, node.kubelet_view()))),))
    named = {name: nodes.get(name) for name in sorted(pin.names)}
    unknown = [name for name, node in named.items() if node is None]
    candidates = {name: node for name, node in named.items() if node is not None}
    if pin.hostnames:
        by_host = [n for n in nodes.values() if n.labels.get(HOSTNAME_LABEL) in pin.hostnames]
        found = {n.labels.get(HOSTNAME_LABEL) for n in by_host}
        unknown += sorted(h for h in pin.hostnames if h not in found)
        candidates.update((n.name, n) for n in by_host)
    judged = tuple(
        NodeVerdict(name, tuple(check_fit(needs, node.view))) for name, node in sorted(candidates.items())
    )
    return PinnedVerdict(tuple(unknown), judged)


@dataclass(frozen=True, slots=True)
class Membership:
    """Which node group each live node belongs to: the names the templates list
    (`spec.nodeNames`), else EKS's node group label naming a template; else which NodePool, when
    its `karpenter.sh/nodepool` label names one whose published template fitguard judges by
    (Karpenter's nodes of such a NodePool are known capacity: more of them come from that template)."""

    by_node: Mapping[str, str]
    groups: frozenset[str]
    pools: frozenset[str] = frozenset()

    def group_of(self, node: LiveNode) -> str:
        """Its node group's name, else its NodePool's; "" when it has neither."""
        return self.template_group(node) or self.pool_of(node)

    def template_group(self, node: LiveNode) -> str:
        named = self.by_node.get(node.name)
        if named:
            return named
        label = node.labels.get(EKS_NODEGROUP_LABEL, "")
        return label if label in self.groups else ""

    def pool_of(self, node: LiveNode) -> str:
        pool = node.labels.get(KARPENTER_NODEPOOL_LABEL, "")
        return pool if pool in self.pools else ""


Overhead = tuple[Resources, int]  # what a node's DaemonSet pods request (milli-units), and how many
NO_OVERHEAD: Overhead = ({}, 0)


def pool_overhead(record: PublishedNodePool, instance_type: str) -> Overhead:
    """The DaemonSet pods the controller published for a node of this type of the NodePool (the
    NodePool's most common set for a type it does not list), as requests and a count."""
    found = record.overheads.get(instance_type, record.overhead)
    return {k: v for k, v in found.items() if k != PODS}, milli_to_units(found.get(PODS, 0))


def overheads_of(
    membership: Membership, templates: Iterable[NodeGroupTemplate], pools: Mapping[str, PublishedNodePool]
) -> Callable[[LiveNode], Overhead]:
    """Each live node's DaemonSet overhead: its group's, its NodePool's for its instance type, or
    none for a node of neither. One object per group and per NodePool and type, so a view's
    memo of its offer (capacity/fit.py offer_of) is reused across nodes."""
    groups = {t.name: (t.daemonset_overhead, t.daemonset_pods) for t in templates}
    per_type: dict[tuple[str, str], Overhead] = {}

    def of(node: LiveNode) -> Overhead:
        group = membership.template_group(node)
        if group:
            return groups.get(group, NO_OVERHEAD)
        pool = membership.pool_of(node)
        if not pool:
            return NO_OVERHEAD
        key = (pool, node.labels.get(INSTANCE_TYPE_LABEL, ""))
        if key not in per_type:
            per_type[key] = pool_overhead(pools[pool], key[1])
        return per_type[key]

    return of


def serving_node(
    needs: PodNeeds, nodes: Iterable[LiveNode], overhead_of: Callable[[LiveNode], Overhead]
) -> str:
    """The name of a live node that serves the pod (its allocatable less the DaemonSets of its
    group or NodePool), or "" when none does."""
    for node in nodes:
        overhead, pods = overhead_of(node)
        if not check_fit(needs, node.view, overhead, pods):
            return node.name
    return ""


def placeable(needs: PodNeeds, view: View) -> bool:
    """Whether the pod's node affinity and tolerations let it onto a live node of `view`, whatever
    its resources: the filters a node's size cannot change."""
    return first_untolerated(view.taints, needs.tolerations) is None and needs.node_match(view.labels)


def unmodeled_nodes(needs: PodNeeds, nodes: Iterable[LiveNode], membership: Membership) -> list[str]:
    """Live nodes of no known group or judged NodePool the pod could be placed on, by name: capacity
    of a kind fitguard does not model (self-managed nodes, hybrid nodes, virtual nodes, Karpenter's
    of a NodePool without a template fitguard judges by)."""
    return sorted(n.name for n in nodes if not membership.group_of(n) and placeable(needs, n.view))


class Outcome(Enum):
    """What the live nodes and the unmodelled capacity say of an object no group's next node serves."""

    SERVED = "served"  # a live node takes it
    SELECTS_NOTHING = "selects-nothing"  # a DaemonSet with no node or group to put a pod on
    UNMODELED = "unmodeled"  # a node of no known group could take it
    NODEPOOLS = "nodepools"  # a Karpenter NodePool might launch a node for it
    REFUSED = "refused"  # every place it could run is known, and none serves it


@dataclass(frozen=True, slots=True)
class Beyond:
    outcome: Outcome
    names: tuple[str, ...] = ()  # the unmodelled nodes or the NodePools
    groups: tuple[str, ...] = ()  # every group judged, by name
    nodes: int = 0  # the live nodes judged


def beyond_groups(
    needs: PodNeeds,
    nodes: list[LiveNode],
    templates: Iterable[NodeGroupTemplate],
    node_pools: list[str],
    *,
    daemonset_selects_a_group: bool | None = None,
    published: Mapping[str, PublishedNodePool] | None = None,
) -> Beyond:
    """The verdict of the places beyond the known groups' next nodes, in the order of the rule:
    a live node that serves; for a DaemonSet (`daemonset_selects_a_group` given), nothing selected;
    capacity fitguard does not model; the NodePools (`node_pools`, judged by the caller); else
    refused, with the whole set judged. `published`: the NodePools whose templates the caller
    judges by, whose live nodes are therefore known capacity."""
    groups = list(templates)
    published = published or {}
    membership = Membership(
        {node: t.name for t in groups for node in t.node_names},
        frozenset(t.name for t in groups),
        frozenset(published),
    )
    if serving_node(needs, nodes, overheads_of(membership, groups, published)):
        return Beyond(Outcome.SERVED)
    if daemonset_selects_a_group is False and not any(placeable(needs, n.view) for n in nodes):
        return Beyond(Outcome.SELECTS_NOTHING)
    unmodeled = unmodeled_nodes(needs, nodes, membership)
    if unmodeled:
        return Beyond(Outcome.UNMODELED, tuple(unmodeled))
    if node_pools:
        return Beyond(Outcome.NODEPOOLS, tuple(node_pools))
    return Beyond(Outcome.REFUSED, (), tuple(sorted(t.name for t in groups)), len(nodes))
