"""The long-running controller end to end: the real kube client against the fake API server, boto3
against moto in server mode. Two replicas elect one leader; only the leader publishes templates;
the other takes over once the stopped leader's lease has expired; the HTTP endpoints answer."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capacity.defaults import LEASE_NAME
from capacity.names import EXHAUSTED_LABEL
from controller.loop import ControllerLoop
from controller.run import ControllerOptions
from controller.settings import (
    BooksOptions,
    LoopOptions,
    ServingOptions,
)
from fitguard.demo_seed import seed_moto
from kube.client import as_kube_client
from kube.options import LeaderOptions
from kube.statefile import load_state
from tests.waiting import eventually as wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMESPACE = "fitguard-system"


def get(url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.fixture
def cluster(fake_kube: Any, aws: Any) -> Any:
    """The demo cluster: its nodes, DaemonSets and VPC CNI ConfigMap in the API, its ASGs in moto."""
    seed_moto(EXAMPLES / "aws-seed.yaml")
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for obj in load_state(EXAMPLES / "cluster.yaml"):
        if obj["kind"] in ("Node", "DaemonSet", "ConfigMap", "Namespace"):
            fake_kube.apply(obj)
    return fake_kube


@pytest.fixture
def replicas(cluster: Any) -> Iterator[list[tuple[ControllerLoop, threading.Event]]]:
    started = []
    for _ in range(2):
        options = LoopOptions(
            discovery=ControllerOptions(cluster_name="demo"),
            interval=0.5,
            books=BooksOptions(reconcile_interval=0.2),
            serving=ServingOptions(bind="127.0.0.1:0", snapshotz=True),
            leadership=LeaderOptions(
                namespace=NAMESPACE, lease_duration=2.0, renew_deadline=1.5, retry_period=0.3
            ),
        )
        loop = ControllerLoop(options, as_kube_client(cluster.api_client()))
        assert loop.elector is not None
        loop.elector._exit = lambda code: None  # the test process must survive a lost lease
        stop = threading.Event()
        threading.Thread(target=loop.run, args=(stop,), daemon=True).start()
        started.append((loop, stop))
    yield started
    for _, stop in started:
        stop.set()


def leaders(replicas: list[tuple[ControllerLoop, threading.Event]]) -> list[ControllerLoop]:
    return [loop for loop, stop in replicas if not stop.is_set() and loop.is_leader()]


@pytest.mark.slow
def test_one_leader_publishes_and_the_other_takes_over(replicas: list[Any], cluster: Any) -> None:
    first = wait_for(lambda: leaders(replicas))
    assert len(first) == 1, "exactly one replica leads"
    expected = ["ng-batch", "ng-burst", "ng-general"]
    wait_for(lambda: sorted(o["metadata"]["name"] for o in cluster.objects("NodeGroupTemplate")) == expected)
    lease = cluster.get("Lease", LEASE_NAME, NAMESPACE)
    assert lease["spec"]["holderIdentity"] == first[0].identity

    other = next(loop for loop, _ in replicas if loop is not first[0])
    next(stop for loop, stop in replicas if loop is first[0]).set()
    # the takeover is the event waited for (the deadline only bounds a hang): the other replica
    # leads and the Lease names it
    wait_for(
        lambda: (
            other.is_leader()
            and cluster.get("Lease", LEASE_NAME, NAMESPACE)["spec"]["holderIdentity"] == other.identity
        ),
        "the other replica holds the lease",
        timeout=60.0,
    )
    assert leaders(replicas) == [other]


@pytest.mark.slow
def test_followers_keep_warm_books_and_serve_the_endpoints(replicas: list[Any]) -> None:
    wait_for(lambda: leaders(replicas))
    follower = next(loop for loop, _ in replicas if not loop.is_leader())
    base = f"http://127.0.0.1:{follower.http.port}"
    assert get(f"{base}/healthz") == (200, "ok\n")
    wait_for(lambda: get(f"{base}/readyz")[0] == 200)
    snapshot = json.loads(get(f"{base}/snapshotz")[1])
    assert snapshot["leader"] is False
    nodes = {row["name"]: row for row in snapshot["nodes"]}
    assert nodes["ip-10-0-2-21.ec2.internal"]["capacity"] == 18
    metrics = get(f"{base}/metrics")[1]
    assert (
        'fitguard_branch_eni_node_capacity{node="ip-10-0-2-21.ec2.internal",node_group="ng-general"} 18.0'
        in metrics
    )
    assert get(f"{base}/nope")[0] == 404


@pytest.mark.slow
def test_readyz_waits_until_every_store_of_the_cache_completed_its_first_list(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/readyz is 503 from the moment the endpoints listen: while start-up still reads the VPC CNI
    ConfigMap (held 3 s by the fake API server) no cache exists yet, and that is not ready; while the
    pod list is held, only the pods are missing; it turns 200 once every list completed. (No
    cluster-autoscaler is looked for: its store is complete, empty, once start-up is past.)
    (Paged lists, so that the held request is the pods' list.)"""
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "false")
    cluster.faults.delay(3.0, method="GET", path="/configmaps/amazon-vpc-cni")
    cluster.faults.delay(3.0, method="GET", path="/api/v1/pods", watch=False)
    options = LoopOptions(
        discovery=ControllerOptions(cluster_name="demo", autoscaler_selector="", karpenter_selector=""),
        interval=60.0,
        serving=ServingOptions(bind="127.0.0.1:0"),
    )
    loop = ControllerLoop(options, as_kube_client(cluster.api_client()))
    stop = threading.Event()
    threading.Thread(target=loop.run, args=(stop,), daemon=True).start()
    readyz = f"http://127.0.0.1:{loop.http.port}/readyz"
    try:
        wait_for(
            lambda: cluster.requests.find("GET", "/configmaps/amazon-vpc-cni"), "start-up reads the ConfigMap"
        )
        every = (
            "nodes, pods, daemonsets, NodeGroupTemplate, cluster-autoscaler pods, NodePool, EC2NodeClass, "
            "NodeClass, Karpenter controller pods"
        )
        assert get(readyz) == (503, f"waiting for: first list of {every}\n")
        held = "waiting for: first list of pods\n"
        wait_for(lambda: get(readyz) == (503, held), "the rest listed, the pod list held")
        wait_for(lambda: get(readyz)[0] == 200, "ready once every list completed")
        assert loop.cache.waiting_for() == []
        assert [r.fault for r in cluster.requests.find("GET", "/api/v1/pods", watch=False)][:1] == ["delay"]
        # snapshotz is off by default: the snapshot is not served (tests/cmdline/test_statushttp_snapshotz.py)
        assert get(f"http://127.0.0.1:{loop.http.port}/snapshotz")[0] == 404
    finally:
        stop.set()


def samples(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of one metric family in an exposition: its whole label set -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


@pytest.mark.slow
def test_metrics_show_the_leader_the_blind_groups_and_the_build(replicas: list[Any], cluster: Any) -> None:
    """After a cycle, the leader's /metrics says it leads and, per node group and resource, whether
    cluster-autoscaler's view lacks what a real node offers (tags planned, not written: all blind);
    the follower says it does not lead; both name their build."""
    from fitguard import __version__

    leader = wait_for(lambda: leaders(replicas))[0]
    follower = next(loop for loop, _ in replicas if loop is not leader)
    base = f"http://127.0.0.1:{leader.http.port}"
    blind = wait_for(lambda: samples(get(f"{base}/metrics")[1], "fitguard_node_group_blind"), "a cycle")
    text = get(f"{base}/metrics")[1]
    storage, eni = "ephemeral-storage", "vpc.amazonaws.com/pod-eni"
    assert blind == {
        (("node_group", "ng-batch"), ("resource", storage)): 1.0,
        (("node_group", "ng-batch"), ("resource", eni)): 1.0,
        (("node_group", "ng-burst"), ("resource", storage)): 1.0,
        (("node_group", "ng-general"), ("resource", storage)): 1.0,
        (("node_group", "ng-general"), ("resource", eni)): 1.0,
    }
    assert samples(text, "fitguard_node_group_autoscaler_scales_from_zero") == {
        (("node_group", "ng-batch"),): 0.0,
        (("node_group", "ng-burst"),): 0.0,
        (("node_group", "ng-general"),): 0.0,
    }
    assert samples(text, "fitguard_leader") == {(): 1.0}
    # the test process also holds the webhook's metrics (one global registry): its own is left out
    builds = {
        k: v for k, v in samples(text, "fitguard_build_info").items() if ("component", "webhook") not in k
    }
    assert builds == {(("component", "controller"), ("version", __version__)): 1.0}
    follower_text = get(f"http://127.0.0.1:{follower.http.port}/metrics")[1]
    assert samples(follower_text, "fitguard_leader") == {(): 0.0}
    assert samples(follower_text, "fitguard_node_group_blind") == {}

    def exhausted_in_api() -> dict[tuple[tuple[str, str], ...], float]:
        found = {}
        for node in cluster.objects("Node"):
            labels = node["metadata"].get("labels") or {}
            group = labels.get("eks.amazonaws.com/nodegroup", "")
            value = 1.0 if labels.get(EXHAUSTED_LABEL) == "true" else 0.0
            found[(("node", node["metadata"]["name"]), ("node_group", group))] = value
        return found

    def exhausted_metric() -> dict[tuple[tuple[str, str], ...], float]:
        return samples(get(f"{base}/metrics")[1], "fitguard_branch_eni_node_exhausted")

    # the informer's view of the label catches up with the API's: every node, 1 where labelled
    wait_for(lambda: exhausted_metric() == exhausted_in_api(), "the exhausted gauge")
    assert sorted(exhausted_in_api().values()) == [0.0, 0.0, 0.0, 0.0]  # no node is exhausted here
