"""The branch ENI books of one list of objects at one time, for the paths that have no watch:
`fitguard report` and `fitguard controller --once`. Pure: the objects and the time are arguments."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from capacity.branch_eni import COOLDOWN, DEFAULT_WAITING_GRACE, BranchEniBooks, release_window_from_configmap
from capacity.names import VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
from capacity.records import NodeRecord, PodRecord, project_node, project_pod


def vpc_cni_data(objects: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The data of ConfigMap kube-system/amazon-vpc-cni among `objects` (None when absent)."""
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (
            obj.get("kind") == "ConfigMap"
            and meta.get("namespace") == VPC_CNI_CONFIG_NAMESPACE
            and meta.get("name") == VPC_CNI_CONFIG_NAME
        ):
            data = obj.get("data")
            return data if isinstance(data, Mapping) else {}
    return None


def books_from_objects(
    objects: Iterable[Mapping[str, Any]],
    now: float,
    *,
    release: str = COOLDOWN,
    waiting_grace: float = DEFAULT_WAITING_GRACE,
    window: float | None = None,
) -> tuple[BranchEniBooks, int]:
    """The books of one list of Pods, Nodes and the VPC CNI ConfigMap at `now` (`fitguard report`,
    `fitguard controller --once`), and how many objects were too malformed to count. The window is
    read from the ConfigMap as the live books read it at start, unless given."""
    objects = list(objects)
    if window is None:
        window = release_window_from_configmap(vpc_cni_data(objects)).seconds
    pods: list[PodRecord] = []
    nodes: list[NodeRecord] = []
    skipped = 0
    for obj in objects:
        kind = obj.get("kind")
        try:
            if kind == "Pod":
                pods.append(project_pod(obj))
            elif kind == "Node":
                nodes.append(project_node(obj))
        except (TypeError, ValueError, KeyError, AttributeError):
            skipped += 1  # one malformed object must not hide every other node's books
    books = BranchEniBooks(release=release, window=window, waiting_grace=waiting_grace)
    books.rebuild(pods, nodes, now)
    return books, skipped
