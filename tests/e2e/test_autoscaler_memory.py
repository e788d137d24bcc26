"""cluster-autoscaler's memory end to end: `fitguard controller --once -o json` against the fake API
server (the real kubernetes client) and moto (boto3 over HTTP) records on each NodeGroupTemplate
whether the running cluster-autoscaler (a pod object: its start, its flags) remembers the group's
last live node; `POST /validate` on a real gunicorn over TLS then admits with a warning a pod only
that memory serves, and denies it once cluster-autoscaler restarted or forgot; and judges the
remembered node with the pods cluster-autoscaler cached with it (its DaemonSet and mirror pods and
the missing DaemonSets it adds), not with every DaemonSet."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from capacity.autoscaler_memory import format_time, parse_time
from capacity.names import MANAGED_BY_LABEL, TEMPLATE_MANAGER
from capacity.template import AutoscalerMemory, NodeGroupTemplate, View
from controller.aws.clients import AwsClients
from fitguard.cli import main as fitguard_main
from tests.awsfixtures import AwsEnvironment
from tests.controller.test_discovery_aws import ENABLED, asg, launch_template
from tests.fakekube.server import FakeKubeServer
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import Server, admission_review, post, running

pytestmark = pytest.mark.slow

NGT_API = "fitguard.io/v1alpha1"
CHART_LABELS = {"app.kubernetes.io/name": "aws-cluster-autoscaler", "app.kubernetes.io/instance": "ca"}
EPH_TAG = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
WARNINGS = [
    "pod fits only the node cluster-autoscaler remembers of ng-batch: "
    "it scales up for it only until it restarts",
    f"to make it permanent, tag the ASG of ng-batch {EPH_TAG}",
    "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
]
FIX = (
    "ng-batch: Insufficient ephemeral-storage: requests 30Gi; an m5.large node would offer 44Gi, but "
    "cluster-autoscaler sees none while the group has 0 nodes: tag the ASG "
    f"{EPH_TAG}, or let fitguard sync the tags"
)
WATCH_SECONDS = 10.0  # bounds the wait for a template change to reach the webhook's cache
LIVE_ALLOCATABLE = {"cpu": "1930m", "memory": "7220Mi", "ephemeral-storage": "44Gi", "pods": "29"}
LIVE_LABELS = {"eks.amazonaws.com/nodegroup": "ng-batch", "node.kubernetes.io/instance-type": "m5.large"}
# The node as cluster-autoscaler caches it: every label but the hostname, and its template marker.
CACHED_LABELS = {**LIVE_LABELS, "cluster-autoscaler.kubernetes.io/template-node": "true"}
# The pods cluster-autoscaler caches with it: the node runs none, and no DaemonSet exists.
NO_PODS = {"nodePods": {"pods": "0"}, "runningDaemonSets": [], "overhead": {"pods": "0"}}


def ca_pod(started: float, labels: dict[str, str] | None = None, *flags: str) -> dict[str, Any]:
    """cluster-autoscaler as the Helm chart deploys it, its container started at `started`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": "kube-system",
            "name": "ca-aws-cluster-autoscaler-7d9f",
            "labels": labels or CHART_LABELS,
        },
        "spec": {
            "containers": [
                {
                    "name": "aws-cluster-autoscaler",
                    "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.0",
                    "command": [
                        "./cluster-autoscaler",
                        "--cloud-provider=aws",
                        "--namespace=kube-system",
                        *flags,
                    ],
                }
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": format_time(started),
            "containerStatuses": [
                {
                    "name": "aws-cluster-autoscaler",
                    "ready": True,
                    "state": {"running": {"startedAt": format_time(started)}},
                }
            ],
        },
    }


def live_node(ready_since: float) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "ip-10-0-1-1.ec2.internal",
            "labels": {**LIVE_LABELS, "kubernetes.io/hostname": "ip-10-0-1-1"},
        },
        "spec": {"providerID": "aws:///us-east-1a/i-0123456789abcdef0"},
        "status": {
            "allocatable": LIVE_ALLOCATABLE,
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": format_time(ready_since)}
            ],
        },
    }


def scratch() -> dict[str, Any]:
    """A pod asking 30Gi of scratch space: only ng-batch's real node (44Gi) has it; its tags none."""
    requests = {"cpu": "100m", "ephemeral-storage": "30Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "scratch", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}]},
    }


@pytest.fixture
def batch_asg(aws: AwsEnvironment) -> None:
    """ng-batch: an m5.large ASG at zero, 50 GiB root volume, no ephemeral-storage tag."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", ENABLED)


@pytest.fixture
def kubeconfig(fake_kube: FakeKubeServer, tmp_path: Path) -> Path:
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def webhook(kubeconfig: Path, tls_files: TlsFiles, tmp_path: Path) -> Iterator[Any]:
    """webhook(): a ready webhook (one worker) reading the fake API server."""
    with ExitStack() as stack:

        def started() -> Server:
            options = ["--kubeconfig", str(kubeconfig)]
            return stack.enter_context(running(tls_files, options, workers=1, metrics_dir=tmp_path / "m"))

        yield started


def controller_report(kubeconfig: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    """`fitguard controller --once -o json` against the fake API server: the whole report."""
    capsys.readouterr()
    argv = ["controller", "--once", "-o", "json", "--kubeconfig", str(kubeconfig), *flags]
    code = fitguard_main(argv, only="controller")
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["errors"]
    return report


def controller_once(kubeconfig: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, Any]:
    """Each group's spec, by name, from one `--once` cycle."""
    return {
        o["metadata"]["name"]: o["spec"] for o in controller_report(kubeconfig, capsys, *flags)["nodeGroups"]
    }


def pending_scratch() -> dict[str, Any]:
    """The scratch pod, created and found unschedulable: the scaling demand's input."""
    pod = scratch()
    pod["metadata"]["name"] = "scratch-pending"
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    return pod


def validate(server: Server, obj: dict[str, Any]) -> dict[str, Any]:
    conn = server.connect()
    status, body = post(conn, admission_review(obj, "m-1"), "/validate")
    conn.close()
    assert status == 200
    return body["response"]


def until_allowed(server: Server, obj: dict[str, Any], allowed: bool) -> dict[str, Any]:
    """Asks again until the answer turns (the watch carries the template change)."""
    deadline = time.monotonic() + WATCH_SECONDS
    response = validate(server, obj)
    while response["allowed"] is not allowed and time.monotonic() < deadline:
        time.sleep(0.05)
        response = validate(server, obj)
    assert response["allowed"] is allowed, f"the change did not reach the webhook within {WATCH_SECONDS} s"
    return response


def remembered(seen: str, started: float, reason: str) -> dict[str, Any]:
    """The whole autoscalerMemory field of ng-batch, remembering the live node seen at `seen`."""
    expires = format_time(parse_time(seen) + 87600 * 3600)
    return {
        "remembers": True,
        "reason": reason.format(seen=seen, started=format_time(started), expires=expires),
        "allocatable": LIVE_ALLOCATABLE,
        "labels": CACHED_LABELS,
        "taints": [],
        "lastSeen": seen,
        "autoscaler": "kube-system/ca-aws-cluster-autoscaler-7d9f",
        "started": format_time(started),
        "expires": expires,
        **NO_PODS,
    }


REMEMBERS = (
    "cluster-autoscaler kube-system/ca-aws-cluster-autoscaler-7d9f (started {started}) saw a live node of "
    "the group at {seen} and builds the group's next node from it until it restarts or until {expires}"
)


@pytest.mark.usefixtures("batch_asg")
def test_remembered_group_admits_with_a_warning_until_cluster_autoscaler_restarts(
    fake_kube: FakeKubeServer, kubeconfig: Path, webhook: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """cluster-autoscaler started two hours ago; fitguard sees ng-batch's live node, then the node
    goes: the template says cluster-autoscaler remembers it, and the 30Gi pod is admitted with the
    warning naming the tag, and the same pod pending is cluster-autoscaler's to scale for, not
    fitguard's blind demand. The pod restarts (a newer start): the template says it forgot, the
    pending pod is blind demand, and the pod is denied with the tag fix."""
    now = time.time()
    fake_kube.create(ca_pod(now - 7200))
    fake_kube.create(live_node(now - 3600))
    before = time.time()
    live = controller_once(kubeconfig, capsys)["ng-batch"]
    seen = live["autoscalerMemory"]["lastSeen"]
    assert format_time(before) <= seen <= format_time(time.time())
    assert live["nodes"] == 1
    assert live["autoscalerMemory"] == remembered(seen, now - 7200, REMEMBERS)

    fake_kube.delete("Node", "ip-10-0-1-1.ec2.internal")
    fake_kube.create(pending_scratch())
    report = controller_report(kubeconfig, capsys)
    gone = report["nodeGroups"][0]["spec"]
    assert (report["scaling"]["demandPods"], report["scaling"]["notDemand"]) == (
        0,
        [
            {
                "pods": ["default/scratch-pending"],
                "why": "cluster-autoscaler can serve it with a node of ng-batch",
            }
        ],
    )
    assert gone["nodes"] == 0 and gone["actual"]["source"] == "launch-template"
    assert gone["autoscalerMemory"] == live["autoscalerMemory"]
    stored = fake_kube.get("NodeGroupTemplate", "ng-batch", api_version=NGT_API)
    assert stored["spec"]["autoscalerMemory"] == live["autoscalerMemory"]

    server = webhook()
    admitted = validate(server, scratch())
    assert admitted["allowed"] is True and "status" not in admitted
    assert admitted["warnings"] == WARNINGS

    restarted = time.time()
    fake_kube.apply(ca_pod(restarted))
    report = controller_report(kubeconfig, capsys)
    assert (report["scaling"]["demandPods"], report["scaling"]["notDemand"]) == (1, [])
    forgot = report["nodeGroups"][0]["spec"]["autoscalerMemory"]
    assert forgot == {
        "remembers": False,
        "reason": (
            f"cluster-autoscaler kube-system/ca-aws-cluster-autoscaler-7d9f started at "
            f"{format_time(restarted)}; its first loop may not have run before "
            # the pod's start time is stored in whole seconds: the bound counts from that second
            f"{format_time(math.floor(restarted) + 89.4)}, too late to be sure it saw the group's last live"
            " node "
            f"(seen {seen}): it builds the group's node from its tags"
        ),
        "allocatable": LIVE_ALLOCATABLE,
        "labels": CACHED_LABELS,
        "taints": [],
        "lastSeen": seen,
        "autoscaler": "kube-system/ca-aws-cluster-autoscaler-7d9f",
        "started": format_time(restarted),
        **NO_PODS,
    }
    denied = until_allowed(server, scratch(), False)
    assert FIX in denied["status"]["message"].splitlines()
    assert "note:" not in denied["status"]["message"]


@pytest.mark.usefixtures("batch_asg")
def test_without_a_cluster_autoscaler_found_the_group_is_judged_by_its_tags(
    fake_kube: FakeKubeServer, kubeconfig: Path, webhook: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """cluster-autoscaler deployed without the chart's labels: by default none is found, the
    sighting of the live node is still recorded, the group at zero is judged by its tags and the pod
    denied. With --autoscaler-selector and --autoscaler-namespace naming its pods, the recorded
    sighting makes it remembered."""
    now = time.time()
    fake_kube.create(ca_pod(now - 7200, {"app": "cluster-autoscaler"}))
    fake_kube.create(live_node(now - 3600))
    seen = controller_once(kubeconfig, capsys)["ng-batch"]["autoscalerMemory"]["lastSeen"]
    fake_kube.delete("Node", "ip-10-0-1-1.ec2.internal")
    unknown = controller_once(kubeconfig, capsys)["ng-batch"]["autoscalerMemory"]
    assert unknown == {
        "remembers": False,
        "reason": (
            "no running cluster-autoscaler found (pods app.kubernetes.io/name=aws-cluster-autoscaler in all "
            "namespaces): judged by its tags"
        ),
        "allocatable": LIVE_ALLOCATABLE,
        "labels": CACHED_LABELS,
        "taints": [],
        "lastSeen": seen,
        **NO_PODS,
    }
    server = webhook()
    denied = validate(server, scratch())
    assert denied["allowed"] is False and FIX in denied["status"]["message"].splitlines()

    flags = ("--autoscaler-selector=app=cluster-autoscaler", "--autoscaler-namespace=kube-system")
    found = controller_once(kubeconfig, capsys, *flags)["ng-batch"]["autoscalerMemory"]
    assert found == remembered(seen, now - 7200, REMEMBERS)
    admitted = until_allowed(server, scratch(), True)
    assert admitted["warnings"] == WARNINGS
    elsewhere = ("--autoscaler-selector=app=cluster-autoscaler", "--autoscaler-namespace=default")
    assert not controller_once(kubeconfig, capsys, *elsewhere)["ng-batch"]["autoscalerMemory"]["remembers"]


def recorded(name: str, last_seen: float) -> dict[str, Any]:
    """A NodeGroupTemplate as an earlier controller (another leader) left it: the group at zero and
    its memory record of a live node seen at `last_seen`."""
    view = View(
        {"cpu": 1930, "memory": 7220 * 2**20 * 1000, "ephemeral-storage": 44 * 2**30 * 1000, "pods": 29000},
        dict(LIVE_LABELS),
    )
    memory = AutoscalerMemory(True, "recorded before", view, format_time(last_seen), "kube-system/old")
    obj = NodeGroupTemplate(name, "aws-asg", ("m5.large",), 0, 10, 0, memory=memory).to_object()
    obj["metadata"]["labels"] = {MANAGED_BY_LABEL: TEMPLATE_MANAGER}
    return obj


def test_the_memory_record_survives_the_controller_and_expires_with_the_flag(
    aws: AwsEnvironment, fake_kube: FakeKubeServer, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two groups at zero whose live nodes only an earlier controller saw (the record is read back
    from the objects): with --node-info-cache-expire-time=90m, the one last seen two hours ago is
    forgotten (with when), the one seen an hour ago is still remembered. When cluster-autoscaler's
    pods cannot be listed (403), none is remembered, and the reason says so."""
    clients = AwsClients.from_environment()
    for name in ("ng-old", "ng-recent"):
        launch_template(clients.ec2, name, "m5.large", 50)
        asg(clients.autoscaling, name, ENABLED)
    now = time.time()
    started = now - 3 * 3600
    fake_kube.create(ca_pod(started, None, "--node-info-cache-expire-time=90m"))
    fake_kube.create(recorded("ng-old", now - 7200))
    fake_kube.create(recorded("ng-recent", now - 3600))
    groups = controller_once(kubeconfig, capsys)
    old, recent = groups["ng-old"]["autoscalerMemory"], groups["ng-recent"]["autoscalerMemory"]
    old_seen, recent_seen = format_time(now - 7200), format_time(now - 3600)
    old_expired = format_time(parse_time(old_seen) + 5400)
    assert (old["remembers"], old["lastSeen"], old["expires"], old["reason"]) == (
        False,
        old_seen,
        old_expired,
        f"cluster-autoscaler forgot the group's last live node (seen {old_seen}) at {old_expired} "
        "(--node-info-cache-expire-time=90m): it builds the group's node from its tags",
    )
    assert (recent["remembers"], recent["lastSeen"], recent["expires"]) == (
        True,
        recent_seen,
        format_time(parse_time(recent_seen) + 5400),
    )
    stored = fake_kube.get("NodeGroupTemplate", "ng-recent", api_version=NGT_API)
    assert stored["spec"]["autoscalerMemory"] == recent

    fake_kube.faults.fail(403, path="/api/v1/namespaces/kube-system/pods")
    unreadable = controller_once(kubeconfig, capsys, "--autoscaler-namespace=kube-system")["ng-recent"]
    memory = unreadable["autoscalerMemory"]
    assert memory["remembers"] is False and "autoscaler" not in memory
    assert memory["reason"].startswith(
        "no running cluster-autoscaler found (pods app.kubernetes.io/name=aws-cluster-autoscaler in "
        "namespace kube-system: unreadable ("
    )


# The pods on cluster-autoscaler's remembered template (capacity/fresh_node.py).
DS_NODE = "ip-10-0-1-1.ec2.internal"


def daemonset(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"namespace": "kube-system", "name": name, "uid": f"uid-{name}"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": name, "image": "i", "resources": {"requests": {"cpu": cpu}}}],
                    **spec,
                },
            },
        },
    }


def node_pod(name: str, cpu: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "kube-system", "name": name, **meta},
        "spec": {
            "nodeName": DS_NODE,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def busy(cpu: str) -> dict[str, Any]:
    """The scratch pod (30Gi: only the real node has it) asking `cpu` too."""
    pod = scratch()
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return pod


@pytest.mark.usefixtures("batch_asg")
def test_the_remembered_node_is_judged_with_the_pods_cluster_autoscaler_cached_with_it(
    fake_kube: FakeKubeServer, kubeconfig: Path, webhook: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """ng-batch's live node (1930m) runs fluent-bit (500m) and kube-proxy's mirror pod (100m);
    ebs-csi-node (300m, system-node-critical) and node-exporter (400m) run no pod there. The record:
    the node's 600m in two pods, fluent-bit running, and 900m in three pods on the template (no
    --force-ds: node-exporter not added), where the group's DaemonSet overhead is 1200m. The node
    gone, a pod asking 1000m is admitted (1030m left), with the warning that only the memory serves
    it; one asking 1100m is not."""
    now = time.time()
    fake_kube.create(ca_pod(now - 7200))
    fake_kube.create(live_node(now - 3600))
    for ds in (
        daemonset("fluent-bit", "500m"),
        daemonset("ebs-csi-node", "300m", priorityClassName="system-node-critical"),
        daemonset("node-exporter", "400m"),
    ):
        fake_kube.create(ds)
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "fluent-bit", "uid": "uid-fluent-bit"}
    fake_kube.create(node_pod("fluent-bit-x1", "500m", ownerReferences=[{**owner, "controller": True}]))
    fake_kube.create(
        node_pod("kube-proxy-ip-10-0-1-1", "100m", annotations={"kubernetes.io/config.mirror": "m"})
    )

    live = controller_once(kubeconfig, capsys)["ng-batch"]
    record = {k: live["autoscalerMemory"][k] for k in ("nodePods", "runningDaemonSets", "overhead")}
    assert record == {
        "nodePods": {"cpu": "600m", "pods": "2"},
        "runningDaemonSets": [{"namespace": "kube-system", "name": "fluent-bit", "uid": "uid-fluent-bit"}],
        "overhead": {"cpu": "900m", "pods": "3"},
    }
    assert live["daemonSetOverhead"] == {"cpu": "1200m", "pods": "3"}

    fake_kube.delete("Node", DS_NODE)
    gone = controller_once(kubeconfig, capsys)["ng-batch"]
    assert gone["nodes"] == 0 and gone["autoscalerMemory"] == live["autoscalerMemory"]
    stored = fake_kube.get("NodeGroupTemplate", "ng-batch", api_version=NGT_API)
    assert stored["spec"]["autoscalerMemory"] == live["autoscalerMemory"]

    server = webhook()
    admitted = validate(server, busy("1000m"))
    # the tag-built node (2 cpu less kube-proxy and all three DaemonSets) lacks the cpu too
    tags = "k8s.io/cluster-autoscaler/node-template/resources/"
    fix = f"to make it permanent, tag the ASG of ng-batch {tags}cpu, {tags}ephemeral-storage"
    assert admitted["allowed"] is True and admitted["warnings"] == [WARNINGS[0], fix, WARNINGS[2]]
    assert validate(server, busy("1100m"))["allowed"] is False
