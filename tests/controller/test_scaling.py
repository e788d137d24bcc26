"""controller/scaling.py's decisions in process: which groups are exhausted (every ready,
schedulable node labelled), what is truly free on each node, which groups get `scaleFromZero:
fitguard`, a cycle planned and told (`--scaling=plan`, `off`) without an ASG client, and the writes
of `--scaling=on` against a real boto3 client answered by botocore's Stubber (each call's whole
parameters checked). Whole sets, whole NodeFree lists, whole JSON answers. The same writes against
moto in server mode, with events on the pods, are tests/controller/test_scaling_aws.py's."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from capacity.expander import PRIORITY
from capacity.names import EXHAUSTED_LABEL, LAST_SCALE_UP_TAG
from capacity.plan_types import NodeFree, PlannerOptions
from capacity.records import project_pod
from capacity.resources import POD_ENI
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate
from controller.aws.asgs import AsgGroups
from controller.scaling import (
    OFF,
    ON,
    PLAN,
    CycleFacts,
    ScalingDriver,
    ScalingOptions,
    exhausted_groups,
    groups_to_mark,
    node_free,
    planner_with,
    scale_ups_json,
)
from kube.events import EventRecorder
from tests import objects

NOW = 1_700_000_000.0
EKS = "eks.amazonaws.com/nodegroup"
EKSCTL = "alpha.eksctl.io/nodegroup-name"
GIB = 1024**3


# Not tests.objects.node: cordoning and a MemoryPressure condition beside Ready are what these
# scale-up decisions read.
def node(
    name: str,
    labels: dict[str, str],
    *,
    ready: str = "True",
    cordoned: bool = False,
    allocatable: Any = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": True} if cordoned else {}
    if taints:
        spec["taints"] = taints
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}],
            "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29", POD_ENI: "9"}
            if allocatable is None
            else allocatable,
        },
    }


def exhausted(group: str, key: str = EKS) -> dict[str, str]:
    return {key: group, EXHAUSTED_LABEL: "true"}


def test_a_group_is_exhausted_when_every_ready_schedulable_node_carries_the_label() -> None:
    """Cordoned and not-ready nodes do not count either way; one unlabelled (or `false`) ready node
    clears its group; a group with no ready node is not exhausted; the group is read from the first
    node group label that has a value; a node of no group is ignored."""
    nodes = [
        node("a1", exhausted("a")),
        node("a2", exhausted("a")),
        node("b1", exhausted("b")),
        node("b2", {EKS: "b"}),
        node("c1", exhausted("c")),
        node("c2", {EKS: "c"}, ready="False"),
        node("c3", {EKS: "c"}, ready="Unknown"),
        node("d1", exhausted("d")),
        node("d2", {EKS: "d"}, cordoned=True),
        node("e1", exhausted("e"), ready="False"),
        node("f1", {EKS: "f", EXHAUSTED_LABEL: "false"}),
        node("g1", {EKS: "", EKSCTL: "g", EXHAUSTED_LABEL: "true"}),
        node("h1", exhausted("h", EKSCTL)),
        node("h2", {EKSCTL: "h"}),
        node("j1", {EKS: "j"}),
        node("j2", exhausted("j")),
        node("none", {EXHAUSTED_LABEL: "true"}),
        {"metadata": {"name": "bare", "labels": exhausted("i")}},
    ]
    assert exhausted_groups(nodes, NOW) == {"a", "c", "d", "g"}


def pod(name: str, node_name: str, phase: str, requests: dict[str, str]) -> Any:
    return project_pod(objects.pod(name, requests, image="x", limits={}, node=node_name, phase=phase))


def test_free_capacity_is_allocatable_less_the_requests_of_running_pods() -> None:
    """Each ready, schedulable node's allocatable less its non-terminated pods' requests (cpu,
    memory, ephemeral storage, pod-eni, one pod slot each); the books' free pod-eni replaces the
    computed one when known (negative counts as zero, None keeps the computed one); unready,
    cordoned and unreadable nodes are left out; labels and taints are carried; a node of no group
    is in group ""."""
    nodes = [
        node("down-first", {EKS: "a"}, ready="False"),
        node("n1", {EKS: "a", "zone": "x"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
        node("n2", {EKSCTL: "b"}),
        node("n3", {EKS: "a"}),
        node("n4", {EKS: "a"}),
        node("loose", {}),
        node("down", {EKS: "a"}, ready="False"),
        node("cordoned", {EKS: "a"}, cordoned=True),
        node("bad", {EKS: "a"}, allocatable={"cpu": "lots"}),
    ]
    pods = [
        pod(
            "p1", "n1", "Running", {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2Gi", POD_ENI: "1"}
        ),
        pod("p2", "n1", "Pending", {"cpu": "250m"}),
        pod("done", "n1", "Succeeded", {"cpu": "1"}),
        pod("failed", "n1", "Failed", {"cpu": "1"}),
        pod("p3", "n2", "Running", {"memory": "2Gi", POD_ENI: "2"}),
        pod("unbound", "", "Pending", {"cpu": "1"}),
        pod("p4", "down", "Running", {"cpu": "1"}),
    ]
    books = {"n2": 4, "n3": -2, "n4": None}
    full = {"cpu": 2000, "memory": 8 * GIB * 1000, "pods": 29000, POD_ENI: 9000}
    assert node_free(nodes, pods, books) == [
        NodeFree(
            "n1",
            "a",
            {
                "cpu": 1250,
                "memory": 7 * GIB * 1000,
                "ephemeral-storage": -2 * GIB * 1000,
                "pods": 27000,
                POD_ENI: 8000,
            },
            {EKS: "a", "zone": "x"},
            (Taint("k", "v", "NoSchedule"),),
        ),
        NodeFree(
            "n2",
            "b",
            {"cpu": 2000, "memory": 6 * GIB * 1000, "ephemeral-storage": 0, "pods": 28000, POD_ENI: 4000},
            {EKSCTL: "b"},
        ),
        NodeFree("n3", "a", {**full, POD_ENI: 0}, {EKS: "a"}),
        NodeFree("n4", "a", full, {EKS: "a"}),
        NodeFree("loose", "", full, {}),
    ]
    assert node_free(nodes[3:4], []) == [NodeFree("n3", "a", full, {EKS: "a"})]


def template(
    name: str, provider: str = "aws-asg", *, max_size: int = 10, actual: bool = True, desired: int = 0
) -> NodeGroupTemplate:
    spec: dict[str, Any] = {"provider": provider, "maxSize": max_size, "desiredSize": desired}
    if actual:
        spec["actual"] = {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"}}
    spec["autoscaler"] = {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}}
    return NodeGroupTemplate.from_object({"metadata": {"name": name}, "spec": spec})


def test_only_groups_fitguard_will_grow_itself_are_marked() -> None:
    """With scaling on: ASG and managed groups with an actual view and a max size above zero that
    the expander may choose; manual groups, groups without an actual view, with max size 0, or that
    the priority expander would never choose are not marked. Scaling `plan` or `off` marks none."""
    templates = [
        template("ng-asg"),
        template("ng-managed", "eks-managed"),
        template("ng-manual", "manual"),
        template("ng-blind", actual=False),
        template("ng-zero", max_size=0),
        template("ng-one", max_size=1),
        template("other"),
    ]
    priorities = {10: [re.compile("^ng-")]}
    on = ScalingOptions(mode=ON, planner=PlannerOptions(expanders=(PRIORITY,), priorities=priorities))
    assert groups_to_mark(templates, on) == {"ng-asg", "ng-managed", "ng-one"}
    assert groups_to_mark(templates, ScalingOptions(mode=ON)) == {"ng-asg", "ng-managed", "ng-one", "other"}
    assert groups_to_mark(templates, ScalingOptions(mode=PLAN)) == set()
    assert groups_to_mark(templates, ScalingOptions(mode=OFF)) == set()


def test_the_priorities_last_read_decide_which_groups_are_marked() -> None:
    """The priority expander's ConfigMap as last read replaces the flags' priorities: a ConfigMap
    naming only `other` marks only `other`, whatever the flags matched; none read (None), the flags'
    priorities decide; the planner's other options are the flags' either way."""
    templates = [template("ng-asg"), template("other")]
    flags = PlannerOptions(expanders=(PRIORITY,), priorities={10: (re.compile("^ng-"),)})
    on = ScalingOptions(mode=ON, planner=flags)
    read = {5: (re.compile("^other$"),)}
    assert groups_to_mark(templates, on, read) == {"other"}
    assert groups_to_mark(templates, on, None) == {"ng-asg"}
    assert planner_with(on, read) == PlannerOptions(expanders=(PRIORITY,), priorities=read)
    assert planner_with(on, None) is flags


def pending(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def plan_json(scale_ups: list[dict[str, Any]], outcomes: dict[str, str], **rest: Any) -> dict[str, Any]:
    return {
        "scaleUps": scale_ups,
        "onExistingNodes": {},
        "onNodesOnTheirWay": {},
        "notTriggerScaleUp": [],
        "skippedGroups": {},
        "headroom": [],
        "unschedulablePods": 2,
        "demandPods": 2,
        "notDemand": [],
        "outcomes": outcomes,
        "errors": {},
        **rest,
    }


def test_a_planned_cycle_without_aws_is_told_not_made() -> None:
    """With no ASG client the plan starts from the templates: two unschedulable 1.5-CPU pods need
    two 2-CPU nodes of the only ASG (the manual group cannot grow, a bound pod is not demand).
    `plan` reports the scale-up as planned and `off` as off, in the whole `-o json` answer, with
    the planned-nodes and unschedulable-pods gauges (only the leader acts at all: the manager runs the
    discovery reconciler only while it leads, tests/controller/test_manager.py). In the
    blind scope the same pods are cluster-autoscaler's to serve: no demand, each said why."""
    templates = [template("ng-a"), template("ng-manual", "manual")]
    pods = [pending("p1", "1500m"), pending("p2", "1500m"), {"metadata": {"name": "bound"}, "spec": {}}]
    up = {"nodeGroup": "ng-a", "from": 0, "to": 2, "maxSize": 10, "pods": ["default/p1", "default/p2"]}
    up["reasons"] = ["pods"]
    for mode, outcome in ((PLAN, "planned"), (OFF, "off")):
        driver = ScalingDriver(ScalingOptions(mode=mode, scope="all"))
        cycle = driver.plan_cycle(templates, pods, [], now=NOW)
        assert cycle.asg_names == {"ng-a": "ng-a"}
        assert driver.act(cycle, now=NOW) == [{**up, "outcome": outcome}]
        assert scale_ups_json(cycle) == plan_json([up], {"ng-a": outcome})
        assert (
            driver.registry.get_sample_value("fitguard_planned_scale_up_nodes", {"node_group": "ng-a"}) == 2.0
        )
        assert driver.registry.get_sample_value("fitguard_unschedulable_pods", {"scope": "all"}) == 2.0
        assert driver.registry.get_sample_value("fitguard_unschedulable_pods", {"scope": "blind"}) == 0.0
    blind = ScalingDriver(ScalingOptions(mode=PLAN))
    cycle = blind.plan_cycle(templates, pods, [], now=NOW, facts=CycleFacts(asg_names={"ng-a": "asg-a"}))
    assert cycle.asg_names == {"ng-a": "asg-a"}
    assert blind.act(cycle, now=NOW) == []
    why = "cluster-autoscaler can serve it with a node of ng-a"
    assert scale_ups_json(cycle) == plan_json(
        [], {}, demandPods=0, notDemand=[{"pods": ["default/p1", "default/p2"], "why": why}]
    )


def test_fitguard_never_scales_for_karpenter() -> None:
    """A NodePool's template (provider karpenter) given every field that makes a group growable (an
    actual view, a max size, a desired size below it) is still no group fitguard grows: with scaling
    on and scope all, pods only it could take plan no scale-up, the NodePool is not read as an ASG,
    not marked `scaleFromZero: fitguard`, and the whole plan says no node group can be scaled. The
    same template as an ASG's is grown: the provider alone decides."""
    pool = template("general", "karpenter", max_size=10)
    pods = [pending("p1", "1500m"), pending("p2", "1500m")]
    on = ScalingOptions(mode=ON, scope="all")
    driver = ScalingDriver(on)
    cycle = driver.plan_cycle([pool], pods, [], now=NOW)
    assert (cycle.asg_names, driver.act(cycle, now=NOW)) == ({}, [])
    none = {
        "pods": ["default/p1", "default/p2"],
        "message": "pod didn't trigger scale-up: no node group can be scaled",
    }
    assert scale_ups_json(cycle) == plan_json([], {}, notTriggerScaleUp=[{**none, "reasons": {}}])
    assert groups_to_mark([pool], on) == set()
    asg = template("general", "aws-asg", max_size=10)
    grown = ScalingDriver(on).plan_cycle([asg], pods, [], now=NOW)
    assert [(u["nodeGroup"], u["to"]) for u in scale_ups_json(grown)["scaleUps"]] == [("general", 2)]
    assert groups_to_mark([asg], on) == {"general"}


def asg_page(name: str, desired: int, max_size: int, last: str | None = None) -> dict[str, Any]:
    tags = [{"Key": LAST_SCALE_UP_TAG, "Value": last, "ResourceId": name}] if last else []
    return {
        "AutoScalingGroups": [
            {
                "AutoScalingGroupName": name,
                "MinSize": 0,
                "MaxSize": max_size,
                "DesiredCapacity": desired,
                "DefaultCooldown": 300,
                "AvailabilityZones": ["us-east-1a"],
                "HealthCheckType": "EC2",
                "CreatedTime": datetime(2026, 1, 1, tzinfo=UTC),
                "Tags": tags,
            }
        ]
    }


def autoscaling() -> Any:
    """A real boto3 Auto Scaling client whose calls botocore's Stubber answers in process (each
    expected call's whole parameters are checked against what we send)."""
    return boto3.client(
        "autoscaling", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def describe(stub: Stubber, name: str, *args: Any, **kw: Any) -> None:
    stub.add_response(
        "describe_auto_scaling_groups", asg_page(name, *args, **kw), {"AutoScalingGroupNames": [name]}
    )


def set_desired(stub: Stubber, name: str, target: int) -> None:
    stub.add_response(
        "set_desired_capacity",
        {},
        {"AutoScalingGroupName": name, "DesiredCapacity": target, "HonorCooldown": False},
    )


def tag(stub: Stubber, name: str, value: str) -> None:
    wanted = {
        "Tags": [
            {
                "ResourceId": name,
                "ResourceType": "auto-scaling-group",
                "Key": LAST_SCALE_UP_TAG,
                "Value": value,
                "PropagateAtLaunch": False,
            }
        ]
    }
    stub.add_response("create_or_update_tags", {}, wanted)


def test_scaling_on_raises_the_desired_capacity_only_from_where_the_plan_started(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With scaling on, the leader re-reads the ASG (by its own name) and sets the desired capacity
    to the plan's size, capped by the max size AWS reports now, then tags the scale-up and counts
    it; it skips a group someone moved since, one already at its max, and says so for one AWS no
    longer has or a refused write (nothing counted, an error logged). A failed tag leaves the
    scale-up standing (a warning logged)."""
    templates = [template("ng-a")]
    pods = [pending("p1", "1500m"), pending("p2", "1500m")]
    cycle_of = ScalingDriver(ScalingOptions(mode=ON, scope="all"))
    client = autoscaling()
    driver = ScalingDriver(ScalingOptions(mode=ON, scope="all"), AsgGroups(client))
    cases = [
        (
            lambda s: (
                describe(s, "asg-a", 0, 10),
                set_desired(s, "asg-a", 2),
                tag(s, "asg-a", "2@1700000000"),
            )
        ),
        (lambda s: (describe(s, "asg-a", 0, 1), set_desired(s, "asg-a", 1), tag(s, "asg-a", "1@1700000000"))),
        (lambda s: s.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": []})),
        (lambda s: describe(s, "asg-a", 1, 10)),
        (lambda s: describe(s, "asg-a", 0, 0)),
        (
            lambda s: (
                describe(s, "asg-a", 0, 10),
                s.add_client_error("set_desired_capacity", "ValidationError", "refused"),
            )
        ),
        (
            lambda s: (
                describe(s, "asg-a", 0, 10),
                set_desired(s, "asg-a", 2),
                s.add_client_error("create_or_update_tags", "ValidationError", "no tags"),
            )
        ),
    ]
    outcomes = []
    caplog.set_level(logging.WARNING, logger="controller.scaling")
    for arrange in cases:
        cycle = cycle_of.plan_cycle(
            templates, pods, [], now=NOW, facts=CycleFacts(asg_names={"ng-a": "asg-a"})
        )
        with Stubber(client) as stub:
            arrange(stub)
            outcomes.append(driver.act(cycle, now=NOW)[0]["outcome"])
            stub.assert_no_pending_responses()
    assert outcomes == [
        "scaled 0->2",
        "scaled 0->1",
        "failed: ASG asg-a not found",
        "skipped: desired is 1, the plan started from 0",
        "skipped: already at max size 0",
        "failed: SetDesiredCapacity: ValidationError: refused",
        "scaled 0->2",
    ]
    assert driver.registry.get_sample_value("fitguard_scale_ups_total", {"node_group": "ng-a"}) == 3.0
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "controller.scaling"] == [
        (logging.ERROR, "scale-up of ng-a failed: SetDesiredCapacity: ValidationError: refused"),
        (
            logging.WARNING,
            "tagging asg-a with its scale-up failed: CreateOrUpdateTags: ValidationError: no tags",
        ),
    ]


def test_the_plan_starts_from_the_asgs_sizes_and_last_scale_up_as_aws_reports_them() -> None:
    """plan_cycle reads each scalable group's ASG once: its desired and max size replace the
    published ones (a max of 1 caps the plan), a recent fitguard scale-up tag starts the cooldown
    (nothing planned), and a failed read is reported under "" while the plan falls back to the
    published templates."""
    templates = [template("ng-a"), template("ng-manual", "manual")]
    pods = [pending("p1", "1500m"), pending("p2", "1500m")]
    client = autoscaling()
    driver = ScalingDriver(ScalingOptions(mode=PLAN, scope="all"), AsgGroups(client))
    with Stubber(client) as stub:
        describe(stub, "asg-a", 0, 1)
        cycle = driver.plan_cycle(templates, pods, [], now=NOW, facts=CycleFacts(asg_names={"ng-a": "asg-a"}))
        stub.assert_no_pending_responses()
    assert (cycle.templates["ng-a"].desired_size, cycle.templates["ng-a"].max_size) == (0, 1)
    assert [(s.node_group, s.from_size, s.to_size) for s in cycle.plan.scale_ups] == [("ng-a", 0, 1)]
    with Stubber(client) as stub:
        describe(stub, "asg-a", 0, 10, last=f"1@{int(NOW) - 10}")
        cycle = driver.plan_cycle(templates, pods, [], now=NOW, facts=CycleFacts(asg_names={"ng-a": "asg-a"}))
    assert (cycle.plan.scale_ups, cycle.plan.to_json()["skippedGroups"]) == (
        (),
        {"ng-a": "in cooldown after a recent scale-up"},
    )
    with Stubber(client) as stub:
        stub.add_client_error("describe_auto_scaling_groups", "ValidationError", "broken")
        cycle = driver.plan_cycle(templates, pods, [], now=NOW, facts=CycleFacts(asg_names={"ng-a": "asg-a"}))
    assert cycle.asg_error == "DescribeAutoScalingGroups: ValidationError: broken"
    assert scale_ups_json(cycle)["errors"] == {"": cycle.asg_error}  # the JSON contract's key
    assert [(s.node_group, s.from_size, s.to_size) for s in cycle.plan.scale_ups] == [("ng-a", 0, 2)]
    off = ScalingDriver(ScalingOptions(mode=OFF, scope="all"), AsgGroups(client))
    with Stubber(client) as stub:  # no call expected: scaling off reads no ASG
        cycle = off.plan_cycle(templates, pods, [], now=NOW)
        stub.assert_no_pending_responses()
    assert [(s.node_group, s.from_size, s.to_size) for s in cycle.plan.scale_ups] == [("ng-a", 0, 2)]


def test_the_leader_tells_each_pod_what_became_of_it_and_logs_each_scale_up(
    fake_kube: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Through the fake API server: `plan` puts fitguard's own ScaleUpPlanned on each pod of a
    planned scale-up (never cluster-autoscaler's TriggeredScaleUp, which only a scale-up really made
    gets: tests/controller/test_scaling_aws.py), and a pod no group can take gets NotTriggerScaleUp with the
    reason; scaling `off` records nothing. Each scale-up is logged as one whole line."""
    templates = [template("ng-a")]
    pods = [fake_kube.create(pending(n, "1500m")) for n in ("p1", "p2")] + [
        fake_kube.create(pending("huge", "64"))
    ]
    recorder = EventRecorder(fake_kube.api_client(), "test")

    def events() -> list[tuple[str, str, str]]:
        recorder.flush()
        found = fake_kube.objects("Event", "default", api_version="events.k8s.io/v1")
        return sorted((e["regarding"]["name"], e["reason"], e["note"]) for e in found)

    info = "[{ng-a 0->2 (max: 10)}]"
    not_helped = "pod didn't trigger scale-up: 1 Insufficient cpu"
    with caplog.at_level(logging.INFO, logger="controller.scaling"):
        off = ScalingDriver(ScalingOptions(mode=OFF, scope="all"), None, recorder)
        off.act(off.plan_cycle(templates, pods, [], now=NOW), now=NOW)
        assert events() == []
        planner = ScalingDriver(ScalingOptions(mode=PLAN, scope="all"), None, recorder)
        planner.act(planner.plan_cycle(templates, pods, [], now=NOW), now=NOW)
    planned = f"scale-up planned, not made (--scaling=plan): {info}"
    assert events() == [
        ("huge", "NotTriggerScaleUp", not_helped),
        ("p1", "ScaleUpPlanned", planned),
        ("p2", "ScaleUpPlanned", planned),
    ]
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("scale-up")] == [
        f"scale-up {mode}: {{ng-a 0->2 (max: 10)}} for 2 pods (pods)" for mode in (OFF, PLAN)
    ]
    assert [r.getMessage() for r in caplog.records if "not helped" in r.getMessage()] == [
        f"1 pods not helped: {not_helped}"
    ] * 2


def test_a_cycle_places_pods_on_existing_free_nodes_and_follows_the_planners_options() -> None:
    """A ready node of the group with 2 CPUs free takes one 1.5-CPU pod before anything grows, so
    the other needs one new node; the planner's options reach the plan (at most one node per
    scale-up: three pods, one existing node, one new node, the third pod not helped)."""
    templates = [template("ng-a")]
    n1 = node("n1", {EKS: "ng-a"}, allocatable={"cpu": "2", "memory": "8Gi", "pods": "29"})
    pods = [pending("p1", "1500m"), pending("p2", "1500m")]
    driver = ScalingDriver(ScalingOptions(mode=PLAN, scope="all"))
    cycle = driver.plan_cycle(templates, pods, [n1], now=NOW)
    assert scale_ups_json(cycle) == plan_json(
        [
            {
                "nodeGroup": "ng-a",
                "from": 0,
                "to": 1,
                "maxSize": 10,
                "pods": ["default/p2"],
                "reasons": ["pods"],
            }
        ],
        {},
        onExistingNodes={"n1": ["default/p1"]},
    )
    one = ScalingDriver(
        ScalingOptions(mode=PLAN, scope="all", planner=PlannerOptions(max_nodes_per_scale_up=1))
    )
    cycle = one.plan_cycle(templates, [*pods, pending("p3", "1500m")], [n1], now=NOW)
    whole = scale_ups_json(cycle)
    assert (whole["scaleUps"], whole["onExistingNodes"], whole["unschedulablePods"]) == (
        [
            {
                "nodeGroup": "ng-a",
                "from": 0,
                "to": 1,
                "maxSize": 10,
                "pods": ["default/p2"],
                "reasons": ["pods"],
            }
        ],
        {"n1": ["default/p1"]},
        3,
    )
    assert [n["pods"] for n in whole["notTriggerScaleUp"]] == [["default/p3"]]
