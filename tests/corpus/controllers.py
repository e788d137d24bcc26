"""The pods Kubernetes' controllers make from a workload, restated from kubernetes/kubernetes so the
corpus test judges what the apiserver really receives (docs/upstream.md, "Pods as their
controllers make them").

DaemonSet (pkg/controller/daemon/daemon_controller.go at 0033f658085be27cff4044840443955a1fc5e01e,
pkg/controller/daemon/util/daemonset_util.go at 05c351a9037bd79bf88c56171a951c3097b658da):
- `NodeShouldRunDaemonPod` / `predicates` / `NewPod`: a node gets a pod when the template names no
  node or names this one, the node's labels satisfy the template's nodeSelector and required node
  affinity (`nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`, node name fields included), and
  no NoSchedule or NoExecute taint of the node is left untolerated by the template's tolerations
  plus the ones `AddOrUpdateDaemonPodTolerations` adds;
- `syncNodes`: each pod is `CreatePodTemplate(template, generation, hash)` (the added tolerations,
  labels `pod-template-generation` and `controller-revision-hash`) whose node affinity
  `ReplaceDaemonSetPodNodeNameNodeAffinity` pins to the node: the required term list is REPLACED by
  one term `matchFields: metadata.name In [node]` (preferred terms and pod (anti-)affinity kept),
  created by `CreatePods` with the DaemonSet as controller reference and no spec.nodeName.
Deployment (pkg/controller/controller_utils.go `GetPodFromTemplate`, read at
1f8996f8cec98af38ab4cba237421b28c1cef9a3): the ReplicaSet `<deployment>-<pod-template-hash>` makes
`replicas` pods with the template's labels (plus `pod-template-hash`), annotations and finalizers,
`generateName: <replicaset>-` and the ReplicaSet as controller reference; the spec is the template's.
The stored version of GetPodFromTemplate also wrote a `kubernetes.io/created-by` annotation, which
later versions dropped: it is not reproduced. The hash is a stand-in (fnv-1a of the template's JSON,
spelled with rand.SafeEncodeString's alphabet), not upstream's ComputeHash over DeepHashObject:
nothing fitguard reads depends on its value.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

Obj = dict[str, Any]

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
# DeprecatedTemplateGeneration: the apiserver sets it to 1 on a DaemonSet's creation (its strategy's
# PrepareForCreate), so the first pods carry pod-template-generation "1".
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
# k8s.io/api/core/v1 well_known_taints.go
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DISK_PRESSURE, MEMORY_PRESSURE = "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure"
PID_PRESSURE, UNSCHEDULABLE = "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"
NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery pkg/util/rand SafeEncodeString


def _toleration(key: str, effect: str) -> Obj:
    return {"key": key, "operator": "Exists", "effect": effect}


def daemon_tolerations(host_network: bool) -> list[Obj]:
    """AddOrUpdateDaemonPodTolerations' tolerations, in its order."""
    added = [_toleration(NOT_READY, "NoExecute"), _toleration(UNREACHABLE, "NoExecute")]
    added += [_toleration(key, "NoSchedule") for key in (DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE)]
    added.append(_toleration(UNSCHEDULABLE, "NoSchedule"))
    if host_network:
        added.append(_toleration(NETWORK_UNAVAILABLE, "NoSchedule"))
    return added


def _same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """v1.Toleration.MatchToleration: key, operator, value and effect equal."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def add_or_update_toleration(spec: Obj, toleration: Obj) -> None:
    """v1helper.AddOrUpdateTolerationInPodSpec: an equal toleration leaves the list alone, a matching
    one (differing in tolerationSeconds) is replaced in place, else the toleration is appended."""
    current = list(spec.get("tolerations") or [])
    replaced = False
    result = []
    for existing in current:
        if _same_toleration(toleration, existing):
            if dict(existing) == toleration:
                return
            result.append(dict(toleration))
            replaced = True
            continue
        result.append(existing)
    if not replaced:
        result.append(dict(toleration))
    spec["tolerations"] = result


def add_daemon_tolerations(spec: Obj) -> None:
    for toleration in daemon_tolerations(spec.get("hostNetwork") is True):
        add_or_update_toleration(spec, toleration)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """v1.Toleration.ToleratesTaint: effect (empty: all), key (empty with Exists: all), then Exists
    or Equal (the default operator) on the value."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(taints: list[Mapping[str, Any]], tolerations: list[Mapping[str, Any]]) -> list[str]:
    """FindMatchingUntoleratedTaint over the NoSchedule and NoExecute taints (predicates' filter)."""
    return [
        f"{t.get('key')}={t.get('value') or ''}:{t.get('effect')}"
        for t in taints
        if t.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(x, t) for x in tolerations)
    ]


def _requirement(expr: Mapping[str, Any], value: str | None) -> bool:
    """One NodeSelectorRequirement against a label (or field) value, None when absent."""
    operator, values = expr.get("operator"), list(expr.get("values") or [])
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if operator == "Gt" else left < right
    return False


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A NodeSelectorTerm: its expressions and fields ANDed; a term with neither matches nothing.
    matchFields knows only metadata.name (corev1 nodeaffinity's field selector)."""
    labels = node["metadata"].get("labels") or {}
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    if not all(_requirement(e, labels.get(e["key"])) for e in expressions):
        return False
    name = node["metadata"]["name"]
    return all(f.get("key") == "metadata.name" and _requirement(f, name) for f in fields)


def required_affinity_matches(spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): spec.nodeSelector, then the required
    node selector's terms ORed."""
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED)
    if required is None:
        return True
    return any(_term_matches(term, node) for term in required.get("nodeSelectorTerms") or [])


def should_run(ds: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """NodeShouldRunDaemonPod's shouldRun: the pod NewPod builds fits the node by name, required
    affinity and taints."""
    spec: Obj = copy.deepcopy(ds["spec"]["template"].get("spec") or {})
    wanted = spec.get("nodeName") or ""
    name = node["metadata"]["name"]
    if wanted and wanted != name:
        return False
    add_daemon_tolerations(spec)
    taints = (node.get("spec") or {}).get("taints") or []
    return required_affinity_matches(spec, node) and not untolerated(taints, spec["tolerations"])


def pin_to_node(affinity: Obj | None, node_name: str) -> Obj:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the required node selector becomes one term with
    `matchFields: metadata.name In [node]`, replacing any terms the template had."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    selector = {"nodeSelectorTerms": [term]}
    if affinity is None:
        return {"nodeAffinity": {REQUIRED: selector}}
    if affinity.get("nodeAffinity") is None:
        affinity["nodeAffinity"] = {REQUIRED: selector}
        return affinity
    node_affinity = affinity["nodeAffinity"]
    if node_affinity.get(REQUIRED) is None:
        node_affinity[REQUIRED] = selector
        return affinity
    node_affinity[REQUIRED]["nodeSelectorTerms"] = [term]
    return affinity


def template_hash(template: Mapping[str, Any]) -> str:
    """A stable stand-in for the controllers' template hash (see the module docstring)."""
    value = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True).encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in str(value))


def _owner(kind: str, api_version: str, name: str) -> Obj:
    """metav1.NewControllerRef; the uid is the owner's, which a manifest does not have yet."""
    uid = f"00000000-0000-4000-8000-{template_hash({'kind': kind, 'name': name})[:12].ljust(12, 'b')}"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(template: Mapping[str, Any], namespace: str, owner: Obj) -> Obj:
    """GetPodFromTemplate: labels, annotations and finalizers of the template, generateName from
    the owner's name, the owner as controller reference, the template's spec."""
    meta = template.get("metadata") or {}
    pod_meta: Obj = {"generateName": f"{owner['name']}-", "namespace": namespace}
    for key in ("labels", "annotations"):
        if meta.get(key):
            pod_meta[key] = dict(meta[key])
    if meta.get("finalizers"):
        pod_meta["finalizers"] = list(meta["finalizers"])
    pod_meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": copy.deepcopy(template["spec"])}


def daemonset_pods(
    ds: Mapping[str, Any], namespace: str, nodes: Sequence[Mapping[str, Any]]
) -> Iterator[Obj]:
    """One pod per node the DaemonSet should run on, as syncNodes creates it."""
    template: Obj = copy.deepcopy(ds["spec"]["template"])
    add_daemon_tolerations(template.setdefault("spec", {}))
    labels = template.setdefault("metadata", {}).get("labels") or {}
    annotations = ds["metadata"].get("annotations") or {}
    labels["pod-template-generation"] = annotations.get(TEMPLATE_GENERATION_ANNOTATION, "1")
    labels["controller-revision-hash"] = template_hash(ds["spec"]["template"])
    template["metadata"]["labels"] = labels
    owner = _owner("DaemonSet", "apps/v1", ds["metadata"]["name"])
    for node in nodes:
        if not should_run(ds, node):
            continue
        pod_template = copy.deepcopy(template)
        spec = pod_template["spec"]
        spec["affinity"] = pin_to_node(spec.get("affinity"), node["metadata"]["name"])
        yield pod_from_template(pod_template, namespace, owner)


def deployment_pods(deployment: Mapping[str, Any], namespace: str) -> Iterator[Obj]:
    """The pods of the Deployment's first ReplicaSet, `replicas` of them (1 when unset)."""
    template: Obj = copy.deepcopy(deployment["spec"]["template"])
    digest = template_hash(deployment["spec"]["template"])
    labels = template.setdefault("metadata", {}).get("labels") or {}
    labels["pod-template-hash"] = digest
    template["metadata"]["labels"] = labels
    owner = _owner("ReplicaSet", "apps/v1", f"{deployment['metadata']['name']}-{digest}")
    replicas = deployment["spec"].get("replicas")
    for _ in range(1 if replicas is None else int(replicas)):
        yield pod_from_template(template, namespace, owner)


def controller_pods(obj: Mapping[str, Any], namespace: str, nodes: Sequence[Mapping[str, Any]]) -> list[Obj]:
    """The pods the object's controller makes in `namespace` on a cluster of `nodes`. Raises
    ValueError for a workload kind this module does not restate."""
    kind = obj.get("kind")
    if kind == "DaemonSet":
        return list(daemonset_pods(obj, namespace, nodes))
    if kind == "Deployment":
        return list(deployment_pods(obj, namespace))
    raise ValueError(f"no controller model for {kind}")
