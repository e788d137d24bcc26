"""The in-memory view the webhook answers from: one Store per kind it needs, each projected to the
little it uses, filled from a state file (offline) or by list+watch reflectors (in a cluster).
Nothing here calls the API on the request path."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from capacity.branch_eni import COOLDOWN_KEY
from capacity.karpenter.published import PublishedNodePool
from capacity.names import SGP_KIND, TEMPLATE_KIND, VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
from capacity.placement import LiveNode
from capacity.sgp import SecurityGroupPolicy, compile_policy
from capacity.string_maps import string_map
from capacity.template import NodeGroupTemplate
from kube.options import ReflectorOptions, WatchOptions
from kube.statefile import by_kind, load_state
from kube.store import Fanout, Store
from kube.when_served import WhenServed
from webhook.memo import RefusalMemo
from webhook.policy_memo import MatchKey, PolicyMatchMemo

if TYPE_CHECKING:
    from kube.client import ApiLike
    from kube.reflector import Reflector

log = logging.getLogger(__name__)
R = TypeVar("R")
Projection = Callable[[Mapping[str, Any]], R]

WINDOWS_IPAM_KEY = "enable-windows-ipam"
# ConfigMap keys the webhook reads; the rest of a ConfigMap is not kept.
CONFIG_KEYS = (WINDOWS_IPAM_KEY, COOLDOWN_KEY)
DEFAULT_SERVICE_ACCOUNT = "default"
EMPTY: Mapping[str, str] = {}
NODE_POOL_KIND = "NodePool"  # karpenter.sh/v1
# the node classes a NodePool's template is built from: karpenter.k8s.aws/v1, eks.amazonaws.com/v1
EC2_NODE_CLASS_KIND, AUTO_NODE_CLASS_KIND = "EC2NodeClass", "NodeClass"


class ServiceAccountNotFound(LookupError):
    """The pod's ServiceAccount is not in the cache: upstream denies such a pod."""


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return string_map(labels, "metadata.labels")


def config_data(obj: Mapping[str, Any]) -> dict[str, str]:
    data = string_map(obj.get("data") or {}, "data")
    return {key: data[key] for key in CONFIG_KEYS if key in data}


@dataclass(frozen=True)
class ListedNodePool:
    """A NodePool as the webhook keeps it while it can launch nodes (not being deleted): its name
    and its `spec.template` as written, to tell a published template built from an older one."""

    name: str
    template: Mapping[str, Any]


def listed_node_pool(obj: Mapping[str, Any]) -> ListedNodePool | None:
    meta = obj.get("metadata") or {}
    if not isinstance(meta, Mapping) or meta.get("deletionTimestamp"):
        return None
    template = (obj.get("spec") or {}).get("template") or {}
    return ListedNodePool(str(meta.get("name") or ""), template if isinstance(template, Mapping) else {})


@dataclass(frozen=True)
class ListedNodeClass:
    """A node class as the webhook keeps it: its name and its `spec` as written, to tell a published
    template built from an older one."""

    name: str
    spec: Mapping[str, Any]


def listed_node_class(obj: Mapping[str, Any]) -> ListedNodeClass | None:
    meta = obj.get("metadata") or {}
    if not isinstance(meta, Mapping):
        return None
    spec = obj.get("spec") or {}
    return ListedNodeClass(str(meta.get("name") or ""), spec if isinstance(spec, Mapping) else {})


def group_template(obj: Mapping[str, Any]) -> NodeGroupTemplate | None:
    """A node group's template; a NodePool's is kept apart (`nodepool_template`)."""
    template = NodeGroupTemplate.from_object(obj)
    return None if template.karpenter is not None else template


def nodepool_template(obj: Mapping[str, Any]) -> PublishedNodePool | None:
    return NodeGroupTemplate.from_object(obj).karpenter


def parse_bool(value: str | None) -> bool:
    """The spellings Go's strconv.ParseBool reads as true (how the VPC controller reads flags)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


class TemplateObjects(Fanout):
    """The NodeGroupTemplates, into the node groups' store and the NodePools' (each object in one)."""

    def __len__(self) -> int:
        return sum(len(store) for store in self.stores)


@dataclass
class ClusterView:
    namespaces: Store[dict[str, str]] = field(default_factory=lambda: Store("Namespace", labels_of))
    service_accounts: Store[dict[str, str]] = field(
        default_factory=lambda: Store("ServiceAccount", labels_of)
    )
    policies: Store[SecurityGroupPolicy] = field(default_factory=lambda: Store(SGP_KIND, compile_policy))
    config_maps: Store[dict[str, str]] = field(default_factory=lambda: Store("ConfigMap", config_data))
    # a projection that returns None keeps nothing of the object (kube/store.py project_page)
    templates: Store[NodeGroupTemplate] = field(
        default_factory=lambda: Store(TEMPLATE_KIND, cast(Projection[NodeGroupTemplate], group_template))
    )
    # the templates of Karpenter NodePools (provider karpenter), from the same objects
    nodepool_templates: Store[PublishedNodePool] = field(
        default_factory=lambda: Store(
            f"{TEMPLATE_KIND} (NodePools)", cast(Projection[PublishedNodePool], nodepool_template)
        )
    )
    nodes: Store[LiveNode] = field(default_factory=lambda: Store("Node", LiveNode.from_object))
    node_pools: Store[ListedNodePool | None] = field(
        default_factory=lambda: Store(NODE_POOL_KIND, listed_node_pool)
    )
    ec2_node_classes: Store[ListedNodeClass | None] = field(
        default_factory=lambda: Store(EC2_NODE_CLASS_KIND, listed_node_class)
    )
    auto_node_classes: Store[ListedNodeClass | None] = field(
        default_factory=lambda: Store(AUTO_NODE_CLASS_KIND, listed_node_class)
    )
    verdicts: RefusalMemo = field(default_factory=RefusalMemo)
    # what the live nodes and NodePools said of a shape no group serves, per generation of all three
    places: RefusalMemo = field(default_factory=RefusalMemo)
    # each pod's SecurityGroupPolicy match, per namespace, pod and ServiceAccount labels, policies version
    policy_matches: PolicyMatchMemo = field(default_factory=PolicyMatchMemo)

    def __post_init__(self) -> None:
        # one reflector fills both template stores (a Fanout is synced once its first list is)
        self.template_objects = TemplateObjects([self.templates, self.nodepool_templates])

    def stores(self) -> dict[str, Store[Any]]:
        """Every store by the kind it holds (the keys are the kinds of a state file)."""
        return {
            "Namespace": self.namespaces,
            "ServiceAccount": self.service_accounts,
            SGP_KIND: self.policies,
            "ConfigMap": self.config_maps,
            TEMPLATE_KIND: self.template_objects,
            "Node": self.nodes,
            NODE_POOL_KIND: self.node_pools,
            EC2_NODE_CLASS_KIND: self.ec2_node_classes,
            AUTO_NODE_CLASS_KIND: self.auto_node_classes,
        }

    def optional_stores(self) -> dict[str, Store[Any]]:
        """The stores of kinds served only where Karpenter or EKS Auto Mode runs (WhenServed)."""
        return {
            NODE_POOL_KIND: self.node_pools,
            EC2_NODE_CLASS_KIND: self.ec2_node_classes,
            AUTO_NODE_CLASS_KIND: self.auto_node_classes,
        }

    def node_pool_names(self) -> list[str]:
        """The NodePools that may launch a node: those the API lists (not being deleted), and those
        a published template names (a state file holds the templates without the NodePools)."""
        listed = {pool.name for pool in self.node_pools.items() if pool and pool.name}
        return sorted(listed | {record.nodepool for record in self.nodepool_templates.items()})

    def published_pools(self) -> dict[str, PublishedNodePool]:
        """Each NodePool's published template, unless the NodePool as listed now has another
        `spec.template`, or its node class another `spec`, than the ones it was built from: until
        the controller's next cycle that NodePool is not judged (a denial from a stale template
        could refuse what it now serves, e.g. after a larger root volume). A state file without the
        NodePools or the classes judges by the templates alone."""
        listed = {pool.name: pool.template for pool in self.node_pools.items() if pool}
        return {
            record.nodepool: record
            for record in self.nodepool_templates.items()
            if listed.get(record.nodepool, record.template) == record.template
            and self._class_spec(record) == record.nodeclass_spec
        }

    def _class_spec(self, record: PublishedNodePool) -> Mapping[str, Any]:
        """The `spec` of the class the record was built from as listed now (the record's own when
        the class is not listed)."""
        store = self.auto_node_classes if record.automode else self.ec2_node_classes
        listed = store.get("", record.nodeclass)
        return record.nodeclass_spec if listed is None else listed.spec

    def ready(self) -> bool:
        return all(store.synced for store in self.stores().values())

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get("", namespace) or EMPTY

    def windows_ipam_enabled(self) -> bool:
        data = self.config_maps.get(VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME) or EMPTY
        return parse_bool(data.get(WINDOWS_IPAM_KEY))

    def security_groups(self, namespace: str, pod: Mapping[str, Any]) -> list[str]:
        """Upstream GetMatchingSecurityGroupForPods: the namespace's policies, then the pod's
        ServiceAccount, which must exist even when no policy could match."""
        key = self._match_key(namespace, pod)
        return self.policy_matches.groups(key, self.policies.version, lambda: self.policies.items(namespace))

    def matching_policies(self, namespace: str, pod: Mapping[str, Any]) -> list[str]:
        """`namespace/name` of each SecurityGroupPolicy that matches the pod (none when its
        ServiceAccount is missing: /mutate denies such pods itself)."""
        try:
            key = self._match_key(namespace, pod)
        except ServiceAccountNotFound:
            return []
        return self.policy_matches.policy_names(
            key, self.policies.version, lambda: self.policies.items(namespace)
        )

    def _match_key(self, namespace: str, pod: Mapping[str, Any]) -> MatchKey:
        """What a pod's policy match depends on besides the policies: (namespace, the pod's labels,
        its ServiceAccount's labels). Raises ServiceAccountNotFound."""
        meta = pod.get("metadata")
        spec = pod.get("spec")
        meta = meta if isinstance(meta, Mapping) else {}
        spec = spec if isinstance(spec, Mapping) else {}
        # the ServiceAccount admission plugin names "default" before any webhook runs
        account = str(spec.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT)
        sa_labels = self.service_accounts.get(namespace, account)
        if sa_labels is None:
            raise ServiceAccountNotFound(f'serviceaccount "{account}" not found in namespace "{namespace}"')
        return namespace, string_map(meta.get("labels")), sa_labels

    def snapshot(self) -> dict[str, Any]:
        """What /snapshotz shows: the policies and templates held now, and how fresh each store is."""
        return {
            "ready": self.ready(),
            "stores": {
                kind: {"synced": s.synced, "objects": len(s), "resourceVersion": s.resource_version}
                for kind, s in self.stores().items()
            },
            "securityGroupPolicies": [p.to_object() for p in self.policies.items()],
            "nodeGroupTemplates": [t.to_object() for t in self.templates.items()],
            "nodePools": self.node_pool_names(),
            "windowsIpamEnabled": self.windows_ipam_enabled(),
        }


def from_objects(objects: Iterable[Mapping[str, Any]]) -> ClusterView:
    """A view holding exactly these objects; every store counts as synced."""
    view = ClusterView()
    grouped = by_kind([dict(obj) for obj in objects])
    for kind, store in view.stores().items():
        store.replace(grouped.get(kind, []))
    return view


def from_state_file(path: str | Path) -> ClusterView:
    return from_objects(load_state(path))


# What each store lists and watches: (kind, namespace or None for all, field selector).
# The amazon-vpc-cni ConfigMap is watched alone: no need to cache every ConfigMap of the cluster.
WATCHES: tuple[tuple[str, str | None, str], ...] = (
    ("Namespace", None, ""),
    ("ServiceAccount", None, ""),
    (SGP_KIND, None, ""),
    ("ConfigMap", VPC_CNI_CONFIG_NAMESPACE, f"metadata.name={VPC_CNI_CONFIG_NAME}"),
    (TEMPLATE_KIND, None, ""),
    ("Node", None, ""),
)


def start_reflectors(
    view: ClusterView, api: ApiLike, watch: WatchOptions = WatchOptions()
) -> list[Reflector | WhenServed]:
    """One started list+watch reflector per store (`api`: a KubeClient or ApiClient), and one for
    each of NodePools, EC2NodeClasses and Auto Mode NodeClasses once the API serves it, all with
    the same `watch` settings; each stops with `stop()`. Imported here so that a webhook run from
    a state file never loads the Kubernetes client."""
    from kube.api import start_reflector

    stores = view.stores()
    started: list[Reflector | WhenServed] = [
        start_reflector(
            api,
            kind,
            stores[kind],
            ReflectorOptions(namespace=namespace, field_selector=selector, watch=watch),
        )
        for kind, namespace, selector in WATCHES
    ]
    for kind, store in view.optional_stores().items():
        started.append(WhenServed(api, kind, store, options=ReflectorOptions(watch=watch)).start())
    return started
