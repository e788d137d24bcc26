"""The writes the controller makes: node labels, guarded patches and deletes, and an apply-like
create-or-replace for the objects it owns. Every call raises KubeError when the API refuses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kube.client import MERGE_PATCH, NODES, PODS, KubeClient, KubeError, Resource, as_kube_client

ApplyAction = Literal["created", "updated", "unchanged"]
_IGNORED_TOP_LEVEL = ("apiVersion", "kind", "metadata", "status")
_OWNED_METADATA = ("labels", "annotations")


def set_node_label(api: KubeClient | Any, node: str, key: str, value: str) -> dict[str, Any]:
    return merge_patch(api, NODES, node, {"metadata": {"labels": {key: value}}})


def remove_node_label(api: KubeClient | Any, node: str, key: str) -> dict[str, Any]:
    """A merge patch with `null` removes the key (RFC 7386); removing an absent label is a no-op."""
    return merge_patch(api, NODES, node, {"metadata": {"labels": {key: None}}})


@dataclass(frozen=True)
class Preconditions:
    """The object a write is meant for (metav1.Preconditions): with either field set, the apiserver
    answers 409 Conflict once the object is no longer the one they name. Empty: not checked."""

    uid: str = ""
    resource_version: str = ""


def merge_patch(
    api: KubeClient | Any,
    resource: Resource,
    name: str,
    patch: Mapping[str, Any],
    namespace: str | None = None,
    *,
    preconditions: Preconditions = Preconditions(),
    subresource: str = "",
) -> dict[str, Any]:
    """A JSON merge patch, conditional on `preconditions` (metadata in a patch is a precondition:
    apiserver's patcher checks resourceVersion and uid)."""
    body = dict(patch)
    uid, resource_version = preconditions.uid, preconditions.resource_version
    if uid or resource_version:
        meta = dict(body.get("metadata") or {})
        if uid:
            meta["uid"] = uid
        if resource_version:
            meta["resourceVersion"] = resource_version
        body["metadata"] = meta
    path = resource.path(namespace, name, subresource)
    return as_kube_client(api).request("PATCH", path, body=body, content_type=MERGE_PATCH) or {}


def delete_pod(
    api: KubeClient | Any,
    namespace: str,
    name: str,
    *,
    uid: str = "",
    resource_version: str = "",
    grace_period_seconds: int | None = None,
) -> bool:
    """Deletes the pod only if it is still the one seen (uid, resourceVersion): a stale view gets
    409 Conflict (raised), never the deletion of a pod that has since changed. False: already gone."""
    return delete_object(
        api,
        PODS,
        name,
        namespace,
        uid=uid,
        resource_version=resource_version,
        grace_period_seconds=grace_period_seconds,
    )


def delete_object(
    api: KubeClient | Any,
    resource: Resource,
    name: str,
    namespace: str | None = None,
    *,
    uid: str = "",
    resource_version: str = "",
    grace_period_seconds: int | None = None,
) -> bool:
    """DELETE with DeleteOptions preconditions; True when deleted, False when it was not there."""
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
    if preconditions:
        options["preconditions"] = preconditions
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    try:
        as_kube_client(api).request("DELETE", resource.path(namespace, name), body=options)
    except KubeError as err:
        if err.not_found:
            return False
        raise
    return True


def delete_custom_object(
    api: KubeClient | Any, resource: Resource, name: str, namespace: str | None = None
) -> bool:
    return delete_object(api, resource, name, namespace)


def _differs(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether writing `desired` would change `current`: the body outside metadata and status is
    the writer's whole; labels and annotations only as far as `desired` names them."""
    body = {k: v for k, v in desired.items() if k not in _IGNORED_TOP_LEVEL}
    if {k: v for k, v in current.items() if k not in _IGNORED_TOP_LEVEL} != body:
        return True
    want_meta, have_meta = desired.get("metadata") or {}, current.get("metadata") or {}
    for field in _OWNED_METADATA:
        have = have_meta.get(field) or {}
        if any(have.get(k) != v for k, v in (want_meta.get(field) or {}).items()):
            return True
    return False


def apply_object(
    api: KubeClient | Any, resource: Resource, desired: Mapping[str, Any], attempts: int = 3
) -> tuple[ApplyAction, dict[str, Any]]:
    """Makes the object equal `desired` (spec and the like, labels, annotations): creates it when
    absent, replaces it only when it differs, and retries a write that lost a race (409)."""
    client = as_kube_client(api)
    meta = desired.get("metadata") or {}
    name, namespace = str(meta.get("name") or ""), meta.get("namespace")
    if not name:
        raise ValueError("apply_object: desired object has no metadata.name")
    path = resource.path(namespace, name)
    body = {"apiVersion": resource.api_version, **desired}
    for attempt in range(attempts):
        try:
            current = client.request("GET", path)
        except KubeError as err:
            if not err.not_found:
                raise
            try:
                return "created", client.request("POST", resource.path(namespace), body=body)
            except KubeError as create_err:
                if create_err.status != 409 or attempt == attempts - 1:
                    raise
                continue  # created meanwhile by someone else: compare with theirs
        if not _differs(current, body):
            return "unchanged", current
        current_meta = current.get("metadata") or {}
        merged_meta = dict(current_meta)  # keeps resourceVersion: the replace is conditional
        for field in _OWNED_METADATA:
            if meta.get(field):
                merged_meta[field] = {**(current_meta.get(field) or {}), **meta[field]}
        replacement = {**body, "metadata": merged_meta}
        if "status" in current:
            replacement["status"] = current["status"]  # status is not ours to reset here
        try:
            return "updated", client.request("PUT", path, body=replacement)
        except KubeError as err:
            if not err.conflict or attempt == attempts - 1:
                raise
    raise KubeError(409, "Conflict", f"{path}: still conflicting after {attempts} attempts")
