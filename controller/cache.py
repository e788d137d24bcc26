"""The controller's one model of the cluster, in the shape of controller-runtime's cache: a store per
kind, each filled one way for the whole process and read by every reconciler.

- The long-running controller: list+watch reflectors (kube/reflector.py), one per kind.
- `fitguard controller --once`: one list of each kind (`listed`).
- `--state FILE`: the file's objects (`from_state`).

Either way the stores hold the same projections (kube/store.py): pod and node records for the books
(capacity/records.py), the unbound pending pods the planner reads (slim, kube/podwire.py), the slim
nodes discovery reads, the DaemonSets, the NodeGroupTemplates and cluster-autoscaler's pods. The
books listen to the stores (controller/books.py), so every path builds them from the same events.
ConfigMaps are read one at a time when asked for: from the file, or a GET (RBAC grants the two named
ones, not a list).
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from capacity.autoscaler_memory import DEFAULT_SELECTOR, AutoscalerProcess, running_autoscaler
from capacity.karpenter.controller_options import KARPENTER_SELECTOR
from capacity.kept import kept
from capacity.names import IGNORE_LABEL, TEMPLATE_KIND
from capacity.records import (
    CONTAINER_PLACEMENT_FIELDS,
    PLACEMENT_FIELDS,
    NodeRecord,
    PodRecord,
    discovery_node,
    project_node,
    project_pod,
    same_pod,
)
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.memory import looked_for, select_pods
from kube.options import ReflectorOptions, WatchOptions
from kube.store import Fanout, Store, object_key

if TYPE_CHECKING:
    from kube.client import ApiLike
    from kube.reflector import Reflector
    from kube.when_served import WhenServed

log = logging.getLogger(__name__)
NODE_POOL, NODE_CLASS = "NodePool", "EC2NodeClass"  # karpenter.sh/v1, karpenter.k8s.aws/v1
AUTO_NODE_CLASS = "NodeClass"  # eks.amazonaws.com/v1: EKS Auto Mode's


class ConfigMapUnreadable(Exception):
    """The API refused or failed a ConfigMap read (other than its absence); the message says why."""


@dataclass(frozen=True)
class CacheOptions:
    autoscaler_selector: str = DEFAULT_SELECTOR  # cluster-autoscaler's pods; "" looks for none
    autoscaler_namespace: str = ""  # "" = all namespaces
    watch: WatchOptions = field(default_factory=WatchOptions)  # every reflector's; its page size for --once
    # the Karpenter controller's pods (its settings that change capacity); "" looks for none
    karpenter_selector: str = KARPENTER_SELECTOR
    karpenter_namespace: str = ""  # "" = all namespaces


# What the planner reads of an unbound pending pod (capacity/demand.py is_unschedulable,
# pending_shapes, shape_key; capacity/fit.py PodNeeds.from_spec; kube/events.py ObjectRef.of for
# its events): the rest of the pod is left out of the pending store's copy.
_PENDING_META = ("name", "namespace", "uid")
_SCHEDULED_READ = ("type", "status", "reason")
SHARED_SPECS = 4096  # distinct pod placements kept shared; past that the memo starts again


def _pending_conditions(conditions: Any) -> Any:
    """The PodScheduled condition's type, status and reason, the only condition the planner reads
    (a value that is not a list kept as it came)."""
    if not isinstance(conditions, list):
        return conditions
    return [
        {k: _interned(c[k]) for k in _SCHEDULED_READ if k in c}
        for c in conditions
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled"
    ]


def _interned(value: Any) -> Any:
    """The same few words on every pending pod (Pending, PodScheduled, False, Unschedulable, its
    namespace): one copy of each."""
    return sys.intern(value) if type(value) is str else value


def _placement(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What decides where the pod fits (capacity/records.py PLACEMENT_FIELDS, each container's
    resources and restartPolicy); a container that is not a map, or a list that is not one, kept as
    it came so the planner reports the pod malformed as it would on the whole object."""
    kept = {key: spec[key] for key in PLACEMENT_FIELDS if key in spec}
    for key in kept.keys() & {"containers", "initContainers"}:
        if isinstance(kept[key], list):
            kept[key] = [
                {f: c[f] for f in CONTAINER_PLACEMENT_FIELDS if f in c} if isinstance(c, Mapping) else c
                for c in kept[key]
            ]
    return kept


class PendingPods:
    """The pending store's projection: an unbound, Pending pod not being deleted, slim (about 0.3 KB
    where the decoded pod is about 5 KB), its placement shared with every pod of the same placement
    (replicas of one workload wait together) and its status with every pod of the same status (the
    phase and the scheduler's reason: a few kinds for all of them); None: not one the planner may
    place. The copies are read only."""

    def __init__(self) -> None:
        self._specs: dict[bytes, dict[str, Any]] = {}
        self._statuses: dict[bytes, dict[str, Any]] = {}

    def __call__(self, obj: Mapping[str, Any]) -> Any:
        spec = obj.get("spec") or {}
        if spec.get("nodeName"):  # most pods: bound, answered before anything else is read
            return None
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        if meta.get("deletionTimestamp"):
            return None
        if (status.get("phase") or "Pending") != "Pending":
            return None
        slim_meta = {k: meta[k] for k in _PENDING_META if k in meta}
        if "namespace" in slim_meta:
            slim_meta["namespace"] = _interned(slim_meta["namespace"])
        labels = meta.get("labels")
        if isinstance(labels, Mapping) and IGNORE_LABEL in labels:
            slim_meta["labels"] = {IGNORE_LABEL: labels[IGNORE_LABEL]}
        slim_status = {k: _interned(status[k]) for k in ("phase",) if k in status}
        if "conditions" in status:
            slim_status["conditions"] = _pending_conditions(status["conditions"])
        return {
            **{k: obj[k] for k in ("kind", "apiVersion") if k in obj},
            "metadata": slim_meta,
            "spec": _shared(self._specs, _placement(spec)),
            "status": _shared(self._statuses, slim_status),
        }


def _shared(memo: dict[bytes, dict[str, Any]], value: dict[str, Any]) -> dict[str, Any]:
    """The copy equal to `value` already kept (the same JSON), else `value`, kept from now on."""
    try:
        key = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    except (TypeError, ValueError):  # not JSON's types (a hand-written state file): not shared
        return value
    return kept(memo, key, value, SHARED_SPECS)


class ClusterCache:
    """The stores, filled once per process; `api` is what ConfigMaps are read through (None: a file)."""

    def __init__(self, settings: CacheOptions | None = None) -> None:
        self.settings = settings or CacheOptions()
        self.pods: Store[PodRecord] = Store("pods", project_pod, same_pod)
        self.pending: Store[Mapping[str, Any]] = Store("pending pods", PendingPods())
        self.nodes: Store[NodeRecord] = Store("nodes", project_node)
        self.node_objects: Store[dict[str, Any]] = Store("nodes (discovery)", discovery_node)
        self.daemonsets: Store[dict[str, Any]] = Store("daemonsets")
        self.templates: Store[dict[str, Any]] = Store(TEMPLATE_KIND)
        self.autoscalers: Store[dict[str, Any]] = Store("cluster-autoscaler pods")
        # Karpenter's: empty and synced where the API does not serve them (no Karpenter)
        self.nodepools: Store[dict[str, Any]] = Store(NODE_POOL)
        self.nodeclasses: Store[dict[str, Any]] = Store(NODE_CLASS)
        self.automode_classes: Store[dict[str, Any]] = Store(AUTO_NODE_CLASS)
        self.karpenters: Store[dict[str, Any]] = Store("Karpenter controller pods")
        self.api: ApiLike | None = None
        self._config_maps: dict[tuple[str, str], dict[str, Any]] | None = None  # a state file's
        self._file_pods: list[dict[str, Any]] = []  # a state file's, whole (pods_on_node)
        self._autoscaler_error = ""  # why cluster-autoscaler's pods could not be listed (--once)
        self._reflectors: list[Reflector | WhenServed] = []
        self._frozen = False
        # run once ConfigMaps can be read and before any object arrives (the books' release window,
        # which decides whether a finished pod still holds its branch ENI when it is first seen)
        self._before_fill: list[Callable[[], object]] = []

    # -- filling ------------------------------------------------------------------------------

    def before_fill(self, step: Callable[[], object]) -> None:
        self._before_fill.append(step)

    def _prepare(self) -> None:
        for step in self._before_fill:
            step()

    def fill(self, kinds: Mapping[str, list[dict[str, Any]]]) -> ClusterCache:
        """Every store from objects by kind (a state file): what is not there is an empty store."""
        self._config_maps = {object_key(cm): cm for cm in kinds.get("ConfigMap", [])}
        self._prepare()
        pods = self._file_pods = kinds.get("Pod", [])
        self._replace_nodes(kinds.get("Node", []))
        self._replace_pods(pods)
        self.daemonsets.replace(kinds.get("DaemonSet", []))
        self.templates.replace(kinds.get(TEMPLATE_KIND, []))
        for _, store, selector, namespace in self._selections():
            store.replace(select_pods(pods, selector, namespace))
        for kind, store in self._optional_kinds():
            store.replace(kinds.get(kind, []))
        return self

    def _optional_kinds(self) -> tuple[tuple[str, Store[dict[str, Any]]], ...]:
        """The kinds served only where Karpenter or EKS Auto Mode runs, with their stores."""
        return (
            (NODE_POOL, self.nodepools),
            (NODE_CLASS, self.nodeclasses),
            (AUTO_NODE_CLASS, self.automode_classes),
        )

    def _selections(self) -> tuple[tuple[str, Store[dict[str, Any]], str, str], ...]:
        """The stores of pods picked by a label selector ("" picks none): (name, store, selector,
        namespace)."""
        options = self.settings
        return (
            ("autoscaler-pods", self.autoscalers, options.autoscaler_selector, options.autoscaler_namespace),
            ("karpenter-pods", self.karpenters, options.karpenter_selector, options.karpenter_namespace),
        )

    def list_from(self, api: ApiLike) -> ClusterCache:
        """Every store from one list of each kind (`--once`); ConfigMaps read through `api` after."""
        from kube import api as kube_api
        from kube.client import KubeError

        self.api = api
        self._prepare()
        size = self.settings.watch.page_size
        self._replace_nodes(kube_api.list_all_nodes(api, size))
        self._replace_pods(kube_api.list_slim_pods(api, size))
        self.daemonsets.replace(kube_api.list_daemonsets(api))
        self.templates.replace(kube_api.list_node_group_templates(api))
        selector, namespace = self.settings.autoscaler_selector, self.settings.autoscaler_namespace
        try:
            found = kube_api.list_pods_by_label(api, namespace or None, selector) if selector else []
        except KubeError as err:
            log.warning(
                "cluster-autoscaler pods unreadable (%s): groups judged by their tags: %s", selector, err
            )
            self._autoscaler_error = str(err)
            found = []
        self.autoscalers.replace(found)
        for kind, store in self._optional_kinds():
            try:
                store.replace(kube_api.list_kind(api, kind, page_size=size))
            except KubeError as err:
                if err.status != 404:  # 404: the CRD is not installed, so there are none
                    raise
                store.replace([])
        selector, namespace = self.settings.karpenter_selector, self.settings.karpenter_namespace
        self.karpenters.replace(
            kube_api.list_pods_by_label(api, namespace or None, selector) if selector else []
        )
        return self

    def _replace_pods(self, pods: Iterable[Mapping[str, Any]]) -> None:
        Fanout([self.pods, self.pending]).replace(pods)

    def _replace_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        Fanout([self.nodes, self.node_objects]).replace(nodes)

    def start(self, api: ApiLike) -> ClusterCache:
        """A reflector per kind (threads); `wait_synced` before trusting the stores."""
        from kube import podwire
        from kube.api import start_reflector

        self.api = api
        self._prepare()
        watch = self.settings.watch
        pods = Fanout([self.pods, self.pending])
        nodes = Fanout([self.nodes, self.node_objects])
        self._reflectors = [
            start_reflector(api, "Node", nodes, ReflectorOptions(name="books-nodes", watch=watch)),
            # pods parsed for the fields the records and the planner read only
            start_reflector(
                api, "Pod", pods, ReflectorOptions(name="books-pods", decoders=podwire.DECODERS, watch=watch)
            ),
            start_reflector(api, "DaemonSet", self.daemonsets, ReflectorOptions(watch=watch)),
            start_reflector(api, TEMPLATE_KIND, self.templates, ReflectorOptions(watch=watch)),
        ]
        for name, store, selector, namespace in self._selections():
            if not selector:
                store.replace([])
                continue
            options = ReflectorOptions(
                name=name, namespace=namespace or None, label_selector=selector, watch=watch
            )
            self._reflectors.append(start_reflector(api, "Pod", store, options))
        self._start_karpenter(api)
        return self

    def _start_karpenter(self, api: ApiLike) -> None:
        """NodePools and node classes once the API serves them (empty and synced until then)."""
        from kube.when_served import WhenServed

        watch = self.settings.watch
        for kind, store in self._optional_kinds():
            self._reflectors.append(
                WhenServed(api, kind, store, options=ReflectorOptions(watch=watch)).start()
            )

    def stop(self) -> None:
        for reflector in self._reflectors:
            reflector.stop()

    # -- reading ------------------------------------------------------------------------------

    def stores(self) -> tuple[Store[Any], ...]:
        return (
            self.nodes,
            self.pods,
            self.daemonsets,
            self.templates,
            self.autoscalers,
            self.nodepools,
            self.nodeclasses,
            self.automode_classes,
            self.karpenters,
        )

    def waiting_for(self) -> list[str]:
        """The stores whose first list has not completed (every one of them before `start`)."""
        return [store.kind for store in self.stores() if not store.synced]

    def wait_synced(self, timeout: float | None = None) -> bool:
        """Whether every store completed its first list, waiting up to `timeout` s (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.waiting_for():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        if not self._frozen:
            # the first complete stores leave the GC's generations (as webhook/server.py's caches):
            # collections would otherwise rescan 150,000 long-lived records for nothing
            self._frozen = True
            gc.freeze()
        return True

    @property
    def from_file(self) -> bool:
        return self._config_maps is not None

    @staticmethod
    def ordered(store: Store[dict[str, Any]]) -> list[dict[str, Any]]:
        """A store's objects in the order a list returns them (by namespace, then name)."""
        return sorted(store.items(), key=object_key)

    def config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One ConfigMap, None when absent; ConfigMapUnreadable when the API could not say."""
        if self._config_maps is not None:
            return self._config_maps.get((namespace, name))
        if self.api is None:
            return None
        from kube.api import get_config_map
        from kube.client import KubeError

        try:
            return get_config_map(self.api, namespace, name)
        except KubeError as err:
            if err.not_found:
                return None
            raise ConfigMapUnreadable(str(err)) from None

    def pods_on_node(self, node: str) -> list[dict[str, Any]]:
        """The pods bound to one node, whole (the records keep too little of them): from the file, or
        one list by field selector (RBAC grants the controller pod lists). KubeError from the API."""
        if self._config_maps is not None or self.api is None:
            return [p for p in self._file_pods if (p.get("spec") or {}).get("nodeName") == node]
        from kube.api import list_pods_on_node

        return list_pods_on_node(self.api, node)

    def autoscaler(self) -> tuple[AutoscalerProcess | None, str]:
        """The running cluster-autoscaler (None: none found, or its pods unreadable: then every
        group at zero is judged by its tags) and how it was sought, for the reason a person reads."""
        sought = looked_for(self.settings.autoscaler_selector, self.settings.autoscaler_namespace)
        if self._autoscaler_error:
            return None, f"{sought}: unreadable ({self._autoscaler_error})"
        return running_autoscaler(self.autoscalers.items()), sought

    def autoscaler_taints(self) -> TaintOptions:
        """The taint options of the cluster-autoscaler running now (only what every
        cluster-autoscaler drops when none is found)."""
        process, _ = self.autoscaler()
        return process.taint_options if process is not None else DEFAULT_TAINT_CONFIG
