"""Compact projections of pods and nodes: the only fields the controller's books and scaling read.

Raw JSON (a dict as the API returns it) is read once into `__slots__` records; nothing keeps the
dict or a client model (a V1Pod costs about 80 KB). Repeated strings (namespace, node, phase, owner)
are interned. About 0.34 KB a PodRecord (tracemalloc, 2,000 Job pods; tests/capacity/test_records.py keeps
it under 1 KB).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import Any, TypeVar

from capacity.autoscaler_readiness import NEVER, node_readiness
from capacity.kept import kept
from capacity.names import EXHAUSTED_LABEL, KEEP_LABEL, TERMINAL_PHASES
from capacity.pod_memo import requests_of, time_of
from capacity.pod_record import PodRecord as PodRecord  # noqa: PLC0414  # re-exported for mypy
from capacity.pod_status import list_field as _list
from capacity.pod_status import map_field as _map
from capacity.pod_status import (
    parse_time,  # noqa: F401  (re-exported: callers of records read it)
    released_at,
    scheduling,
    started,
)
from capacity.quantity import milli_to_units, parse_quantity
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, POD_ENI, parse_resources
from capacity.string_maps import string_map
from capacity.taints import Taint
from capacity.template import View

# Set by the VPC resource controller once it has attached branch ENIs to the pod: a JSON list of
# {eniId, ifAddress, privateIp, vlanId, subnetCidr}; never removed afterwards (docs/design.md failure 2).
POD_ENI_ANNOTATION = "vpc.amazonaws.com/pod-eni"
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
# Which label names a node's group, most specific first: EKS managed node groups, eksctl, Karpenter.
NODE_GROUP_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/provisioner-name",
)
MILLI = 1000
# EKS Auto Mode's nodes: the VPC resource controller skips a node so labelled (aws/amazon-vpc-
# resource-controller-k8s controllers/core/node_controller.go `Reconcile`, commit c3b4991): no trunk
# ENI, no branch ENI, whatever the node's status says (docs/upstream.md, EKS Auto Mode).
COMPUTE_TYPE_LABEL, AUTO_COMPUTE_TYPE = "eks.amazonaws.com/compute-type", "auto"


def _intern(value: object) -> str:
    if type(value) is str:
        return sys.intern(value) if value else ""
    return sys.intern(str(value)) if value else ""


# Equal numbers of many records as one object, as `_intern` for strings: replicas request the same
# CPU and memory, and pods created or scheduled in the same second share their times (150,000 pods:
# about 16 MB of separate int and float objects). One memo per type, since 1 == 1.0 as keys.
_SHARED_NUMBERS = 16_384  # distinct values kept per type; past that the memo starts again
_N = TypeVar("_N", int, float)
_ints: dict[int, int] = {}
_floats: dict[float, float] = {}


def _shared(memo: dict[_N, _N], value: _N) -> _N:
    return kept(memo, value, value, _SHARED_NUMBERS)


def _shared_int(value: int) -> int:
    return _shared(_ints, value)


def _shared_time(value: float | None) -> float | None:
    return None if value is None else _shared(_floats, value)


def _time(value: object) -> float | None:
    """`parse_time` through its memo (capacity/pod_memo.py), the value shared (`_shared_time`)."""
    return _shared_time(time_of(value))


def _branch_enis(annotation: object) -> list[Any]:
    if not isinstance(annotation, str) or not annotation:
        return []
    try:
        enis = json.loads(annotation)
    except ValueError:
        return []
    return enis if isinstance(enis, list) else []


def branch_eni_count(annotation: object) -> int:
    """How many branch ENIs the annotation lists; 0 when absent, empty or not a JSON list."""
    return len(_branch_enis(annotation))


def eni_ids_of(enis: list[Any]) -> tuple[str, ...]:
    """The `eniId`s of the annotation's entries (for --verify-with-ec2); () when there are none."""
    return tuple(str(e["eniId"]) for e in enis if isinstance(e, Mapping) and e.get("eniId")) or ()


def project_pod(obj: Mapping[str, Any]) -> PodRecord:
    """The record of a pod; raises TypeError/ValueError on a malformed one (callers count and skip)."""
    meta = _map(obj, "metadata")
    spec = _map(obj, "spec")
    status = _map(obj, "status")
    name = meta.get("name")
    if not name:
        raise ValueError("metadata.name: missing")
    namespace = _intern(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or f"{namespace}/{name}")
    requests = requests_of(spec)
    owners = _list(meta, "ownerReferences")
    owner = next((o for o in owners if isinstance(o, Mapping) and o.get("controller")), None)
    if owner is None and owners and isinstance(owners[0], Mapping):
        owner = owners[0]
    phase = _intern(status.get("phase") or "Pending")
    scheduled_at, unschedulable = scheduling(status)
    enis = _branch_enis(_map(meta, "annotations").get(POD_ENI_ANNOTATION))  # parsed once
    return PodRecord(
        uid=uid,
        namespace=namespace,
        name=str(name),
        node=_intern(spec.get("nodeName")),
        phase=phase,
        pod_eni=-((-requests.get(POD_ENI, 0)) // MILLI),
        eni_count=len(enis),
        eni_ids=eni_ids_of(enis),
        started=started(status),
        finished_at=_shared_time(released_at(status)) if phase in TERMINAL_PHASES else None,
        deleted_at=_time(meta.get("deletionTimestamp")),
        created_at=_time(meta.get("creationTimestamp")),
        scheduled_at=_shared_time(scheduled_at),
        owner_kind=_intern(owner.get("kind")) if owner else "",
        owner_name=_intern(owner.get("name")) if owner else "",  # replicas share their owner's
        keep=_map(meta, "labels").get(KEEP_LABEL) == "true",
        unschedulable=unschedulable,
        cpu=_shared_int(requests.get(CPU, 0)),
        memory=_shared_int(requests.get(MEMORY, 0)),
        ephemeral_storage=_shared_int(requests.get(EPHEMERAL_STORAGE, 0)),
        pending_spec=_placement(spec) if unschedulable is not None and requests.get(POD_ENI) else None,
    )


def same_pod(old: PodRecord, new: PodRecord) -> bool:
    """Whether two records of a pod say the same to every reader (kube/store.py `same`: an event
    that changed nothing a record reads is then not told to the books as a change). Every field is
    of a type the projection fixes, so `==` is exact, except `pending_spec`: raw JSON values, where
    1 == 1.0 == True; two of them are the same only as the same JSON text."""
    if old != new:
        return False
    if old.pending_spec is None:  # equal records: the other's is None too
        return True
    try:
        return _json_text(old.pending_spec) == _json_text(new.pending_spec)
    except (TypeError, ValueError):  # not JSON's values (a hand-written state file): told as changed
        return False


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# What decides where a pod fits (capacity.fit.PodNeeds.from_spec reads these and nothing else).
PLACEMENT_FIELDS = (
    "containers",
    "initContainers",
    "overhead",
    "resources",
    "nodeSelector",
    "affinity",
    "tolerations",
)
CONTAINER_PLACEMENT_FIELDS = ("resources", "restartPolicy")  # all pod_requests reads of a container


def _placement(spec: Mapping[str, Any]) -> dict[str, Any]:
    kept = {key: spec[key] for key in PLACEMENT_FIELDS if spec.get(key) is not None}
    for key in kept.keys() & {"containers", "initContainers"}:  # lists of maps: pod_requests checked
        kept[key] = [{f: c[f] for f in CONTAINER_PLACEMENT_FIELDS if f in c} for c in kept[key]]
    return kept


@dataclass(slots=True, repr=False)
class NodeRecord:
    """One node as the books see it: `pod_eni` is its allocatable branch ENIs, None when the node
    does not advertise the resource or is an EKS Auto Mode node (the books then count no branch
    ENI there). Slotted, compared
    field by field, never hashed."""

    name: str
    node_group: str = ""
    instance_type: str = ""
    _: KW_ONLY
    pod_eni: int | None = None
    ready: bool = True  # as cluster-autoscaler reads it (capacity/autoscaler_readiness.py)
    ready_since: float = NEVER
    unschedulable: bool = False
    exhausted: bool = False
    instance_id: str = ""
    view: View | None = None  # what cluster-autoscaler copies into a template built from this node

    def __repr__(self) -> str:
        return f"NodeRecord({self.name} {self.instance_type or '?'} pod-eni={self.pod_eni})"


def project_node(obj: Mapping[str, Any]) -> NodeRecord:
    """The record of a node; raises TypeError/ValueError on a malformed one."""
    meta, status = _map(obj, "metadata"), _map(obj, "status")
    name = meta.get("name")
    if not name:
        raise ValueError("metadata.name: missing")
    labels = _map(meta, "labels")
    allocatable = _map(status, "allocatable")
    pod_eni: int | None = None
    if POD_ENI in allocatable and labels.get(COMPUTE_TYPE_LABEL) != AUTO_COMPUTE_TYPE:
        pod_eni = milli_to_units(parse_quantity(allocatable[POD_ENI], f"status.allocatable.{POD_ENI}"))
    _list(status, "conditions")  # TypeError on a malformed list, as before
    readiness = node_readiness(obj)
    return NodeRecord(
        name=_intern(name),
        node_group=_intern(next((labels[k] for k in NODE_GROUP_LABELS if labels.get(k)), "")),
        instance_type=_intern(next((labels[k] for k in INSTANCE_TYPE_LABELS if labels.get(k)), "")),
        pod_eni=pod_eni,
        ready=readiness.ready,
        ready_since=readiness.since,
        unschedulable=bool(_map(obj, "spec").get("unschedulable")),
        exhausted=labels.get(EXHAUSTED_LABEL) == "true",
        instance_id=provider_instance_id(_map(obj, "spec").get("providerID")),
        view=_node_view(allocatable, labels, _map(obj, "spec")),
    )


def _node_view(
    allocatable: Mapping[str, Any], labels: Mapping[str, Any], spec: Mapping[str, Any]
) -> View | None:
    """None when the allocatable or taints cannot be read (the node is still booked)."""
    try:
        taints = tuple(Taint.from_object(t) for t in _list(spec, "taints") if isinstance(t, Mapping))
        resources = parse_resources(allocatable, "status.allocatable")
    except (TypeError, ValueError):
        return None
    # interned: the same label names and most values recur on every node
    read = {sys.intern(k): sys.intern(v) for k, v in string_map(labels, "metadata.labels").items()}
    return View(resources, read, taints, "live-node")


def provider_instance_id(provider_id: object) -> str:
    """`aws:///us-east-1a/i-0123456789abcdef0` -> `i-0123456789abcdef0` ("" when not an EC2 node)."""
    text = str(provider_id or "")
    if not text.startswith("aws://"):
        return ""
    return text.rstrip("/").rsplit("/", 1)[-1]


# What the discovery cycle, cluster-autoscaler's memory, the NodePools' templates and the planner
# read of a node (controller/discovery.py, memory.py, nodepools.py, scaling.py and the capacity
# functions they call): the rest of a node object (managedFields, other annotations, addresses, nodeInfo,
# images, the conditions' messages and heartbeats) is left out of the discovery cache's copy, which
# would otherwise hold about 7 KB a node (5,000 nodes: 37 MB) beside the books' records.
_READ_NODE_METADATA = ("name", "namespace", "labels", "deletionTimestamp")
_READ_NODE_STATUS = ("capacity", "allocatable", "conditions")
# the annotations Karpenter copies from a NodeClaim that capacity/karpenter/live.py reads to tell a
# node launched under its EC2NodeClass as it is now from one of an earlier spec
_READ_NODE_ANNOTATIONS = (
    "karpenter.k8s.aws/ec2nodeclass-hash",
    "karpenter.k8s.aws/ec2nodeclass-hash-version",
)
# capacity/autoscaler_readiness.py node_readiness, estimate.node_is_ready, scaling._ready
_READ_CONDITION = ("type", "status", "lastTransitionTime")


def discovery_node(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The node as the discovery cycle reads it: its name, labels, Karpenter's class hash and
    deletion, the whole spec
    (providerID, taints, unschedulable), its capacity, allocatable and conditions (type, status and
    transition time). A field of another shape than a node's is kept as it came, so every reader
    judges a malformed node as it would the whole object. Raises TypeError when the object is not a
    node's shape, ValueError without a name."""
    meta, spec, status = _map(obj, "metadata"), _map(obj, "spec"), _map(obj, "status")
    if not meta.get("name"):
        raise ValueError("node without metadata.name")
    kept = {k: _interned(status[k]) for k in _READ_NODE_STATUS if k in status}
    if isinstance(kept.get("conditions"), list):
        kept["conditions"] = [_read_condition(c) for c in kept["conditions"]]
    metadata = {k: meta[k] for k in _READ_NODE_METADATA if k in meta}
    if "labels" in metadata:
        metadata["labels"] = _interned(metadata["labels"])
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and any(k in annotations for k in _READ_NODE_ANNOTATIONS):
        metadata["annotations"] = {k: annotations[k] for k in _READ_NODE_ANNOTATIONS if k in annotations}
    return {
        **{k: v for k, v in obj.items() if k in ("kind", "apiVersion")},
        "metadata": metadata,
        "spec": dict(spec),
        "status": kept,
    }


def _read_condition(condition: Any) -> Any:
    if not isinstance(condition, Mapping):
        return condition
    return _interned({k: condition[k] for k in _READ_CONDITION if k in condition})


def _interned(value: Any) -> Any:
    """A map of strings with its keys and string values interned (the same labels, quantities and
    condition types recur on every node: one copy of each string for all of them); anything else
    as it came."""
    if not isinstance(value, Mapping):
        return value
    return {
        sys.intern(k) if type(k) is str else k: sys.intern(v) if type(v) is str else v
        for k, v in value.items()
    }
