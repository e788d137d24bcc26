"""What one webhook replica asks of the API server, as the manifests start it (`fitguard webhook`
with the base Deployment's args, no `--workers` added here): one gunicorn worker, so each kind
the webhook caches is listed and watched once per replica (each worker lists and watches for
itself: N workers would mean N watches per kind). A watch the API server drops is opened again and
the replica answers from what it held meanwhile."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.test_webhook import _worker_pids, review, web_pod
from tests.fakekube.server import FakeKubeServer
from tests.tlsfixtures import TlsFiles
from tests.waiting import eventually
from tests.webhook_server import SHOP_STATE, Server, post, running, wait_ready

pytestmark = pytest.mark.slow

# webhook/cluster.py WATCHES, and its optional stores (NodePools and both node classes, served by
# the fake); a kind the webhook comes to watch besides these is counted too
RESOURCES = ("namespaces", "serviceaccounts", "securitygrouppolicies", "configmaps", "nodegrouptemplates",
             "nodes", "nodepools", "ec2nodeclasses", "nodeclasses")  # fmt: skip
HANG = 30.0  # ends a hang only


def watches(fake: FakeKubeServer) -> Counter[str]:
    """Watch requests (a streamed list is one) per resource, from the fake's request log."""
    return Counter(r.path.rsplit("/", 1)[-1] for r in fake.requests.find(method="GET", watch=True))


def seeded(fake: FakeKubeServer, tmp_path: Path) -> Path:
    for obj in SHOP_STATE:
        fake.create(obj)
    return fake.write_kubeconfig(tmp_path / "kubeconfig")


def test_a_replica_as_deployed_watches_each_kind_once(
    fake_kube: FakeKubeServer, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """Started with the manifests' flags, the replica runs one worker, and once it is ready and
    every kind is watched, each kind was watched exactly once: the manifests' worker count and the
    per-worker caches together give one list and watch per kind per replica."""
    kubeconfig = seeded(fake_kube, tmp_path)
    with running(tls_files, ["--kubeconfig", str(kubeconfig)], workers=None) as server:
        eventually(lambda: set(RESOURCES) <= set(watches(fake_kube)), "every kind watched", HANG)
        assert len(_worker_pids(server.process.pid)) == 1
        watched = watches(fake_kube)
        assert watched == Counter(dict.fromkeys(watched, 1)), watched
        assert not fake_kube.requests.find(method="GET", path="/api/v1/nodes", watch=False)  # streamed


def test_a_dropped_watch_is_opened_again_by_the_one_worker(
    fake_kube: FakeKubeServer, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """The API server drops every connection (its watches with them) and refuses new ones for a
    while: the one worker keeps answering from its caches, then watches every kind again once the
    API server is back, and a policy created after that reaches its answers."""
    kubeconfig = seeded(fake_kube, tmp_path)
    with running(tls_files, ["--kubeconfig", str(kubeconfig)], workers=None) as server:
        eventually(lambda: set(RESOURCES) <= set(watches(fake_kube)), "every kind watched", HANG)
        before = watches(fake_kube)
        fake_kube.stop_listening()
        assert _answer_patched(server, "while-down")  # the SecurityGroupPolicy held in the cache
        fake_kube.start_listening()
        again = "every kind watched again"
        eventually(lambda: all(watches(fake_kube)[r] > before[r] for r in before), again, HANG)
        fake_kube.delete("SecurityGroupPolicy", "web", namespace="shop")
        eventually(lambda: not _answer_patched(server, "after"), "the deletion reaches the cache", HANG)
        wait_ready(server, time.monotonic() + HANG)


def _answer_patched(server: Server, uid: str) -> bool:
    conn = server.connect()
    try:
        status, body = post(conn, review(web_pod(), uid=uid))
    finally:
        conn.close()
    assert status == 200 and body["response"]["uid"] == uid
    return "patch" in body["response"]
