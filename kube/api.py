"""Typed reads and writes of the Kubernetes API for the code outside kube/: each function names what it
does (list the pods on a node, create a Secret, JSON-patch a webhook configuration), and only this
package builds API paths and chooses verbs. `api` is a KubeClient, or an ApiClient wrapped on the way
in. Every function raises KubeError for an answer that is not 2xx, unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from capacity.names import SGP_KIND, TEMPLATE_KIND
from kube.client import (
    AUTO_NODE_CLASSES,
    CONFIG_MAPS,
    DAEMON_SETS,
    EC2_NODE_CLASSES,
    JSON_PATCH,
    NAMESPACES,
    NODE_GROUP_TEMPLATES,
    NODE_POOLS,
    NODES,
    PODS,
    SECURITY_GROUP_POLICIES,
    SERVICE_ACCOUNTS,
    ApiLike,
    KubeError,
    Resource,
    as_kube_client,
)
from kube.options import ReflectorOptions

if TYPE_CHECKING:
    from kube.reflector import Reflector
    from kube.store import Store

SECRETS = Resource("", "v1", "secrets", True)
MUTATING_WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False)
VALIDATING_WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False)
WEBHOOK_CONFIGURATIONS = {
    "MutatingWebhookConfiguration": MUTATING_WEBHOOKS,
    "ValidatingWebhookConfiguration": VALIDATING_WEBHOOKS,
}
# The kinds fitguard lists or watches by kind name (the webhook's stores, the state export, reports)
KINDS: dict[str, Resource] = {
    "Pod": PODS,
    "Node": NODES,
    "Namespace": NAMESPACES,
    "ServiceAccount": SERVICE_ACCOUNTS,
    "ConfigMap": CONFIG_MAPS,
    "DaemonSet": DAEMON_SETS,
    SGP_KIND: SECURITY_GROUP_POLICIES,
    TEMPLATE_KIND: NODE_GROUP_TEMPLATES,
    "Secret": SECRETS,
    "NodePool": NODE_POOLS,
    "EC2NodeClass": EC2_NODE_CLASSES,
    "NodeClass": AUTO_NODE_CLASSES,
}


def _items(answer: Any) -> list[dict[str, Any]]:
    return list((answer or {}).get("items") or [])


# -- lists --------------------------------------------------------------------------------------


def list_nodes(api: ApiLike) -> list[dict[str, Any]]:
    """Every node, in one unpaged list."""
    return _items(as_kube_client(api).get(NODES.path()))


def list_daemonsets(api: ApiLike) -> list[dict[str, Any]]:
    """Every DaemonSet of every namespace, in one unpaged list."""
    return _items(as_kube_client(api).get(DAEMON_SETS.path()))


def list_node_group_templates(api: ApiLike) -> list[dict[str, Any]]:
    """Every NodeGroupTemplate (cluster-scoped), in one unpaged list."""
    return _items(as_kube_client(api).get(NODE_GROUP_TEMPLATES.path()))


def list_all_pods(api: ApiLike, page_size: int = 500) -> list[dict[str, Any]]:
    """Every pod of every namespace, page by page."""
    return as_kube_client(api).list_all(PODS.path(), page_size=page_size)


def list_all_nodes(api: ApiLike, page_size: int = 500) -> list[dict[str, Any]]:
    """Every node, page by page."""
    return as_kube_client(api).list_all(NODES.path(), page_size=page_size)


def list_pods_on_node(api: ApiLike, node: str) -> list[dict[str, Any]]:
    """The pods bound to `node`, fresh from the API server (field selector spec.nodeName)."""
    return _items(as_kube_client(api).get(PODS.path(), {"fieldSelector": f"spec.nodeName={node}"}))


def list_slim_pods(api: ApiLike, page_size: int = 500) -> list[dict[str, Any]]:
    """Every pod, page by page, decoded for what the controller's books and planner read only
    (kube/podwire.py), as its pod watch decodes them: `--once` holds no whole pod either."""
    from kube import podwire  # the controller's alone: the webhook never loads the schema

    return as_kube_client(api).list_all(PODS.path(), None, page_size, decode=podwire.decode_page)


def list_pods_by_label(api: ApiLike, namespace: str | None, selector: str) -> list[dict[str, Any]]:
    """The pods a label selector picks in `namespace` (None or "": every namespace), page by page."""
    return as_kube_client(api).list_all(PODS.path(namespace or None), {"labelSelector": selector})


def list_kind(
    api: ApiLike,
    kind: str,
    namespace: str | None = None,
    field_selector: str = "",
    page_size: int = 500,
) -> list[dict[str, Any]]:
    """Every object of one of `KINDS`, page by page, optionally in one namespace and by field."""
    query = {"fieldSelector": field_selector} if field_selector else None
    return as_kube_client(api).list_all(KINDS[kind].path(namespace or None), query, page_size=page_size)


def serves(api: ApiLike, kind: str) -> bool:
    """Whether the API serves `kind` (one of `KINDS`) now: its group version's discovery document
    lists the resource. False on a 404 (the CRD is not installed); KubeError on any other failure."""
    resource = KINDS[kind]
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    try:
        answer = as_kube_client(api).get(base)
    except KubeError as err:
        if err.status == 404:
            return False
        raise
    listed = (answer or {}).get("resources") or []
    return any(isinstance(r, Mapping) and r.get("name") == resource.plural for r in listed)


# -- single objects -----------------------------------------------------------------------------


def get_config_map(api: ApiLike, namespace: str, name: str) -> dict[str, Any]:
    """One ConfigMap; KubeError (404 too) when it cannot be read."""
    return dict(as_kube_client(api).get(CONFIG_MAPS.path(namespace, name)) or {})


def get_secret(api: ApiLike, namespace: str, name: str) -> dict[str, Any] | None:
    """One Secret, or None when it does not exist."""
    try:
        return as_kube_client(api).get(SECRETS.path(namespace, name))
    except KubeError as err:
        if err.not_found:
            return None
        raise


def create_secret(api: ApiLike, namespace: str, body: Mapping[str, Any]) -> None:
    """POST a new Secret; 409 when one of that name exists already."""
    as_kube_client(api).request("POST", SECRETS.path(namespace), body=dict(body))


def replace_secret(api: ApiLike, namespace: str, name: str, body: Mapping[str, Any]) -> None:
    """PUT the whole Secret; with metadata.resourceVersion set, a concurrent writer gets 409."""
    as_kube_client(api).request("PUT", SECRETS.path(namespace, name), body=dict(body))


def get_webhook_configuration(api: ApiLike, kind: str, name: str) -> dict[str, Any] | None:
    """A Mutating- or ValidatingWebhookConfiguration (by `kind`), or None when it does not exist."""
    try:
        return as_kube_client(api).get(WEBHOOK_CONFIGURATIONS[kind].path(name=name))
    except KubeError as err:
        if err.not_found:
            return None
        raise


def json_patch_webhook_configuration(api: ApiLike, kind: str, name: str, operations: Sequence[Any]) -> None:
    """A JSON patch (RFC 6902) of a webhook configuration; a failed `test` operation is a 422."""
    path = WEBHOOK_CONFIGURATIONS[kind].path(name=name)
    as_kube_client(api).request("PATCH", path, body=list(operations), content_type=JSON_PATCH)


# -- list+watch ---------------------------------------------------------------------------------


def start_reflector(
    api: ApiLike, kind: str, store: Store[Any], options: ReflectorOptions = ReflectorOptions()
) -> Reflector:
    """A started list+watch reflector keeping `store` equal to the API's objects of `kind` (one of
    `KINDS`); `options` (kube/options.py) narrow it to a namespace or selectors and carry the
    process's watch settings."""
    from kube.reflector import Reflector

    return Reflector(as_kube_client(api), KINDS[kind], store, options).start()
