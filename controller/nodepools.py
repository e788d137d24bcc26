"""The discovery cycle's Karpenter part: a NodeGroupTemplate (`provider: karpenter`) for each NodePool
whose template can be built from the cache's NodePools, EC2NodeClasses, nodes and DaemonSets and the
Karpenter controller's settings; why not for the others. No I/O: the cache is read by the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capacity.estimate import node_is_ready
from capacity.fresh_node import daemon_pods
from capacity.karpenter.automode import KIND as AUTOMODE_KIND
from capacity.karpenter.automode import is_automode
from capacity.karpenter.controller_options import KarpenterOptionsError, karpenter_options
from capacity.karpenter.discovered import discovered_memory
from capacity.karpenter.labels import NODEPOOL
from capacity.karpenter.nodeclass import KarpenterOptions
from capacity.karpenter.published import PROVIDER, nodepool_ready, published
from capacity.karpenter.template import TypeOffer
from capacity.resources import PODS, Resources
from capacity.template import NodeGroupTemplate, View
from controller.discovery import GroupOutcome

log = logging.getLogger(__name__)
CONTAINER = "controller"  # the chart's container name (charts/karpenter/templates/deployment.yaml)
ERROR_PREFIX = "nodepool/"  # a NodePool's key in the report's errors
KARPENTER_ERROR = "karpenter"  # the key of the Karpenter controller's unreadable settings
EC2_KIND = "EC2NodeClass"  # karpenter.k8s.aws/v1


@dataclass(frozen=True)
class NodePoolOutcomes:
    outcomes: tuple[GroupOutcome, ...]
    errors: Mapping[str, str]  # `nodepool/<name>` -> why it has no template, or what is wrong with it


def karpenter_settings(pods: Iterable[Mapping[str, Any]]) -> tuple[KarpenterOptions, str]:
    """The settings of the Karpenter controller (its first pod by namespace and name: replicas run
    one pod template), and an error when they cannot be read; no pod: Karpenter's defaults."""
    ordered = sorted(
        pods,
        key=lambda p: (
            (p.get("metadata") or {}).get("namespace", ""),
            (p.get("metadata") or {}).get("name", ""),
        ),
    )
    if not ordered:
        return KarpenterOptions(), ""
    containers = ((ordered[0].get("spec") or {}).get("containers")) or []
    chosen = next((c for c in containers if c.get("name") == CONTAINER), containers[0] if containers else {})
    try:
        return karpenter_options(chosen), ""
    except KarpenterOptionsError as err:
        return KarpenterOptions(), f"Karpenter controller settings unreadable, its defaults used: {err}"


def _overhead(daemonsets: Sequence[Mapping[str, Any]], taints: tuple[Any, ...]) -> Any:
    """The DaemonSet pods a node of an offer runs: each DaemonSet whose pod template's node selector,
    required affinity and tolerations admit the node's labels and the NodePool's taints
    (capacity/fresh_node.py `daemon_pods`, as for a node group's template)."""

    def of(offer: TypeOffer) -> Resources:
        found = daemon_pods(
            daemonsets, View(dict(offer.allocatable), dict(offer.labels), taints, "karpenter")
        )
        return {**found.pods.requests, PODS: found.pods.count * 1000} if found.pods.count else {}

    return of


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _nodeclass_ref(nodepool: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = ((nodepool.get("spec") or {}).get("template") or {}).get("spec") or {}
    ref = spec.get("nodeClassRef") if isinstance(spec, Mapping) else None
    return ref if isinstance(ref, Mapping) else {}


def nodepool_outcomes(
    nodepools: Iterable[Mapping[str, Any]],
    nodeclasses: Iterable[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
    daemonsets: Sequence[Mapping[str, Any]],
    settings: KarpenterOptions,
    taken: frozenset[str] = frozenset(),
    automode_classes: Iterable[Mapping[str, Any]] = (),
) -> NodePoolOutcomes:
    """A template per NodePool that Karpenter could launch a node for; `taken`: the node groups'
    names (a NodePool of the same name is left out, said). `nodeclasses`: the EC2NodeClasses;
    `automode_classes`: EKS Auto Mode's NodeClasses (a NodePool's nodeClassRef names its kind)."""
    classes = {
        **{(EC2_KIND, _name(c)): c for c in nodeclasses},
        **{(AUTOMODE_KIND, _name(c)): c for c in automode_classes},
    }
    outcomes, errors = [], {}
    for pool in sorted(nodepools, key=_name):
        name = _name(pool)
        why = _refused(pool, name, classes, taken)
        if why:
            errors[ERROR_PREFIX + name] = why
            log.warning("NodePool %s: no template: %s", name, why)
            continue
        kind, class_name = _class_key(pool)
        # an Auto Mode node's label for its class is not read (automode.py): no discovered memory
        memory = discovered_memory(nodes, class_name) if kind == EC2_KIND else {}
        try:
            taints = tuple(_taints(pool))
            record, built = published(
                pool, classes[kind, class_name], settings, memory, _overhead(daemonsets, taints), nodes
            )
        except (TypeError, ValueError) as err:  # NodeClassError, RequirementError name the field
            errors[ERROR_PREFIX + name] = str(err)
            log.warning("NodePool %s: no template: %s", name, err)
            continue
        if not nodepool_ready(pool):
            errors[ERROR_PREFIX + name] = "not Ready: Karpenter launches no node for it until it is"
        mine = [n for n in nodes if ((n.get("metadata") or {}).get("labels") or {}).get(NODEPOOL) == name]
        template = NodeGroupTemplate(
            name=name,
            provider=PROVIDER,
            instance_types=tuple(o.name for o in built.offers),
            nodes=sum(1 for n in mine if node_is_ready(n)),
            karpenter=record,
        )
        outcomes.append(GroupOutcome(name, template))
    return NodePoolOutcomes(tuple(outcomes), errors)


def _taints(pool: Mapping[str, Any]) -> Iterable[Any]:
    from capacity.karpenter.nodepool import nodepool_template

    return nodepool_template(pool).taints


def _class_key(pool: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the class the NodePool's nodeClassRef names: an EKS Auto Mode NodeClass by
    its group and kind (capacity/karpenter/automode.py `is_automode`), else an EC2NodeClass."""
    ref = _nodeclass_ref(pool)
    kind = AUTOMODE_KIND if is_automode(ref) else str(ref.get("kind") or EC2_KIND)
    return kind, str(ref.get("name") or "")


def _refused(
    pool: Mapping[str, Any], name: str, classes: Mapping[tuple[str, str], Any], taken: frozenset[str]
) -> str:
    """Why the NodePool gets no template ("" when it does)."""
    if (pool.get("metadata") or {}).get("deletionTimestamp"):
        return "being deleted: Karpenter launches no node for it"
    if name in taken:
        return f"a node group is named {name} too: its template is the node group's"
    kind, wanted = _class_key(pool)
    if kind not in (EC2_KIND, AUTOMODE_KIND):
        return f"nodeClassRef kind {kind}: fitguard reads EC2NodeClasses and EKS Auto Mode NodeClasses only"
    if (kind, wanted) not in classes:
        return f"{kind} {wanted!r} (spec.template.spec.nodeClassRef) not found"
    return ""
