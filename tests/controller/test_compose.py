"""The controller's composition root (controller/compose.py): one process builds its AWS clients
once, in the region `--region` names, with the one retry policy, and every cycle, the scaling driver
and the EC2 verifier use those same clients; the long-running loop's discovery cycle reads list+watch
caches rather than listing nodes, DaemonSets and templates again. The real kube client against the
fake API server, boto3 against moto in server mode."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.loop import ControllerLoop
from controller.run import ControllerOptions
from controller.scaling_options import ScalingOptions
from controller.settings import LoopOptions, ServingOptions
from fitguard.demo_seed import seed_moto
from kube.client import as_kube_client
from kube.statefile import load_state
from tests.waiting import eventually as wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NAMESPACE = "fitguard-system"


@pytest.fixture
def cluster(fake_kube: Any, aws: Any) -> Any:
    """The demo cluster: its nodes, DaemonSets and VPC CNI ConfigMap in the API, its ASGs in moto."""
    seed_moto(EXAMPLES / "aws-seed.yaml")
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for obj in load_state(EXAMPLES / "cluster.yaml"):
        if obj["kind"] in ("Node", "DaemonSet", "ConfigMap", "Namespace"):
            fake_kube.apply(obj)
    return fake_kube


def started_loop(cluster: Any, controller: ControllerOptions) -> ControllerLoop:
    """A leading controller with scaling (plan) and EC2 verification, its books synced; cycles are
    run by the test itself."""
    options = LoopOptions(
        discovery=controller,
        serving=ServingOptions(bind="127.0.0.1:0"),
        scaling=ScalingOptions(mode="plan"),
        verify_with_ec2=True,
    )
    loop = ControllerLoop(options, as_kube_client(cluster.api_client()))
    loop.cache.start(loop.api)
    assert loop.cache.wait_synced(60), "the cache's first lists completed"
    return loop


@pytest.fixture
def loops() -> Iterator[list[ControllerLoop]]:
    made: list[ControllerLoop] = []
    yield made
    for loop in made:
        loop.cache.stop()


@pytest.mark.slow
def test_one_set_of_aws_clients_per_process_in_the_region_given(cluster: Any, loops: list[Any]) -> None:
    """With --region us-west-2 while the environment says us-east-1, every AWS client of the process
    is in us-west-2 and retries in standard mode with 5 attempts; the scaling driver and the EC2
    verifier hold those same clients, and two cycles later they are still the same objects."""
    loop = started_loop(cluster, ControllerOptions(cluster_name="demo", region="us-west-2"))
    loops.append(loop)
    clients = loop.clients
    assert (
        loop.scaling is not None
        and loop.scaling.asgs is not None
        and loop.scaling.asgs.client is clients.autoscaling
    )
    assert loop.verifier is not None and loop.verifier.ec2 is clients.ec2
    for client in (clients.autoscaling, clients.ec2, clients.eks):
        assert client.meta.region_name == "us-west-2"
        assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 5}
    loop.cycle()
    loop.cycle()
    assert loop.clients is clients
    assert loop.scaling.asgs is not None and loop.scaling.asgs.client is clients.autoscaling


TEMPLATES = "/apis/fitguard.io/v1alpha1/nodegrouptemplates"
LISTS = (
    "/api/v1/nodes",
    "/apis/apps/v1/daemonsets",
    "/apis/fitguard.io/v1alpha1/nodegrouptemplates",
)


def lists(cluster: Any) -> list[str]:
    """The initial-state reads of nodes, DaemonSets and NodeGroupTemplates received: lists, or
    streamed lists (watches with sendInitialEvents), not the watches that follow them."""
    return [
        r.path
        for r in cluster.requests.find(method="GET")
        if r.path in LISTS and (not r.watch or r.query.get("sendInitialEvents") == "true")
    ]


@pytest.mark.slow
def test_a_discovery_cycle_reads_the_watched_caches_and_lists_nothing_again(
    cluster: Any, loops: list[Any]
) -> None:
    """After the watches' first lists, neither the first nor the second cycle lists nodes,
    DaemonSets or NodeGroupTemplates: both read the caches. The second cycle still sees what the
    first published (its templates come back unchanged, none created again) and a DaemonSet
    created between the cycles (the watch brought it)."""
    loop = started_loop(cluster, ControllerOptions(cluster_name="demo"))
    loops.append(loop)
    assert sorted(lists(cluster)) == sorted(LISTS), "each cache listed once, at start"
    cluster.requests.clear()
    first = loop.cycle()
    assert first.discovery_error == "" and lists(cluster) == []
    names = sorted(o["metadata"]["name"] for o in cluster.objects("NodeGroupTemplate"))
    assert names == ["ng-batch", "ng-burst", "ng-general"]
    wait_for(lambda: len(loop.cache.templates) == 3, "the template watch saw the three published")
    daemonset = copy.deepcopy(next(d for d in cluster.objects("DaemonSet")))
    daemonset["metadata"] = {"name": "extra-agent", "namespace": daemonset["metadata"]["namespace"]}
    cluster.create(daemonset)
    wait_for(lambda: len(loop.cache.daemonsets) == len(cluster.objects("DaemonSet")), "the watch saw it")
    cluster.requests.clear()
    second = loop.cycle()
    assert second.discovery_error == "" and lists(cluster) == []
    assert cluster.requests.find(method="POST", path="/nodegrouptemplates") == []
    assert [o["metadata"]["name"] for o in second.node_groups] == names
    overhead = {o["metadata"]["name"]: o["spec"]["daemonSetOverhead"] for o in second.node_groups}
    before = {o["metadata"]["name"]: o["spec"]["daemonSetOverhead"] for o in first.node_groups}
    assert overhead != before, "the DaemonSet created between the cycles counts in the second"


@pytest.mark.slow
def test_a_second_identical_cycle_writes_no_template_and_no_status(cluster: Any, loops: list[Any]) -> None:
    """The first cycle creates the three templates and PATCHes each one's status; once the watch
    has brought them back, an identical second cycle writes nothing: no POST, PUT or PATCH of a
    NodeGroupTemplate or its status."""
    loop = started_loop(cluster, ControllerOptions(cluster_name="demo"))
    loops.append(loop)
    cluster.requests.clear()
    loop.cycle()
    patches = [r.path for r in cluster.requests.find(method="PATCH", path="/nodegrouptemplates/")]
    names = ("ng-batch", "ng-burst", "ng-general")
    assert sorted(patches) == [f"{TEMPLATES}/{name}/status" for name in names]

    def statuses(objects: list[dict[str, Any]]) -> list[str]:
        return sorted(str((t.get("status") or {}).get("lastDiscoveryTime")) for t in objects)

    wait_for(
        lambda: statuses(loop.cache.templates.items()) == statuses(cluster.objects("NodeGroupTemplate")),
        "the template watch brought the statuses back",
    )
    cluster.requests.clear()
    second = loop.cycle()
    assert second.discovery_error == ""
    writes = [
        (r.method, r.path)
        for r in cluster.requests.find(path="/nodegrouptemplates")
        if r.method in ("POST", "PUT", "PATCH", "DELETE")
    ]
    assert writes == []
