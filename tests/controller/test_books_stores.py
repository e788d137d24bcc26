"""controller/books.py, the books every replica keeps from the cache's listeners: when they last
changed (the books-age gauge), which unschedulable pod-eni pods the guard is given and how a pod
that cannot be read is told, what a deletion takes out, and the fields the window read logs."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from capacity.guard import PendingPod
from capacity.records import discovery_node
from controller.books import Books
from controller.cache import CacheOptions, ClusterCache, PendingPods
from controller.settings import BooksOptions
from kube.client import KubeError
from kube.options import WatchOptions
from tests.controller.test_books_reconciler import BASE, node, pod
from tests.objects import Clock

POD_ENI = "vpc.amazonaws.com/pod-eni"


def books(clock: Clock, **options: Any) -> tuple[Books, ClusterCache]:
    cache = ClusterCache(CacheOptions(autoscaler_selector=""))
    return Books(cache, BooksOptions(window=100.0, **options), clock), cache


def unschedulable(name: str, message: str = "0/3 nodes are available", **spec: Any) -> dict[str, Any]:
    """An unbound pod the scheduler could not place that asks for one branch ENI."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    if message:
        condition["message"] = message
    container = {"name": "main", "resources": {"requests": {POD_ENI: "1"}, "limits": {POD_ENI: "1"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}"},
        "spec": {"containers": [container], **spec},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


def test_the_books_age_is_the_time_of_the_last_pod_or_node_event() -> None:
    """last_event: 0 before any event; the clock's time at a pod event and at a node event."""
    clock = Clock(BASE)
    live, cache = books(clock)
    assert live.last_event == 0.0
    cache.nodes.replace([node("a")])
    assert live.last_event == BASE
    clock.now = BASE + 7
    cache.pods.apply("ADDED", pod("w1", "a"))
    assert live.last_event == BASE + 7
    clock.now = BASE + 9
    cache.nodes.apply("DELETED", node("a"))
    assert live.last_event == BASE + 9


def test_the_guard_is_given_each_unschedulable_pod_eni_pod_until_it_is_bound_or_deleted() -> None:
    """pending(): whole PendingPods, the scheduler's message kept (its reason when it gave none); a pod
    bound by a later event, or deleted, leaves the list."""
    clock = Clock(BASE)
    live, cache = books(clock)
    cache.nodes.replace([node("a")])
    cache.pods.replace([unschedulable("p1"), unschedulable("p2", message="")])
    found = {p.name: p for p in live.pending()}
    assert sorted(found) == ["p1", "p2"]
    assert all(isinstance(p, PendingPod) for p in found.values())
    assert (found["p1"].message, found["p2"].message) == ("0/3 nodes are available", "Unschedulable")
    assert (found["p1"].namespace, found["p1"].uid) == ("apps", "uid-p1")
    bound = unschedulable("p1")
    bound["spec"]["nodeName"] = "a"
    cache.pods.apply("MODIFIED", bound)
    assert [p.name for p in live.pending()] == ["p2"]
    cache.pods.apply("DELETED", unschedulable("p2", message=""))
    assert live.pending() == []


def test_a_bound_pods_events_reach_the_books_without_an_error(caplog: pytest.LogCaptureFixture) -> None:
    """A pod never pending (bound from its first event) is added, changed and deleted: the books
    count it and no listener fails (a listener's exception is only logged by the store, so the log
    is where a failing one shows)."""
    clock = Clock(BASE)
    live, cache = books(clock)
    cache.nodes.replace([node("a")])
    with caplog.at_level(logging.ERROR):
        cache.pods.apply("ADDED", pod("w1", "a"))
        cache.pods.apply("MODIFIED", pod("w1", "a"))
        cache.pods.apply("DELETED", pod("w1", "a"))
    assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert live.pending() == []


def test_a_pending_pod_the_guard_cannot_read_is_logged_and_left_out(caplog: pytest.LogCaptureFixture) -> None:
    """A pod whose placement the guard cannot read (a node affinity that is not a map) is not
    guarded for, with one warning naming it and the error; the readable one still is."""
    caplog.set_level(logging.WARNING, logger="controller.books")
    live, cache = books(Clock(BASE))
    cache.pods.replace([unschedulable("odd", affinity={"nodeAffinity": ["x"]}), unschedulable("fine")])
    assert [p.name for p in live.pending()] == ["fine"]
    warned = [r for r in caplog.records if r.name == "controller.books"]
    assert [(r.getMessage(), r.__dict__["pod"]) for r in warned] == [
        ("pending pod unreadable, not guarded for", "odd")
    ]
    assert warned[0].__dict__["error"]


def test_the_window_read_logs_the_value_it_could_not_read() -> None:
    """An unreadable branch-eni-cooldown is logged with the value as found in the ConfigMap."""
    cache = ClusterCache(CacheOptions(autoscaler_selector=""))
    configmap = {
        "kind": "ConfigMap",
        "metadata": {"namespace": "kube-system", "name": "amazon-vpc-cni"},
        "data": {"branch-eni-cooldown": "soon"},
    }
    live = Books(cache, BooksOptions(), Clock(BASE))
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("controller.books")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        cache.fill({"ConfigMap": [configmap]})
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    unreadable = [r for r in records if r.getMessage() == "branch-eni-cooldown absent or unreadable"]
    assert [(r.__dict__["value"], r.__dict__["keeping"]) for r in unreadable] == [("soon", None)]
    assert live.window == 90.0  # the default cooldown (60 s) and the processing period (30 s)


def listed_pod(name: str, namespace: str, node: str = "", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": namespace, "labels": labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def cluster_objects(fake_kube: Any) -> None:
    """Two nodes, a bound pod and a pending one, cluster-autoscaler's and Karpenter's pods, a
    DaemonSet and a NodeGroupTemplate, in the fake API server."""
    for name in ("n2", "n1"):
        fake_kube.create(node(name))
    fake_kube.create(listed_pod("web", "apps", "n1"))
    fake_kube.create(listed_pod("waiting", "apps"))
    fake_kube.create(listed_pod("ca", "kube-system", "n2", app="cluster-autoscaler"))
    fake_kube.create(listed_pod("kp", "karpenter", "n2", **{"app.kubernetes.io/name": "karpenter"}))
    template = {"metadata": {"name": "agent", "namespace": "kube-system"}, "spec": {"containers": []}}
    fake_kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template},
        }
    )
    fake_kube.create(
        {
            "apiVersion": "fitguard.io/v1alpha1",
            "kind": "NodeGroupTemplate",
            "metadata": {"name": "ng-a"},
            "spec": {"provider": "manual", "maxSize": 1},
        }
    )


def names(store: Any) -> list[str]:
    return sorted(f"{getattr(o, 'namespace', '')}/{getattr(o, 'name', '')}" for o in store.items())


def object_names(store: Any) -> list[str]:
    return [
        f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in ClusterCache.ordered(store)
    ]


def test_one_list_of_each_kind_fills_every_store_in_pages_of_the_watch_size(fake_kube: Any) -> None:
    """`--once`: list_from fills every store from one list of each kind (nodes and pods in pages of
    the watch options' page size), cluster-autoscaler's and Karpenter's pods by their selectors;
    the stores are synced, and the pods of one node are read whole through the API."""
    cluster_objects(fake_kube)
    options = CacheOptions(autoscaler_selector="app=cluster-autoscaler", watch=WatchOptions(page_size=1))
    cache = ClusterCache(options).list_from(fake_kube.api_client())
    assert object_names(cache.node_objects) == ["/n1", "/n2"]
    assert sorted(n.name for n in cache.nodes.items()) == ["n1", "n2"]
    assert sorted(p.name for p in cache.pods.items()) == ["ca", "kp", "waiting", "web"]
    assert object_names(cache.pending) == ["apps/waiting"]
    assert object_names(cache.daemonsets) == ["kube-system/agent"]
    assert object_names(cache.templates) == ["/ng-a"]
    assert object_names(cache.autoscalers) == ["kube-system/ca"]
    assert object_names(cache.karpenters) == ["karpenter/kp"]
    assert (object_names(cache.nodepools), object_names(cache.nodeclasses)) == ([], [])
    assert cache.waiting_for() == [] and not cache.from_file
    for path in ("/api/v1/nodes", "/api/v1/pods", "/apis/karpenter.sh/v1/nodepools"):
        # the lists of every object of the kind (a label selector's lists page by the client's default)
        found = fake_kube.requests.find(method="GET", path=path)
        limits = {r.query.get("limit") for r in found if "labelSelector" not in r.query}
        assert limits == {"1"}, path
    # in the order the API lists them: by namespace, then name
    assert [p["metadata"]["name"] for p in cache.pods_on_node("n2")] == ["kp", "ca"]
    stored = fake_kube.get("Pod", "web", "apps")
    # whole, as a list's items are (without apiVersion and kind)
    assert cache.pods_on_node("n1") == [{k: v for k, v in stored.items() if k not in ("apiVersion", "kind")}]


def test_unreadable_autoscaler_pods_leave_the_groups_to_their_tags_and_say_why(
    fake_kube: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """cluster-autoscaler's pods refused (403): the list goes on with none, a warning names the
    selector, and the reason a person reads says how they were sought and why none was found."""
    cluster_objects(fake_kube)
    fake_kube.faults.fail(403, path="/api/v1/namespaces/kube-system/pods", count=None)
    options = CacheOptions(autoscaler_selector="app=cluster-autoscaler", autoscaler_namespace="kube-system")
    with caplog.at_level(logging.WARNING, logger="controller.cache"):
        cache = ClusterCache(options).list_from(fake_kube.api_client())
    assert object_names(cache.autoscalers) == []
    process, sought = cache.autoscaler()
    why = cache._autoscaler_error
    assert (process, sought) == (
        None,
        f"pods app=cluster-autoscaler in namespace kube-system: unreadable ({why})",
    )
    assert [r.getMessage() for r in caplog.records if r.name == "controller.cache"] == [
        "cluster-autoscaler pods unreadable (app=cluster-autoscaler): groups judged by their tags: "
        + cache._autoscaler_error
    ]


def test_a_state_files_pods_of_one_node_are_its_own_whole_pods() -> None:
    """From a file, pods_on_node is the file's pods bound to that node, whole and in file order."""
    pods = [listed_pod("b", "apps", "n1"), listed_pod("a", "apps", "n2"), listed_pod("c", "apps", "n1")]
    cache = ClusterCache(CacheOptions(autoscaler_selector="")).fill({"Pod": pods})
    assert cache.from_file and cache.pods_on_node("n1") == [pods[0], pods[2]]
    assert cache.pods_on_node("n3") == []


def test_a_state_file_fills_every_store_and_picks_the_selected_pods() -> None:
    """fill: each kind into its store (what is not there is an empty store), cluster-autoscaler's and
    Karpenter's pods by their selectors and namespaces."""
    ca = listed_pod("ca", "kube-system", "n1", app="cluster-autoscaler")
    elsewhere = listed_pod("ca2", "other", "n1", app="cluster-autoscaler")
    kp = listed_pod("kp", "karpenter", "n1", **{"app.kubernetes.io/name": "karpenter"})
    kinds = {
        "Node": [node("n1")],
        "Pod": [ca, elsewhere, kp, listed_pod("waiting", "apps")],
        "DaemonSet": [{"metadata": {"name": "agent", "namespace": "kube-system"}}],
        "NodeGroupTemplate": [{"metadata": {"name": "ng-a"}}],
        "NodePool": [{"metadata": {"name": "default"}}],
        "EC2NodeClass": [{"metadata": {"name": "default-class"}}],
        "NodeClass": [{"metadata": {"name": "auto-class"}}],
    }
    options = CacheOptions(autoscaler_selector="app=cluster-autoscaler", autoscaler_namespace="kube-system")
    cache = ClusterCache(options).fill(kinds)
    stores = (cache.daemonsets, cache.templates, cache.autoscalers, cache.karpenters, cache.nodepools)
    classes = (cache.nodeclasses, cache.automode_classes)
    assert [object_names(store) for store in (*stores, *classes, cache.pending)] == [
        ["kube-system/agent"],
        ["/ng-a"],
        ["kube-system/ca"],
        ["karpenter/kp"],
        ["/default"],
        ["/default-class"],
        ["/auto-class"],
        ["apps/waiting"],
    ]
    assert cache.wait_synced() is True and cache.wait_synced(0.0) is True
    empty = ClusterCache(options).fill({})
    assert [len(store) for store in empty.stores()] == [0] * 9 and empty.waiting_for() == []


def test_a_pending_pod_is_one_the_planner_may_place() -> None:
    """Unbound, not being deleted, and Pending (a pod without a phase yet counts as Pending): a copy
    (tests/controller/test_cache_pending.py holds what the copy keeps); bound, deleting, or in
    another phase: None. An empty object is an empty pending pod, not an error."""
    pending_pod = PendingPods()
    waiting = listed_pod("w", "apps")
    no_status = {k: v for k, v in waiting.items() if k != "status"}
    deleting = {**waiting, "metadata": {**waiting["metadata"], "deletionTimestamp": "2026-12-02T00:00:00Z"}}
    running = {**waiting, "status": {"phase": "Running"}}
    kept = [pending_pod(p) for p in (waiting, no_status, listed_pod("b", "apps", "n1"), deleting, running)]
    assert [k is not None for k in kept] == [True, True, False, False, False]
    assert kept[0]["metadata"]["name"] == "w" and kept[1]["metadata"]["name"] == "w"
    assert pending_pod({}) == {"metadata": {}, "spec": {}, "status": {}}


def test_the_watched_cache_picks_the_selected_pods_in_their_namespace(fake_kube: Any) -> None:
    """start: cluster-autoscaler's pods watched by their selector in their namespace on a reflector
    named for them (the one in another namespace and Karpenter's are not theirs); every store syncs."""
    cluster_objects(fake_kube)
    fake_kube.create(listed_pod("ca2", "other", "n1", app="cluster-autoscaler"))
    options = CacheOptions(autoscaler_selector="app=cluster-autoscaler", autoscaler_namespace="kube-system")
    cache = ClusterCache(options).start(fake_kube.api_client())
    try:
        assert cache.wait_synced(30.0)
        assert (object_names(cache.autoscalers), object_names(cache.karpenters)) == (
            ["kube-system/ca"],
            ["karpenter/kp"],
        )
        assert {"autoscaler-pods", "karpenter-pods"} <= {t.name for t in threading.enumerate()}
    finally:
        cache.stop()


def test_no_selector_lists_no_pods_and_a_kind_not_served_is_empty(fake_kube: Any) -> None:
    """Empty selectors look for no cluster-autoscaler and no Karpenter pods; Karpenter's pods are
    looked for in their namespace only; NodePools the API does not serve (404) are none, while any
    other failure of their list is raised; a cache never filled has no pods on any node."""
    cluster_objects(fake_kube)
    fake_kube.create(listed_pod("kp2", "other", "n1", **{"app.kubernetes.io/name": "karpenter"}))
    none = CacheOptions(autoscaler_selector="", karpenter_selector="")
    cache = ClusterCache(none).list_from(fake_kube.api_client())
    assert (object_names(cache.autoscalers), object_names(cache.karpenters)) == ([], [])
    scoped = ClusterCache(CacheOptions(autoscaler_selector="", karpenter_namespace="karpenter"))
    assert object_names(scoped.list_from(fake_kube.api_client()).karpenters) == ["karpenter/kp"]
    fake_kube.faults.fail(404, path="/apis/karpenter.sh/v1/nodepools", count=None)
    assert object_names(ClusterCache(none).list_from(fake_kube.api_client()).nodepools) == []
    fake_kube.faults.clear()
    fake_kube.faults.fail(500, path="/apis/karpenter.sh/v1/nodepools", count=None)
    with pytest.raises(KubeError):
        ClusterCache(none).list_from(fake_kube.api_client())
    assert ClusterCache(none).pods_on_node("n1") == []


def test_a_new_cache_waits_for_every_store_by_name_and_answers_without_a_source() -> None:
    """Before any fill: every store is waited for, named as the readiness answer names it; a
    ConfigMap is absent, no node has pods, cluster-autoscaler was not found (not unreadable), and
    stopping a cache never started stops nothing."""
    options = CacheOptions(autoscaler_selector="app=cluster-autoscaler", autoscaler_namespace="kube-system")
    cache = ClusterCache(options)
    assert cache.waiting_for() == [
        "nodes",
        "pods",
        "daemonsets",
        "NodeGroupTemplate",
        "cluster-autoscaler pods",
        "NodePool",
        "EC2NodeClass",
        "NodeClass",
        "Karpenter controller pods",
    ]
    assert (cache.config_map("kube-system", "x"), cache.pods_on_node("n1")) == (None, [])
    assert cache.autoscaler() == (None, "pods app=cluster-autoscaler in namespace kube-system")
    cache.stop()


def test_discoverys_store_keeps_the_slim_copy_of_each_node() -> None:
    """The node store discovery reads holds `discovery_node`'s copy, not the object as listed: a
    node's managedFields, images and annotations nobody reads are not kept for 5,000 nodes."""
    cache = ClusterCache(CacheOptions(autoscaler_selector=""))
    listed = node("a")
    listed["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    listed["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    listed["status"]["images"] = [{"names": ["busybox"], "sizeBytes": 1}]
    cache.node_objects.replace([listed])
    assert cache.node_objects.items() == [discovery_node(listed)]
