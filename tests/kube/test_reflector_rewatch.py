"""What follows the end of a watch, as client-go's reflector decides it (tools/cache/reflector.go
`watch`, `handleAnyWatch`, `isWatchErrorRetriable`): watched again at once from the last
resourceVersion when it ended as streams end, after a backoff when it was throttled or refused, and
relisted (after a backoff) when it ended within a second without an event or with any other error.
Against the fake API server over HTTP, with the whole query of every request the server saw."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from kube.client import PODS, KubeClient, KubeError
from kube.options import ReflectorOptions, WatchOptions
from kube.reflector import Reflector
from kube.relist import AfterWatch, after_stream_end, after_watch_error, retriable
from kube.store import Store
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.pod_requests import WATCH_TIMEOUT, pod, pod_requests
from tests.waiting import eventually

pytestmark = pytest.mark.slow

FIRST_LIST = {"resourceVersion": "0", "limit": "500"}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def watch_from(rv: str) -> dict[str, str]:
    return {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": rv}


def watches(fake: FakeKubeServer) -> int:
    return len(fake.requests.find("GET", "/api/v1/pods", watch=True))


@pytest.fixture
def make(fake_kube: FakeKubeServer) -> Iterator[Callable[..., tuple[Reflector, Store[str]]]]:  # noqa: F811
    started: list[Reflector] = []

    def build(
        rng: random.Random | None = None, clock: Callable[[], float] = time.monotonic, **watch: Any
    ) -> tuple[Reflector, Store[str]]:
        store: Store[str] = Store("Pod", name_of)
        fields = {
            "backoff_base": 0.02,
            "backoff_cap": 0.2,
            "watch_timeout": WATCH_TIMEOUT,
            "watch_list": False,
            **watch,
        }
        options = ReflectorOptions(watch=WatchOptions(**fields))
        api = KubeClient(fake_kube.api_client())
        reflector = Reflector(api, PODS, store, options, rng=rng, clock=clock)
        started.append(reflector)
        return reflector, store

    yield build
    for reflector in started:
        reflector.stop()


@pytest.mark.parametrize("abrupt", [False, True], ids=["clean-end", "connection-dropped"])
def test_a_watch_that_ends_after_an_event_is_watched_again_at_once_from_its_rv(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    abrupt: bool,
) -> None:
    """A watch that delivered an event and then ended (its stream closed, or its connection
    dropped: client-go's StreamWatcher ends quietly on an unexpected EOF) is watched again at once
    from the RV of that event, without a list and without counting an error, however soon it
    ended (very_short_watch is a minute here: the event is what counts)."""
    fake_kube.create(pod("a"))
    fake_kube.faults.close_watch_after(1, path="/pods", abrupt=abrupt)
    reflector, store = make(very_short_watch=60.0)
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    at_b = fake_kube.create(pod("b"))["metadata"]["resourceVersion"]
    eventually(lambda: watches(fake_kube) == 2)
    fake_kube.create(pod("c"))
    eventually(lambda: set(store.items()) == {"a", "b", "c"})
    assert pod_requests(fake_kube) == [
        (FIRST_LIST, None),
        (watch_from(first), "close_watch"),
        (watch_from(at_b), None),
    ]
    assert (reflector.stats.lists, reflector.stats.errors, reflector.stats.events) == (1, 0, 2)


@pytest.mark.parametrize("abrupt", [False, True], ids=["clean-end", "connection-dropped"])
@pytest.mark.parametrize(
    ("very_short", "after"),
    [(60.0, AfterWatch.RELIST), (0.0, AfterWatch.REWATCH)],
    ids=["within-very-short", "past-very-short"],
)
def test_a_very_short_watch_without_an_event_relists(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    abrupt: bool,
    very_short: float,
    after: AfterWatch,
) -> None:
    """A watch that ends before its first event, sooner than very_short_watch (client-go: a second),
    is client-go's VeryShortWatchError: the reflector relists at its last RV (unpaged, so the watch
    cache answers) and counts an error. Had it lasted (very_short_watch 0 here), it would be
    watched again at once. The thresholds stand in for time, so no test waits on a clock."""
    fake_kube.create(pod("a"))
    fake_kube.faults.drop_next_watch(path="/pods", abrupt=abrupt)
    reflector, store = make(very_short_watch=very_short)
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    eventually(lambda: watches(fake_kube) == 2)
    at_b = fake_kube.create(pod("b"))["metadata"]["resourceVersion"]
    eventually(lambda: set(store.items()) == {"a", "b"})
    assert store.resource_version == at_b
    relisted = [({"resourceVersion": first}, None)] if after is AfterWatch.RELIST else []
    assert pod_requests(fake_kube) == [
        (FIRST_LIST, None),
        (watch_from(first), "close_watch"),
        *relisted,
        (watch_from(first), None),
    ]
    stats = reflector.stats
    short = after is AfterWatch.RELIST
    assert (stats.lists, stats.relists, stats.errors) == (1 + short, int(short), int(short))
    assert stats.last_error == ("very short watch: no event within 60s" if short else "")


@pytest.mark.parametrize(
    ("fault", "relisted"),
    [
        (lambda k: k.faults.fail(500, path="/pods", watch=True), True),
        (lambda k: k.faults.fail(403, path="/pods", watch=True, reason="Forbidden"), True),
        (lambda k: k.faults.fail(503, path="/pods", watch=True, reason="ServiceUnavailable"), True),
        (lambda k: k.faults.throttle(1, path="/pods", watch=True), False),
    ],
    ids=["500", "403", "503", "429"],
)
def test_a_failed_watch_relists_unless_it_was_throttled(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    fault: Callable[[FakeKubeServer], Any],
    relisted: bool,
) -> None:
    """A watch the server answers with an error ends client-go's `watch`: the reflector backs off
    and relists (at its last RV, unpaged); InternalError too, client-go retrying those only when
    MaxInternalErrorRetryDuration is set. A 429 is waited out (its Retry-After) and the same
    watch opened again, without a list."""
    fake_kube.create(pod("a"))
    fault(fake_kube)
    reflector, store = make()
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    eventually(lambda: watches(fake_kube) == 2)
    fake_kube.create(pod("b"))
    eventually(lambda: set(store.items()) == {"a", "b"})
    fired = pod_requests(fake_kube)[1][1]
    relist = [({"resourceVersion": first}, None)] if relisted else []
    assert pod_requests(fake_kube) == [
        (FIRST_LIST, None),
        (watch_from(first), fired),
        *relist,
        (watch_from(first), None),
    ]
    assert fired in ("fail", "throttle")
    stats = reflector.stats
    assert (stats.lists, stats.errors, stats.restarts) == (1 + relisted, 1, int(not relisted))
    if not relisted:
        assert stats.last_backoff >= 1.0  # the server's Retry-After, above the backoff cap


@pytest.mark.parametrize(("code", "relisted"), [(500, True), (429, False)], ids=["500", "429"])
def test_an_error_event_on_a_watch_relists_unless_throttled(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    code: int,
    relisted: bool,
) -> None:
    """The same rule for an ERROR event in the middle of a watch (client-go `watch`'s switch on
    handleWatch's error): after one event, a 500 ends it for a relist at the event's RV; a 429 is
    backed off and the watch opened again from there."""
    fake_kube.create(pod("a"))
    fake_kube.faults.close_watch_after(1, path="/pods", error=code)
    reflector, store = make()
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    at_b = fake_kube.create(pod("b"))["metadata"]["resourceVersion"]
    eventually(lambda: watches(fake_kube) == 2)
    relist = [({"resourceVersion": at_b}, None)] if relisted else []
    assert pod_requests(fake_kube) == [
        (FIRST_LIST, None),
        (watch_from(first), "close_watch"),
        *relist,
        (watch_from(at_b), None),
    ]
    assert (reflector.stats.lists, reflector.stats.errors) == (1 + relisted, 1)
    assert str(code) in reflector.stats.last_error


@pytest.mark.parametrize("code", [500, 410])
def test_a_watch_that_delivered_an_event_backs_off_from_the_start(
    fake_kube: FakeKubeServer,  # noqa: F811
    make,
    code: int,
) -> None:
    """Failures before a working watch (two failed lists) do not lengthen the wait after it: its
    first event resets the backoff, so a 500 after it waits the first step (at most backoff_base,
    where the third step would be 2 to 4 times that), and a 410 relists at once (the backoff left
    as the last failed list set it). A backoff never reset made the books wait seconds for a
    relist after an outage (tests/e2e/test_faults_kube.py)."""
    fake_kube.create(pod("a"))
    fake_kube.faults.fail(500, path="/pods", watch=False, count=2)
    fake_kube.faults.close_watch_after(1, path="/pods", error=code)
    reflector, _ = make(backoff_base=0.05, backoff_cap=5.0, rng=random.Random(7))
    reflector.start()
    assert reflector.wait_synced(10)
    after_lists = reflector.stats.last_backoff
    assert 0.05 <= after_lists <= 0.1  # the second step
    fake_kube.create(pod("b"))
    eventually(lambda: reflector.stats.relists == 1)
    if code == 410:
        assert reflector.stats.last_backoff == after_lists
    else:
        assert 0.025 <= reflector.stats.last_backoff <= 0.05
    assert [fault for _, fault in pod_requests(fake_kube)][:4] == ["fail", "fail", None, "close_watch"]


def test_a_refused_watch_is_opened_again_without_a_list(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """The API server refusing connections (restarting) when a watch is opened: client-go backs off
    and opens the same watch again (isWatchErrorRetriable), no list. Held back by a 429 with a
    Retry-After of 3 s, the reflector's next watch meets the closed port."""
    fake_kube.create(pod("a"))
    fake_kube.faults.throttle(3, path="/pods", watch=True)
    reflector, store = make()
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    eventually(lambda: watches(fake_kube) == 1)
    eventually(lambda: reflector.stats.errors == 1)  # the 429: now waiting its Retry-After
    fake_kube.stop_listening()
    eventually(lambda: reflector.stats.errors >= 3)  # refused, and refused again after a backoff
    assert "Connection refused" in reflector.stats.last_error
    fake_kube.start_listening()
    eventually(lambda: watches(fake_kube) == 2)
    fake_kube.create(pod("b"))
    eventually(lambda: set(store.items()) == {"a", "b"})
    assert pod_requests(fake_kube) == [
        (FIRST_LIST, None),
        (watch_from(first), "throttle"),
        (watch_from(first), None),
    ]
    assert reflector.stats.lists == 1


class SyncClock:
    """A clock at 0 s until `store` holds a complete state, and 100 s from then on: a stream
    then seems to take 100 s over its initial state and no time at all after it, whatever the
    machine's speed."""

    def __init__(self) -> None:
        self.store: Store[str] | None = None

    def __call__(self) -> float:
        return 100.0 if self.store is not None and self.store.synced else 0.0


def test_a_streamed_lists_watch_is_timed_from_its_end_bookmark(fake_kube: FakeKubeServer, make) -> None:  # noqa: F811
    """The watch part of a streamed list is timed from the end bookmark (client-go's `watch`
    starts its clock when it takes the stream over), not from the request: a stream that ends
    with no event after it (here at its timeoutSeconds) is very short however long its initial
    state took (100 s by SyncClock), and the next initial state is streamed again from the
    installed RV; timed from the request, it would be watched again at once."""
    fake_kube.bookmark_interval = 3600.0  # no bookmark after the end bookmark: no event at all
    fake_kube.create(pod("a"))
    clock = SyncClock()
    reflector, store = make(watch_list=True, watch_timeout=1.0, very_short_watch=1.0, clock=clock)
    clock.store = store
    reflector.start()
    assert reflector.wait_synced(10)
    first = store.resource_version
    eventually(lambda: watches(fake_kube) >= 2)
    stream = {
        "watch": "1",
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }
    sent = [dict(r.query) for r in fake_kube.requests.find("GET", "/api/v1/pods")][:2]
    assert sent == [stream, {**stream, "resourceVersion": first}]
    assert reflector.stats.last_error == "very short watch: no event within 1s"


def test_the_decisions_after_a_watch_are_client_gos() -> None:
    """The pure rules, each side of each edge: an event, or a stream that lasted very_short_watch
    seconds, is watched again; a 429 or a refused connection is retried; any other failure (an
    unreachable server that did not refuse, an InternalError, a 410) relists."""
    ends = {
        "no event, short": after_stream_end(0, 0.99, 1.0),
        "no event, exactly the limit": after_stream_end(0, 1.0, 1.0),
        "one event, short": after_stream_end(1, 0.0, 1.0),
    }
    assert ends == {
        "no event, short": AfterWatch.RELIST,
        "no event, exactly the limit": AfterWatch.REWATCH,
        "one event, short": AfterWatch.REWATCH,
    }
    errors = {
        "429": KubeError(429, "TooManyRequests"),
        "refused": KubeError(0, "MaxRetryError", "Connection refused", refused=True),
        "reset": KubeError(0, "MaxRetryError", "Connection reset by peer"),
        "500": KubeError(500, "InternalError"),
        "410": KubeError(410, "Expired"),
    }
    assert {name: after_watch_error(err) for name, err in errors.items()} == {
        "429": AfterWatch.RETRY,
        "refused": AfterWatch.RETRY,
        "reset": AfterWatch.RELIST,
        "500": AfterWatch.RELIST,
        "410": AfterWatch.RELIST,
    }
    assert [retriable(err) for err in errors.values()] == [True, True, False, False, False]
