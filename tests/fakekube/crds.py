"""The CustomResourceDefinitions in manifests/crds/: their names in discovery and their Table form.

The resource types themselves are in registry.REGISTRY; `check_registry` (run on import) makes a
CRD in manifests/crds/ that the registry serves differently (kind, scope) an error, so the fake
serves what the manifests define, the status subresource included (the controller writes a
NodeGroupTemplate's status through it). What kubectl reads from a CRD:
- discovery lists shortNames and categories beside the resource (kubectl get ngt);
- a GET asking for `as=Table` gets a meta.k8s.io/v1 Table with a Name column and the version's
  additionalPrinterColumns, as k8s.io/apiextensions-apiserver pkg/registry/customresource/
  tableconvertor/tableconvertor.go (New, ConvertToTable, cellForJSONValue) builds it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from .registry import REGISTRY, ResourceType

CRD_DIRECTORY = Path(__file__).resolve().parents[2] / "manifests" / "crds"
Table = Callable[[dict[str, Any], dict[str, str]], dict[str, Any]]


def load(directory: Path = CRD_DIRECTORY) -> dict[tuple[str, str], dict[str, Any]]:
    """The CRDs of a directory by (group, plural)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
                spec = document["spec"]
                found[(spec["group"], spec["names"]["plural"])] = document
    return found


_CRDS = load()


def _version(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    return next((v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")), None)


def check_registry(crds: dict[tuple[str, str], dict[str, Any]] = _CRDS) -> None:
    """Every CRD's served versions are in the registry as custom resources of the CRD's kind and scope."""
    for (group, plural), crd in crds.items():
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served"):
                continue
            rt = next(
                (r for r in REGISTRY if (r.group, r.version, r.plural) == (group, version["name"], plural)),
                None,
            )
            has_status = "status" in (version.get("subresources") or {})
            expected = (spec["names"]["kind"], spec["scope"] == "Namespaced", False, has_status)
            actual = (rt.kind, rt.namespaced, rt.builtin, rt.has_status) if rt else None
            if actual != expected:
                raise RuntimeError(
                    f"fakekube registry serves {group}/{version['name']} {plural} as {actual}, "
                    f"the CRD defines (kind, namespaced, builtin, status subresource) {expected}"
                )


check_registry()


def discovery_fields(rt: ResourceType) -> dict[str, Any]:
    """shortNames and categories of a custom resource, for its APIResourceList entry."""
    crd = _CRDS.get((rt.group, rt.plural))
    if crd is None:
        return {}
    names = crd["spec"]["names"]
    return {key: names[key] for key in ("shortNames", "categories") if names.get(key)}


def table_request(rt: ResourceType, accept: str | None) -> Table | None:
    """The converter to a Table when the client asks for one and the resource is a CRD's."""
    crd = _CRDS.get((rt.group, rt.plural))
    if crd is None or "as=Table" not in (accept or ""):
        return None
    version = _version(crd, rt.version) or {}
    columns = version.get("additionalPrinterColumns") or []

    def convert(obj: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        return to_table(obj, columns, query.get("includeObject") or "Metadata")

    return convert


def to_table(obj: dict[str, Any], columns: list[dict[str, Any]], include_object: str) -> dict[str, Any]:
    """ConvertToTable of one object or a list, `columns` being additionalPrinterColumns."""
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}]
    for column in columns:
        description = column.get("description") or (
            f"Custom resource definition column (in JSONPath format): {column['jsonPath']}"
        )
        definitions.append(
            {
                "name": column["name"],
                "type": column["type"],
                "format": column.get("format", ""),
                "description": description,
                "priority": column.get("priority", 0),
            }
        )
    is_list = "items" in obj
    items = obj["items"] if is_list else [obj]
    metadata = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
    if is_list and obj["metadata"].get("continue"):
        metadata["continue"] = obj["metadata"]["continue"]
    rows = [_row(item, columns, include_object) for item in items]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }


def _row(obj: dict[str, Any], columns: list[dict[str, Any]], include_object: str) -> dict[str, Any]:
    cells: list[Any] = [obj["metadata"]["name"]]
    for column in columns:
        found, value = _find(obj, column["jsonPath"])
        cells.append(_cell(column["type"], value) if found and value is not None else None)
    row: dict[str, Any] = {"cells": cells}
    if include_object == "Object":
        row["object"] = obj
    elif include_object != "None":
        partial = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
        row["object"] = partial
    return row


def _path(json_path: str) -> list[str]:
    """A simple JSONPath (.a.b, `\\.` escaping a dot inside a key) as its keys."""
    keys, current, escaped = [], [], False
    for char in json_path.lstrip("."):
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ".":
            keys.append("".join(current))
            current = []
        else:
            current.append(char)
    keys.append("".join(current))
    return keys


def _find(obj: Any, json_path: str) -> tuple[bool, Any]:
    value = obj
    for key in _path(json_path):
        if not isinstance(value, dict) or key not in value:
            return False, None  # AllowMissingKeys: an empty cell
        value = value[key]
    return True, value


def _cell(column_type: str, value: Any) -> Any:
    if column_type == "string":  # jsonpath's PrintResults: text as is, anything else as JSON
        if isinstance(value, str):
            return value
        return json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else _scalar(value)
    if column_type == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if column_type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if column_type == "date" and isinstance(value, str):
        try:
            stamp = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return "<invalid>"
        return human_duration((datetime.now(UTC) - stamp).total_seconds())
    return None


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery pkg/util/duration HumanDuration: how kubectl shows an age."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"
