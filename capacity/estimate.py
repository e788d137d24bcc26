"""The actual view of a node group: a live node sanitised into a template, or, with no node, an
estimate of what a new EKS node of the instance type and root volume will offer.

The estimate applies what the EKS optimized AMI configures in its kubelet (awslabs/amazon-eks-ami,
bootstrap.sh `get_cpu_millicores_to_reserve` / `get_memory_mebibytes_to_reserve` and
files/kubelet-config.json; nodeadm keeps the same figures):
    kube-reserved cpu       6% of the 1st core, 1% of the 2nd, 0.5% of the 3rd and 4th, 0.25% above
    kube-reserved memory    11 MiB per pod (the type's max pods) + 255 MiB
    kube-reserved storage   1Gi
    eviction hard           memory.available 100Mi, nodefs.available 10%
and kubelet's rule allocatable = capacity - kube-reserved - system-reserved (none) - eviction hard.
Capacity is taken as the instance's memory and the root volume's size: the kernel's and the
filesystem's own share are not known without a node, so a live node replaces the estimate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import pairwise
from typing import Any

from capacity.names import EXHAUSTED_LABEL
from capacity.quantity import MILLI, parse_quantity
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, POD_ENI, PODS, Resources
from capacity.taints import Taint
from capacity.template import View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions, sanitize_taints

MIB = 2**20
GIB = 2**30
KUBE_RESERVED_STORAGE = 1 * GIB
EVICTION_MEMORY = 100 * MIB
EVICTION_NODEFS_PERCENT = 10
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Labels that name one node, not the group: dropped from a live node's labels when it stands for a
# new node of its group (the actual view). cluster-autoscaler's cached copy keeps the second.
NODE_SPECIFIC_LABELS = frozenset({HOSTNAME_LABEL, EXHAUSTED_LABEL})
# sigs.k8s.io/cluster-autoscaler pkg/simulator/node_info_utils.go SanitizedTemplateNodeInfoFromNodeInfo
TEMPLATE_NODE_LABEL = "cluster-autoscaler.kubernetes.io/template-node"


def reserved_cpu_millicores(vcpus: int) -> int:
    """EKS AMI kube-reserved cpu: per range of millicores (0-1000, -2000, -4000, above) a share in
    hundredths of a percent (600, 100, 50, 25), each range truncated to whole millicores."""
    total = vcpus * MILLI
    bounds = (0, 1000, 2000, 4000, max(total, 4000))
    reserved = 0
    for (start, end), basis_points in zip(pairwise(bounds), (600, 100, 50, 25), strict=True):
        if total > start:
            reserved += (min(total, end) - start) * basis_points // 100 // 100
    return reserved


def reserved_memory_bytes(max_pods: int) -> int:
    """EKS AMI kube-reserved memory: 11 MiB per pod + 255 MiB."""
    return (11 * max_pods + 255) * MIB


def allocatable_ephemeral_storage(root_volume_bytes: int) -> int:
    """Root volume less kube-reserved 1Gi and the nodefs.available 10% eviction threshold."""
    threshold = root_volume_bytes * EVICTION_NODEFS_PERCENT // 100
    return max(root_volume_bytes - KUBE_RESERVED_STORAGE - threshold, 0)


def estimate_allocatable(
    vcpus: int, memory_mib: int, max_pods: int, root_volume_gib: int | None, branch_enis: int
) -> Resources:
    """Allocatable (milli-units) of a new node; no ephemeral-storage when the root volume is unknown."""
    allocatable: Resources = {
        CPU: vcpus * MILLI - reserved_cpu_millicores(vcpus),
        MEMORY: max(memory_mib * MIB - reserved_memory_bytes(max_pods) - EVICTION_MEMORY, 0) * MILLI,
        PODS: max_pods * MILLI,
    }
    if root_volume_gib:
        allocatable[EPHEMERAL_STORAGE] = allocatable_ephemeral_storage(root_volume_gib * GIB) * MILLI
    if branch_enis > 0:
        allocatable[POD_ENI] = branch_enis * MILLI
    return allocatable


def node_labels(
    instance_type: str,
    architecture: str,
    region: str = "",
    zone: str = "",
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The well-known labels kubelet and the AWS cloud provider put on a new node, plus `extra`
    (managed node group labels, or what the group's tags say its nodes carry)."""
    labels = {
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type,
        "beta.kubernetes.io/instance-type": instance_type,
    }
    if architecture:
        labels["kubernetes.io/arch"] = architecture
        labels["beta.kubernetes.io/arch"] = architecture
    if region:
        labels["topology.kubernetes.io/region"] = region
        labels["failure-domain.beta.kubernetes.io/region"] = region
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
        labels["failure-domain.beta.kubernetes.io/zone"] = zone
    labels.update(extra or {})
    return labels


def estimate_view(
    *,
    vcpus: int,
    memory_mib: int,
    max_pods: int,
    branch_enis: int,
    root_volume_gib: int | None,
    labels: Mapping[str, str],
    taints: Iterable[Taint] = (),
) -> View:
    """The actual view of a group with no node, from its launch template (`source: launch-template`)."""
    return View(
        allocatable=estimate_allocatable(vcpus, memory_mib, max_pods, root_volume_gib, branch_enis),
        labels=dict(labels),
        taints=tuple(taints),
        source="launch-template",
    )


def node_is_ready(node: Mapping[str, Any]) -> bool:
    """Ready condition True, not cordoned and not being deleted: a node whose shape is trustworthy."""
    if (node.get("metadata") or {}).get("deletionTimestamp") or (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def live_node_view(node: Mapping[str, Any], taint_options: TaintOptions = DEFAULT_TAINT_CONFIG) -> View:
    """A live node as a template: its allocatable, its labels less the node-specific ones, its
    taints as cluster-autoscaler run with `taint_options` sanitises them (capacity.template_taints).
    Raises ValueError/TypeError on a malformed node."""
    return _sanitized(node, taint_options, NODE_SPECIFIC_LABELS, {})


def remembered_node_view(node: Mapping[str, Any], taint_options: TaintOptions = DEFAULT_TAINT_CONFIG) -> View:
    """A live node as cluster-autoscaler caches it for the group (node_info_utils.go
    `createSanitizedNode`, `SanitizedTemplateNodeInfoFromNodeInfo`): every label but the hostname,
    fitguard's exhausted label included, the template-node marker, taints sanitised. Raises
    ValueError/TypeError on a malformed node."""
    return _sanitized(node, taint_options, frozenset({HOSTNAME_LABEL}), {TEMPLATE_NODE_LABEL: "true"})


def example_node_view(
    node: Mapping[str, Any], hostname: str, taint_options: TaintOptions = DEFAULT_TAINT_CONFIG
) -> View:
    """A live node as `createSanitizedNode` copies it, before the template-node marker: every label
    kept, the hostname label set to `hostname` (the template's name), taints sanitised; the node
    cluster-autoscaler chooses the DaemonSet pods of the template on (capacity/fresh_node.py).
    Raises ValueError/TypeError on a malformed node."""
    return _sanitized(node, taint_options, frozenset(), {HOSTNAME_LABEL: hostname})


def _sanitized(
    node: Mapping[str, Any], taint_options: TaintOptions, dropped: frozenset[str], added: Mapping[str, str]
) -> View:
    meta = node.get("metadata") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    taints = [Taint.from_object(t) for t in (node.get("spec") or {}).get("taints") or []]
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items() if k not in dropped}
    return View(
        allocatable={str(k): parse_quantity(v, f"status.allocatable.{k}") for k, v in allocatable.items()},
        labels={**labels, **added},
        taints=sanitize_taints(taints, taint_options),
        source="live-node",
    )
