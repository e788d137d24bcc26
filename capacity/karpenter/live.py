"""What a NodePool's live nodes offer of ephemeral-storage, beside Karpenter's estimate.

Karpenter plans every launch with its estimate of ephemeral-storage (aws/karpenter-provider-aws
`pkg/providers/instancetype/types.go` `ephemeralStorage`: the volume's size, less `kubeReserved` and
the 10% `nodefs.available` threshold), and never replaces it with what a node reports: only memory
is discovered (`instancetype.go` `UpdateInstanceTypeCapacityFromNode` reads
`node.Status.Capacity.Memory()` alone). A real node's filesystem is smaller than its volume, so its
allocatable can fall under the estimate; a pod between the two is one Karpenter launches a node for
that the scheduler then never places there.

A live node speaks for the nodes Karpenter would launch now only when it was launched under the
EC2NodeClass as it is: Karpenter stamps each NodeClaim with the class's hash
(`pkg/cloudprovider/cloudprovider.go` `Create`: `karpenter.k8s.aws/ec2nodeclass-hash` and its
`-hash-version`, the hash covering the block device mappings, instance store policy and kubelet:
`pkg/apis/v1/ec2nodeclass.go` `Hash`), the NodeClaim's annotations are copied to its node
(kubernetes-sigs/karpenter `pkg/controllers/nodeclaim/lifecycle/registration.go` `syncNode`), and
the hash controller writes the class's own (`pkg/controllers/nodeclass/hash/controller.go`); equal
hashes of one version are Karpenter's own test of no static drift (`pkg/cloudprovider/drift.go`
`areStaticFieldsDrifted`). A node without them, or launched under another class spec, is shown but
`current` is False: the webhook then warns instead of denying.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capacity.karpenter.labels import AWS, INSTANCE_TYPE, NODEPOOL
from capacity.quantity import QuantityError, parse_quantity
from capacity.resources import EPHEMERAL_STORAGE

HASH = f"{AWS}/ec2nodeclass-hash"
HASH_VERSION = f"{AWS}/ec2nodeclass-hash-version"


@dataclass(frozen=True, slots=True)
class LiveStorage:
    """The smallest ephemeral-storage allocatable (milli-units) of a NodePool's live nodes of one type."""

    allocatable: int
    nodes: int  # the nodes it was read from
    current: bool  # they were launched under the EC2NodeClass as it is now


def _hash(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, Mapping) or not annotations.get(HASH) or not annotations.get(HASH_VERSION):
        return None
    return str(annotations[HASH]), str(annotations[HASH_VERSION])


def _readings(
    nodes: Iterable[Mapping[str, Any]], nodepool: str, types: frozenset[str]
) -> Iterable[tuple[str, int, tuple[str, str] | None]]:
    """(type, ephemeral-storage allocatable, class hash) of each node of `nodepool` whose type is
    one of `types` and whose allocatable can be read; the others are skipped."""
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(NODEPOOL) != nodepool or labels.get(INSTANCE_TYPE) not in types:
            continue
        raw = ((node.get("status") or {}).get("allocatable") or {}).get(EPHEMERAL_STORAGE)
        try:
            value = parse_quantity(raw)
        except (QuantityError, TypeError):
            continue
        yield str(labels[INSTANCE_TYPE]), value, _hash(meta)


def live_storage(
    nodes: Iterable[Mapping[str, Any]],
    nodepool: str,
    nodeclass: Mapping[str, Any],
    estimates: Mapping[str, int],
) -> dict[str, LiveStorage]:
    """Per allowed type (`estimates`: type -> Karpenter's ephemeral-storage allocatable), the
    smallest allocatable its live nodes of `nodepool` offer, where it is below the estimate. The
    nodes launched under the class as it is (`nodeclass`'s hash annotations) are read first; only
    when a type has none are the others read (then not `current`)."""
    class_hash = _hash(nodeclass.get("metadata") or {})
    current: dict[str, list[int]] = {}
    other: dict[str, list[int]] = {}
    for name, value, node_hash in _readings(nodes, nodepool, frozenset(estimates)):
        same = class_hash is not None and node_hash == class_hash
        (current if same else other).setdefault(name, []).append(value)
    found = {}
    for name, estimate in estimates.items():
        values, sure = (current[name], True) if name in current else (other.get(name), False)
        if values and min(values) < estimate:
            found[name] = LiveStorage(min(values), len(values), sure)
    return found
