"""The REST verbs' semantics over the store: what the apiserver's registry does, without HTTP."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
from dataclasses import dataclass
from typing import Any

from . import errors
from .listoptions import validate_list
from .patch import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, PatchError, apply_patch
from .registry import ResourceType, by_kind
from .selectors import Predicate, field_selector, label_selector
from .store import Store

# What create leaves of the status of kinds with a status subresource (the registries'
# PrepareForCreate): pods start Pending, namespaces Active, nodes keep what the kubelet sent.
_KEEP = object()
_STATUS_ON_CREATE: dict[str, Any] = {
    "Pod": {"phase": "Pending"},
    "Namespace": {"phase": "Active"},
    "Node": _KEEP,
}
# apiserver's names.SimpleNameGenerator: five characters from an alphabet without vowels or look-alikes.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAMESPACES = by_kind("Namespace")


@dataclass(frozen=True)
class ListOptions:
    """The query parameters of a list."""

    label_selector: str | None = None
    field_selector: str | None = None
    limit: int | None = None
    continue_token: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None
    send_initial_events: str | None = None  # the raw parameter; only a watch may carry it


def selector(rt: ResourceType, namespace: str | None, labels: str | None, fields: str | None) -> Predicate:
    """The objects of one namespace (or all) that match both selectors."""
    by_labels, by_fields = label_selector(labels), field_selector(fields, rt.selectable_fields)

    def matches(obj: dict[str, Any]) -> bool:
        in_namespace = namespace is None or obj["metadata"].get("namespace") == namespace
        return in_namespace and by_labels(obj) and by_fields(obj)

    return matches


def parse_rv(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f"invalid resource version: {value!r}") from None


def _encode_continue(rv: int, last_key: tuple[str, str]) -> str:
    # Like the apiserver's token: the list's RV and the key to start after, base64 JSON.
    raw = json.dumps({"v": "fakekube/v1", "rv": rv, "start": list(last_key)})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (binascii.Error, ValueError, KeyError, IndexError, TypeError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from None


def _list_at(store: Store, options: ListOptions, *, watch_cache: bool) -> tuple[int | None, bool]:
    """Which snapshot a list reads (None: the most recent) and whether it honours `limit`.

    The resourceVersion semantics of a list (apiserver pkg/storage/interfaces.go ValidateListOptions,
    pkg/storage/cacher/delegator/interface.go ShouldDelegateList, cacher.go computeListLimit):
    unset is a consistent read of the most recent state; "0" is any state, which the watch cache
    answers whole, ignoring `limit`; NotOlderThan (and a bare RV without `limit`) is the most
    recent state once the store has reached that RV; Exact (and a bare RV with `limit`, the legacy
    exact match) is that very snapshot, 410 once compacted. An RV the store has not reached is the
    504 "Too large resource version" the watch cache answers after waiting for it.
    """
    rv, match = options.resource_version, options.resource_version_match
    if options.continue_token:
        if rv and rv != "0":
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        return None, True  # the token carries its snapshot's RV
    if not rv:
        return None, True
    if rv == "0":
        return None, not watch_cache
    wanted = parse_rv(rv)
    current = store.resource_version
    if wanted > current:
        raise errors.too_large_resource_version(wanted, current)
    exact = match == "Exact" or (not match and bool(options.limit))
    return (wanted if exact else None), True


def list_objects(
    store: Store, rt: ResourceType, namespace: str | None, options: ListOptions, *, watch_cache: bool = False
) -> dict[str, Any]:
    """A List object: consistent pages by snapshot RV; an expired continue token is 410 Expired.

    `watch_cache`: whether a list with resourceVersion "0" is answered from the apiserver's watch
    cache, which ignores `limit` (pkg/storage/cacher/cacher.go computeListLimit)."""
    validate_list(
        options.resource_version,
        options.resource_version_match,
        options.continue_token,
        options.send_initial_events,
    )
    matches = selector(rt, namespace, options.label_selector, options.field_selector)
    start_after: tuple[str, str] | None = None
    at, paged = _list_at(store, options, watch_cache=watch_cache)
    if options.continue_token:
        at, start_after = _decode_continue(options.continue_token)
    try:
        items, rv = store.list(rt, at)
    except errors.ApiError as error:
        if options.continue_token:
            raise errors.expired(
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter."
            ) from error
        raise
    selected = [
        obj
        for obj in items
        if matches(obj)
        and (
            start_after is None
            or (obj["metadata"].get("namespace") or "", obj["metadata"]["name"]) > start_after
        )
    ]
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if paged and options.limit and len(selected) > options.limit:
        page = selected[: options.limit]
        last = page[-1]["metadata"]
        metadata["continue"] = _encode_continue(rv, (last.get("namespace") or "", last["name"]))
        if not options.label_selector and not options.field_selector:
            metadata["remainingItemCount"] = len(selected) - len(page)
        selected = page
    if rt.builtin:
        # Built-in lists do not repeat kind/apiVersion on each item; custom resource lists do.
        for obj in selected:
            obj.pop("kind", None)
            obj.pop("apiVersion", None)
    return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": metadata, "items": selected}


def _check_type(rt: ResourceType, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body is not a JSON object")
    for field, expected in (("kind", rt.kind), ("apiVersion", rt.api_version)):
        if body.get(field) not in (None, "", expected):
            raise errors.bad_request(f"{field} {body.get(field)!r} does not match the resource: {expected!r}")
    body = copy.deepcopy(body)
    body["kind"], body["apiVersion"] = rt.kind, rt.api_version
    meta = body.get("metadata")
    if meta is None:
        body["metadata"] = {}
    elif not isinstance(meta, dict):
        raise errors.bad_request("metadata is not a JSON object")
    return body


def _check_namespace(rt: ResourceType, namespace: str | None, meta: dict[str, Any]) -> None:
    if not rt.namespaced:
        meta.pop("namespace", None)
        return
    if meta.get("namespace") not in (None, "", namespace):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = namespace


def create_object(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    body: Any,
    *,
    dry_run: bool = False,
    require_namespace: bool = False,
) -> dict[str, Any]:
    """POST: namespace from the path, generateName, status reset for kinds with a status subresource."""
    obj = _check_type(rt, body)
    meta = obj["metadata"]
    _check_namespace(rt, namespace, meta)
    if require_namespace and rt.namespaced and not store.exists(_NAMESPACES, None, namespace or ""):
        raise errors.not_found(_NAMESPACES, namespace or "")
    if not meta.get("name"):
        if not meta.get("generateName"):
            raise errors.invalid(rt, "", "metadata.name: Required value: name or generateName is required")
        meta["name"] = meta["generateName"] + "".join(random.choices(_NAME_ALPHABET, k=5))
    for system_field in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "generation"):
        meta.pop(system_field, None)
    if rt.has_status:
        status = _STATUS_ON_CREATE.get(rt.kind)
        if status is None:
            obj.pop("status", None)
        elif status is not _KEEP:
            obj["status"] = copy.deepcopy(status)
    return store.create(rt, obj, dry_run=dry_run)


def _updated(
    rt: ResourceType,
    current: dict[str, Any],
    new: dict[str, Any],
    subresource: str | None,
    *,
    require_rv: bool,
) -> dict[str, Any]:
    """The object an update or patch stores: the RV precondition, then the status subresource split."""
    name, meta = current["metadata"]["name"], new["metadata"]
    if meta.get("name") not in (None, "", name):
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
        )
    if meta.get("namespace") not in (None, "", current["metadata"].get("namespace", "")):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if meta.get("uid") not in (None, "", current["metadata"]["uid"]):
        raise errors.conflict(
            rt,
            name,
            f"Precondition failed: UID in precondition: {meta['uid']}, "
            f"UID in object meta: {current['metadata']['uid']}",
        )
    rv = meta.get("resourceVersion")
    if not rv and require_rv:
        raise errors.invalid(
            rt, name, "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        )
    if rv and rv != current["metadata"]["resourceVersion"]:
        raise errors.conflict(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    if subresource == "status":
        # Writes to /status change only status (pod/node/CRD status strategies reset the rest).
        result = copy.deepcopy(current)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        return result
    if rt.has_status:
        # Writes to the main resource cannot change status when status is a subresource.
        if "status" in current:
            new["status"] = copy.deepcopy(current["status"])
        else:
            new.pop("status", None)
    return new


def replace_object(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    body: Any,
    *,
    subresource: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """PUT: 409 Conflict on a stale resourceVersion; custom resources must send one (422 if not)."""
    obj = _check_type(rt, body)

    def change(current: dict[str, Any]) -> dict[str, Any]:
        return _updated(rt, current, obj, subresource, require_rv=not rt.builtin)

    return store.update(rt, namespace, name, change, dry_run=dry_run)


def accepted_patch_types(rt: ResourceType) -> list[str]:
    # Strategic merge needs Go struct tags, so custom resources do not accept it (415 upstream).
    return [JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH] if rt.builtin else [JSON_PATCH, MERGE_PATCH]


def patch_object(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    *,
    content_type: str,
    patch: Any,
    subresource: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """PATCH in one of the accepted media types; a resourceVersion in the patch is a precondition."""
    accepted = accepted_patch_types(rt)
    if content_type not in accepted:
        raise errors.unsupported_media_type(content_type, accepted)
    if content_type == JSON_PATCH and not isinstance(patch, list):
        raise errors.bad_request("a JSON patch must be a list of operations")
    if content_type != JSON_PATCH and not isinstance(patch, dict):
        raise errors.bad_request("a merge patch must be a JSON object")

    def change(current: dict[str, Any]) -> dict[str, Any]:
        try:
            patched = apply_patch(content_type, current, patch)
        except PatchError as error:
            raise errors.invalid(rt, name, str(error)) from None
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise errors.invalid(rt, name, "the patched object has no metadata")
        return _updated(rt, current, _check_type(rt, patched), subresource, require_rv=False)

    return store.update(rt, namespace, name, change, dry_run=dry_run)


def delete_object(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    options: dict[str, Any],
    *,
    dry_run: bool = False,
) -> tuple[int, dict[str, Any]]:
    """DELETE with DeleteOptions.preconditions; answers (HTTP code, body) as the registry does."""
    preconditions = options.get("preconditions") or {}

    def check(current: dict[str, Any]) -> None:
        meta = current["metadata"]
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            wanted = preconditions.get(field)
            if wanted and wanted != meta.get(field):
                why = (
                    f"Precondition failed: {label} in precondition: {wanted}, "
                    f"{label} in object meta: {meta.get(field)}"
                )
                raise errors.conflict(rt, name, why)

    last, gone = store.delete(rt, namespace, name, check=check, dry_run=dry_run)
    if not gone:
        return 202, last  # finalizers remain: marked for deletion, answered 202 with the object
    return 200, last if rt.returns_deleted_object else errors.success_status(rt, last)


def delete_collection(
    store: Store, rt: ResourceType, namespace: str | None, options: ListOptions, *, dry_run: bool = False
) -> dict[str, Any]:
    """DELETE on a collection: deletes what the selectors match and answers the list of it."""
    listed = list_objects(store, rt, namespace, ListOptions(options.label_selector, options.field_selector))
    deleted = []
    for obj in listed["items"]:
        meta = obj["metadata"]
        try:
            last, _ = store.delete(rt, meta.get("namespace"), meta["name"], dry_run=dry_run)
        except errors.ApiError as error:
            if error.code != 404:  # deleted concurrently: nothing left to do
                raise
            continue
        deleted.append(last)
    return {**listed, "items": deleted}
