"""POST /mutate: pod-eni injection with VPC resource controller parity, and the exhausted-node guard.

Upstream: aws/amazon-vpc-resource-controller-k8s webhooks/core/pod_webhook.go. A pod is, in this
order, host-network (left alone), Fargate (label eks.amazonaws.com/fargate-profile: annotation
fargate.amazonaws.com/pod-sg), Windows (nodeSelector kubernetes.io/os or beta.kubernetes.io/os =
windows: PrivateIPv4Address when Windows IPAM is on) or Linux (pod-eni when a policy matches), and
the patch is the JSON diff of the pod before and after, so it adds whole maps where they are absent
and touches nothing else; a reinvocation over a pod already injected patches nothing. Departure:
when a container other than the first already requests pod-eni, nothing is added (see
`requests_pod_eni_elsewhere`). The guard is fitguard's own: see `guard_patch`.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI
from capacity.sgp import pod_has_eni_request
from webhook.review import MAPPINGS, Verdict, WebhookOptions, effective_mode, request_namespace, soften

PRIVATE_IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"
FARGATE_LABEL = "eks.amazonaws.com/fargate-profile"
FARGATE_SG_ANNOTATION = "fargate.amazonaws.com/pod-sg"
OS_LABELS = ("kubernetes.io/os", "beta.kubernetes.io/os")
RESOURCE_COUNT = "1"
GUARD_EXPRESSION: Mapping[str, str] = {"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

HOST_NETWORK, FARGATE, WINDOWS, LINUX = "host-network", "fargate", "windows", "linux"

Patch = list[dict[str, Any]]


class PodError(ValueError):
    """The object is not a pod the API could have decoded (upstream answers 400)."""


class SecurityGroupSource(Protocol):
    def security_groups(self, namespace: str, pod: Mapping[str, Any]) -> list[str]: ...
    def windows_ipam_enabled(self) -> bool: ...
    def namespace_labels(self, namespace: str) -> Mapping[str, str]: ...


class Injection(enum.Enum):
    """A kind of change /mutate makes to a pod."""

    RESOURCE = "resource"  # an extended resource of "1" in the first container's limits and requests
    GUARD = "guard-affinity"  # the guard's expression in every required node selector term
    SECURITY_GROUPS = "security-groups"  # Fargate: the pod-sg annotation set to the matched groups
    ANNOTATION_REMOVED = "annotation-removed"  # Fargate: a pod-sg annotation the webhook did not set


@dataclass(frozen=True, slots=True)
class Injected:
    """One change /mutate makes to a pod: its kind, the field a person finds it in, and the value
    (the resource, the expression, the annotation's value)."""

    kind: Injection
    field: str
    value: str


@dataclass(frozen=True, slots=True)
class Mutation:
    """What the webhook does to one pod, and why: `patch` as the API server applies it, `injected`
    the same changes as a reader takes them (only those the patch really makes: a pod already
    injected gets none)."""

    pod_type: str
    patch: Patch = field(default_factory=list)
    message: str = ""
    groups: tuple[str, ...] = ()
    injected: tuple[Injected, ...] = ()

    @property
    def resource(self) -> str | None:
        """The extended resource set to "1" in the first container, or None."""
        return next((i.value for i in self.injected if i.kind is Injection.RESOURCE), None)


def escape(token: str) -> str:
    """RFC 6901: `~` is `~0` and `/` is `~1` inside one path segment."""
    return token.replace("~", "~0").replace("/", "~1")


def _map(parent: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    value = parent.get(key)
    if value is not None and not isinstance(value, MAPPINGS):
        raise PodError(f"{where}.{key}: expected a map, got {type(value).__name__}")
    return value


def check_pod(pod: object) -> None:
    """Raises PodError unless every field this webhook reads has the type the API gives it."""
    if not isinstance(pod, MAPPINGS):
        raise PodError("object: expected a Pod")
    meta = _map(pod, "metadata", "object")
    if meta is None:
        raise PodError("metadata: required")
    for key in ("labels", "annotations"):
        _map(meta, key, "metadata")
    spec = _map(pod, "spec", "object")
    if spec is None:
        raise PodError("spec: required")
    for key in ("nodeSelector", "affinity"):
        _map(spec, key, "spec")
    containers = spec.get("containers")
    if not isinstance(containers, list) or not all(isinstance(c, MAPPINGS) for c in containers):
        raise PodError("spec.containers: expected a list of containers")
    if containers:
        resources = _map(containers[0], "resources", "spec.containers[0]") or {}
        for key in ("limits", "requests"):
            _map(resources, key, "spec.containers[0].resources")


def pod_type(pod: Mapping[str, Any]) -> str:
    """Upstream WhichPod; Windows is recognised by nodeSelector only, as upstream does."""
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork") is True:
        return HOST_NETWORK
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if FARGATE_LABEL in labels:
        return FARGATE
    selector = spec.get("nodeSelector") or {}
    if any(selector.get(label) == "windows" for label in OS_LABELS):
        return WINDOWS
    return LINUX


def set_entry(patch: Patch, map_path: str, current: Mapping[str, Any] | None, key: str, value: Any) -> None:
    """The ops that make `current[key] == value`: the whole map when it is absent, else the key."""
    if current is None:
        patch.append({"op": "add", "path": map_path, "value": {key: value}})
    elif key not in current:
        patch.append({"op": "add", "path": f"{map_path}/{escape(key)}", "value": value})
    elif current[key] != value:
        patch.append({"op": "replace", "path": f"{map_path}/{escape(key)}", "value": value})


RESOURCE_FIELD = "spec.containers[0].resources (limits and requests)"
GUARD_FIELD = f"spec.affinity.nodeAffinity.{REQUIRED}"
ANNOTATION_FIELD = "metadata.annotations"


def inject_resource(patch: Patch, pod: Mapping[str, Any], resource: str) -> tuple[Injected, ...]:
    """`resource: "1"` in limits and requests of the first container (upstream never reads the
    value already there: a different one is replaced); what it injected, if anything."""
    container = pod["spec"]["containers"][0]
    base = "/spec/containers/0/resources"
    resources = container.get("resources")
    before = len(patch)
    if resources is None:
        patch.append(
            {"op": "add", "path": base, "value": {"limits": {resource: "1"}, "requests": {resource: "1"}}}
        )
    else:
        for key in ("limits", "requests"):
            set_entry(patch, f"{base}/{key}", resources.get(key), resource, RESOURCE_COUNT)
    return (Injected(Injection.RESOURCE, RESOURCE_FIELD, resource),) if len(patch) > before else ()


def with_resource(spec: Mapping[str, Any], resource: str) -> dict[str, Any]:
    """A checked pod's spec as `inject_resource`'s patch leaves it, built without the patch: the
    first container with `resource: "1"` in its limits and requests (keys already there keep their
    place, new ones come last), everything else shared with `spec`."""
    first, *rest = spec["containers"]
    resources = first.get("resources") or {}
    injected = {
        **resources,
        "limits": {**(resources.get("limits") or {}), resource: RESOURCE_COUNT},
        "requests": {**(resources.get("requests") or {}), resource: RESOURCE_COUNT},
    }
    return {**spec, "containers": [{**first, "resources": injected}, *rest]}


def requests_pod_eni_elsewhere(pod: Mapping[str, Any]) -> bool:
    """A container other than the first already requests pod-eni: injecting would ask twice.

    Upstream HandleLinuxPod (webhooks/core/pod_webhook.go) always sets pod-eni "1" in the first
    container and answers the diff (admission.PatchResponseFromRaw), so a reinvocation over a pod it
    already mutated changes nothing, and a pod-eni of the first container is set to "1". But a
    webhook that prepends a container (a service mesh) between two invocations moves the request to
    the second container, and upstream then adds another to the new first one; the VPC resource
    controller sums pod-eni over all containers (controllers/core/pod_controller.go
    getAggregateResources) and the pod needs two branch ENIs. fitguard adds nothing then.
    """
    containers = pod["spec"]["containers"]
    return pod_has_eni_request({"spec": {"containers": containers[1:]}})


def _has_guard(expressions: list[Any]) -> bool:
    return any(
        isinstance(e, MAPPINGS) and e.get("key") == EXHAUSTED_LABEL and e.get("operator") == "DoesNotExist"
        for e in expressions
    )


def guard_patch(patch: Patch, pod: Mapping[str, Any]) -> None:
    """ANDs `fitguard.io/branch-eni-exhausted DoesNotExist` into every required nodeSelectorTerm
    (terms are ORed, so each needs it), or adds a term when there is none. Idempotent.

    An empty term matches no node (k8s.io/component-helpers/scheduling/corev1); adding the
    expression would make it match, so empty terms are left as they are.
    """
    term = {"matchExpressions": [dict(GUARD_EXPRESSION)]}
    spec = pod["spec"]
    path = "/spec/affinity"
    affinity = spec.get("affinity")
    if affinity is None:
        value = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [term]}}}
        patch.append({"op": "add", "path": path, "value": value})
        return
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, MAPPINGS):
        patch.append(
            {"op": "add", "path": f"{path}/nodeAffinity", "value": {REQUIRED: {"nodeSelectorTerms": [term]}}}
        )
        return
    path = f"{path}/nodeAffinity/{REQUIRED}"
    required = node_affinity.get(REQUIRED)
    if not isinstance(required, MAPPINGS):
        patch.append({"op": "add", "path": path, "value": {"nodeSelectorTerms": [term]}})
        return
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        patch.append({"op": "add", "path": f"{path}/nodeSelectorTerms", "value": [term]})
        return
    for i, existing in enumerate(terms):
        if not isinstance(existing, MAPPINGS):
            continue
        expressions = existing.get("matchExpressions")
        if not expressions and not existing.get("matchFields"):
            continue
        where = f"{path}/nodeSelectorTerms/{i}/matchExpressions"
        if not isinstance(expressions, list) or not expressions:
            patch.append({"op": "add", "path": where, "value": [dict(GUARD_EXPRESSION)]})
        elif not _has_guard(expressions):
            patch.append({"op": "add", "path": f"{where}/-", "value": dict(GUARD_EXPRESSION)})


def _fargate(pod: Mapping[str, Any], groups: list[str]) -> Mutation:
    patch: Patch = []
    annotations = pod["metadata"].get("annotations")
    if groups:
        value = ",".join(groups)
        set_entry(patch, "/metadata/annotations", annotations, FARGATE_SG_ANNOTATION, value)
        injected = (
            Injected(Injection.SECURITY_GROUPS, ANNOTATION_FIELD, f"{FARGATE_SG_ANNOTATION}: {value}"),
        )
        return Mutation(
            FARGATE,
            patch,
            "annotated Fargate pod with its security groups",
            tuple(groups),
            injected if patch else (),
        )
    if annotations and FARGATE_SG_ANNOTATION in annotations:
        # only the controller may set it: a user-supplied one goes
        patch.append({"op": "remove", "path": f"/metadata/annotations/{escape(FARGATE_SG_ANNOTATION)}"})
        removed = Injected(Injection.ANNOTATION_REMOVED, ANNOTATION_FIELD, FARGATE_SG_ANNOTATION)
        return Mutation(
            FARGATE, patch, "removed a pod-sg annotation not set by the webhook", injected=(removed,)
        )
    return Mutation(FARGATE, message="Fargate pod not matching any SGP")


def plan(pod: Mapping[str, Any], groups: list[str], *, windows_ipam: bool, eni_guard: bool) -> Mutation:
    """The mutation of a checked pod given the security groups it matched (ignored for host-network
    and Windows pods, whose groups upstream never looks up)."""
    kind = pod_type(pod)
    patch: Patch = []
    if kind == HOST_NETWORK:
        return Mutation(kind, message="SGP not supported on Pod running on HostNetwork")
    if kind == FARGATE:
        return _fargate(pod, groups)
    if not pod["spec"]["containers"]:
        return Mutation(kind, message="pod has no containers")
    if kind == WINDOWS:
        if not windows_ipam:
            return Mutation(kind, message="Windows IPAM is not enabled")
        injected = inject_resource(patch, pod, PRIVATE_IPV4)
        return Mutation(kind, patch, f"injected {PRIVATE_IPV4}", injected=injected)
    message = "Pod didn't match any SGP"
    injected = ()
    if groups and requests_pod_eni_elsewhere(pod):
        message = f"matched security groups {','.join(groups)}: {POD_ENI} already requested, not added"
    elif groups:
        injected = inject_resource(patch, pod, POD_ENI)
        message = f"matched security groups {','.join(groups)}: injected {POD_ENI}"
    if eni_guard and (groups or pod_has_eni_request(pod)):
        before = len(patch)
        guard_patch(patch, pod)
        if len(patch) > before:
            expression = f"{EXHAUSTED_LABEL} DoesNotExist"
            injected = (*injected, Injected(Injection.GUARD, GUARD_FIELD, expression))
    return Mutation(kind, patch, message, tuple(groups), injected)


def mutate_pod(
    pod: Mapping[str, Any], namespace: str, cluster: SecurityGroupSource, config: WebhookOptions
) -> Mutation:
    """Checks the pod, looks its groups up in memory when its type needs them, and plans.
    Raises PodError for a malformed pod and LookupError when the ServiceAccount is missing."""
    check_pod(pod)
    kind = pod_type(pod)
    groups = cluster.security_groups(namespace, pod) if kind in (FARGATE, LINUX) else []
    return plan(
        pod,
        groups,
        windows_ipam=kind == WINDOWS and cluster.windows_ipam_enabled(),
        eni_guard=config.eni_guard,
    )


def reviewed(
    request: Mapping[str, Any], cluster: SecurityGroupSource, config: WebhookOptions
) -> tuple[Verdict, Mutation | None]:
    """The verdict on one pod CREATE (the caller has already checked kind, operation and
    exemptions) and the mutation it carries (None when the pod could not be mutated)."""
    namespace = request_namespace(request)
    try:
        mutation = mutate_pod(request.get("object"), namespace, cluster, config)  # type: ignore[arg-type]
    except PodError as err:
        return Verdict.deny(f"cannot decode the pod: {err}", code=400, reason="BadRequest"), None
    except LookupError as err:
        denial = Verdict.deny(f"fitguard could not match the pod to SecurityGroupPolicies: {err}")
        return soften(denial, effective_mode(namespace, cluster, config)), None
    return Verdict(allowed=True, patch=mutation.patch or None, message=mutation.message), mutation


def review(request: Mapping[str, Any], cluster: SecurityGroupSource, config: WebhookOptions) -> Verdict:
    """The verdict of `reviewed` alone."""
    return reviewed(request, cluster, config)[0]


def _pointer(path: str) -> list[str]:
    if not path.startswith("/"):
        raise ValueError(f"JSON pointer must start with /: {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def apply_patch(document: Any, patch: Patch) -> Any:
    """A JSON patch (add, replace, remove) applied to a copy, as the API server applies /mutate's
    patch before the validating webhooks run: enough for this webhook's patches, not a general
    RFC 6902 engine."""
    doc = copy.deepcopy(document)
    for op in patch:
        *parents, last = _pointer(op["path"])
        target = doc
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if op["op"] == "add":
                target.insert(index, copy.deepcopy(op["value"]))
            elif op["op"] == "replace":
                target[index] = copy.deepcopy(op["value"])
            else:
                del target[index]
        elif op["op"] in ("add", "replace"):
            if op["op"] == "replace" and last not in target:
                raise KeyError(f"replace of a missing member: {op['path']}")
            target[last] = copy.deepcopy(op["value"])
        else:
            del target[last]
    return doc
