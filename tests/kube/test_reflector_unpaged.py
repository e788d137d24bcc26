"""The reflector's list read as a stream (kube/liststream.py) end to end: a watch cache's unpaged
answer fills the store from one body; a body that is not a list, or breaks off, is refused with
the same KubeError reasons as before and leaves the store as it was."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from kube import podwire
from kube.client import PODS, KubeClient
from kube.options import ReflectorOptions, WatchOptions
from kube.reflector import Reflector
from kube.store import Store
from tests import objects
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.waiting import eventually

pytestmark = pytest.mark.slow

_WATCH = WatchOptions(page_size=2, backoff_base=0.05, backoff_cap=0.05, watch_timeout=30.0, watch_list=False)


def name_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def test_a_watch_cache_list_ignoring_the_limit_fills_the_store_from_one_body(
    fake_kube: FakeKubeServer,  # noqa: F811
) -> None:
    """The RV "0" list asks for 2 pods a page; the fake server's watch cache answers all 9 in one
    body (as cacher.go does), which the pod decoder reads item by item into the store."""
    for i in range(9):
        fake_kube.create(objects.pod(f"p{i}", namespace="default", container="app", image="busybox"))
    store: Store[str] = Store("Pod", name_of)
    options = ReflectorOptions(decoders=podwire.DECODERS, watch=_WATCH)
    reflector = Reflector(KubeClient(fake_kube.api_client()), PODS, store, options).start()
    try:
        assert reflector.wait_synced(10)
        assert set(store.items()) == {f"p{i}" for i in range(9)}
        lists = fake_kube.requests.find("GET", "/api/v1/pods", watch=False)
        assert (lists[0].query.get("resourceVersion"), lists[0].query.get("limit")) == ("0", "2")
        assert not any("continue" in r.query for r in lists)  # never a second page: one body
        assert store.resource_version.isdigit()  # the list's metadata, read beside the items
    finally:
        reflector.stop()


class _Canned(BaseHTTPRequestHandler):
    """Answers every GET with the server's canned head and body, then closes the connection."""

    def do_GET(self) -> None:
        server: _CannedServer = self.server  # type: ignore[assignment]
        server.hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(server.length or len(server.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(server.body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        """Quiet: the tests read the reflector's errors, not the server's log."""


class _CannedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, body: bytes, length: int) -> None:
        super().__init__(("127.0.0.1", 0), _Canned)
        self.body = body
        self.length = length
        self.hits = 0


@pytest.fixture
def canned() -> Iterator[Any]:
    servers: list[_CannedServer] = []

    def serve(body: bytes, length: int = 0) -> KubeClient:
        server = _CannedServer(body, length)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        configuration = client.Configuration(host=f"http://127.0.0.1:{server.server_address[1]}")
        configuration.proxy = None
        return KubeClient(client.ApiClient(configuration))

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


_POD = b'{"metadata":{"name":"p1","namespace":"default"}}'


@pytest.mark.parametrize(
    ("body", "length", "error"),
    [
        (b"<html>bad gateway</html>", 0, "200 BadResponse: list page is not JSON: "),
        (b"[]", 0, "200 BadResponse: list page is not an object"),
        (
            b'{"items":[' + _POD + b"," + _POD,
            0,
            "200 BadResponse: list page is not JSON: the body ends inside",
        ),
        (b'{"items":[' + _POD + b"]}garbage", 0, "200 BadResponse: list page is not JSON: data after"),
        # the server promises more than it sends, then closes: a connection cut mid-body
        (b'{"items":[' + _POD + b"," + _POD, 10_000, "ListInterrupted: "),
    ],
)
def test_a_bad_list_body_is_refused_and_changes_nothing(
    canned: Any, body: bytes, length: int, error: str
) -> None:
    """Each bad body is the error it was when bodies were read whole, retried with a backoff, and
    the store keeps its previous state even though the first pod was already projected."""
    projected: list[str] = []

    def transform(obj: Mapping[str, Any]) -> str:
        projected.append(name_of(obj))
        return name_of(obj)

    store: Store[str] = Store("Pod", transform)
    store.replace([{"metadata": {"name": "stale", "namespace": "default"}}], "1")
    projected.clear()
    reflector = Reflector(canned(body, length), PODS, store, ReflectorOptions(watch=_WATCH)).start()
    try:
        eventually(lambda: reflector.stats.errors >= 2)  # refused, then refused again after a backoff
        assert reflector.stats.last_error.startswith(error), reflector.stats.last_error
        assert "\n" not in reflector.stats.last_error
        assert set(store.items()) == {"stale"} and store.resource_version == "1"
        assert reflector.stats.lists == 0 and not reflector.synced
        if b"p1" in body and length == 0 and b"garbage" in body:
            assert "p1" in projected  # items before the damage were projected, then dropped
    finally:
        reflector.stop()
