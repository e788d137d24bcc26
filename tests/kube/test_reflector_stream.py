"""The reflector's streamed lists (WatchList) and the resourceVersions of its lists, against the fake
API server over HTTP: what the store holds, and the whole query of every request the server saw."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from kube.client import PODS, KubeClient, KubeError
from kube.options import ReflectorOptions, WatchOptions
from kube.reflector import Reflector
from kube.relist import too_large
from kube.store import Store
from kube.watchlist import watch_list_enabled
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.pod_requests import WATCH_TIMEOUT, pod, pod_requests
from tests.waiting import eventually

pytestmark = pytest.mark.slow

STREAM = {
    "watch": "1",
    "sendInitialEvents": "true",
    "resourceVersionMatch": "NotOlderThan",
    "allowWatchBookmarks": "true",
}


def record(obj: Mapping[str, Any]) -> tuple[str, str]:
    return str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])


def contents(store: Store[tuple[str, str]]) -> set[tuple[str, str]]:
    return set(store.items())


def pods(*names: str) -> set[tuple[str, str]]:
    return {("default", name) for name in names}


def queries(fake: FakeKubeServer) -> list[dict[str, str]]:
    """Every pods request's whole query, the random timeoutSeconds checked and left out."""
    return [query for query, _ in pod_requests(fake)]


def faults(fake: FakeKubeServer) -> list[str | None]:
    return [fault for _, fault in pod_requests(fake)]


@pytest.fixture
def make(fake_kube: FakeKubeServer) -> Iterator[Callable[..., tuple[Reflector, Store[Any]]]]:  # noqa: F811
    started: list[Reflector] = []

    def build(**watch: Any) -> tuple[Reflector, Store[Any]]:
        store: Store[Any] = Store("Pod", record)
        fields = {"backoff_base": 0.02, "backoff_cap": 0.2, "watch_timeout": WATCH_TIMEOUT, **watch}
        options = ReflectorOptions(watch=WatchOptions(**fields))
        reflector = Reflector(KubeClient(fake_kube.api_client()), PODS, store, options)
        started.append(reflector)
        return reflector, store

    yield build
    for reflector in started:
        reflector.stop()


def test_streamed_list_installs_the_state_and_goes_on_as_the_watch(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """By default the initial state is one WatchList request; later changes arrive on the same
    stream, with no list and no second watch."""
    for name in ("a", "b", "c"):
        fake_kube.create(pod(name))
    at = str(fake_kube.store.resource_version)
    reflector, store = make(watch_list=None)
    reflector.start()
    assert reflector.wait_synced(10)
    assert contents(store) == pods("a", "b", "c")
    assert (store.resource_version, reflector.resource_version) == (at, at)
    fake_kube.create(pod("d"))
    eventually(lambda: contents(store) == pods("a", "b", "c", "d"))
    assert queries(fake_kube) == [STREAM]
    stats = reflector.stats
    assert (stats.lists, stats.streamed, stats.events, stats.stream_fallbacks) == (1, 1, 1, 0)


def test_environment_switch_follows_client_go() -> None:
    """KUBE_FEATURE_WatchListClient, parsed like Go's strconv.ParseBool; unset or malformed: on."""
    verdicts = {
        value: watch_list_enabled({"KUBE_FEATURE_WatchListClient": value})
        for value in ("false", "0", "F", "FALSE", "true", "1", "T", "yes", "")
    }
    assert verdicts == {
        "false": False,
        "0": False,
        "F": False,
        "FALSE": False,
        "true": True,
        "1": True,
        "T": True,
        "yes": True,
        "": True,
    }
    assert watch_list_enabled({}) is True


def test_paged_lists_when_switched_off(fake_kube: FakeKubeServer, make, monkeypatch) -> None:  # noqa: F811
    """With KUBE_FEATURE_WatchListClient=false the reflector lists (RV "0", the watch cache's
    whole answer) and then watches from the list's RV."""
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "false")
    fake_kube.create(pod("a"))
    reflector, store = make()
    reflector.start()
    assert reflector.wait_synced(10)
    at = store.resource_version
    eventually(lambda: len(fake_kube.requests.find("GET", "/api/v1/pods", watch=True)) == 1)
    assert contents(store) == pods("a")
    assert queries(fake_kube) == [
        {"resourceVersion": "0", "limit": "500"},
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": at},
    ]


def test_an_error_before_the_end_bookmark_leaves_the_previous_state(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """A stream cut after two of four objects installs nothing: the store keeps its previous
    complete state until a complete one arrives (here by client-go's one-off fallback to a list,
    held back by failing lists until the test has looked)."""
    for name in ("a", "b", "c", "d"):
        fake_kube.create(pod(name))
    fake_kube.faults.close_watch_after(2, path="/pods", abrupt=True)
    fake_kube.faults.fail(500, path="/pods", watch=False, count=None)
    reflector, store = make()
    store.replace([pod("stale")], "1")
    reflector.start()
    eventually(lambda: reflector.stats.errors >= 3)
    assert contents(store) == pods("stale")
    assert not reflector.synced
    fake_kube.faults.clear()
    assert reflector.wait_synced(10)
    assert contents(store) == pods("a", "b", "c", "d")
    assert reflector.streaming  # a broken stream is not a server without WatchList
    assert reflector.stats.stream_fallbacks == 0


def test_stop_in_the_middle_of_the_initial_events_changes_nothing(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """stop() while the initial events stream: nothing installed, the thread ends."""
    fake_kube.watch_list = "ignored"  # initial ADDED events and then silence: a stream that never completes
    fake_kube.bookmark_interval = 3600.0
    fake_kube.create(pod("a"))
    reflector, store = make(initial_events_quiet=60.0)
    reflector.start()
    eventually(lambda: reflector.stats.last_contact > 0)
    reflector.stop()
    assert not reflector.running
    assert (contents(store), store.synced) == (set(), False)


def test_old_server_falls_back_to_paged_lists_and_remembers(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """A server before 1.27 answers the WatchList request 422: the reflector lists instead, and a
    relist (after the watch broke before its first event: client-go's very short watch) lists
    again without asking for a stream; the relist asks for a state not older than the last synced
    RV, unpaged so the watch cache answers it."""
    fake_kube.watch_list = "old"
    fake_kube.bookmark_interval = 3600.0  # no bookmark: the broken watch had no event
    fake_kube.create(pod("a"))
    reflector, store = make(very_short_watch=3600.0)
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    assert contents(store) == pods("a")
    assert (reflector.streaming, reflector.stats.stream_fallbacks) == (False, 1)
    eventually(lambda: len(fake_kube.requests.find("GET", "/api/v1/pods", watch=True)) == 2)
    fake_kube.stop_listening()
    fake_kube.create(pod("b"))
    fake_kube.start_listening()
    eventually(lambda: reflector.stats.relists == 1)
    second = store.resource_version
    eventually(lambda: len(fake_kube.requests.find("GET", "/api/v1/pods", watch=True)) == 3)
    assert contents(store) == pods("a", "b")
    assert queries(fake_kube) == [
        STREAM,
        {"resourceVersion": "0", "limit": "500"},
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": first},
        {"resourceVersion": first},
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": second},
    ]


@pytest.mark.parametrize("bookmarks", [True, False], ids=["ordinary-bookmark", "silence"])
def test_server_ignoring_watch_list_does_not_hang_the_reflector(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    bookmarks: bool,
) -> None:
    """A server that drops sendInitialEvents sends a plain watch and never the end bookmark: an
    ordinary bookmark before it, or silence for initial_events_quiet, gives the stream up for
    paged lists, remembered."""
    fake_kube.watch_list = "ignored"
    if not bookmarks:
        fake_kube.bookmark_interval = 3600.0
    fake_kube.create(pod("a"))
    reflector, store = make(initial_events_quiet=0.5)
    reflector.start()
    assert reflector.wait_synced(15)
    assert contents(store) == pods("a")
    assert (reflector.streaming, reflector.stats.stream_fallbacks, reflector.stats.streamed) == (False, 1, 0)
    assert queries(fake_kube)[:2] == [STREAM, {"resourceVersion": "0", "limit": "500"}]


def test_a_stream_ended_before_the_end_bookmark_falls_back(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """A stream the server ends cleanly before its end bookmark is a server that does not stream
    lists: the state comes from a list, and relists list."""
    fake_kube.create(pod("a"))
    fake_kube.faults.close_watch_after(1, path="/pods")
    reflector, store = make()
    reflector.start()
    assert reflector.wait_synced(10)
    assert contents(store) == pods("a")
    assert (reflector.streaming, reflector.stats.stream_fallbacks) == (False, 1)


def test_410_relists_by_stream_from_the_last_rv_then_from_the_most_recent(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
) -> None:
    """After a 410 on the watch the stream asks for a state not older than the last synced RV
    (client-go's rewatchResourceVersion); when that is refused too, for the most recent state."""
    fake_kube.create(pod("a"))
    # the stream ends after a's initial event and b's live one; the watch opened again at once from
    # b's RV and the relisting stream both get 410
    fake_kube.faults.close_watch_after(2, path="/pods")
    fake_kube.faults.expire_next_watch(path="/pods", count=2)
    reflector, store = make()
    reflector.start()
    assert reflector.wait_synced(10)
    at_b = fake_kube.create(pod("b"))["metadata"]["resourceVersion"]
    eventually(lambda: reflector.stats.relists == 1)
    assert contents(store) == pods("a", "b")
    assert queries(fake_kube) == [
        STREAM,
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": at_b},
        {**STREAM, "resourceVersion": at_b},
        STREAM,
    ]
    assert faults(fake_kube) == ["close_watch", "expire_watch", "expire_watch", None]
    assert reflector.stats.streamed == 2


UNAVAILABLE = {
    "410": {"code": 410, "reason": "Expired", "message": "too old resource version: 3 (7)"},
    "too-large": {"code": 504, "reason": "Timeout", "message": "Too large resource version: 9, current: 7"},
}


@pytest.mark.parametrize("answer", sorted(UNAVAILABLE))
def test_paged_relist_after_410_is_a_consistent_read(fake_kube: FakeKubeServer, make, answer: str) -> None:  # noqa: F811
    """Paged lists: RV "0" first; after a watch 410, the last synced RV unpaged; when that list is
    410, or 504 for an RV the server has not reached, RV unset (a consistent read) with the same
    pager, so unpaged too (client-go's relistResourceVersion, and list() retrying with the pager
    whose PageSize it set to 0 for an RV of its own)."""
    fake_kube.create(pod("a"))
    fake_kube.faults.close_watch_after(1, path="/pods")  # ends after b's event: watched again at once
    reflector, store = make(watch_list=False)
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    fake_kube.faults.expire_next_watch(path="/pods")
    fake_kube.faults.fail(path="/pods", watch=False, **UNAVAILABLE[answer])
    at_b = fake_kube.create(pod("b"))["metadata"]["resourceVersion"]
    eventually(lambda: reflector.stats.relists == 1)
    eventually(lambda: len(fake_kube.requests.find("GET", "/api/v1/pods", watch=True)) == 3)
    assert (contents(store), store.resource_version) == (pods("a", "b"), at_b)
    assert queries(fake_kube) == [
        {"resourceVersion": "0", "limit": "500"},
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": first},
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": at_b},
        {"resourceVersion": at_b},
        {},
        {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": at_b},
    ]
    assert faults(fake_kube) == [None, "close_watch", "expire_watch", "fail", None, None]


def test_paginated_rv_0_list_keeps_relists_paged(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """Without a watch cache the RV "0" list comes back in pages; client-go then keeps its relists
    paged (paginatedResult) instead of asking for one unpaged answer, and a relist whose exact RV
    was compacted becomes a consistent read."""
    fake_kube.watch_cache = False
    for name in ("a", "b", "c"):
        fake_kube.create(pod(name))
    reflector, store = make(watch_list=False, page_size=2)
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    fake_kube.stop_listening()
    fake_kube.create(pod("d"))
    fake_kube.expire_history("Pod")
    fake_kube.start_listening()
    eventually(lambda: reflector.stats.relists == 1)
    assert contents(store) == pods("a", "b", "c", "d")
    lists = [q for q in queries(fake_kube) if "watch" not in q]
    # with a limit, the relist's RV is an exact read, 410 once compacted: then a consistent read
    assert [{k: v for k, v in q.items() if k != "continue"} for q in lists] == [
        {"resourceVersion": "0", "limit": "2"},
        {"limit": "2"},
        {"resourceVersion": first, "limit": "2"},
        {"limit": "2"},
        {"limit": "2"},
    ]
    assert ["continue" in q for q in lists] == [False, True, False, False, True]
    assert (reflector.stats.lists, reflector.stats.list_restarts) == (2, 0)


def test_too_large_resource_version_is_recognised_as_client_go_does() -> None:
    """The 504 with the ResourceVersionTooLarge cause, or an older server's message, means the RV
    is ahead of the server (relist as a consistent read); any other 504 or a 410 does not."""

    cause = {
        "details": {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
        }
    }
    answers = {
        "cause": KubeError(504, "Timeout", "Timeout: not yet at resourceVersion 9", body=cause),
        "old message": KubeError(504, "Timeout", "Too large resource version: 9, current: 5"),
        "other timeout": KubeError(504, "Timeout", "Timeout: request did not complete within 60s"),
        "gone": KubeError(410, "Expired", "Too large resource version"),
    }
    assert {name: too_large(err) for name, err in answers.items()} == {
        "cause": True,
        "old message": True,
        "other timeout": False,
        "gone": False,
    }


def test_the_initial_events_are_projected_with_the_gc_paused_and_it_is_on_after(
    fake_kube: FakeKubeServer,  # noqa: F811
) -> None:
    """Every object of a streamed list is projected with the cyclic GC off (kube/pages.py
    GcPause, as a page's items are); once the state is installed it is on again, and the watch's
    later events are projected with it on."""
    import gc

    assert gc.isenabled()
    during: list[tuple[str, bool]] = []

    def project(obj: Mapping[str, Any]) -> tuple[str, str]:
        during.append((str(obj["metadata"]["name"]), gc.isenabled()))
        return record(obj)

    for name in ("a", "b"):
        fake_kube.create(pod(name))
    store: Store[Any] = Store("Pod", project)
    options = ReflectorOptions(watch=WatchOptions(backoff_base=0.02, watch_timeout=WATCH_TIMEOUT))
    reflector = Reflector(KubeClient(fake_kube.api_client()), PODS, store, options)
    try:
        reflector.start()
        assert reflector.wait_synced(10)
        assert gc.isenabled()
        fake_kube.create(pod("c"))
        eventually(lambda: ("c", True) in during, "the watch's event projected")
    finally:
        reflector.stop()
    assert sorted(during) == [("a", False), ("b", False), ("c", True)]
    assert gc.isenabled()
