"""The three patch formats the apiserver accepts: JSON merge, strategic merge and JSON patch."""

from __future__ import annotations

import copy
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# patchMergeKey of the list fields the fake knows, by field name (k8s.io/api/core/v1/types.go tags).
# A list field not named here is replaced whole, as strategic merge does for atomic lists.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "conditions": "type",
    "ownerReferences": "uid",
    "webhooks": "name",  # admissionregistration/v1 Mutating/ValidatingWebhookConfiguration
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars with patchStrategy "merge": the patch's values are added to the existing ones.
_SCALAR_SET_LISTS = frozenset({"finalizers"})


class PatchError(ValueError):
    """The patch cannot be applied to this object (a failed test, a missing path, a bad operation)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, null deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Merge patch, except that the lists in _MERGE_KEYS merge element-wise by their key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        current = result.get(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(current, list) and key in _MERGE_KEYS:
            result[key] = _merge_list_by_key(current, value, _MERGE_KEYS[key])
        elif isinstance(value, list) and isinstance(current, list) and key in _SCALAR_SET_LISTS:
            result[key] = current + [item for item in value if item not in current]
        else:
            result[key] = strategic_merge_patch(current, value)
    return result


def _merge_list_by_key(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    merged = copy.deepcopy(current)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(f"map in list of {merge_key!r}-keyed items has no {merge_key!r}: {item!r}")
        position = next(
            (
                i
                for i, old in enumerate(merged)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if position is None:
            merged.append(strategic_merge_patch({}, item))
        else:
            merged[position] = strategic_merge_patch(merged[position], item)
    return merged


def _pointer(path: str) -> list[str]:
    """RFC 6901: "/a/b~1c/d~0e" -> ["a", "b/c", "d~e"]."""
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _index(container: list[Any], token: str, *, for_insert: bool) -> int:
    if for_insert and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not for_insert):
        raise PatchError(f"array index {index} out of range")
    return index


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"path segment {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, for_insert=False)]
        else:
            raise PatchError(f"path segment {token!r} is below a scalar")
    return node


def _get(doc: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, for_insert=False)]
    raise PatchError(f"path {path!r} is below a scalar")


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_insert=True), value)
    else:
        raise PatchError(f"path {path!r} is below a scalar")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {path!r} does not exist")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, for_insert=False))
    raise PatchError(f"path {path!r} is below a scalar")


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a copy of target: add, remove, replace, move, copy and test."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch is a list of operations")
    doc = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation or "path" not in operation:
            raise PatchError(f"malformed operation {operation!r}")
        op, path = operation["op"], operation["path"]
        if op in ("add", "replace", "test") and "value" not in operation:
            raise PatchError(f"operation {op!r} needs a value")
        if op == "add":
            doc = _add(doc, path, copy.deepcopy(operation["value"]))
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(operation["value"]))
        elif op == "move":
            doc, value = _remove(doc, operation["from"])
            doc = _add(doc, path, value)
        elif op == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, operation["from"])))
        elif op == "test":
            if _get(doc, path) != operation["value"]:
                raise PatchError(f"test operation failed at {path!r}")
        else:
            raise PatchError(f"unknown operation {op!r}")
    return doc


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> Any:
    """Apply a patch body of the given media type (the caller has checked the type is accepted)."""
    if content_type == JSON_PATCH:
        return json_patch(target, patch)
    if content_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(target, patch)
    return merge_patch(target, patch)
