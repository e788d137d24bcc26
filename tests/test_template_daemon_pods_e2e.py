"""The pods on cluster-autoscaler's remembered template end to end: `fitguard controller --once`
against the fake API server (the real kubernetes client) and moto records, from the group's live
node, its DaemonSet and mirror pods and the missing system-node-critical DaemonSet cluster-autoscaler
adds (spec.autoscalerMemory, through the CRD's schema); once the node is gone, `POST /validate` on a
real gunicorn over TLS judges the remembered node with that overhead, not with every DaemonSet."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakekube.server import FakeKubeServer
from tests.test_autoscaler_memory_e2e import (  # noqa: F401 (fixtures)
    NGT_API,
    WARNINGS,
    batch_asg,
    ca_pod,
    controller_once,
    kubeconfig,
    live_node,
    scratch,
    validate,
    webhook,
)

pytestmark = pytest.mark.slow
NODE = "ip-10-0-1-1.ec2.internal"


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
            "nodeName": NODE,
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

    fake_kube.delete("Node", NODE)
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
