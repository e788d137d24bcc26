"""What the corpus test judges: the published workloads of tests/corpus/manifests/ (each in the
namespace it is applied to) and every pod their controllers would make on a cluster, and the cluster
states they are judged against."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.corpus.controllers import controller_pods

CORPUS = Path(__file__).resolve().parent
MANIFESTS = CORPUS / "manifests"
SOURCES = CORPUS / "sources.yaml"
ROOT = CORPUS.parents[1]
CLUSTERS = {"demo": ROOT / "examples" / "cluster.yaml", "mixed": CORPUS / "mixed-cluster.yaml"}
WORKLOAD_KINDS = ("DaemonSet", "Deployment")
DEFAULT_SERVICE_ACCOUNT = "default"


@dataclass(frozen=True, slots=True)
class Subject:
    """One object the apiserver would send to the webhooks: a workload as applied, or a pod its
    controller creates. `where` names it for a failure message."""

    where: str
    obj: dict[str, Any]

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"]["namespace"])

    @property
    def is_daemon_pod(self) -> bool:
        owners = self.obj["metadata"].get("ownerReferences") or []
        return self.obj["kind"] == "Pod" and any(o.get("kind") == "DaemonSet" for o in owners)


def sources() -> list[dict[str, Any]]:
    return list(yaml.load(SOURCES.read_text(), Loader=yaml.CSafeLoader))


def workloads() -> Iterator[Subject]:
    """Each DaemonSet and Deployment of the corpus with the namespace it is applied into: its own,
    else the index's `namespace` for its file (kubectl apply -n), else default."""
    for entry in sources():
        path = MANIFESTS / entry["file"]
        for index, doc in enumerate(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader)):
            if not isinstance(doc, dict) or doc.get("kind") not in WORKLOAD_KINDS:
                continue
            obj = copy.deepcopy(doc)
            meta = obj["metadata"]
            meta["namespace"] = meta.get("namespace") or entry.get("namespace") or "default"
            where = f"{entry['file']} (document {index + 1}) {obj['kind']} {meta['namespace']}/{meta['name']}"
            yield Subject(where, obj)


def load_objects(path: Path) -> list[dict[str, Any]]:
    """A state file's objects: a List's items, or its documents."""
    docs = [d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d]
    if len(docs) == 1 and docs[0].get("kind") == "List":
        return list(docs[0]["items"])
    return docs


def nodes_of(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [o for o in objects if o.get("kind") == "Node"]


def subjects(cluster_objects: Sequence[Mapping[str, Any]]) -> list[Subject]:
    """Every workload, then every pod its controller makes on the cluster's nodes."""
    nodes = nodes_of(cluster_objects)
    result = []
    for workload in workloads():
        result.append(workload)
        for i, pod in enumerate(controller_pods(workload.obj, workload.namespace, nodes)):
            node = _pinned_node(pod)
            on = f" on {node}" if node else ""
            result.append(Subject(f"{workload.where}: pod {i + 1}{on}", pod))
    return result


def _pinned_node(pod: Mapping[str, Any]) -> str:
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name":
                return str(field["values"][0])
    return ""


def needed_accounts() -> set[tuple[str, str]]:
    """(namespace, ServiceAccount) of every corpus pod: what the mutating webhook looks up."""
    return {
        (
            w.namespace,
            str(w.obj["spec"]["template"]["spec"].get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT),
        )
        for w in workloads()
    }


def with_installed_accounts(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cluster once the add-ons' own Namespaces and ServiceAccounts are applied (they come with
    the manifests and exist before any controller makes a pod): each one missing is added."""
    have = {(o["metadata"].get("namespace", ""), o["kind"], o["metadata"]["name"]) for o in objects}
    added = list(objects)
    for namespace, account in sorted(needed_accounts()):
        if ("", "Namespace", namespace) not in have:
            added.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            have.add(("", "Namespace", namespace))
        if (namespace, "ServiceAccount", account) not in have:
            added.append(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": account, "namespace": namespace},
                }
            )
            have.add((namespace, "ServiceAccount", account))
    return added
