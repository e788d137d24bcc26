"""cluster-autoscaler's template of a node group that has live nodes, and the one it caches for when
it has none, rebuilt independently of fitguard's guard code, to check that the guard never blinds it.

Upstream (sigs.k8s.io/cluster-autoscaler; docs/upstream.md has the commits):
- pkg/processors/nodeinfosprovider/mixed_nodeinfos_processor.go `Process`: the template of a group
  is built from the first node of the group, in the node lister's order, that
  `isNodeGoodTemplateCandidate` accepts; the lister is client-go's cache, a map, so any candidate
  may be the one. The template is cached; a group with no candidate gets the cached one.
- `isNodeGoodTemplateCandidate` on the node `obtainNodeLists` hands on: pkg/utils/kubernetes/
  ready.go `GetNodeReadiness` (Ready not False/Unknown, DiskPressure and NetworkUnavailable not
  True, none of the not-ready, disk-pressure, network-unavailable taints; the latest transition
  of those), stable for more than a minute, not unschedulable, no ToBeDeletedByClusterAutoscaler
  taint, no startup taint (pkg/utils/taints/taints.go `FilterOutNodesWithStartupTaints`).
- pkg/simulator/node_info_utils.go `createSanitizedNode`: a deep copy of that node whose hostname
  label is replaced by the template's name; every other label stays; pkg/utils/taints/taints.go
  `SanitizeTaints` drops its own taints, the node-condition taints and the startup/status ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from capacity.fit import PodNeeds, check_fit
from capacity.resources import parse_resources
from capacity.taints import Taint
from capacity.template import View

EXHAUSTED_LABEL = "fitguard.io/branch-eni-exhausted"
HOSTNAME = "kubernetes.io/hostname"
GROUP_LABEL = "eks.amazonaws.com/nodegroup"
NOT_READY = {
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/network-unavailable",
}
DROPPED = {
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
    *NOT_READY,
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "node.cloudprovider.kubernetes.io/shutdown",
    "cloud.google.com/impending-node-termination",
    "NodeWithImpairedVolumes",
}
STARTUP_PREFIXES = (
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "startup-taint.cluster-autoscaler.kubernetes.io/",
)
STATUS_PREFIX = "status-taint.cluster-autoscaler.kubernetes.io/"


def _epoch(text: str | None) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else float("-inf")


def _candidate(node: Mapping[str, Any], now: float) -> bool:
    spec = node.get("spec") or {}
    taints = spec.get("taints") or []
    ready, found, since = True, False, float("-inf")
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            found = True
            ready = ready and c.get("status") not in ("False", "Unknown")
        elif c.get("type") in ("DiskPressure", "NetworkUnavailable"):
            ready = ready and c.get("status") != "True"
        else:
            continue
        since = max(since, _epoch(c.get("lastTransitionTime")))
    for t in taints:
        if t.get("key") in NOT_READY:
            ready = False
            since = max(since, _epoch(t.get("timeAdded")))
    keys = [t.get("key", "") for t in taints]
    return (
        found
        and ready
        and since + 60 < now
        and not spec.get("unschedulable")
        and "ToBeDeletedByClusterAutoscaler" not in keys
        and not any(k.startswith(STARTUP_PREFIXES) for k in keys)
    )


def templates(
    nodes: Iterable[Mapping[str, Any]], group: str, now: float = 0.0, *, without_fitguard: bool = False
) -> list[View]:
    """Every template cluster-autoscaler may build for `group` at `now`, one per candidate node;
    with `without_fitguard`, the same cluster had fitguard never labelled a node."""
    result = []
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        if labels.get(GROUP_LABEL) != group or not _candidate(node, now):
            continue
        labels[HOSTNAME] = f"template-node-for-{group}"
        if without_fitguard:
            labels.pop(EXHAUSTED_LABEL, None)
        taints = tuple(
            Taint.from_object(t)
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("key") not in DROPPED
            and not t.get("key", "").startswith((*STARTUP_PREFIXES, STATUS_PREFIX))
        )
        allocatable = parse_resources((node.get("status") or {}).get("allocatable"), "allocatable")
        result.append(View(allocatable, labels, taints, "live-node"))
    return result


def fits_some(spec: Mapping[str, Any], views: Iterable[View]) -> bool:
    needs = PodNeeds.from_spec(spec)
    return any(not check_fit(needs, view) for view in views)


def blinded(
    nodes: list[Mapping[str, Any]], group: str, pod_specs: Iterable[Mapping[str, Any]], now: float = 0.0
) -> list[int]:
    """Indexes of the pods that fit a template of the group without fitguard but none with it."""
    with_fitguard = templates(nodes, group, now)
    without = templates(nodes, group, now, without_fitguard=True)
    return [
        i
        for i, spec in enumerate(pod_specs)
        if fits_some(spec, without) and not fits_some(spec, with_fitguard)
    ]
