"""The objects tests build again and again, written once: a Pod, a Node, an AdmissionReview of any
object, a clock the test moves by hand, and the RFC 3339 text of an instant. Each builder writes only
the fields it is asked for (a pod without `requests` has no `resources`), so a test says in its
call what matters to it; a test whose builder differs in a way that matters keeps its own and says
why beside it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]

POD_ENI = "vpc.amazonaws.com/pod-eni"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
NODEGROUP = "eks.amazonaws.com/nodegroup"
ADMISSION_V1 = "admission.k8s.io/v1"


def rfc3339(epoch: float) -> str:
    """The instant as the API server writes it (whole seconds, UTC, `Z`)."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    """A clock the test moves by hand: calling it gives `now`, which may be epoch seconds or a
    datetime (then `advance` takes a timedelta)."""

    def __init__(self, now: Any = 0.0) -> None:
        self.now = now

    def __call__(self) -> Any:
        return self.now

    def advance(self, delta: Any) -> None:
        self.now += delta


def pod(
    name: str = "p",
    requests: Mapping[str, str] | None = None,
    *,
    namespace: str | None = "default",
    container: str = "c",
    image: str | None = None,
    limits: Mapping[str, str] | None = None,
    node: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    uid: str | None = None,
    meta: Mapping[str, Any] | None = None,
    phase: str | None = None,
    scheduled: float | None = None,
    started: float | None = None,
    finished: float | None = None,
    **spec: Any,
) -> Obj:
    """A v1 Pod of one container. `requests` and `limits` become its resources; `node` its
    nodeName; `meta` more metadata (ownerReferences, ...); `spec` more pod spec (nodeSelector,
    tolerations, ...). A status is written when `phase` is given: `scheduled` adds the PodScheduled
    condition at that instant, `started` the container running since then, `finished` the container
    terminated (exit 0) then."""
    metadata: Obj = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    for key, value in (("uid", uid), ("labels", labels), ("annotations", annotations)):
        if value is not None:
            metadata[key] = dict(value) if isinstance(value, Mapping) else value
    metadata.update(meta or {})
    box: Obj = {"name": container}
    if image is not None:
        box["image"] = image
    resources: Obj = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        box["resources"] = resources
    body: Obj = {"containers": [box]}
    if node is not None:
        body["nodeName"] = node
    body.update(spec)
    obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}
    if phase is not None:
        obj["status"] = _pod_status(phase, container, scheduled, started, finished)
    return obj


def _pod_status(
    phase: str, container: str, scheduled: float | None, started: float | None, finished: float | None
) -> Obj:
    status: Obj = {"phase": phase}
    if scheduled is not None:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(scheduled)}
        ]
    if finished is not None:
        state: Obj = {"terminated": {"exitCode": 0, "finishedAt": rfc3339(finished)}}
        status["containerStatuses"] = [{"name": container, "state": state}]
    elif started is not None:
        status["containerStatuses"] = [
            {"name": container, "state": {"running": {"startedAt": rfc3339(started)}}}
        ]
    return status


def node(
    name: str = "n",
    allocatable: Mapping[str, str] | None = None,
    *,
    group: str | None = None,
    instance_type: str | None = None,
    labels: Mapping[str, str] | None = None,
    ready: str | None = "True",
    **spec: Any,
) -> Obj:
    """A v1 Node, Ready unless `ready` says otherwise (None: no conditions at all). `group` and
    `instance_type` become the EKS node group and instance-type labels, beside any other `labels`;
    `spec` is its spec (taints, providerID, unschedulable, ...)."""
    named: Obj = {}
    if instance_type is not None:
        named[INSTANCE_TYPE] = instance_type
    if group is not None:
        named[NODEGROUP] = group
    named.update(labels or {})
    status: Obj = {"allocatable": dict(allocatable or {})}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": named},
        "spec": dict(spec),
        "status": status,
    }


def review(
    obj: Any,
    uid: str = "u-1",
    operation: str = "CREATE",
    *,
    kind: Any = None,
    namespace: str | None = None,
    with_resource: bool = False,
    api_version: str = ADMISSION_V1,
    **request: Any,
) -> Obj:
    """An AdmissionReview of `obj` as the API server sends it: its kind (and, with `with_resource`, its
    resource) from the object's apiVersion and kind unless `kind` is given, its namespace from the
    object's metadata unless `namespace` is given (none when the object has none). `request` adds or
    replaces request fields (oldObject, dryRun, userInfo, ...)."""
    if kind is None or with_resource:
        group, _, version = str(obj.get("apiVersion", "v1")).rpartition("/")
        named = str(obj.get("kind", "Pod"))
    req: Obj = {
        "uid": uid,
        "kind": kind if kind is not None else {"group": group, "version": version, "kind": named},
    }
    if with_resource:
        req["resource"] = {"group": group, "version": version, "resource": named.lower() + "s"}
    req["operation"] = operation
    if namespace is None and isinstance(obj, Mapping) and isinstance(obj.get("metadata"), Mapping):
        namespace = obj["metadata"].get("namespace")
    if namespace is not None:
        req["namespace"] = namespace
    req["object"] = obj
    req.update(request)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": req}


KARPENTER_KINDS = frozenset({"NodePool", "EC2NodeClass"})


def node_groups_only(objects: list[Obj]) -> list[Obj]:
    """The demo cluster (examples/cluster.yaml) without its Karpenter NodePool: the NodePool, its
    EC2NodeClass and its template left out. For the tests of what node groups and live nodes decide,
    whose pods the NodePool (c5.large, m5.large, m5.xlarge, no taint, 17Gi) would otherwise take or
    add a line to; the NodePool itself is judged in tests/e2e/test_karpenter_once.py, the demo and
    the kubectl tests."""
    return [
        o
        for o in objects
        if o.get("kind") not in KARPENTER_KINDS
        and not (
            o.get("kind") == "NodeGroupTemplate" and (o.get("spec") or {}).get("provider") == "karpenter"
        )
    ]
