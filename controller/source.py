"""Where a discovery cycle reads the cluster: a state file, or the API. Chosen once per process
(controller/compose.py); the cycle (controller/run.py) asks the source and never which one it is.

- `StateFileSource`: everything from one file (`--state`, with `--once`); the cycle writes nothing.
- `ApiSource`: nodes, DaemonSets and NodeGroupTemplates listed once per cycle, the pods at most once
  per cycle and only when scaling needs them (`--once`, or a caller without live caches).
- `CachedSource`: the long-running loop's; list+watch caches (kube/reflector.py, kube/store.py)
  instead of a list every cycle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from capacity.autoscaler_memory import AutoscalerProcess
from capacity.names import TEMPLATE_KIND, VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
from capacity.records import PodRecord, project_pod
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.memory import observe
from kube.store import Store, object_key

if TYPE_CHECKING:
    from kube.client import ApiLike
    from kube.reflector import Reflector

log = logging.getLogger(__name__)


@dataclass
class ClusterObjects:
    """One cycle's reading of the cluster (raw objects as the API returns them)."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    daemonsets: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)


class ConfigMapUnreadable(Exception):
    """The API refused or failed a ConfigMap read (other than its absence); the message says why."""


class ClusterSource(Protocol):
    """What a discovery cycle reads. `api` is the client the cycle writes through (None: write nothing)."""

    @property
    def api(self) -> ApiLike | None:
        """The client the cycle writes through; None: write nothing."""
        ...

    def objects(self) -> ClusterObjects:
        """Nodes, DaemonSets and NodeGroupTemplates, as of now."""
        ...

    def pods(self) -> list[dict[str, Any]]:
        """Every pod (raw), read at most once per `objects()` call."""
        ...

    def pods_on_node(self, node: str) -> list[dict[str, Any]]:
        """The pods (raw) bound to one node; KubeError when the API cannot list them."""
        ...

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One ConfigMap, None when absent; ConfigMapUnreadable when it could not be read."""
        ...

    def autoscaler(self, selector: str, namespace: str) -> tuple[AutoscalerProcess | None, str]:
        """The running cluster-autoscaler and how it was sought (controller/memory.py observe)."""
        ...


@dataclass
class StateFileSource:
    """A state file read once: the cycle sees the same objects every time and writes nothing."""

    path: str
    api: ApiLike | None = None
    _kinds: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from kube.statefile import by_kind, load_state

        self._kinds = by_kind(load_state(self.path))

    def objects(self) -> ClusterObjects:
        kinds = self._kinds
        return ClusterObjects(kinds.get("Node", []), kinds.get("DaemonSet", []), kinds.get(TEMPLATE_KIND, []))

    def pods(self) -> list[dict[str, Any]]:
        return self._kinds.get("Pod", [])

    def pods_on_node(self, node: str) -> list[dict[str, Any]]:
        return _bound_to(self.pods(), node)

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        for obj in self._kinds.get("ConfigMap", []):
            meta = obj.get("metadata") or {}
            if (meta.get("namespace"), meta.get("name")) == (namespace, name):
                return obj
        return None

    def autoscaler(self, selector: str, namespace: str) -> tuple[AutoscalerProcess | None, str]:
        return observe(selector, namespace, state_pods=self.pods())


@dataclass
class ApiSource:
    """The API, listed afresh each cycle (the `--once` path and callers with no live caches)."""

    api: ApiLike
    _pods: list[dict[str, Any]] | None = None

    def objects(self) -> ClusterObjects:
        from kube.api import list_daemonsets, list_node_group_templates, list_nodes

        self._pods = None  # a new cycle lists the pods again, if it needs them
        return ClusterObjects(
            list_nodes(self.api), list_daemonsets(self.api), list_node_group_templates(self.api)
        )

    def pods(self) -> list[dict[str, Any]]:
        if self._pods is None:
            from kube.api import list_all_pods

            self._pods = list_all_pods(self.api)
        return self._pods

    def pods_on_node(self, node: str) -> list[dict[str, Any]]:
        """From the cycle's pods when they were listed already, else one list by field selector."""
        if self._pods is not None:
            return _bound_to(self._pods, node)
        from kube.api import list_pods_on_node

        return list_pods_on_node(self.api, node)

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        from kube.api import get_config_map
        from kube.client import KubeError

        try:
            return get_config_map(self.api, namespace, name)
        except KubeError as err:
            if err.not_found:
                return None
            raise ConfigMapUnreadable(str(err)) from None

    def autoscaler(self, selector: str, namespace: str) -> tuple[AutoscalerProcess | None, str]:
        return observe(selector, namespace, api=self.api)


def _bound_to(pods: list[dict[str, Any]], node: str) -> list[dict[str, Any]]:
    return [p for p in pods if (p.get("spec") or {}).get("nodeName") == node]


def pending_pods(source: ClusterSource) -> list[dict[str, Any]]:
    """The raw pods bound to no node."""
    return [p for p in source.pods() if not (p.get("spec") or {}).get("nodeName")]


def pod_records(source: ClusterSource) -> list[PodRecord]:
    """Every pod's record; a malformed pod is logged and left out."""
    records = []
    for pod in source.pods():
        try:
            records.append(project_pod(pod))
        except (TypeError, ValueError) as err:
            log.warning("pod %s unreadable: %s", (pod.get("metadata") or {}).get("name"), err)
    return records


def true_free(source: ClusterSource, nodes: list[Mapping[str, Any]], release: str) -> dict[str, int | None]:
    """Truly free branch ENIs per node from books built from this one reading (no live books: the
    once path), so that the plan counts held ENIs and advertised capacity as the loop does."""
    from capacity.books_once import books_from_objects

    try:
        found = source.config_map(VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME)
    except ConfigMapUnreadable as err:
        log.warning("VPC CNI ConfigMap unreadable, the default cooldown is used: %s", err)
        found = None
    config_maps = [{**found, "kind": "ConfigMap"}] if found is not None else []
    pods = [{**pod, "kind": "Pod"} for pod in source.pods()]
    kinded = [{**node, "kind": "Node"} for node in nodes]
    now = time.time()
    books, _ = books_from_objects([*pods, *kinded, *config_maps], now, release=release)
    return {row.name: row.true_free for row in books.node_summary(now)}


@dataclass
class CachedSource:
    """The long-running loop's source: nodes from the books' node watch (their slim copy), DaemonSets
    and NodeGroupTemplates from watches of their own, so that no cycle lists them again; the pods,
    the priority ConfigMap and cluster-autoscaler's pods are read from the API as `ApiSource` does
    (the loop hands scaling the books' pods instead)."""

    api: ApiLike
    nodes: Store[dict[str, Any]]
    daemonsets: Store[dict[str, Any]] = field(default_factory=lambda: Store("daemonsets"))
    templates: Store[dict[str, Any]] = field(default_factory=lambda: Store(TEMPLATE_KIND))
    _reflectors: list[Reflector] = field(default_factory=list)
    _fresh: ApiSource | None = None
    last_autoscaler: AutoscalerProcess | None = None

    def start(self) -> CachedSource:
        """Starts the DaemonSet and NodeGroupTemplate watches (the books start the node watch)."""
        from kube.api import start_reflector

        self._reflectors = [
            start_reflector(self.api, "DaemonSet", self.daemonsets),
            start_reflector(self.api, TEMPLATE_KIND, self.templates),
        ]
        return self

    def stop(self) -> None:
        for reflector in self._reflectors:
            reflector.stop()

    def wait_synced(self, timeout: float) -> bool:
        """Whether every cache completed its first list, waiting up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not all(store.synced for store in (self.nodes, self.daemonsets, self.templates)):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def objects(self) -> ClusterObjects:
        """The caches as of now, in the order a list returns them (by namespace, then name)."""
        self._fresh = ApiSource(self.api)  # this cycle's pods, listed only if asked for

        def ordered(store: Store[dict[str, Any]]) -> list[dict[str, Any]]:
            return sorted(store.items(), key=object_key)

        return ClusterObjects(ordered(self.nodes), ordered(self.daemonsets), ordered(self.templates))

    def _api(self) -> ApiSource:
        if self._fresh is None:
            self._fresh = ApiSource(self.api)
        return self._fresh

    def pods(self) -> list[dict[str, Any]]:
        return self._api().pods()

    def pods_on_node(self, node: str) -> list[dict[str, Any]]:
        return self._api().pods_on_node(node)

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._api().config_map(namespace, name)

    def autoscaler(self, selector: str, namespace: str) -> tuple[AutoscalerProcess | None, str]:
        found = self._api().autoscaler(selector, namespace)
        self.last_autoscaler = found[0]  # the guard reads its taint options between cycles
        return found

    def autoscaler_taints(self) -> TaintOptions:
        """The taint options of the cluster-autoscaler the last cycle found (only what every
        cluster-autoscaler drops before a cycle has found one)."""
        process = self.last_autoscaler
        return process.taint_options if process is not None else DEFAULT_TAINT_CONFIG
