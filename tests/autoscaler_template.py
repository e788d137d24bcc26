"""cluster-autoscaler's template of a node group that has live nodes, rebuilt independently of
fitguard's guard code, to check that the guard never blinds it.

Upstream (kubernetes/autoscaler):
- cluster-autoscaler/processors/nodeinfosprovider/mixed_nodeinfos_processor.go `Process`: the
  template of a group is built from the first node of the group, in the node lister's order, that
  `isNodeGoodTemplateCandidate` accepts (Ready, stable for a minute, not spec.unschedulable). The
  lister is client-go's cache, a map: no order is promised, so any candidate may be the one.
- cluster-autoscaler/simulator/node_info_utils.go `createSanitizedNode`: a deep copy of that node
  whose hostname label is replaced by the template's name; every other label stays; taints are
  sanitised (cluster-autoscaler's own ToBeDeleted/DeletionCandidate taints dropped).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from capacity.fit import PodNeeds, check_fit
from capacity.resources import parse_resources
from capacity.taints import Taint
from capacity.template import View

EXHAUSTED_LABEL = "fitguard.io/branch-eni-exhausted"
HOSTNAME = "kubernetes.io/hostname"
GROUP_LABEL = "eks.amazonaws.com/nodegroup"
AUTOSCALER_TAINTS = frozenset({"ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler"})


def _candidate(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not (node.get("spec") or {}).get("unschedulable")


def templates(
    nodes: Iterable[Mapping[str, Any]], group: str, *, without_fitguard: bool = False
) -> list[View]:
    """Every template cluster-autoscaler may build for `group`, one per candidate node; with
    `without_fitguard`, the same cluster had fitguard never labelled a node."""
    result = []
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        if labels.get(GROUP_LABEL) != group or not _candidate(node):
            continue
        labels[HOSTNAME] = f"template-node-for-{group}"
        if without_fitguard:
            labels.pop(EXHAUSTED_LABEL, None)
        taints = tuple(
            Taint.from_object(t)
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("key") not in AUTOSCALER_TAINTS
        )
        allocatable = parse_resources((node.get("status") or {}).get("allocatable"), "allocatable")
        result.append(View(allocatable, labels, taints, "live-node"))
    return result


def fits_some(spec: Mapping[str, Any], views: Iterable[View]) -> bool:
    needs = PodNeeds.from_spec(spec)
    return any(not check_fit(needs, view) for view in views)


def blinded(nodes: list[Mapping[str, Any]], group: str, pod_specs: Iterable[Mapping[str, Any]]) -> list[int]:
    """Indexes of the pods that fit a template of the group without fitguard but none with it."""
    with_fitguard = templates(nodes, group)
    without = templates(nodes, group, without_fitguard=True)
    return [
        i
        for i, spec in enumerate(pod_specs)
        if fits_some(spec, without) and not fits_some(spec, with_fitguard)
    ]
