"""Listing the objects of a state file from a live cluster, page by page, and naming that cluster.

Only the kinds a caller names are listed (the webhook's: see fitguard/state_export.py); each item
gets back the kind and apiVersion a list answer leaves out of its items, so the result reads like
`kubectl get -o yaml`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kube.client import KubeClient, KubeError, Resource, load_api_client
from kube.connection import ConfigException
from kube.connection import config as k8s_config
from kube.kubeconfig import CONFIG_ERROR, missing_kubeconfig

PAGE_SIZE = 500


@dataclass(frozen=True, slots=True)
class Listing:
    """One kind to list: where, and with which field selector (e.g. one ConfigMap by name).
    `optional`: a 404 means the kind is not installed (a CRD), so there are none."""

    kind: str
    resource: Resource
    namespace: str | None = None
    field_selector: str = ""
    optional: bool = False


@dataclass(frozen=True, slots=True)
class ClusterIdentity:
    """Which cluster a kubeconfig points at: its context, cluster name, API server and the
    context's default namespace."""

    context: str
    cluster: str
    server: str
    namespace: str


def identify(kubeconfig: str | None = None, context: str | None = None) -> ClusterIdentity:
    """The kubeconfig's chosen context (in-cluster config when running in a pod without one)."""
    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ and "KUBECONFIG" not in os.environ:
        host = os.environ["KUBERNETES_SERVICE_HOST"]
        return ClusterIdentity("in-cluster", "in-cluster", f"https://{host}", "default")
    absent = missing_kubeconfig(kubeconfig)
    if absent is not None:
        raise KubeError(0, CONFIG_ERROR, absent)
    path = os.path.expanduser(kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config")
    try:
        contexts, active = k8s_config.list_kube_config_contexts(config_file=path)
    except (ConfigException, OSError) as err:
        raise KubeError(0, "ConfigError", str(err)) from None
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    if not chosen:
        raise KubeError(0, "ConfigError", f"context {context!r} not found in {path}")
    details = chosen.get("context") or {}
    cluster_name = str(details.get("cluster") or "")
    client = load_api_client(kubeconfig, context)
    server = str(client.configuration.host)
    client.close()
    return ClusterIdentity(
        str(chosen["name"]), cluster_name, server, str(details.get("namespace") or "default")
    )


def list_objects(
    client: KubeClient, listings: Iterable[Listing], page_size: int = PAGE_SIZE
) -> list[dict[str, Any]]:
    """Every object of every listing, paged (`limit`/`continue`), with kind and apiVersion set."""
    objects: list[dict[str, Any]] = []
    for listing in listings:
        query = {"fieldSelector": listing.field_selector} if listing.field_selector else {}
        try:
            items = client.list_all(listing.resource.path(listing.namespace), query, page_size=page_size)
        except KubeError as err:
            if listing.optional and err.not_found:
                continue
            raise
        objects.extend(
            {**item, "apiVersion": listing.resource.api_version, "kind": listing.kind} for item in items
        )
    return objects


def list_from_kubeconfig(
    kubeconfig: str | None, context: str | None, listings: Iterable[Listing], page_size: int = PAGE_SIZE
) -> list[dict[str, Any]]:
    """`list_objects` through a client made from the kubeconfig (and context) and closed after."""
    api = load_api_client(kubeconfig, context)
    try:
        return list_objects(KubeClient(api), listings, page_size)
    finally:
        api.close()
