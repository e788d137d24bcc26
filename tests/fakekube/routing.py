"""URL paths as the apiserver lays them out, and the discovery documents clients read first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .crds import discovery_fields
from .registry import ResourceType, by_path, group_versions, in_group_version

VERSION_INFO = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-fakekube",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass(frozen=True)
class Route:
    """A resource URL: /api/v1/[watch/][namespaces/{ns}/]{plural}[/{name}[/{subresource}]]."""

    rt: ResourceType
    namespace: str | None  # None: cluster-scoped, or every namespace
    name: str | None
    subresource: str | None
    legacy_watch: bool  # the deprecated /watch/ path prefix


def _api_resources(group: str, version: str) -> dict[str, Any] | None:
    served = in_group_version(group, version)
    if not served:
        return None
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    resources: list[dict[str, Any]] = []
    for rt in served:
        common = {"singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind}
        resources.append({"name": rt.plural, **common, "verbs": verbs, **discovery_fields(rt)})
        if rt.has_status:
            resources.append({"name": f"{rt.plural}/status", **common, "verbs": ["get", "patch", "update"]})
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _api_group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def discovery(segments: list[str]) -> dict[str, Any] | None:
    """/version, /api, /apis, /apis/{group} and the resource lists of served group versions."""
    if segments == ["version"]:
        return VERSION_INFO
    if segments == ["api"]:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if segments == ["apis"]:
        groups = [_api_group(name, versions) for name, versions in group_versions().items()]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    if len(segments) == 2 and segments[0] == "apis" and segments[1] in group_versions():
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            **_api_group(segments[1], group_versions()[segments[1]]),
        }
    if len(segments) == 2 and segments[0] == "api":
        return _api_resources("", segments[1])
    if len(segments) == 3 and segments[0] == "apis":
        return _api_resources(segments[1], segments[2])
    return None


def resolve(path: str) -> Route | dict[str, Any] | None:
    """A resource route, a discovery document, or None when nothing is served there (404)."""
    segments = [segment for segment in path.split("/") if segment]
    document = discovery(segments)
    if document is not None or not segments:
        return document
    if segments[0] == "api" and len(segments) > 2:
        group, version, rest = "", segments[1], segments[2:]
    elif segments[0] == "apis" and len(segments) > 3:
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        inner = by_path(group, version, rest[2])
        if inner is not None and inner.namespaced:
            namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rt = by_path(group, version, rest[0])
    if rt is None:
        return None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if subresource is not None and (subresource != "status" or not rt.has_status):
        return None
    if rt.namespaced and name is not None and namespace is None:
        return None
    if not rt.namespaced and namespace is not None:
        return None
    return Route(rt, namespace, name, subresource, legacy_watch)
