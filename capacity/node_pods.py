"""The pods cluster-autoscaler copies from a live node into the template it builds from that node,
and the record of them kept with its memory of the node (spec.autoscalerMemory). Pure.

Restated from sigs.k8s.io/cluster-autoscaler 33c3f97b:
- pkg/simulator/node_info_utils.go `podsExpectedOnFreshNode`, its first loop: of the pods on the
  example node, one being deleted (deletionTimestamp set) is skipped; a mirror pod or a DaemonSet
  pod is kept; a pod whose controller is a DaemonSet marks that DaemonSet (by UID) as running there,
  so it is not added again.
- pkg/utils/pod/pod.go `IsMirrorPod` (the `kubernetes.io/config.mirror` annotation present) and
  `IsDaemonSetPod` (controller reference of kind DaemonSet, or the annotation
  `cluster-autoscaler.kubernetes.io/daemonset-pod: "true"`).
- pkg/utils/kubernetes/listers.go `AllPodLister.List`: the snapshot holds no Succeeded or Failed pod.
- pkg/utils/pod/pod.go `PodRequests` (component-helpers' PodRequests: capacity/requests.py).
The second half of that function (the DaemonSets not running there) is capacity/fresh_node.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.names import TERMINAL_PHASES
from capacity.requests import pod_requests
from capacity.resources import Resources, add, parse_resources, to_quantities

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DAEMONSET_POD_ANNOTATION = "cluster-autoscaler.kubernetes.io/daemonset-pod"


@dataclass(frozen=True, slots=True, order=True)
class DaemonSetRef:
    """A DaemonSet as a pod's controller reference names it (cluster-autoscaler matches the UID)."""

    namespace: str
    name: str
    uid: str

    def to_object(self) -> dict[str, str]:
        return {"namespace": self.namespace, "name": self.name, "uid": self.uid}

    @classmethod
    def from_object(cls, raw: object, field_path: str) -> DaemonSetRef:
        if not isinstance(raw, Mapping) or not all(
            isinstance(raw.get(k, ""), str) for k in ("namespace", "name", "uid")
        ):
            raise TypeError(f"{field_path}: expected a map of namespace, name and uid strings")
        return cls(raw.get("namespace", ""), raw.get("name", ""), raw.get("uid", ""))


@dataclass(frozen=True, slots=True)
class TemplatePods:
    """Requests (milli-units) and count of the pods on a template node."""

    requests: Resources = field(default_factory=dict)
    count: int = 0

    def to_object(self) -> dict[str, str]:
        obj = to_quantities(self.requests)
        obj["pods"] = str(self.count)
        return obj

    @classmethod
    def from_object(cls, raw: object, field_path: str) -> TemplatePods:
        if not isinstance(raw, Mapping):
            raise TypeError(f"{field_path}: expected a map of resource quantities")
        rest = dict(raw)
        count = rest.pop("pods", 0)
        if isinstance(count, bool) or not isinstance(count, int | str) or not str(count).isdigit():
            raise ValueError(f"{field_path}.pods: expected a whole count, got {count!r}")
        return cls(parse_resources(rest, field_path), int(count))


@dataclass(frozen=True, slots=True)
class NodePods:
    """What `podsExpectedOnFreshNode` keeps from a live node: its DaemonSet and mirror pods not being
    deleted, and the DaemonSets that run a pod there; `ignored` names pods whose requests fitguard
    cannot read (left out, so the overhead errs low: the guard and the webhook never refuse on it)."""

    pods: TemplatePods = field(default_factory=TemplatePods)
    daemonsets: tuple[DaemonSetRef, ...] = ()
    ignored: tuple[str, ...] = field(default=(), compare=False)

    @property
    def running_uids(self) -> frozenset[str]:
        return frozenset(ref.uid for ref in self.daemonsets)


def controller_of(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference marked `controller: true` (apimachinery metav1.GetControllerOf)."""
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def is_mirror_pod(meta: Mapping[str, Any]) -> bool:
    return MIRROR_ANNOTATION in (meta.get("annotations") or {})


def is_daemonset_pod(meta: Mapping[str, Any]) -> bool:
    ref = controller_of(meta)
    if ref is not None and ref.get("kind") == "DaemonSet":
        return True
    return (meta.get("annotations") or {}).get(DAEMONSET_POD_ANNOTATION) == "true"


def pods_on_node(pods: Iterable[Mapping[str, Any]], node_name: str) -> NodePods:
    """The DaemonSet and mirror pods on `node_name` that cluster-autoscaler copies into a template
    built from that node, and the DaemonSets running there. `pods` may hold pods of other nodes."""
    requests: Resources = {}
    count = 0
    running: set[DaemonSetRef] = set()
    ignored = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        if spec.get("nodeName") != node_name or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        if meta.get("deletionTimestamp"):
            continue
        ref = controller_of(meta)
        if ref is not None and ref.get("kind") == "DaemonSet":
            running.add(
                DaemonSetRef(
                    str(meta.get("namespace") or ""), str(ref.get("name") or ""), str(ref.get("uid") or "")
                )
            )
        if not (is_mirror_pod(meta) or is_daemonset_pod(meta)):
            continue
        try:
            add(requests, pod_requests(spec))
        except (TypeError, ValueError) as err:
            ignored.append(f"{meta.get('namespace')}/{meta.get('name')}: {err}")
            continue
        count += 1
    return NodePods(TemplatePods(requests, count), tuple(sorted(running)), tuple(ignored))


@dataclass(frozen=True, slots=True)
class RememberedPods:
    """The pods on the template cluster-autoscaler cached from a group's live node: the ones copied
    from the node (`on_node`) and, with the DaemonSets it added, all of them (`template`)."""

    on_node: NodePods
    template: TemplatePods

    def to_object(self) -> dict[str, Any]:
        return {
            "nodePods": self.on_node.pods.to_object(),
            "runningDaemonSets": [ref.to_object() for ref in self.on_node.daemonsets],
            "overhead": self.template.to_object(),
        }

    @classmethod
    def from_object(cls, raw: Mapping[str, Any], field_path: str) -> RememberedPods | None:
        """The record in `raw` (spec.autoscalerMemory); None when it has none (written before
        fitguard recorded the pods). Raises TypeError/ValueError naming the field."""
        if raw.get("overhead") is None:
            return None
        refs = raw.get("runningDaemonSets") or []
        if not isinstance(refs, list):
            raise TypeError(f"{field_path}.runningDaemonSets: expected a list")
        on_node = NodePods(
            TemplatePods.from_object(raw.get("nodePods") or {}, f"{field_path}.nodePods"),
            tuple(
                DaemonSetRef.from_object(r, f"{field_path}.runningDaemonSets[{i}]")
                for i, r in enumerate(refs)
            ),
        )
        return cls(on_node, TemplatePods.from_object(raw["overhead"], f"{field_path}.overhead"))
