"""Whether cluster-autoscaler may build a group's template from a node: its reading of the node's
readiness, and its rule for a good template candidate. The one rule the memory record
(capacity/autoscaler_memory.py, controller/memory.py), the guard (capacity/guard.py, through
controller/books.py) and the scaling driver's exhausted groups (controller/scaling.py) follow.

Restated from sigs.k8s.io/cluster-autoscaler (docs/upstream.md has the commit):
- pkg/utils/kubernetes/ready.go `GetNodeReadiness` (`GetReadinessState` calls it): a node is not
  ready when its Ready condition is False or Unknown, when DiskPressure or NetworkUnavailable is
  True, or when it carries one of three taints (not-ready, disk-pressure, network-unavailable;
  unreachable and memory or pid pressure are not among them); the transition time is the latest
  of those three conditions' transition times (whatever their status) and of those taints'
  `timeAdded`. A node without a Ready condition is not ready.
- pkg/core/static_autoscaler.go `obtainNodeLists`: a ready, schedulable node carrying a startup
  taint (pkg/utils/taints/taints.go `FilterOutNodesWithStartupTaints`), or the AWS GPU label
  without any GPU allocatable (pkg/processors/customresources/gpu_processor.go
  `FilterOutNodesWithUnreadyResources`, pkg/utils/gpu/gpu.go `NodeHasGpuAllocatable`), is handed on
  as a NotReady copy.
- pkg/processors/nodeinfosprovider/mixed_nodeinfos_processor.go `isNodeGoodTemplateCandidate`:
  ready, its transition time plus `stabilizationDelay` (one minute) strictly before now, not
  `spec.unschedulable`, no `ToBeDeletedByClusterAutoscaler` taint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from capacity.resources import parse_resources
from capacity.string_maps import string_map
from capacity.taints import Taint
from capacity.template import View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TO_BE_DELETED, TaintOptions

STABILIZATION_SECONDS = 60.0  # mixed_nodeinfos_processor.go stabilizationDelay
# ready.go GetNodeReadiness notReadyTaints (k8s.io/api core/v1 TaintNodeNotReady,
# TaintNodeDiskPressure, TaintNodeNetworkUnavailable)
NOT_READY_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/network-unavailable",
    }
)
# The conditions whose transition times count; of them only DiskPressure and NetworkUnavailable
# make a node not ready by being True.
PRESSURE_CONDITIONS = frozenset({"DiskPressure", "NetworkUnavailable"})
# cloudprovider/aws/aws_cloud_provider.go GPULabel; pkg/utils/gpu/gpu.go GPUVendorResourceNames
GPU_LABEL = "k8s.amazonaws.com/accelerator"
GPU_RESOURCES = (
    "nvidia.com/gpu",
    "habana.ai/gaudi",
    "gpu.intel.com/xe",
    "amd.com/gpu",
    "microsoft.com/directx",
)
NEVER = -math.inf  # Go's zero time: no transition known, stable for ever
UNKNOWN = math.inf  # a time nobody can read: never known to be stable


@dataclass(frozen=True, slots=True)
class Readiness:
    """`GetNodeReadiness`'s answer: ready or not, and the latest transition (epoch seconds)."""

    ready: bool
    since: float = NEVER


def _map(node: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = node.get(key)
    return value if isinstance(value, Mapping) else {}


def _time(value: object) -> float:
    """Epoch seconds of an RFC 3339 time; NEVER when absent; UNKNOWN when unreadable."""
    if value is None or value == "":
        return NEVER
    if not isinstance(value, str):
        return UNKNOWN
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return UNKNOWN
    return parsed.timestamp() if parsed.tzinfo is not None else UNKNOWN


def node_readiness(node: Mapping[str, Any]) -> Readiness:
    """`GetNodeReadiness` of a node object."""
    status, spec = _map(node, "status"), _map(node, "spec")
    ready, found, since = True, False, NEVER
    for condition in status.get("conditions") or ():
        if not isinstance(condition, Mapping):
            continue
        kind, value = condition.get("type"), condition.get("status")
        if kind == "Ready":
            found = True
            ready = ready and value not in ("False", "Unknown")
        elif kind in PRESSURE_CONDITIONS:
            ready = ready and value != "True"
        else:
            continue
        since = max(since, _time(condition.get("lastTransitionTime")))
    for taint in spec.get("taints") or ():
        if isinstance(taint, Mapping) and taint.get("key") in NOT_READY_TAINTS:
            ready = False
            since = max(since, _time(taint.get("timeAdded")))
    return Readiness(ready, since) if found else Readiness(False)


def is_good_candidate(
    readiness: Readiness,
    view: View | None,
    unschedulable: bool,
    now: float,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> bool:
    """`isNodeGoodTemplateCandidate` of a node as `obtainNodeLists` hands it on. `view`: the node's
    own labels, allocatable and unsanitised taints (None: unreadable, no candidate)."""
    if view is None or not readiness.ready or unschedulable:
        return False
    keys = {taint.key for taint in view.taints}
    if TO_BE_DELETED in keys or any(taint_options.is_startup_taint(key) for key in keys):
        return False
    if GPU_LABEL in view.labels and not any(view.allocatable.get(name, 0) > 0 for name in GPU_RESOURCES):
        return False
    return readiness.since + STABILIZATION_SECONDS < now


def node_view(node: Mapping[str, Any]) -> View | None:
    """A node object's own labels, allocatable and taints (None when unreadable)."""
    meta, spec, status = _map(node, "metadata"), _map(node, "spec"), _map(node, "status")
    try:
        taints = spec.get("taints") or []
        if not isinstance(taints, list):
            raise TypeError("spec.taints: expected a list")
        return View(
            parse_resources(status.get("allocatable") or {}, "status.allocatable"),
            string_map(meta.get("labels") or {}, "metadata.labels"),
            tuple(Taint.from_object(t) for t in taints if isinstance(t, Mapping)),
            "live-node",
        )
    except (TypeError, ValueError):
        return None


def is_template_candidate(
    node: Mapping[str, Any], now: float, taint_options: TaintOptions = DEFAULT_TAINT_CONFIG
) -> bool:
    """`is_good_candidate` of a node object."""
    spec = _map(node, "spec")
    return is_good_candidate(
        node_readiness(node), node_view(node), bool(spec.get("unschedulable")), now, taint_options
    )
