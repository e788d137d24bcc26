"""Kubernetes API faults (the fake API server's injection): watches closed mid-stream, 410 Gone,
429 with Retry-After, 500, slow answers, refused connections. The webhook's caches recover and keep
answering from the last good state while the API is down; the controller's branch ENI books never
act on a partial list and never lose or double count an ENI (checked against a fresh rebuild)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI
from kube.reflector import Reflector
from tests import objects
from tests.books_stack import BooksStack, books_stack
from tests.fakekube.server import FakeKubeServer
from tests.objects import Clock
from tests.waiting import eventually
from webhook.app import create_app
from webhook.cluster import ClusterView, WhenServed, start_reflectors
from webhook.review import WebhookOptions
from webhook.status import answer

SGP_PATH = "securitygrouppolicies"
PODS_PATH = "/api/v1/pods"
NOW = 1_714_564_800.0
# a first sync through the armed faults takes seconds; this bound only ends a hung test (the
# suite runs it beside other workers on two cores, where 20 s was seen to run out)
HANG = 60.0


# -- the webhook's view --------------------------------------------------------------------------


pytestmark = pytest.mark.usefixtures("paged_lists")  # tests/conftest.py says why


def policy(name: str, app: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"namespace": "shop", "name": name},
        "spec": {"podSelector": {"matchLabels": {"app": app}}, "securityGroups": {"groupIds": [group]}},
    }


def seed_shop(fake_kube: FakeKubeServer) -> None:
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    fake_kube.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": "shop", "name": "default"}}
    )
    fake_kube.create(policy("web", "web", "sg-web"))


def mutate(client: FlaskClient, app_label: str) -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "shop", "labels": {"app": app_label}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    }
    req = {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
           "namespace": "shop", "object": pod}  # fmt: skip
    answer = client.post(
        "/mutate", json={"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
    )
    assert answer.status_code == 200
    return answer.get_json()["response"]


def injects_eni(client: FlaskClient, app_label: str) -> bool:
    response = mutate(client, app_label)
    patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return "vpc.amazonaws.com/pod-eni" in json.dumps(patch)


@pytest.fixture
def webhook(fake_kube: FakeKubeServer) -> Iterator[tuple[ClusterView, FlaskClient, list[Reflector]]]:
    """A view fed by the real reflectors, not started yet (the test arms faults first)."""
    seed_shop(fake_kube)
    view = ClusterView()
    reflectors: list[Reflector] = []
    client = create_app(view, WebhookOptions()).test_client()
    yield view, client, reflectors
    while STOPPED_AT_END:
        STOPPED_AT_END.pop().stop()
    for reflector in reflectors:
        reflector.stop()


STOPPED_AT_END: list[WhenServed] = []


def readyz(view: ClusterView) -> int:
    """The status port's /readyz answer for this view (the certificate counted as loaded)."""
    return answer("GET", "/readyz", view, WebhookOptions(), lambda: True)[0]


def start(view: ClusterView, fake_kube: FakeKubeServer, reflectors: list[Reflector]) -> None:
    """The webhook's reflectors, started; the NodePools' discovery (no stats of its own: the
    NodePool reflector it may start is not counted here) is stopped at the fixture's end too."""
    for started in start_reflectors(view, fake_kube.api_client()):
        if isinstance(started, Reflector):
            reflectors.append(started)
        else:
            STOPPED_AT_END.append(started)


def sgp_reflector(reflectors: list[Reflector]) -> Reflector:
    return next(r for r in reflectors if r.resource.plural == SGP_PATH)


def policy_names(view: ClusterView) -> set[str]:
    return {p.name for p in view.policies.items()}


def server_policy_names(fake_kube: FakeKubeServer) -> set[str]:
    return {o["metadata"]["name"] for o in fake_kube.objects("SecurityGroupPolicy")}


def test_refused_at_start_then_ready_and_serving(fake_kube: FakeKubeServer, webhook: Any) -> None:
    """The API refuses connections when the webhook starts: not ready, retrying with backoff; once
    the API listens, every store syncs and the policy is applied."""
    view, client, reflectors = webhook
    fake_kube.stop_listening()
    start(view, fake_kube, reflectors)
    eventually(lambda: all(r.stats.errors >= 2 for r in reflectors), "every reflector retried twice")
    assert readyz(view) == 503 and not view.ready()
    assert all(r.stats.last_backoff > 0 for r in reflectors)
    fake_kube.start_listening()
    eventually(lambda: readyz(view) == 200, "ready once the API listens")
    assert injects_eni(client, "web")


def test_the_last_good_state_is_served_while_the_api_is_down(fake_kube: FakeKubeServer, webhook: Any) -> None:
    """Once synced, the API going away (connections dropped, then refused, across several retries)
    changes nothing the webhook answers: still ready, the policy still applied; when the API is
    back, a policy created meanwhile arrives."""
    view, client, reflectors = webhook
    start(view, fake_kube, reflectors)
    eventually(view.ready, "synced")
    errors_before = sum(r.stats.errors for r in reflectors)
    fake_kube.stop_listening()
    eventually(lambda: sum(r.stats.errors for r in reflectors) >= errors_before + 2 * len(reflectors),
               "each reflector failed twice against the dead API")  # fmt: skip
    for _ in range(20):
        assert readyz(view) == 200
        assert injects_eni(client, "web")
    assert policy_names(view) == {"web"}
    fake_kube.create(policy("api", "api", "sg-api"))  # written while no watch can see it
    fake_kube.start_listening()
    eventually(lambda: injects_eni(client, "api"), "the policy created during the outage applied")
    assert injects_eni(client, "web")


FAULTS: dict[str, Callable[[FakeKubeServer], Any]] = {
    "watch closed mid-stream": lambda k: k.faults.close_watch_after(1, path=SGP_PATH, abrupt=True, count=2),
    "watch ended cleanly": lambda k: k.faults.close_watch_after(1, path=SGP_PATH, count=2),
    "410 on watch": lambda k: k.faults.expire_next_watch(path=SGP_PATH, count=2),
    "429 on list": lambda k: k.faults.throttle(1, path=SGP_PATH, watch=False, count=2),
    "500 on list and watch": lambda k: k.faults.fail(500, path=SGP_PATH, count=3),
    "slow answers": lambda k: k.faults.delay(1.0, path=SGP_PATH, count=3),
}
FAULT_KINDS = {"watch closed mid-stream": "close_watch", "watch ended cleanly": "close_watch",
               "410 on watch": "expire_watch", "429 on list": "throttle", "500 on list and watch": "fail",
               "slow answers": "delay"}  # fmt: skip


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_policy_cache_recovers_from(fault: str, fake_kube: FakeKubeServer, webhook: Any) -> None:
    """With the fault armed on the policies' list and watch from the start, the cache still reaches
    the server's state, follows a create and a delete made while faults fire, and the fault really
    fired (the request log says so)."""
    view, client, reflectors = webhook
    FAULTS[fault](fake_kube)
    start(view, fake_kube, reflectors)
    eventually(view.ready, "synced despite the fault")
    fake_kube.create(policy("api", "api", "sg-api"))
    eventually(lambda: policy_names(view) == {"web", "api"}, "the new policy")
    fake_kube.delete("SecurityGroupPolicy", "web", "shop", api_version="vpcresources.k8s.aws/v1beta1")
    fake_kube.create(policy("db", "db", "sg-db"))
    eventually(lambda: policy_names(view) == server_policy_names(fake_kube), "the server's policies")
    assert injects_eni(client, "db") and not injects_eni(client, "web")
    fired = [r for r in fake_kube.requests.find(path=SGP_PATH) if r.fault == FAULT_KINDS[fault]]
    assert fired, f"the {fault} fault never fired"
    if fault == "429 on list":
        assert sgp_reflector(reflectors).stats.last_backoff >= 1.0, "Retry-After was honoured"


# -- the controller's branch ENI books -----------------------------------------------------------

NODES = ("ip-10-0-1-1.ec2.internal", "ip-10-0-1-2.ec2.internal")


def node(name: str, pod_eni: int = 3, exhausted: bool = False) -> dict[str, Any]:
    labels = {EXHAUSTED_LABEL: "true"} if exhausted else {}
    return objects.node(name, {POD_ENI: str(pod_eni)}, group="ng", instance_type="m5.large", labels=labels)


def eni_pod(name: str, node_name: str, phase: str = "Running") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}]}
    if phase == "Succeeded":
        status["containerStatuses"] = [
            {"name": "main", "state": {"terminated": {"exitCode": 0, "finishedAt": "2024-05-01T11:59:00Z"}}}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "batch",
            "annotations": {"vpc.amazonaws.com/pod-eni": json.dumps([{"eniId": f"eni-{name}"}])},
        },
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "main", "resources": {"limits": {"vpc.amazonaws.com/pod-eni": "1"}}}],
        },
        "status": status,
    }


def books(fake_kube: FakeKubeServer, clock: Clock, page_size: int = 500) -> BooksStack:
    # on-delete: a deleted pod frees its ENI at once, so a fresh rebuild must agree exactly
    # fitguard scales every group itself here, so a group's one node may carry the label (the guard
    # otherwise spares a group's last ready node for cluster-autoscaler's memory:
    # tests/capacity/test_guard.py)
    live = books_stack(
        fake_kube.api_client(),
        release="on-delete",
        window=60.0,
        clock=clock,
        scaled_groups=lambda: frozenset({"ng"}),
    )
    return live.start(page_size=page_size)


def rows(live: BooksStack) -> list[dict[str, Any]]:
    return sorted((r.to_json() for r in live.books.snapshot()), key=lambda r: r["name"])


def fresh_rows(fake_kube: FakeKubeServer, clock: Clock) -> list[dict[str, Any]]:
    rebuilt = books(fake_kube, clock)
    try:
        assert rebuilt.wait_synced(HANG)
        return rows(rebuilt)
    finally:
        rebuilt.stop()


def node_patches(fake_kube: FakeKubeServer) -> list[Any]:
    return list(fake_kube.requests.find(method="PATCH", path="/api/v1/nodes"))


def test_the_leader_never_acts_on_a_partial_pod_list(fake_kube: FakeKubeServer) -> None:
    """A node rightly labelled exhausted (2 of 3 ENIs in use, the third held by a finished pod:
    what the scheduler cannot see); the pod list's second page fails
    for a while: the books are not synced, and reconcile passes made meanwhile leave the label
    alone (a partial or empty list would show free ENIs and remove it). Once the list completes the
    books agree with the server and still nothing was written."""
    clock = Clock(NOW)
    fake_kube.create(node(NODES[0], exhausted=True))
    for i in range(3):
        fake_kube.create(eni_pod(f"p{i}", NODES[0], phase="Succeeded" if i == 2 else "Running"))
    fake_kube.watch_cache = False  # the RV "0" list is paged, as without a watch cache: a page two
    fake_kube.faults.delay(1.0, path=PODS_PATH, watch=False, count=1)
    live = books(fake_kube, clock, page_size=2)
    try:
        eventually(lambda: fake_kube.requests.find(path=PODS_PATH, watch=False), "the first page asked")
        page_two = fake_kube.faults.fail(500, path=PODS_PATH, watch=False, count=None)
        eventually(lambda: any(r.fault == "fail" for r in fake_kube.requests.find(path=PODS_PATH)),
                   "page two failed")  # fmt: skip
        # not a sleep: a reconcile pass between each of three further failed list attempts
        for _ in range(3):
            failed = len([r for r in fake_kube.requests.find(path=PODS_PATH) if r.fault == "fail"])
            decisions = live.reconcile()
            assert not live.wait_synced(0)
            assert [d for d in decisions if d.action.startswith("label")] == []
            eventually(
                lambda n=failed: (
                    len([r for r in fake_kube.requests.find(path=PODS_PATH) if r.fault == "fail"]) > n
                ),
                "another failed list attempt",
            )
        assert node_patches(fake_kube) == []
        fake_kube.faults.clear()
        assert page_two.remaining is None
        assert live.wait_synced(HANG)
        assert rows(live) == fresh_rows(fake_kube, clock)
        assert live.reconcile() == [] and node_patches(fake_kube) == []
        assert fake_kube.get("Node", NODES[0])["metadata"]["labels"][EXHAUSTED_LABEL] == "true"
    finally:
        live.stop()


def test_no_eni_is_lost_or_double_counted_across_faults(fake_kube: FakeKubeServer) -> None:
    """Pods start, finish and are deleted on two nodes while the pods' watch is cut mid-stream,
    expires (410), the relist is throttled and fails, answers are slow, and the API goes away and
    comes back: the books end equal to books rebuilt from scratch from the server's objects, and
    every armed fault fired.

    It once took 7 s to converge after the last step, and 1 run in 13 more than 15 s: the pods'
    reflector took its first watch, cut after two events, for a failed request and backed off
    without resetting the backoff the throttled and the failed list had grown (1.6-3.2 s); the
    test's outage and compaction passed meanwhile, and the resumed watch's 410 then waited the
    next step (3.2-6.4 s, 6.4-12.8 s when a retry met the outage) instead of relisting at once.
    Now a watch that ends after an event is watched again at once, as client-go does, and its
    first event resets the backoff (tests/kube/test_reflector_rewatch.py pins both); it converges
    in about a second."""
    clock = Clock(NOW)
    for name in NODES:
        fake_kube.create(node(name, pod_eni=9))
    for i in range(6):
        fake_kube.create(eni_pod(f"a{i}", NODES[i % 2]))
    fake_kube.watch_cache = False  # lists in pages of two, as without a watch cache
    faults = fake_kube.faults
    faults.close_watch_after(2, path=PODS_PATH, abrupt=True, count=1)
    faults.expire_next_watch(path=PODS_PATH, count=1)
    faults.throttle(1, path=PODS_PATH, watch=False, count=1)
    faults.fail(500, path=PODS_PATH, watch=False, count=1)
    faults.delay(0.3, path=PODS_PATH, count=4)
    live = books(fake_kube, clock, page_size=2)
    deleted: dict[str, str] = {}  # pod -> its node
    try:
        assert live.wait_synced(HANG)
        for step in range(12):
            name = f"b{step}"
            fake_kube.create(eni_pod(name, NODES[step % 2]))
            if step % 3 == 1:
                fake_kube.patch("Pod", name, {"status": eni_pod(name, "", "Succeeded")["status"]}, "batch")
            if step % 4 == 2:
                fake_kube.delete("Pod", f"a{step // 4}", "batch")
                deleted[f"a{step // 4}"] = NODES[(step // 4) % 2]
            if step == 6:
                fake_kube.stop_listening()
                fake_kube.create(eni_pod("during-outage", NODES[0]))
                fake_kube.delete("Pod", "b0", "batch")
                deleted["b0"] = NODES[0]
                time.sleep(0.5)
                fake_kube.start_listening()
            if step == 9:
                fake_kube.expire_history("Pod")
                faults.expire_next_watch(path=PODS_PATH, count=1)
                fake_kube.stop_listening()
                fake_kube.start_listening()
        expected = fresh_rows(fake_kube, clock)
        # deleted pods stay held for the window (their tombstones); a rebuild cannot know them
        with_tombstones = [
            {**row, "heldBy": sorted([*row["heldBy"], *(p for p, n in deleted.items() if n == row["name"])])}
            for row in expected
        ]
        eventually(
            lambda: (
                [(r["name"], r["inUse"], r["heldBy"]) for r in rows(live)]
                == [(r["name"], r["inUse"], r["heldBy"]) for r in with_tombstones]
            ),
            "the books equal a fresh rebuild plus the deleted pods' tombstones",
            timeout=HANG,
        )
        clock.now += 61.0  # past the window: the tombstones expire, nothing else may differ
        assert rows(live) == fresh_rows(fake_kube, clock)
        assert sum(r["inUse"] + r["held"] for r in expected) == len(fake_kube.objects("Pod", "batch"))
        fired = {r.fault for r in fake_kube.requests.find(path=PODS_PATH)}
        assert {"close_watch", "expire_watch", "throttle", "fail", "delay"} <= fired
    finally:
        live.stop()
