"""The exhausted-node guard end to end: the long-running controller (controller/loop.py) with the real
kube client against the fake API server and boto3 against moto in server mode. A group of two nodes
full of running pods gets no label; with branch ENIs held on both, both are labelled; a guarded pod
then pending on the group makes the guard step aside after the grace (labels lifted, events on the
pod and the nodes, reason in /snapshotz, metrics), or, with `--scaling=on`, fitguard raises the
ASG's desired capacity and the labels stay. At each settled point, cluster-autoscaler's template
(tests/autoscaler_template.py) still fits the pod wherever it would have without fitguard."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from capacity.resources import POD_ENI
from controller.loop import ControllerLoop
from controller.run import ControllerOptions
from controller.scaling import ON, PLAN, ScalingOptions
from controller.settings import BooksOptions, LoopOptions, ServingOptions
from fitguard.cli import build_parser
from kube.client import as_kube_client
from tests import autoscaler_template, objects
from tests.awsfixtures import AwsEnvironment
from tests.objects import rfc3339
from tests.waiting import eventually as wait_until

GROUP = "ng-sg"
DEADLINE = 90.0  # only bounds a hang: discovery against moto on a loaded machine takes seconds a cycle
NODES = ("ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal")
GRACE = 0.3
LIFTED = "BranchENIGuardSteppedAside"
GUARD = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": autoscaler_template.EXHAUSTED_LABEL, "operator": "DoesNotExist"}
                    ]
                }
            ]
        }
    }
}
AFFINITY_MESSAGE = (
    "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
)
GUARDED_SPEC: dict[str, Any] = {
    "containers": [
        {"name": "main", "image": "app", "resources": {"requests": {"cpu": "100m"}, "limits": {POD_ENI: "1"}}}
    ],
    "affinity": GUARD,
}


def node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "1930m", "memory": "7220Mi", "pods": "29", POD_ENI: "2"}
    hostname = {"kubernetes.io/hostname": name}
    return objects.node(name, allocatable, group=GROUP, instance_type="m5.large", labels=hostname)


def bound_pod(name: str, on: str, *, finished: bool = False) -> dict[str, Any]:
    """A pod-eni pod on a node holding its branch ENI: running, or finished a moment ago (held)."""
    status: dict[str, Any] = {"phase": "Running"}
    if finished:
        status = {
            "phase": "Succeeded",
            "containerStatuses": [
                {"name": "main", "state": {"terminated": {"exitCode": 0, "finishedAt": rfc3339(time.time())}}}
            ],
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "apps",
            "annotations": {POD_ENI: json.dumps([{"eniId": f"eni-{name}"}])},
        },
        "spec": {**GUARDED_SPEC, "nodeName": on},
        "status": status,
    }


def pending_pod(name: str = "web-new") -> dict[str, Any]:
    """A guarded pod-eni pod the scheduler refused for node affinity (fitguard's label)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}"},
        "spec": GUARDED_SPEC,
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": AFFINITY_MESSAGE,
                }
            ],
        },
    }


def labelled(fake_kube: Any) -> dict[str, bool]:
    return {
        name: autoscaler_template.EXHAUSTED_LABEL
        in (fake_kube.get("Node", name)["metadata"].get("labels") or {})
        for name in NODES
    }


def events(fake_kube: Any, reason: str) -> list[dict[str, Any]]:
    return [
        e for e in fake_kube.objects("Event", api_version="events.k8s.io/v1") if e.get("reason") == reason
    ]


def http_get(url: str) -> str:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return response.read().decode()


def not_blinded(fake_kube: Any) -> bool:
    """cluster-autoscaler, templating the group on any ready node of it, sees the pending guarded
    pods fit wherever it would without fitguard."""
    specs = [p["spec"] for p in fake_kube.objects("Pod") if not p["spec"].get("nodeName")]
    return autoscaler_template.blinded(fake_kube.objects("Node"), GROUP, specs) == []


def make_asg(aws: AwsEnvironment) -> None:
    """The group in AWS: a self-managed ASG of two m5.large, discoverable by cluster-autoscaler's tags."""
    aws.client("ec2").create_launch_template(
        LaunchTemplateName=f"{GROUP}-lt",
        LaunchTemplateData={"InstanceType": "m5.large", "ImageId": "ami-12c6146b"},
    )
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=GROUP,
        LaunchTemplate={"LaunchTemplateName": f"{GROUP}-lt", "Version": "$Latest"},
        MinSize=0,
        MaxSize=10,
        DesiredCapacity=2,
        AvailabilityZones=["us-east-1a"],
        Tags=[
            {"Key": "k8s.io/cluster-autoscaler/enabled", "Value": "true", "PropagateAtLaunch": False},
            {"Key": "k8s.io/cluster-autoscaler/guard", "Value": "owned", "PropagateAtLaunch": False},
        ],
    )


def desired(aws: AwsEnvironment) -> int:
    groups = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])
    return int(groups["AutoScalingGroups"][0]["DesiredCapacity"])


class Running:
    def __init__(self, fake_kube: Any, mode: str) -> None:
        options = LoopOptions(
            discovery=ControllerOptions(cluster_name="guard"),
            interval=0.3,
            books=BooksOptions(reconcile_interval=0.05, guard_grace=GRACE),
            serving=ServingOptions(bind="127.0.0.1:0", snapshotz=True),
            scaling=ScalingOptions(mode=mode),
        )
        self.loop = ControllerLoop(options, as_kube_client(fake_kube.api_client()))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def passes(self, count: int = 2) -> None:
        """Waits until the guard has decided `count` more times (what it saw is then current)."""
        for _ in range(count):
            seen = self.loop.reconciler.guard
            eventually(lambda seen=seen: self.loop.reconciler.guard is not seen, "another pass of the guard")

    def snapshot(self) -> dict[str, Any]:
        return json.loads(http_get(f"http://127.0.0.1:{self.loop.http.port}/snapshotz"))

    def metrics(self) -> str:
        return http_get(f"http://127.0.0.1:{self.loop.http.port}/metrics")


@pytest.fixture
def group(fake_kube: Any, aws: AwsEnvironment) -> Any:
    make_asg(aws)
    # a long cooldown, so that the ENIs of the pods that finish stay held however slow the machine
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
    }
    fake_kube.create({**config, "data": {"branch-eni-cooldown": "900"}})
    for name in NODES:
        fake_kube.create(node(name))
    return fake_kube


@pytest.fixture
def controller(group: Any, request: pytest.FixtureRequest) -> Iterator[Running]:
    running = Running(group, getattr(request, "param", PLAN))
    yield running
    running.stop.set()
    running.thread.join(timeout=30)  # before moto's environment goes, so no cycle outlives the test


def fill(fake_kube: Any, *, held: bool) -> None:
    """Both branch ENIs of each node taken: two running pods, or one running and one just finished."""
    for i, name in enumerate(NODES):
        fake_kube.create(bound_pod(f"web-{i}a", name))
        fake_kube.create(bound_pod(f"web-{i}b", name, finished=held))


@pytest.mark.slow
def test_a_group_full_of_running_pods_gets_no_label(group: Any, controller: Running) -> None:
    """Running pods are the scheduler's own count: the label adds nothing, so none is written, and
    cluster-autoscaler's template from either node fits the new guarded pod."""
    fill(group, held=False)
    group.create(pending_pod())
    eventually(lambda: controller.loop.cache.pods.get("apps", "web-new") is not None, "the pending pod seen")
    controller.passes()
    assert labelled(group) == {NODES[0]: False, NODES[1]: False}
    assert group.requests.find("PATCH", f"/nodes/{NODES[0]}") == []
    assert group.requests.find("PATCH", f"/nodes/{NODES[1]}") == []
    assert controller.snapshot()["guard"]["nodes"] == {
        name: {
            "labelled": False,
            "reason": "all 2 branch ENIs in use by running pods: the scheduler counts them",
        }
        for name in NODES
    }
    assert not_blinded(group)


@pytest.mark.slow
def test_held_enis_label_both_nodes_then_the_guard_steps_aside(group: Any, controller: Running) -> None:
    """Held on both nodes: both labelled. A guarded pod pends on the group: after the grace the
    labels are lifted from both nodes, with events on the pod and the nodes, the group's state in
    /snapshotz and the metrics; cluster-autoscaler's template fits the pod again."""
    fill(group, held=True)
    eventually(lambda: labelled(group) == {NODES[0]: True, NODES[1]: True}, "both nodes labelled")
    # the gauge counts the controller's node store, which sees its own label writes by the watch: later
    labelled_two = 'fitguard_branch_eni_guard_labelled_nodes{node_group="ng-sg"} 2.0'
    eventually(lambda: labelled_two in controller.metrics(), "the gauge counts both")

    group.create(pending_pod())
    lifted = eventually(lambda: events(group, LIFTED), "the guard stepping aside")
    eventually(lambda: len(events(group, LIFTED)) == 3, "events on the pod and both nodes")
    regarding = sorted((e["regarding"]["kind"], e["regarding"]["name"]) for e in events(group, LIFTED))
    assert regarding == [("Node", NODES[0]), ("Node", NODES[1]), ("Pod", "web-new")]
    note = lifted[0]["note"]
    assert "the guard steps aside" in note and "cluster-autoscaler" in note and "--scaling=on" in note
    eventually(lambda: labelled(group) == {NODES[0]: False, NODES[1]: False}, "labels lifted")
    controller.passes()
    assert labelled(group) == {NODES[0]: False, NODES[1]: False}  # and they stay lifted
    assert not_blinded(group)

    guard = controller.snapshot()["guard"]
    assert guard["graceSeconds"] == GRACE
    assert {k: v for k, v in guard["groups"][GROUP].items() if k != "since"} == {
        "state": "lifted",
        "reason": note,
        "nodes": list(NODES),
        "pods": ["apps/web-new"],
    }
    metrics = controller.metrics()
    assert 'fitguard_branch_eni_guard_lifted_groups{node_group="ng-sg"} 1.0' in metrics
    assert 'fitguard_branch_eni_guard_lifts_total{node_group="ng-sg"} 1.0' in metrics
    eventually(
        lambda: 'fitguard_branch_eni_guard_labelled_nodes{node_group="ng-sg"} 0.0' in controller.metrics(),
        "the lifted labels seen by the watch",
    )

    # the pod leaves (bound elsewhere, or deleted): the labels come back under the normal rule
    group.delete("Pod", "web-new", "apps")
    eventually(lambda: labelled(group) == {NODES[0]: True, NODES[1]: True}, "labels back")
    restored = eventually(lambda: events(group, "BranchENIGuardRestored"), "the guard's return told")
    eventually(lambda: len(events(group, "BranchENIGuardRestored")) == 2, "on both nodes")
    assert restored[0]["note"].startswith(f"the exhausted-node guard applies again to {GROUP}: ")


@pytest.mark.slow
@pytest.mark.parametrize("controller", [ON], indirect=True)
def test_with_scaling_on_fitguard_scales_the_group_and_keeps_the_labels(
    group: Any, controller: Running, aws: AwsEnvironment
) -> None:
    """`--scaling=on` covers the group: the guarded pod is blind demand, the ASG grows by one and
    both labels stay (the new node, once it joins, has free branch ENIs)."""
    fill(group, held=True)
    eventually(lambda: labelled(group) == {NODES[0]: True, NODES[1]: True}, "both nodes labelled")
    group.create(pending_pod())
    eventually(lambda: desired(aws) == 3, "the ASG raised by one")
    controller.passes()
    assert labelled(group) == {NODES[0]: True, NODES[1]: True}
    assert events(group, LIFTED) == []
    # cluster-autoscaler's template of the group still carries the label: fitguard scaled instead
    assert not not_blinded(group)
    assert controller.snapshot()["guard"]["groups"][GROUP]["state"] == "scaling"
    assert [e["regarding"]["name"] for e in events(group, "TriggeredScaleUp")] == ["web-new"]


def test_guard_grace_is_a_controller_flag_with_a_duration() -> None:
    """`fitguard controller --guard-grace`: 30 s by default, Go-style durations, refused otherwise."""
    parser = build_parser("controller")
    assert parser.parse_args(["controller"]).guard_grace == 30.0
    assert parser.parse_args(["controller", "--guard-grace", "1m30s"]).guard_grace == 90.0
    with pytest.raises(SystemExit):
        parser.parse_args(["controller", "--guard-grace", "soon"])


def eventually(condition: Any, what: str) -> Any:
    return wait_until(condition, what, timeout=DEADLINE)
