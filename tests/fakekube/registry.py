"""The resource types the fake API server serves, and how to find one from a URL or an object."""

from __future__ import annotations

from dataclasses import dataclass, field

# Field selectors the real apiserver accepts beyond metadata.name/metadata.namespace
# (pkg/registry/core/pod/strategy.go PodToSelectableFields, node/strategy.go, secret/strategy.go).
_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)

# pkg/registry/core/event/strategy.go ToSelectableFields.
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "type",
)  # source and reportingComponent are left out: they are not JSON paths of the object


@dataclass(frozen=True)
class ResourceType:
    """One REST resource: where it lives, what it is called and which semantics apply to it."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    has_status: bool  # status is a subresource: the main resource cannot write it
    builtin: bool = True  # False for custom resources: no strategic merge patch, update needs an RV
    returns_deleted_object: bool = False  # DELETE answers the object, not a Status
    extra_fields: tuple[str, ...] = field(default=())  # selectable fields beyond metadata.*

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def selectable_fields(self) -> tuple[str, ...]:
        return ("metadata.name", "metadata.namespace", *self.extra_fields)


def _core(
    plural: str,
    kind: str,
    namespaced: bool,
    has_status: bool = False,
    *,
    returns_deleted_object: bool = False,
    extra_fields: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType(
        "",
        "v1",
        plural,
        kind,
        namespaced,
        has_status,
        returns_deleted_object=returns_deleted_object,
        extra_fields=extra_fields,
    )


# Pods, namespaces and custom resources answer DELETE with the object (their registries set
# ReturnDeletedObject); the rest answer a Status.
REGISTRY: tuple[ResourceType, ...] = (
    _core("pods", "Pod", True, True, returns_deleted_object=True, extra_fields=_POD_FIELDS),
    _core("nodes", "Node", False, True, extra_fields=("spec.unschedulable",)),
    _core(
        "namespaces", "Namespace", False, True, returns_deleted_object=True, extra_fields=("status.phase",)
    ),
    _core("serviceaccounts", "ServiceAccount", True),
    _core("secrets", "Secret", True, extra_fields=("type",)),
    _core("configmaps", "ConfigMap", True),
    _core("events", "Event", True, extra_fields=_EVENT_FIELDS),
    ResourceType("events.k8s.io", "v1", "events", "Event", True, False),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, False),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
        False,
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
        False,
    ),
    ResourceType("apps", "v1", "deployments", "Deployment", True, True),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, True),
    ResourceType(
        "vpcresources.k8s.aws",
        "v1beta1",
        "securitygrouppolicies",
        "SecurityGroupPolicy",
        True,
        False,
        builtin=False,
        returns_deleted_object=True,
    ),
    # Karpenter's NodePool CRD (kubernetes-sigs/karpenter pkg/apis/crds/karpenter.sh_nodepools.yaml:
    # cluster-scoped, status subresource); a test of a cluster without Karpenter answers its group
    # version 404 with a fault.
    ResourceType(
        "karpenter.sh", "v1", "nodepools", "NodePool", False, True, builtin=False, returns_deleted_object=True
    ),
    # aws/karpenter-provider-aws pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml: cluster-scoped
    ResourceType(
        "karpenter.k8s.aws",
        "v1",
        "ec2nodeclasses",
        "EC2NodeClass",
        False,
        True,
        builtin=False,
        returns_deleted_object=True,
    ),
    # EKS Auto Mode's NodeClass (`eks.amazonaws.com/v1`, cluster-scoped, status subresource; the
    # EKS user guide latest/ug/automode/create-node-class.adoc); served only in an Auto Mode cluster
    ResourceType(
        "eks.amazonaws.com",
        "v1",
        "nodeclasses",
        "NodeClass",
        False,
        True,
        builtin=False,
        returns_deleted_object=True,
    ),
    ResourceType(
        "fitguard.io",
        "v1alpha1",
        "nodegrouptemplates",
        "NodeGroupTemplate",
        False,
        True,
        builtin=False,
        returns_deleted_object=True,
    ),
)

_BY_PATH = {(rt.group, rt.version, rt.plural): rt for rt in REGISTRY}


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource type served at /api[s]/{group}/{version}/{plural}, if any."""
    return _BY_PATH.get((group, version, plural))


def by_kind(kind: str, api_version: str | None = None) -> ResourceType:
    """The resource type of an object's kind; api_version disambiguates kinds served twice (Event)."""
    found = [rt for rt in REGISTRY if rt.kind == kind and api_version in (None, rt.api_version)]
    if len(found) != 1:
        choices = ", ".join(rt.api_version for rt in found) or "none"
        raise KeyError(f"kind {kind!r} (apiVersion {api_version!r}) is not one resource type: {choices}")
    return found[0]


def group_versions() -> dict[str, list[str]]:
    """Every served API group (core excluded) and its versions, for discovery."""
    groups: dict[str, list[str]] = {}
    for rt in REGISTRY:
        if rt.group and rt.version not in groups.setdefault(rt.group, []):
            groups[rt.group].append(rt.version)
    return groups


def in_group_version(group: str, version: str) -> list[ResourceType]:
    return [rt for rt in REGISTRY if rt.group == group and rt.version == version]
