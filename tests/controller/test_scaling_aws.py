"""The scaling driver against moto in server mode and the fake API server: blind demand planned onto
the least-waste group, carried out only with `--scaling=on`, within max size and cooldown, never
twice for the same demand, and a throttled SetDesiredCapacity retried."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.demand import ALL
from capacity.names import EXHAUSTED_LABEL, LAST_SCALE_UP_TAG
from capacity.records import project_pod
from capacity.resources import POD_ENI
from capacity.template import NodeGroupTemplate
from controller.aws.asgs import AsgGroups
from controller.aws.clients import AwsClients
from controller.scaling import (
    ON,
    PLAN,
    CycleFacts,
    ScalingDriver,
    ScalingOptions,
    exhausted_groups,
    groups_to_mark,
)
from kube.events import EventRecorder
from tests.awsfixtures import AwsEnvironment, inject_errors

NOW = 1_700_000_000.0
UNSCHEDULABLE = {
    "phase": "Pending",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
}
GUARD = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]}
            ]
        }
    }
}


def make_asg(aws: AwsEnvironment, name: str, max_size: int = 10, desired: int = 0) -> None:
    aws.client("ec2").create_launch_template(
        LaunchTemplateName=f"{name}-lt",
        LaunchTemplateData={"InstanceType": "m5.large", "ImageId": "ami-12c6146b"},
    )
    aws.client("autoscaling").create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": f"{name}-lt", "Version": "$Latest"},
        MinSize=0,
        MaxSize=max_size,
        DesiredCapacity=desired,
        AvailabilityZones=["us-east-1a"],
    )


def template(
    name: str,
    *,
    cpu: str = "2",
    memory: str = "8Gi",
    storage: str = "45Gi",
    storage_tag: bool = False,
    max_size: int = 10,
    desired: int = 0,
    nodes: int = 0,
) -> NodeGroupTemplate:
    actual = {"cpu": cpu, "memory": memory, "ephemeral-storage": storage, "pods": "29", POD_ENI: "9"}
    tags = {"cpu": cpu, "memory": memory, "pods": "110"}
    if storage_tag:
        tags["ephemeral-storage"] = storage
    spec = {
        "provider": "aws-asg",
        "maxSize": max_size,
        "desiredSize": desired,
        "nodes": nodes,
        "actual": {"allocatable": actual},
        "autoscaler": {"allocatable": tags},
    }
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def pending(name: str, requests: dict[str, str], affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}]
    }
    if affinity:
        spec["affinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name},
        "spec": spec,
        "status": UNSCHEDULABLE,
    }


SCRATCH = {"cpu": "100m", "ephemeral-storage": "30Gi"}


def storage_groups(aws: AwsEnvironment, *, tagged: bool = False) -> list[NodeGroupTemplate]:
    """Three ASGs at 0: two whose real node holds 30Gi of scratch space, one whose node does not."""
    for name in ("ng-large", "ng-4xlarge", "ng-small-disk"):
        make_asg(aws, name)
    return [
        template("ng-large", storage_tag=tagged),
        template("ng-4xlarge", cpu="16", memory="64Gi", storage_tag=tagged),
        template("ng-small-disk", storage="20Gi"),
    ]


def desired(aws: AwsEnvironment, name: str) -> int:
    groups = aws.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])
    return groups["AutoScalingGroups"][0]["DesiredCapacity"]


def driver(mode: str, fake_kube: Any = None, **config: Any) -> ScalingDriver:
    recorder = EventRecorder(fake_kube.api_client(), "test") if fake_kube is not None else None
    return ScalingDriver(
        ScalingOptions(mode=mode, **config), AsgGroups(AwsClients.from_environment().autoscaling), recorder
    )


def events(fake_kube: Any, reason: str) -> list[dict[str, Any]]:
    return [e for e in fake_kube.objects("Event", api_version="events.k8s.io/v1") if e["reason"] == reason]


def test_plan_mode_plans_one_least_waste_node_and_writes_nothing_to_aws(
    aws: AwsEnvironment, fake_kube: Any
) -> None:
    templates = storage_groups(aws)
    pod = fake_kube.create(pending("scratch", SCRATCH))
    d = driver(PLAN, fake_kube)
    calls = [inject_errors(d.asgs.client, op, times=0) for op in ("SetDesiredCapacity", "CreateOrUpdateTags")]

    cycle = d.plan_cycle(templates, [pod], [], now=NOW)
    scale_ups = d.act(cycle, now=NOW)

    assert [(s["nodeGroup"], s["from"], s["to"], s["pods"]) for s in scale_ups] == [
        ("ng-large", 0, 1, ["default/scratch"])
    ]
    assert scale_ups[0]["outcome"] == "planned"
    assert [c.calls for c in calls] == [[], []]
    assert {
        g["name"]: g["desired_capacity"] for g in aws.model_data()["autoscaling"]["FakeAutoScalingGroup"]
    } == {
        "ng-large": 0,
        "ng-4xlarge": 0,
        "ng-small-disk": 0,
    }
    [event] = events(fake_kube, "ScaleUpPlanned")
    assert event["note"] == "scale-up planned, not made (--scaling=plan): [{ng-large 0->1 (max: 10)}]"
    assert event["regarding"]["name"] == "scratch"
    # cluster-autoscaler's own reason would tell anything counting it that a scale-up happened
    assert events(fake_kube, "TriggeredScaleUp") == []


def test_on_mode_sets_the_desired_capacity_and_leaves_its_tag(aws: AwsEnvironment, fake_kube: Any) -> None:
    templates = storage_groups(aws)
    pod = fake_kube.create(pending("scratch", SCRATCH))
    d = driver(ON, fake_kube)

    scale_ups = d.act(d.plan_cycle(templates, [pod], [], now=NOW), now=NOW)

    assert scale_ups[0]["outcome"] == "scaled 0->1"
    assert desired(aws, "ng-large") == 1 and desired(aws, "ng-4xlarge") == 0
    tags = aws.client("autoscaling").describe_tags(Filters=[{"Name": "key", "Values": [LAST_SCALE_UP_TAG]}])
    assert [(t["ResourceId"], t["Value"]) for t in tags["Tags"]] == [("ng-large", f"1@{int(NOW)}")]
    assert d.registry.get_sample_value("fitguard_scale_ups_total", {"node_group": "ng-large"}) == 1.0
    assert (
        events(fake_kube, "TriggeredScaleUp")[0]["note"]
        == "pod triggered scale-up: [{ng-large 0->1 (max: 10)}]"
    )
    assert groups_to_mark(templates, d.config) == {"ng-large", "ng-4xlarge", "ng-small-disk"}
    assert groups_to_mark(templates, ScalingOptions(mode=PLAN)) == set()


def test_a_correct_tag_leaves_the_pod_to_cluster_autoscaler(aws: AwsEnvironment) -> None:
    templates = storage_groups(aws, tagged=True)
    d = driver(ON)
    cycle = d.plan_cycle(templates, [pending("scratch", SCRATCH)], [], now=NOW)
    assert d.act(cycle, now=NOW) == []
    assert cycle.skipped == [
        {"pods": ["default/scratch"], "why": "cluster-autoscaler can serve it with a node of ng-4xlarge"}
    ]
    assert d.registry.get_sample_value("fitguard_unschedulable_pods", {"scope": "blind"}) == 0.0
    assert d.registry.get_sample_value("fitguard_unschedulable_pods", {"scope": "all"}) == 1.0


def exhausted_node(name: str = "n1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {"eks.amazonaws.com/nodegroup": "ng-sg", EXHAUSTED_LABEL: "true"},
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29", POD_ENI: "9"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_pod_eni_pods_on_exhausted_nodes_are_planned_only_in_all_scope(aws: AwsEnvironment) -> None:
    """Without the guard affinity, cluster-autoscaler's live-node template fits them: not blind."""
    make_asg(aws, "ng-sg", desired=1)
    templates = [template("ng-sg", desired=1, nodes=1)]
    pods = [pending(f"sg-{i}", {"cpu": "100m", POD_ENI: "1"}) for i in range(2)]
    books = {"n1": 0}  # 9 branch ENIs, 3 in use, 6 held by finished pods: none truly free
    blind = driver(PLAN).plan_cycle(
        templates, pods, [exhausted_node()], now=NOW, facts=CycleFacts(true_free_pod_eni=books)
    )
    assert blind.plan.scale_ups == ()
    everything = driver(PLAN, scope=ALL).plan_cycle(
        templates, pods, [exhausted_node()], now=NOW, facts=CycleFacts(true_free_pod_eni=books)
    )
    assert [(s.node_group, s.from_size, s.to_size) for s in everything.plan.scale_ups] == [("ng-sg", 1, 2)]


def test_guarded_pod_eni_pods_are_blind_demand_when_every_node_is_exhausted(aws: AwsEnvironment) -> None:
    make_asg(aws, "ng-sg", desired=1)
    templates = [template("ng-sg", desired=1, nodes=1)]
    pods = [pending("sg-0", {"cpu": "100m", POD_ENI: "1"}, GUARD)]
    cycle = driver(PLAN).plan_cycle(
        templates, pods, [exhausted_node()], now=NOW, facts=CycleFacts(true_free_pod_eni={"n1": 0})
    )
    assert [(s.node_group, s.to_size) for s in cycle.plan.scale_ups] == [("ng-sg", 2)]


def test_max_size_caps_the_plan_and_a_lowered_max_caps_the_write(aws: AwsEnvironment) -> None:
    make_asg(aws, "ng-large", max_size=3)
    pods = [pending(f"big-{i}", {"cpu": "1500m", "ephemeral-storage": "30Gi"}) for i in range(5)]
    d = driver(ON)
    cycle = d.plan_cycle([template("ng-large", max_size=3)], pods, [], now=NOW)
    assert [(s.from_size, s.to_size) for s in cycle.plan.scale_ups] == [(0, 3)]
    assert cycle.plan.not_helped[0].message() == "pod didn't trigger scale-up: 1 max node group size reached"
    # the max size falls between plan and act: fitguard never writes above it (moto would accept it)
    aws.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName="ng-large", MaxSize=2)
    assert d.act(cycle, now=NOW)[0]["outcome"] == "scaled 0->2"
    assert desired(aws, "ng-large") == 2


def test_cooldown_from_the_tag_survives_a_restart(aws: AwsEnvironment) -> None:
    make_asg(aws, "ng-large")
    first = driver(ON)
    first.act(first.plan_cycle([template("ng-large")], [pending("a", SCRATCH)], [], now=NOW), now=NOW)
    # the node joined and took pod a; a new pod pends; a fresh controller (a restart) plans; scope
    # all, as cluster-autoscaler would now build the group's node from the live one and see the disk
    joined = template("ng-large", desired=1, nodes=1)
    restarted = driver(ON, scope=ALL)
    cycle = restarted.plan_cycle([joined], [pending("b", SCRATCH)], [], now=NOW + 60)
    assert restarted.act(cycle, now=NOW + 60) == []
    assert cycle.plan.skipped_groups == {"ng-large": "in cooldown after a recent scale-up"}
    later = restarted.plan_cycle([joined], [pending("b", SCRATCH)], [], now=NOW + 400)
    assert restarted.act(later, now=NOW + 400)[0]["outcome"] == "scaled 1->2"
    assert desired(aws, "ng-large") == 2


def test_two_controllers_never_scale_a_group_twice_for_the_same_demand(aws: AwsEnvironment) -> None:
    make_asg(aws, "ng-large")
    a, b = driver(ON), driver(ON)
    calls = [inject_errors(d.asgs.client, "SetDesiredCapacity", times=0) for d in (a, b)]
    pods = [pending("scratch", SCRATCH)]
    cycle_a = a.plan_cycle([template("ng-large")], pods, [], now=NOW)
    cycle_b = b.plan_cycle([template("ng-large")], pods, [], now=NOW)  # same state, same plan

    assert a.act(cycle_a, now=NOW)[0]["outcome"] == "scaled 0->1"
    assert b.act(cycle_b, now=NOW)[0]["outcome"] == "skipped: desired is 1, the plan started from 0"
    again = b.plan_cycle([template("ng-large")], pods, [], now=NOW + 1)
    assert again.plan.scale_ups == ()
    assert [r.key for r in again.plan.on_the_way["ng-large"]] == ["default/scratch"]
    assert desired(aws, "ng-large") == 1
    assert sum(len(c.calls) for c in calls) == 1


def test_a_throttled_set_desired_capacity_is_retried(aws: AwsEnvironment) -> None:
    make_asg(aws, "ng-large")
    d = driver(ON)
    throttle = inject_errors(d.asgs.client, "SetDesiredCapacity", code="Throttling", times=2)
    assert (
        d.act(d.plan_cycle([template("ng-large")], [pending("a", SCRATCH)], [], now=NOW), now=NOW)[0][
            "outcome"
        ]
        == "scaled 0->1"
    )
    assert [c.injected for c in throttle.calls] == [True, True, False]
    assert desired(aws, "ng-large") == 1


def test_a_final_throttle_is_reported_not_raised(aws: AwsEnvironment, fake_kube: Any) -> None:
    make_asg(aws, "ng-large")
    d = driver(ON, fake_kube)
    inject_errors(d.asgs.client, "SetDesiredCapacity", code="Throttling", times=50)
    pod = fake_kube.create(pending("a", SCRATCH))
    [result] = d.act(d.plan_cycle([template("ng-large")], [pod], [], now=NOW), now=NOW)
    assert result["outcome"].startswith("failed: SetDesiredCapacity: Throttling")
    assert desired(aws, "ng-large") == 0
    assert events(fake_kube, "TriggeredScaleUp") == []


@pytest.mark.parametrize("phase", ["Running", "Succeeded"])
def test_bound_pods_take_their_nodes_capacity_until_they_finish(aws: AwsEnvironment, phase: str) -> None:
    """A running pod's requests are not free capacity; a finished one's are (but see the books for ENIs)."""
    make_asg(aws, "ng-large", desired=1)
    node = {
        "metadata": {"name": "n1", "labels": {"eks.amazonaws.com/nodegroup": "ng-large"}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "45Gi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    bound = pending("busy", {"cpu": "1", "ephemeral-storage": "30Gi"})
    bound["spec"]["nodeName"] = "n1"
    bound["status"] = {"phase": phase}
    cycle = driver(PLAN, scope=ALL).plan_cycle(
        [template("ng-large", desired=1, nodes=1)],
        [pending("a", SCRATCH)],
        [node],
        [project_pod(bound)],
        now=NOW,
    )
    assert bool(cycle.plan.scale_ups) == (phase == "Running")


def test_the_planners_pending_pods_are_the_unbound_pending_ones_listed_in_pages(fake_kube: Any) -> None:
    """The cache's pending store (what the planner reads) holds the unbound Pending pods of a paged
    list, not a bound one nor a finished one; the pod records hold every pod."""
    from controller.cache import CacheOptions, ClusterCache
    from kube.options import WatchOptions

    for i in range(3):
        fake_kube.create(pending(f"p-{i}", SCRATCH))
    bound = pending("bound", SCRATCH)
    bound["spec"]["nodeName"] = "n1"
    fake_kube.create(bound)
    done = pending("done", SCRATCH)
    done["status"] = {"phase": "Failed"}
    fake_kube.create(done)
    cache = ClusterCache(CacheOptions(autoscaler_selector="", watch=WatchOptions(page_size=2))).list_from(
        fake_kube.api_client()
    )
    assert sorted(p["metadata"]["name"] for p in cache.pending.items()) == ["p-0", "p-1", "p-2"]
    assert len(cache.pods) == 5


def test_a_cordoned_unlabelled_node_does_not_hide_an_exhausted_group() -> None:
    """cluster-autoscaler never templates a group on a cordoned node: the group whose other ready
    nodes all carry the label is exhausted, as the guard (capacity/guard.py) judges it too."""
    cordoned = exhausted_node("n2")
    del cordoned["metadata"]["labels"][EXHAUSTED_LABEL]
    cordoned["spec"] = {"unschedulable": True}
    assert exhausted_groups([exhausted_node("n1"), cordoned], NOW) == {"ng-sg"}
    cordoned["spec"] = {}
    assert exhausted_groups([exhausted_node("n1"), cordoned], NOW) == set()


def test_a_group_already_at_its_max_size_is_not_scaled_counted_or_tagged(
    aws: AwsEnvironment, fake_kube: Any
) -> None:
    """The plan raised a group 2 -> 3; its max size fell to 2 before `act`. fitguard must not "scale"
    2 -> 2: no SetDesiredCapacity, no scale-up counted, no last-scale-up tag (it would start a false
    cooldown after a restart), no TriggeredScaleUp event, and the outcome says why."""
    make_asg(aws, "ng-large", max_size=3, desired=2)
    pod = fake_kube.create(pending("big", {"cpu": "1500m", "ephemeral-storage": "30Gi"}))
    d = driver(ON, fake_kube, scope=ALL)
    writes = [
        inject_errors(d.asgs.client, op, times=0) for op in ("SetDesiredCapacity", "CreateOrUpdateTags")
    ]
    cycle = d.plan_cycle([template("ng-large", max_size=3, desired=2, nodes=2)], [pod], [], now=NOW)
    assert [(s.node_group, s.from_size, s.to_size) for s in cycle.plan.scale_ups] == [("ng-large", 2, 3)]
    aws.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName="ng-large", MaxSize=2)

    [result] = d.act(cycle, now=NOW)

    assert result["outcome"] == "skipped: already at max size 2"
    assert [w.calls for w in writes] == [[], []]
    assert desired(aws, "ng-large") == 2
    tags = aws.client("autoscaling").describe_tags(Filters=[{"Name": "key", "Values": [LAST_SCALE_UP_TAG]}])
    assert tags["Tags"] == []
    assert d.registry.get_sample_value("fitguard_scale_ups_total", {"node_group": "ng-large"}) is None
    assert events(fake_kube, "TriggeredScaleUp") == []
