"""The list+watch reflector against the fake API server: paging, events, resumption, 410, backoff."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from kube.client import CONFIG_MAPS, NODE_GROUP_TEMPLATES, PODS, KubeClient
from kube.options import ReflectorOptions, WatchOptions
from kube.reflector import Backoff, Reflector
from kube.store import Store
from tests import objects
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.waiting import eventually

pytestmark = pytest.mark.slow


def pod(name: str, namespace: str = "default") -> dict[str, Any]:
    return objects.pod(name, namespace=namespace, container="app", image="busybox")


def name_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


class Recorder:
    """Counts listener calls by (event type, name)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def __call__(self, event_type: str, old: Any, new: Any) -> None:
        self.calls.append((event_type, new if new is not None else old))

    def count(self, event_type: str) -> int:
        return sum(1 for kind, _ in self.calls if kind == event_type)


@pytest.fixture
def make(fake_kube: FakeKubeServer) -> Iterator[Callable[..., tuple[Reflector, Store[str], Recorder]]]:  # noqa: F811
    started: list[Reflector] = []

    def build(**watch: Any) -> tuple[Reflector, Store[str], Recorder]:
        store: Store[str] = Store("Pod", name_of)
        recorder = Recorder()
        store.add_listener(recorder)
        # paged lists unless a test asks otherwise: streamed lists have tests of their own
        # (tests/kube/test_reflector_stream.py)
        fields = {
            "backoff_base": 0.02,
            "backoff_cap": 0.2,
            "watch_timeout": 30.0,
            "watch_list": False,
            **watch,
        }
        options = ReflectorOptions(watch=WatchOptions(**fields))
        reflector = Reflector(KubeClient(fake_kube.api_client()), PODS, store, options)
        started.append(reflector)
        return reflector, store, recorder

    yield build
    for reflector in started:
        reflector.stop()


def names(store: Store[str]) -> set[str]:
    return set(store.items())


def test_initial_list_is_paged_and_fills_the_store(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    for i in range(7):
        fake_kube.create(pod(f"p{i}", "default" if i % 2 else "kube-system"))
    fake_kube.watch_cache = False  # without a watch cache, the RV "0" list honours the limit
    reflector, store, _ = make(page_size=3)
    reflector.start()
    assert reflector.wait_synced(10)
    assert names(store) == {f"p{i}" for i in range(7)}
    lists = fake_kube.requests.find("GET", "/api/v1/pods", watch=False)
    # client-go's pager: the first page asks for RV "0", continued pages carry only the token
    assert [{k: v for k, v in r.query.items() if k != "continue"} for r in lists] == [
        {"resourceVersion": "0", "limit": "3"},
        {"limit": "3"},
        {"limit": "3"},
    ]
    assert [bool(r.query.get("continue")) for r in lists] == [False, True, True]
    assert store.resource_version == reflector.resource_version != ""


def test_watch_events_are_applied_in_order(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    fake_kube.create(pod("old"))
    reflector, store, recorder = make()
    reflector.start()
    assert reflector.wait_synced(10)
    fake_kube.create(pod("new"))
    fake_kube.patch("Pod", "old", {"metadata": {"labels": {"a": "b"}}}, "default")
    fake_kube.delete("Pod", "old", "default")
    eventually(lambda: names(store) == {"new"} and reflector.stats.events == 3)
    assert recorder.calls[1:] == [("ADDED", "new"), ("MODIFIED", "old"), ("DELETED", "old")]
    watches = fake_kube.requests.find("GET", "/api/v1/pods", watch=True)
    assert watches[0].query["allowWatchBookmarks"] == "true"


@pytest.mark.parametrize("abrupt", [False, True], ids=["clean-end", "connection-dropped"])
def test_dropped_watch_resumes_from_last_rv_without_loss_or_duplicates(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    abrupt: bool,
) -> None:
    fake_kube.faults.close_watch_after(2, path="/pods", abrupt=abrupt)  # the first watch breaks
    reflector, store, recorder = make()
    reflector.start()
    assert reflector.wait_synced(10)
    list_rv = reflector.resource_version
    for i in range(6):
        fake_kube.create(pod(f"p{i}"))
    eventually(lambda: len(store) == 6)
    # a wrong duplicate would be streamed before anything created later: wait for a later pod
    fake_kube.create(pod("later"))
    eventually(lambda: "later" in names(store))
    added = [name for kind, name in recorder.calls if kind == "ADDED"]
    assert added == [f"p{i}" for i in range(6)] + ["later"]
    assert recorder.count("MODIFIED") == 0  # no relist happened
    assert reflector.stats.lists == 1
    watches = fake_kube.requests.find("GET", "/api/v1/pods", watch=True)
    assert len(watches) >= 2
    assert watches[0].query["resourceVersion"] == list_rv
    assert int(watches[1].query["resourceVersion"]) > int(list_rv)  # resumed after what it saw


def test_410_relists_and_reports_objects_removed_meanwhile_as_deleted(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
) -> None:
    for name in ("a", "b", "c"):
        fake_kube.create(pod(name))
    reflector, store, recorder = make()
    reflector.start()
    assert reflector.wait_synced(10)
    fake_kube.stop_listening()  # the watch breaks; what happens now is never streamed to it
    fake_kube.delete("Pod", "b", "default")
    fake_kube.create(pod("d"))
    fake_kube.expire_history("Pod")
    fake_kube.start_listening()
    eventually(lambda: names(store) == {"a", "c", "d"})
    relisted_at = store.resource_version  # installed with the relist's objects
    assert recorder.calls.count(("DELETED", "b")) == 1
    # the relist's resourceVersion must be the one the next watch starts from: kept stale, every
    # watch is Gone again and the reflector relists forever. A pod created now arrives by a watch
    # event on a held watch, and no list came after the relist.
    fake_kube.create(pod("e"))
    eventually(lambda: "e" in names(store))
    assert reflector.stats.events == 1
    assert reflector.stats.relists == 1
    assert recorder.calls[-1] == ("ADDED", "e")
    assert_one_relist_then_a_held_watch(fake_kube, relisted_at)


def assert_one_relist_then_a_held_watch(fake_kube: FakeKubeServer, relisted_at: str) -> None:  # noqa: F811
    """From the server's request record: exactly two lists, and after the second one a single watch,
    started from the resourceVersion that list installed, not answered with a fault."""
    record = fake_kube.requests.find("GET", "/api/v1/pods")
    lists = [i for i, r in enumerate(record) if not r.watch]
    assert len(lists) == 2
    after = record[lists[1] + 1 :]
    assert [(r.watch, r.query["resourceVersion"], r.fault) for r in after] == [(True, relisted_at, None)]


def test_watch_error_event_410_relists(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    fake_kube.create(pod("a"))
    fake_kube.faults.expire_next_watch(path="/pods")
    reflector, store, _ = make()
    reflector.start()
    eventually(lambda: reflector.stats.lists == 2)
    relisted_at = store.resource_version
    fake_kube.create(pod("b"))
    eventually(lambda: names(store) == {"a", "b"})
    assert reflector.stats.events == 1  # b came on a watch, not by another list
    assert reflector.stats.relists == 1
    assert_one_relist_then_a_held_watch(fake_kube, relisted_at)


def test_throttled_list_honours_retry_after_then_recovers(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    fake_kube.create(pod("a"))
    fake_kube.faults.throttle(retry_after=1, path="/pods", watch=False)
    reflector, store, _ = make(backoff_base=0.01, backoff_cap=0.05)
    reflector.start()
    assert reflector.wait_synced(10)
    assert reflector.stats.errors == 1
    assert "429" in reflector.stats.last_error
    assert reflector.stats.last_backoff >= 1.0  # the server's Retry-After, above the backoff cap
    assert names(store) == {"a"}


def test_partial_list_never_reaches_the_store(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    for i in range(4):
        fake_kube.create(pod(f"p{i}"))
    seen: list[str] = []

    def transform(obj: Mapping[str, Any]) -> str:
        seen.append(name_of(obj))
        if len(seen) == 1:  # the first page is in: make the next page fail
            fake_kube.faults.fail(500, path="/pods", watch=False)
        return name_of(obj)

    store: Store[str] = Store("Pod", transform)
    store.replace([pod("stale")], "1")
    fake_kube.watch_cache = False  # the RV "0" list is paged, as without a watch cache
    watch = WatchOptions(page_size=2, backoff_base=1.0, backoff_cap=1.0, watch_list=False)
    reflector = Reflector(KubeClient(fake_kube.api_client()), PODS, store, ReflectorOptions(watch=watch))
    reflector.start()
    try:
        eventually(lambda: reflector.stats.errors == 1)
        assert names(store) == {"stale"}  # half a list changed nothing
        eventually(lambda: names(store) == {f"p{i}" for i in range(4)})
    finally:
        reflector.stop()


def test_connection_refused_at_start_recovers(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    fake_kube.create(pod("a"))
    fake_kube.stop_listening()
    reflector, store, _ = make()
    reflector.start()
    eventually(lambda: reflector.stats.errors >= 1)
    assert not reflector.synced
    fake_kube.start_listening()
    assert reflector.wait_synced(10)
    assert names(store) == {"a"}


def test_bookmarks_advance_the_resource_version(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    reflector, store, recorder = make()
    reflector.start()
    assert reflector.wait_synced(10)
    list_rv = int(reflector.resource_version)
    fake_kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    )
    eventually(lambda: reflector.stats.bookmarks >= 1 and int(reflector.resource_version) > list_rv)
    assert store.resource_version == reflector.resource_version
    assert reflector.stats.events == 0
    assert recorder.calls == []


def test_stop_is_prompt_in_the_middle_of_a_watch(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    reflector, _, _ = make(watch_timeout=300.0)
    reflector.start()
    assert reflector.wait_synced(10)
    eventually(lambda: len(fake_kube.requests.find("GET", "/api/v1/pods", watch=True)) == 1)
    reflector.stop(timeout=5.0)
    assert not reflector.running


def test_stop_during_a_hung_list_changes_nothing_afterwards(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
) -> None:
    """A request still waiting for its answer cannot be interrupted; what arrives after stop() is
    dropped: the store stays untouched and no watch is opened."""
    fake_kube.create(pod("a"))
    fake_kube.faults.delay(1.0, path="/pods", watch=False)
    reflector, store, _ = make()
    reflector.start()
    eventually(lambda: bool(fake_kube.requests.find("GET", "/api/v1/pods")))
    reflector.stop(timeout=0.0)
    eventually(lambda: not reflector.running)
    assert not store.synced
    assert len(store) == 0
    assert fake_kube.requests.find("GET", "/api/v1/pods", watch=True) == []


def test_one_namespace_with_a_label_selector(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    for name, app in (("keep", "web"), ("skip", "db")):
        fake_kube.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "kube-system", "labels": {"app": app}},
            }
        )
    store: Store[str] = Store("ConfigMap", name_of)
    reflector = Reflector(
        KubeClient(fake_kube.api_client()),
        CONFIG_MAPS,
        store,
        ReflectorOptions(
            namespace="kube-system", label_selector="app=web", watch=WatchOptions(watch_list=False)
        ),
    )
    reflector.start()
    try:
        assert reflector.wait_synced(10)
        assert names(store) == {"keep"}
        lists = fake_kube.requests.find("GET", "/api/v1/namespaces/kube-system/configmaps", watch=False)
        assert lists[0].query["labelSelector"] == "app=web"
    finally:
        reflector.stop()


def test_cluster_scoped_custom_resource(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    template = {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-a"},
    }
    fake_kube.create(template)
    store: Store[str] = Store("NodeGroupTemplate", name_of)
    reflector = Reflector(KubeClient(fake_kube.api_client()), NODE_GROUP_TEMPLATES, store).start()
    try:
        assert reflector.wait_synced(10)
        fake_kube.create({**template, "metadata": {"name": "ng-b"}})
        eventually(lambda: names(store) == {"ng-a", "ng-b"})
    finally:
        reflector.stop()


def test_backoff_grows_to_its_cap_and_honours_retry_after() -> None:
    backoff = Backoff(base=1.0, cap=8.0)
    delays = [backoff.next_delay() for _ in range(6)]
    assert all(0.5 <= d <= 1.0 for d in delays[:1])
    assert all(4.0 <= d <= 8.0 for d in delays[4:])  # capped, with jitter below the cap
    assert backoff.next_delay(retry_after=20.0) == 20.0
    backoff.reset()
    assert backoff.next_delay() <= 1.0
