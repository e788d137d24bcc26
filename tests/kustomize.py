"""Render a kustomization the way `kubectl kustomize` does, for the subset fitguard's manifests use.

Supported: `resources` (YAML files and kustomization directories), `components` (directories of
`kind: Component`), `patches` (strategic merge or JSON 6902, inline or from a file, with or without
a `target`), `namespace`, `labels`, `commonLabels` and `images`, and objects annotated
`config.kubernetes.io/local-config` (kept through the build, dropped from what `build` returns, as
kustomize prints them). Anything else in a kustomization
is refused rather than silently ignored, so a manifest change that needs more of kustomize fails
here instead of rendering something else.
`render` uses `kubectl kustomize` itself when kubectl is on PATH and `prefer_kubectl` is set.
"""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.fakekube.patch import PatchError, strategic_merge_patch
from tests.fakekube.patch import json_patch as apply_json_patch

Obj = dict[str, Any]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_SUPPORTED_KEYS = frozenset(
    {
        "apiVersion",
        "kind",
        "resources",
        "components",
        "patches",
        "namespace",
        "labels",
        "commonLabels",
        "images",
    }
)
KUSTOMIZATION = "Kustomization"
COMPONENT = "Component"
# Kinds without a namespace among those the manifests could hold (a `namespace:` leaves them alone).
_CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "PriorityClass",
        "StorageClass",
        "PersistentVolume",
        "APIService",
        "Node",
        "NodeGroupTemplate",
    }
)
# patchMergeKey of the keyed lists a strategic merge patch may touch (k8s.io/api struct tags);
# every other list is replaced whole, as strategic merge does for atomic lists.
_WORKLOADS_WITH_SELECTOR = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
_WORKLOADS_WITH_TEMPLATE = _WORKLOADS_WITH_SELECTOR | {"Job", "ReplicationController"}


# libyaml's loader where PyYAML has it (same documents, far faster than the pure-Python one).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_all(text: str) -> list[Any]:
    """Every document of a YAML text, parsed once per distinct text (a render of many combinations
    reads the same files again and again); the caller gets a copy it may change."""
    return copy.deepcopy(_parsed(text))


@functools.lru_cache(maxsize=512)
def _parsed(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=_LOADER))


class KustomizeError(ValueError):
    """The kustomization cannot be rendered by this loader (or is wrong)."""


def render(directory: Path, *, prefer_kubectl: bool = False) -> list[Obj]:
    """The objects a kustomization directory renders to."""
    if prefer_kubectl and kubectl_available():
        return render_with_kubectl(directory)
    return build(Path(directory))


def kubectl_available() -> bool:
    return shutil.which("kubectl") is not None


def render_with_kubectl(directory: Path) -> list[Obj]:
    result = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        raise KustomizeError(f"kubectl kustomize {directory} failed: {result.stderr.strip()}")
    return [doc for doc in yaml.load_all(result.stdout, Loader=_LOADER) if doc]


def object_id(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace, name): what kustomize calls a resource id."""
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", ""))


# kustomize leaves an object so annotated out of what it prints, once the whole build (every level,
# every patch) has run: KustTarget.makeCustomizedResMap calls IgnoreLocal last (kustomize v5.0.0 on,
# api/internal/target/kusttarget.go; docs/upstream.md).
LOCAL_CONFIG = "config.kubernetes.io/local-config"


def build(directory: Path) -> list[Obj]:
    """Render one kustomization directory with this loader (never kubectl), as `kubectl kustomize`
    prints it: without the objects annotated local-config "true"."""
    return [obj for obj in _build(directory) if not _is_local(obj)]


def _is_local(obj: Obj) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return LOCAL_CONFIG in annotations and annotations[LOCAL_CONFIG] != "false"


def _build(directory: Path) -> list[Obj]:
    """A kustomization's objects as its parent accumulates them: local-config ones still there."""
    return _accumulate(directory, _read_kustomization(directory), [])


def _accumulate(directory: Path, kustomization: Obj, objects: list[Obj]) -> list[Obj]:
    """Add a kustomization's resources to `objects`, then its components, then run its patches and
    transformers over everything accumulated. As kustomize does (api/internal/target/kusttarget.go,
    `KustTarget.accumulateTarget`, `accumulateComponents`, `accumulateDirectory`): a resource
    directory is rendered on its own and merged; a component gets no accumulator of its own, so its
    resources join the parent's (a resource id already there is an error) and its patches and
    transformers see everything listed before it, in the order the components are listed."""
    for entry in kustomization.get("resources") or []:
        objects.extend(_load_resource(directory, entry))
    _check_unique(objects, directory)
    for entry in kustomization.get("components") or []:
        objects = _load_component(directory, entry, objects)
    for patch in kustomization.get("patches") or []:
        _apply_patch_entry(objects, directory, patch)
    if kustomization.get("namespace"):
        _set_namespace(objects, kustomization["namespace"])
    for spec in _label_specs(kustomization):
        _add_labels(objects, *spec)
    for image in kustomization.get("images") or []:
        _set_image(objects, image)
    return objects


def _read_kustomization(directory: Path) -> Obj:
    for name in KUSTOMIZATION_FILES:
        path = directory / name
        if path.is_file():
            data = (_load_all(path.read_text()) or [None])[0] or {}
            unknown = set(data) - _SUPPORTED_KEYS
            if unknown:
                raise KustomizeError(f"{path}: keys this loader does not support: {sorted(unknown)}")
            return data
    raise KustomizeError(f"{directory}: no kustomization file")


def _load_resource(directory: Path, entry: str) -> list[Obj]:
    path = (directory / entry).resolve()
    if path.is_dir():
        if _read_kustomization(path).get("kind") == COMPONENT:
            raise KustomizeError(f"{directory}: {entry!r} is a Component: list it under components")
        return _build(path)
    if not path.is_file():
        raise KustomizeError(f"{directory}: resource {entry!r} does not exist")
    if directory.resolve() not in path.parents:
        # kustomize's default load restrictor: files only from inside the kustomization root.
        raise KustomizeError(f"{directory}: file {entry!r} is outside the kustomization root")
    return _documents(path.read_text())


def _load_component(directory: Path, entry: str, objects: list[Obj]) -> list[Obj]:
    path = (directory / entry).resolve()
    if not path.is_dir():
        raise KustomizeError(f"{directory}: component {entry!r} is not a directory")
    component = _read_kustomization(path)
    if component.get("kind") != COMPONENT:
        raise KustomizeError(f"{path}: listed in components but its kind is not {COMPONENT}")
    return _accumulate(path, component, objects)


def _documents(text: str) -> list[Obj]:
    docs: list[Obj] = []
    for doc in _load_all(text):
        if doc is None:
            continue
        if not isinstance(doc, dict) or "kind" not in doc:
            raise KustomizeError(f"not a Kubernetes object: {doc!r:.80}")
        if doc["kind"] == "List":
            docs.extend(doc.get("items") or [])
        else:
            docs.append(doc)
    return docs


def _check_unique(objects: list[Obj], directory: Path) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for obj in objects:
        key = object_id(obj)
        if key in seen:
            raise KustomizeError(f"{directory}: {key} appears twice")
        seen.add(key)


# --- patches ----------------------------------------------------------------------------------


def _apply_patch_entry(objects: list[Obj], directory: Path, entry: Mapping[str, Any]) -> None:
    if ("path" in entry) == ("patch" in entry):
        raise KustomizeError(f"{directory}: a patch has exactly one of path and patch: {entry!r}")
    text = (directory / entry["path"]).read_text() if "path" in entry else entry["patch"]
    target = entry.get("target")
    parsed = _load_all(text)
    if len(parsed) == 1 and isinstance(parsed[0], list):
        if target is None:
            raise KustomizeError(f"{directory}: a JSON 6902 patch needs a target")
        matched = _select(objects, target)
        for index in matched:
            objects[index] = json_patch(objects[index], parsed[0])
        return
    for patch in (doc for doc in parsed if doc is not None):
        selector = target or _identity_selector(patch)
        for index in _select(objects, selector):
            objects[index] = strategic_merge(objects[index], _without_identity(patch) if target else patch)


def _identity_selector(patch: Mapping[str, Any]) -> Obj:
    group, _, version = str(patch.get("apiVersion", "")).rpartition("/")
    meta = patch.get("metadata") or {}
    selector: Obj = {"group": group, "version": version, "kind": patch.get("kind"), "name": meta.get("name")}
    if meta.get("namespace"):
        selector["namespace"] = meta["namespace"]
    return selector


def _without_identity(patch: Mapping[str, Any]) -> Obj:
    # With an explicit target, the patch's own name must not rename the targets.
    body = copy.deepcopy(dict(patch))
    meta = body.get("metadata")
    if isinstance(meta, dict):
        meta.pop("name", None)
        meta.pop("namespace", None)
    return body


def _select(objects: list[Obj], target: Mapping[str, Any]) -> list[int]:
    unknown = set(target) - {"group", "version", "kind", "name", "namespace"}
    if unknown:
        raise KustomizeError(f"patch target fields this loader does not support: {sorted(unknown)}")
    matched = []
    for index, obj in enumerate(objects):
        group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
        meta = obj.get("metadata") or {}
        actual = {
            "group": group,
            "version": version,
            "kind": obj.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "",
        }
        if all(target[key] is None or actual[key] == target[key] for key in target):
            matched.append(index)
    if not matched:
        raise KustomizeError(f"patch target matches nothing: {dict(target)!r}")
    return matched


def strategic_merge(target: Any, patch: Any) -> Any:
    """Strategic merge as the API server applies it (the fake API server's engine), refusing the
    `$patch`-style directives the manifests never use."""
    if isinstance(patch, dict) and any(str(k).startswith("$") for k in patch):
        raise KustomizeError(f"strategic merge directives are not supported: {sorted(patch)!r}")
    return strategic_merge_patch(target, patch)


def json_patch(document: Any, operations: Iterable[Mapping[str, Any]]) -> Any:
    """RFC 6902 on a copy of `document` (the fake API server's engine)."""
    try:
        return apply_json_patch(document, list(operations))
    except PatchError as err:
        raise KustomizeError(f"JSON patch: {err}") from None


def _set_namespace(objects: list[Obj], namespace: str) -> None:
    for obj in objects:
        if obj.get("kind") not in _CLUSTER_SCOPED:
            obj.setdefault("metadata", {})["namespace"] = namespace


def _label_specs(kustomization: Mapping[str, Any]) -> Iterator[tuple[dict[str, str], bool, bool]]:
    """(labels, into selectors, into pod templates) for each label set, commonLabels first."""
    if kustomization.get("commonLabels"):
        yield dict(kustomization["commonLabels"]), True, True
    for entry in kustomization.get("labels") or []:
        selectors = bool(entry.get("includeSelectors", False))
        # kustomize: includeSelectors implies the templates too, or selectors would stop matching.
        yield (
            dict(entry.get("pairs") or {}),
            selectors,
            selectors or bool(entry.get("includeTemplates", False)),
        )


def _add_labels(objects: list[Obj], labels: dict[str, str], selectors: bool, templates: bool) -> None:
    for obj in objects:
        kind = obj.get("kind")
        _merge_into(obj, ("metadata", "labels"), labels)
        spec = obj.get("spec") or {}
        if selectors and kind in _WORKLOADS_WITH_SELECTOR:
            _merge_into(obj, ("spec", "selector", "matchLabels"), labels)
        if selectors and kind in ("Service", "ReplicationController"):
            _merge_into(obj, ("spec", "selector"), labels)
        if templates and kind in _WORKLOADS_WITH_TEMPLATE and "template" in spec:
            _merge_into(obj, ("spec", "template", "metadata", "labels"), labels)
        if templates and kind == "CronJob":
            _merge_into(obj, ("spec", "jobTemplate", "spec", "template", "metadata", "labels"), labels)


def _merge_into(obj: Obj, path: tuple[str, ...], labels: Mapping[str, str]) -> None:
    node = obj
    for part in path:
        node = node.setdefault(part, {})
    node.update(labels)


def _pod_specs(obj: Obj) -> Iterator[Obj]:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        yield spec
    if isinstance(spec.get("template"), dict):
        yield spec["template"].get("spec") or {}
    job = (spec.get("jobTemplate") or {}).get("spec") or {}
    if isinstance(job.get("template"), dict):
        yield job["template"].get("spec") or {}


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """(name, tag, digest) of an image reference; a registry port is not a tag."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = None
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest or None


def _set_image(objects: list[Obj], rule: Mapping[str, Any]) -> None:
    for obj in objects:
        for pod in _pod_specs(obj):
            for container in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                name, tag, digest = split_image(container.get("image", ""))
                if name != rule["name"]:
                    continue
                name = rule.get("newName", name)
                if "digest" in rule:
                    container["image"] = f"{name}@{rule['digest']}"
                elif "newTag" in rule:
                    container["image"] = f"{name}:{rule['newTag']}"
                else:
                    suffix = f":{tag}" if tag else ""
                    container["image"] = f"{name}{suffix}@{digest}" if digest else f"{name}{suffix}"


def write_kustomization(
    directory: Path,
    resources: Iterable[Path],
    components: Iterable[Path] = (),
    **fields: Any,
) -> Path:
    """Write into `directory` a kustomization of `resources` and `components` (directories, named
    relative to `directory` as kustomize wants them) plus any other `fields`; returns `directory`."""
    directory.mkdir(parents=True, exist_ok=True)

    def relative(path: Path) -> str:
        return os.path.relpath(Path(path).resolve(), directory.resolve())

    kustomization: Obj = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": KUSTOMIZATION,
        "resources": [relative(path) for path in resources],
    }
    listed = [relative(path) for path in components]
    if listed:
        kustomization["components"] = listed
    kustomization.update(fields)
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return directory
