"""The fake apiserver's list resourceVersion semantics and streamed lists (WatchList), over raw HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from tests.fakekube import FakeKubeServer, fixtures
from tests.fakekube.registry import by_kind
from tests.fakekube.selectors import label_selector
from tests.fakekube.watch import WatchSession
from tests.pod_requests import pod

fake_kube = fixtures.fake_kube

PODS = "/api/v1/namespaces/default/pods"
HTTP = urllib3.PoolManager()
TIMEOUT = urllib3.Timeout(connect=5.0, read=10.0)  # bounds a hang only


def get(server: FakeKubeServer, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of a request expected to be answered at once; a watch stream
    that starts instead is reported as such, not read until it ends."""
    response = HTTP.request("GET", server.url + PODS, fields=query, preload_content=False, timeout=TIMEOUT)
    try:
        if response.headers.get("Transfer-Encoding") == "chunked":
            return response.status, {"stream": "a watch started"}
        return response.status, json.loads(response.read())
    finally:
        response.close()


def names(listed: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listed["items"]]


def events(server: FakeKubeServer, query: dict[str, str], count: int) -> Iterator[dict[str, Any]]:
    """The first `count` events of a watch."""
    response = HTTP.request("GET", server.url + PODS, fields=query, preload_content=False, timeout=TIMEOUT)
    assert response.status == 200, response.read()
    pending = b""
    seen = 0
    try:
        while seen < count:
            chunk = response.read1(65536)
            assert chunk, "the watch ended early"
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                yield json.loads(line)
                seen += 1
                if seen == count:
                    return
    finally:
        response.close()  # a watch cut short is never reused


def summary(event: dict[str, Any]) -> tuple[str, str, dict[str, str]]:
    meta = event["object"]["metadata"]
    return event["type"], meta.get("name", meta["resourceVersion"]), meta.get("annotations", {})


@pytest.fixture
def three(fake_kube: FakeKubeServer) -> FakeKubeServer:
    for name in ("a", "b", "c"):
        fake_kube.create(pod(name))
    return fake_kube


def test_list_rv_unset_is_the_most_recent_state_and_honours_limit(three: FakeKubeServer) -> None:
    """No resourceVersion: a consistent read of the latest state, paged by limit."""
    status, listed = get(three, {"limit": "2"})
    assert status == 200
    assert names(listed) == ["a", "b"]
    assert listed["metadata"]["resourceVersion"] == str(three.store.resource_version)
    assert listed["metadata"]["remainingItemCount"] == 1


def test_list_rv_0_is_answered_whole_from_the_watch_cache(three: FakeKubeServer) -> None:
    """resourceVersion "0" with a watch cache: every object, the limit ignored, no continue token."""
    status, listed = get(three, {"resourceVersion": "0", "limit": "2"})
    assert (status, names(listed)) == (200, ["a", "b", "c"])
    assert listed["metadata"] == {"resourceVersion": str(three.store.resource_version)}


def test_list_rv_0_without_watch_cache_is_paged(three: FakeKubeServer) -> None:
    """With the watch cache disabled, the same request is paged like any other."""
    three.watch_cache = False
    status, listed = get(three, {"resourceVersion": "0", "limit": "2"})
    assert (status, names(listed)) == (200, ["a", "b"])
    assert set(listed["metadata"]) == {"resourceVersion", "continue", "remainingItemCount"}


def test_list_exact_rv_is_that_snapshot_and_410_once_compacted(three: FakeKubeServer) -> None:
    """Exact (and a bare RV with a limit, the legacy exact match) reads the snapshot at that RV;
    after compaction the same request is 410 Expired."""
    at = str(three.store.resource_version)
    three.delete("Pod", "a", "default")
    for query in (
        {"resourceVersion": at, "resourceVersionMatch": "Exact"},
        {"resourceVersion": at, "limit": "5"},
    ):
        status, listed = get(three, query)
        assert (status, names(listed), listed["metadata"]["resourceVersion"]) == (200, ["a", "b", "c"], at)
    three.expire_history("Pod")
    status, body = get(three, {"resourceVersion": at, "resourceVersionMatch": "Exact"})
    assert (status, body["reason"], body["code"]) == (410, "Expired", 410)


def test_list_not_older_than_is_the_latest_state_or_504_when_ahead(three: FakeKubeServer) -> None:
    """NotOlderThan (and a bare RV without limit) answers the latest state; an RV the store has not
    reached is the watch cache's 504 with the ResourceVersionTooLarge cause."""
    old = str(three.store.resource_version)
    three.delete("Pod", "a", "default")
    now = three.store.resource_version
    for query in ({"resourceVersion": old, "resourceVersionMatch": "NotOlderThan"}, {"resourceVersion": old}):
        status, listed = get(three, query)
        assert (status, names(listed), listed["metadata"]["resourceVersion"]) == (200, ["b", "c"], str(now))
    status, body = get(three, {"resourceVersion": str(now + 5), "resourceVersionMatch": "NotOlderThan"})
    assert (status, body) == (
        504,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"Timeout: Too large resource version: {now + 5}, current: {now}",
            "reason": "Timeout",
            "code": 504,
            "details": {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
            },
        },
    )


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        (
            {"resourceVersionMatch": "NotOlderThan"},
            [
                (
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            ],
        ),
        (
            {"resourceVersion": "0", "resourceVersionMatch": "Exact"},
            [
                (
                    "resourceVersionMatch",
                    "FieldValueForbidden",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            ],
        ),
        (
            {"resourceVersion": "3", "resourceVersionMatch": "Newest"},
            [
                (
                    "resourceVersionMatch",
                    "FieldValueNotSupported",
                    'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
                )
            ],
        ),
        (
            {"sendInitialEvents": "true"},
            [("sendInitialEvents", "FieldValueForbidden", "sendInitialEvents is forbidden for list")],
        ),
    ],
    ids=["match-without-rv", "exact-rv-0", "unknown-match", "send-initial-events-on-list"],
)
def test_bad_list_parameters_are_422_invalid_list_options(
    three: FakeKubeServer, query: dict[str, str], errors: list[tuple[str, str, str]]
) -> None:
    """Each rule of ValidateListOptions for lists answers the whole 422 Status the apiserver sends."""
    status, body = get(three, query)
    texts = [
        f"{field}: {detail if reason != 'FieldValueForbidden' else 'Forbidden: ' + detail}"
        for field, reason, detail in errors
    ]
    causes = [
        {
            "reason": reason,
            "message": detail if reason != "FieldValueForbidden" else "Forbidden: " + detail,
            "field": field,
        }
        for field, reason, detail in errors
    ]
    assert (status, body) == (
        422,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'ListOptions.meta.k8s.io "" is invalid: ' + texts[0],
            "reason": "Invalid",
            "code": 422,
            "details": {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes},
        },
    )


def test_continue_with_a_resource_version_is_400_but_rv_0_is_allowed(three: FakeKubeServer) -> None:
    """A continue token carries its snapshot: an RV beside it is a 400, except "0"."""
    three.watch_cache = False
    _, first = get(three, {"limit": "2"})
    token = first["metadata"]["continue"]
    status, body = get(three, {"limit": "2", "continue": token, "resourceVersion": "2"})
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "specifying resource version is not allowed when using continue",
    )
    status, rest = get(three, {"limit": "2", "continue": token, "resourceVersion": "0"})
    assert (status, names(rest)) == (200, ["c"])


WATCH_LIST = {
    "watch": "1",
    "sendInitialEvents": "true",
    "resourceVersionMatch": "NotOlderThan",
    "allowWatchBookmarks": "true",
}


def test_watch_list_streams_initial_added_events_then_the_end_bookmark_then_live_events(
    three: FakeKubeServer,
) -> None:
    """sendInitialEvents=true: ADDED per object, a BOOKMARK annotated k8s.io/initial-events-end at
    the state's RV, then changes on the same stream."""
    at = str(three.store.resource_version)
    stream = events(three, WATCH_LIST, 5)
    initial = [summary(next(stream)) for _ in range(4)]
    assert initial == [
        ("ADDED", "a", {}),
        ("ADDED", "b", {}),
        ("ADDED", "c", {}),
        ("BOOKMARK", at, {"k8s.io/initial-events-end": "true"}),
    ]
    three.create(pod("d"))
    assert summary(next(stream)) == ("ADDED", "d", {})


def test_watch_list_not_older_than_an_rv_ahead_of_the_store_is_504(three: FakeKubeServer) -> None:
    """A WatchList from an RV the store has not reached: the watch cache's too-large answer."""
    ahead = three.store.resource_version + 10
    status, body = get(three, {**WATCH_LIST, "resourceVersion": str(ahead)})
    assert (status, body["reason"], body["details"]["causes"][0]["reason"]) == (
        504,
        "Timeout",
        "ResourceVersionTooLarge",
    )


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        (
            {"watch": "1", "sendInitialEvents": "true"},
            "resourceVersionMatch: Forbidden: "
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            {"watch": "1", "resourceVersionMatch": "NotOlderThan"},
            "resourceVersionMatch: Forbidden: "
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
    ],
    ids=["initial-events-without-match", "match-without-initial-events"],
)
def test_bad_watch_parameters_are_422(three: FakeKubeServer, query: dict[str, str], detail: str) -> None:
    """validateWatchOptions' rules on a server with WatchList."""
    status, body = get(three, query)
    assert (status, body["message"]) == (422, 'ListOptions.meta.k8s.io "" is invalid: ' + detail)


def test_old_server_refuses_resource_version_match_on_a_watch(three: FakeKubeServer) -> None:
    """Before 1.27 the apiserver forbade resourceVersionMatch on every watch: a WatchList is 422."""
    three.watch_list = "old"
    status, body = get(three, WATCH_LIST)
    assert (status, body["reason"], body["message"]) == (
        422,
        "Invalid",
        'ListOptions.meta.k8s.io "" is invalid: '
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
    )


def test_server_ignoring_watch_list_sends_a_plain_watch_without_the_end_bookmark(
    three: FakeKubeServer,
) -> None:
    """A server that drops the parameters: the legacy initial ADDED events, then ordinary bookmarks."""
    three.watch_list = "ignored"
    stream = events(three, WATCH_LIST, 4)
    got = [summary(event) for event in stream]
    assert got[:3] == [("ADDED", "a", {}), ("ADDED", "b", {}), ("ADDED", "c", {})]
    assert got[3][0] == "BOOKMARK"
    assert got[3][2] == {}


def test_initial_events_are_streamed_from_stored_objects_not_copies(three: FakeKubeServer) -> None:
    """The server's memory stays flat while it streams a WatchList: the initial events are produced
    one at a time and hold the stored objects themselves, not a deep copy of the whole list."""
    rt = by_kind("Pod")
    session = WatchSession(
        three.store, rt, label_selector(None), None, bookmark_interval=1.0, send_initial_events=True
    )
    initial = session.start()
    assert not isinstance(initial, list)
    stored = three.store._objects[rt]
    first = next(initial)
    assert first["object"] is stored[("default", "a")]
    assert [
        event["object"] is stored.get(("default", event["object"]["metadata"].get("name", "")))
        for event in initial
    ] == [
        True,
        True,
        False,  # the end bookmark
    ]
