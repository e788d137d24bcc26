"""Node group discovery against moto in server mode (boto3 over HTTP via AWS_ENDPOINT_URL): both views
of a group, tag sync, mixed instances, managed node groups, pagination, throttling, AccessDenied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from capacity.autoscaler_view import RESOURCES_PREFIX, InstanceShape
from capacity.estimate import GIB, allocatable_ephemeral_storage
from capacity.instances import lookup
from capacity.quantity import parse_quantity
from capacity.template import NodeGroupTemplate
from controller.aws.clients import AwsClients
from controller.aws.discovery import AwsDiscovery
from controller.aws.records import DiscoverySelection
from controller.discovery import build_templates
from controller.run import ControllerOptions, run_once
from fitguard.cli import main as fitguard_main
from fitguard.demo_seed import seed_moto
from tests.awsfixtures import AwsEnvironment, inject_errors

ENABLED = {"k8s.io/cluster-autoscaler/enabled": "true"}
SELECT_ENABLED = DiscoverySelection(tag_filters=({"k8s.io/cluster-autoscaler/enabled": ""},))
EPH_TAG = RESOURCES_PREFIX + "ephemeral-storage"
ENI_TAG = RESOURCES_PREFIX + "vpc.amazonaws.com/pod-eni"


def image(ec2: Any) -> tuple[str, str]:
    image_id = ec2.register_image(Name="eks-node")["ImageId"]
    return image_id, ec2.describe_images(ImageIds=[image_id])["Images"][0]["RootDeviceName"]


def launch_template(ec2: Any, name: str, instance_type: str, root_gib: int) -> None:
    image_id, root = image(ec2)
    ec2.create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={
            "ImageId": image_id,
            "InstanceType": instance_type,
            "BlockDeviceMappings": [{"DeviceName": root, "Ebs": {"VolumeSize": root_gib}}],
        },
    )


def asg(autoscaling: Any, name: str, tags: dict[str, str], **extra: Any) -> None:
    if "MixedInstancesPolicy" not in extra:
        extra.setdefault("LaunchTemplate", {"LaunchTemplateName": name, "Version": "$Latest"})
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        MinSize=0,
        MaxSize=10,
        DesiredCapacity=0,
        AvailabilityZones=["us-east-1a", "us-east-1b"],
        Tags=[
            {
                "ResourceId": name,
                "ResourceType": "auto-scaling-group",
                "Key": k,
                "Value": v,
                "PropagateAtLaunch": False,
            }
            for k, v in tags.items()
        ],
        **extra,
    )


def scratch_pod() -> dict[str, Any]:
    """A pending, unschedulable pod asking for 30Gi of ephemeral storage: demand that only a
    group's real nodes (not cluster-autoscaler's tag-built template) can serve."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": "scratch"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"ephemeral-storage": "30Gi"}}}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def discover(clients: AwsClients, previous: dict[str, NodeGroupTemplate] | None = None, **kwargs: Any) -> Any:
    groups = AwsDiscovery(clients, SELECT_ENABLED, "demo", lookup, **kwargs).node_groups()
    outcomes = build_templates(groups, {}, [], previous or {}, facts=lookup)
    return groups, {o.name: o for o in outcomes}


def test_asg_at_zero_actual_view_has_root_volume_storage_autoscaler_view_not(aws: AwsEnvironment) -> None:
    """m5.large at 0 nodes, 50 GiB root: the actual view offers ephemeral storage and 9 branch ENIs;
    cluster-autoscaler's tag-built view offers neither (no tags say so)."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", ENABLED)
    groups, outcomes = discover(clients)
    assert [g.root_volume_gib for g in groups] == [50]
    template = outcomes["ng-batch"].template
    assert template is not None and template.actual is not None and template.autoscaler is not None
    assert template.actual.source == "launch-template"
    assert template.actual.allocatable["ephemeral-storage"] == allocatable_ephemeral_storage(50 * GIB) * 1000
    assert template.actual.allocatable["vpc.amazonaws.com/pod-eni"] == 9000
    assert "ephemeral-storage" not in template.autoscaler.allocatable
    assert "vpc.amazonaws.com/pod-eni" not in template.autoscaler.allocatable
    assert template.autoscaler.allocatable["pods"] == 110_000
    assert template.autoscaler.allocatable["cpu"] == 2000


def test_tag_sync_plans_then_applies_and_autoscaler_view_gets_it(aws: AwsEnvironment, tmp_path: Path) -> None:
    """Plan writes nothing; apply puts both resources/* tags (not propagated at launch, the user's
    own tags kept); the next cycle's autoscaler view has them and nothing is left to sync."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", {**ENABLED, "team": "batch"})
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}))
    options = ControllerOptions(state=str(state), sync_autoscaler_tags="plan")

    planned = run_once(options, clients=clients).to_json()
    assert {(c["nodeGroup"], c["key"], c["applied"]) for c in planned["tagSync"]} == {
        ("ng-batch", EPH_TAG, False),
        ("ng-batch", ENI_TAG, False),
    }
    tags = {t["Key"] for t in clients.autoscaling.describe_tags()["Tags"]}
    assert EPH_TAG not in tags

    applied = run_once(
        ControllerOptions(state=str(state), sync_autoscaler_tags="apply"), clients=clients
    ).to_json()
    assert all(c["applied"] for c in applied["tagSync"]) and len(applied["tagSync"]) == 2
    written = {t["Key"]: t for t in clients.autoscaling.describe_tags()["Tags"]}
    assert written[EPH_TAG]["Value"] == "44Gi" and written[EPH_TAG]["PropagateAtLaunch"] is False
    assert written[ENI_TAG]["Value"] == "9"
    assert written["team"]["Value"] == "batch"

    after = run_once(options, clients=clients).to_json()
    assert after["tagSync"] == []
    autoscaler = after["nodeGroups"][0]["spec"]["autoscaler"]["allocatable"]
    assert parse_quantity(autoscaler["ephemeral-storage"]) == parse_quantity("44Gi")
    assert autoscaler["vpc.amazonaws.com/pod-eni"] == "9"


def test_mixed_instances_policy_lists_all_types_and_ca_uses_the_first(aws: AwsEnvironment) -> None:
    """Every override type is listed; the views are of the first (what cluster-autoscaler assumes)."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-mixed", "t3.large", 30)
    policy = {
        "LaunchTemplate": {
            "LaunchTemplateSpecification": {"LaunchTemplateName": "ng-mixed", "Version": "$Latest"},
            "Overrides": [{"InstanceType": "m5.xlarge"}, {"InstanceType": "m5.large"}],
        }
    }
    asg(clients.autoscaling, "ng-mixed", ENABLED, MixedInstancesPolicy=policy)
    groups, outcomes = discover(clients)
    assert groups[0].instance_types == ("m5.xlarge", "m5.large")
    template = outcomes["ng-mixed"].template
    assert template is not None and template.autoscaler is not None and template.actual is not None
    assert template.autoscaler.allocatable["cpu"] == 4000
    assert template.actual.labels["node.kubernetes.io/instance-type"] == "m5.xlarge"
    assert template.actual.allocatable["ephemeral-storage"] == allocatable_ephemeral_storage(30 * GIB) * 1000


def test_managed_node_group_labels_taints_and_tag_target(aws: AwsEnvironment) -> None:
    """An ASG tagged eks:nodegroup-name is the managed node group: DescribeNodegroup's labels and
    taints reach both views, and its resources/* tags are planned on the node group itself."""
    clients = AwsClients.from_environment()
    seed_moto()
    groups, outcomes = discover(clients)
    general = next(g for g in groups if g.name == "ng-general")
    assert general.provider == "eks-managed" and general.asg_name == "eks-ng-general-demo"
    template = outcomes["ng-general"].template
    assert template is not None and template.autoscaler is not None and template.actual is not None
    assert template.autoscaler.labels["workload"] == "general"
    assert template.autoscaler.labels["eks.amazonaws.com/nodegroup"] == "ng-general"
    assert template.actual.labels["workload"] == "general"
    assert template.actual.labels["eks.amazonaws.com/nodegroup"] == "ng-general"
    from controller.tagsync import plan_tag_sync

    changes = plan_tag_sync(groups, {n: o.template for n, o in outcomes.items() if o.template})
    general_changes = [c for c in changes if c.node_group == "ng-general"]
    assert general_changes and all(c.target == "eks-nodegroup" for c in general_changes)
    assert all(":nodegroup/demo/ng-general/" in c.resource for c in general_changes)


def test_more_asgs_than_one_page(aws: AwsEnvironment) -> None:
    """DescribeAutoScalingGroups is followed through every page: 12 groups, 5 a page, 3 calls."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "shared", "m5.large", 20)
    for i in range(12):
        asg(clients.autoscaling, f"ng-{i:02d}", ENABLED, LaunchTemplate={"LaunchTemplateName": "shared"})
    asg(clients.autoscaling, "not-ours", {}, LaunchTemplate={"LaunchTemplateName": "shared"})
    seen = inject_errors(clients.autoscaling, "DescribeAutoScalingGroups", times=0)
    groups, _ = discover(clients, page_size=5)
    assert [g.name for g in groups] == [f"ng-{i:02d}" for i in range(12)]
    assert len(seen.calls) == 3


def test_throttled_call_is_retried(aws: AwsEnvironment) -> None:
    """Two Throttling answers, then success: botocore's standard retries absorb them."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", ENABLED)
    throttled = inject_errors(clients.ec2, "DescribeLaunchTemplateVersions", code="Throttling", times=2)
    groups, outcomes = discover(clients)
    assert throttled.injected == 2 and len(throttled.calls) == 3
    assert groups[0].error == "" and outcomes["ng-batch"].template is not None


def test_access_denied_on_one_group_keeps_its_last_template(aws: AwsEnvironment) -> None:
    """AccessDenied while reading one group: that group keeps its previous template with the reason;
    the other group is rebuilt; nothing crashes and nothing is built from half the data."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-a", "m5.large", 50)
    launch_template(clients.ec2, "ng-b", "m5.large", 20)
    asg(clients.autoscaling, "ng-a", ENABLED)
    asg(clients.autoscaling, "ng-b", ENABLED)
    _, first = discover(clients)
    previous = {name: o.template for name, o in first.items() if o.template is not None}
    clients.autoscaling.update_auto_scaling_group(AutoScalingGroupName="ng-a", MaxSize=3)
    clients.autoscaling.update_auto_scaling_group(AutoScalingGroupName="ng-b", MaxSize=3)
    # ng-a is read first (groups are sorted): the first call of the operation is its call.
    denied = inject_errors(clients.ec2, "DescribeLaunchTemplateVersions", code="AccessDenied", status=403)
    groups, second = discover(clients, previous)
    assert denied.injected == 1
    assert "AccessDenied" in groups[0].error
    assert second["ng-a"].template == previous["ng-a"] and "AccessDenied" in second["ng-a"].reason
    assert second["ng-b"].template is not None and second["ng-b"].template.max_size == 3
    assert second["ng-b"].reason == ""


def test_unknown_instance_type_gives_no_template_and_says_why(aws: AwsEnvironment) -> None:
    """A type neither EC2 nor fitguard's table knows: no template from guesses, a reason instead."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-x", "x9.huge", 50)
    asg(clients.autoscaling, "ng-x", ENABLED)
    _, outcomes = discover(clients)
    assert outcomes["ng-x"].template is None
    assert "x9.huge" in outcomes["ng-x"].reason


def test_cli_once_dry_run_json(
    aws: AwsEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fitguard controller --once --dry-run -o json` on the seeded demo: both views of each group,
    the tag plan for the group at zero, nothing written to AWS."""
    seed_moto()
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"ip-10-0-0-{i}",
                "labels": {
                    "eks.amazonaws.com/nodegroup": "ng-burst",
                    "node.kubernetes.io/instance-type": "t3.large",
                    "kubernetes.io/hostname": f"ip-10-0-0-{i}",
                },
            },
            "status": {
                "allocatable": {
                    "cpu": "1930m",
                    "memory": "7220Mi",
                    "ephemeral-storage": "19136439364",
                    "pods": "35",
                },
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for i in (1, 2)
    ]
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
        "spec": {
            "template": {"spec": {"containers": [{"name": "p", "resources": {"requests": {"cpu": "100m"}}}]}}
        },
    }
    state = tmp_path / "cluster.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*nodes, daemonset]}))
    argv = ["controller", "--once", "--dry-run", "-o", "json", "--state", str(state)]
    code = fitguard_main(argv, only="controller")
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    by_name = {o["metadata"]["name"]: o["spec"] for o in report["nodeGroups"]}
    assert set(by_name) == {"ng-batch", "ng-burst", "ng-general"}
    assert "ephemeral-storage" in by_name["ng-batch"]["actual"]["allocatable"]
    assert "ephemeral-storage" not in by_name["ng-batch"]["autoscaler"]["allocatable"]
    assert by_name["ng-burst"]["nodes"] == 2 and by_name["ng-burst"]["actual"]["source"] == "live-node"
    assert by_name["ng-burst"]["daemonSetOverhead"]["cpu"] == "100m"
    assert by_name["ng-general"]["provider"] == "eks-managed"
    assert {"nodeGroup": "ng-batch", "key": EPH_TAG} in [
        {"nodeGroup": c["nodeGroup"], "key": c["key"]} for c in report["tagSync"]
    ]
    assert report["scaleUps"] == []
    tags = {t["Key"] for t in AwsClients.from_environment().autoscaling.describe_tags()["Tags"]}
    assert EPH_TAG not in tags


def test_label_and_taint_tags_carry_what_live_nodes_have_into_the_autoscaler_view(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """With --sync-autoscaler-label-tags, a self-managed ASG whose live node carries team=ml and a
    dedicated=gpu:NoSchedule taint gets label/team and taint/dedicated tags (kubelet's, the cloud
    provider's and EKS's labels are never tagged); once written, cluster-autoscaler's view has them."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-ml", "m5.large", 50)
    asg(clients.autoscaling, "ng-ml", ENABLED)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "ip-10-0-9-9.ec2.internal",
            "labels": {
                "eks.amazonaws.com/nodegroup": "ng-ml",
                "kubernetes.io/hostname": "ip-10-0-9-9.ec2.internal",
                "node.kubernetes.io/instance-type": "m5.large",
                "team": "ml",
            },
        },
        "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29", "ephemeral-storage": "44Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node]}))
    plan = ControllerOptions(state=str(state), sync_label_tags=True)
    label_tag = "k8s.io/cluster-autoscaler/node-template/label/team"
    taint_tag = "k8s.io/cluster-autoscaler/node-template/taint/dedicated"

    planned = {c["key"]: c["value"] for c in run_once(plan, clients=clients).to_json()["tagSync"]}
    assert planned[label_tag] == "ml" and planned[taint_tag] == "gpu:NoSchedule"
    assert not any("hostname" in key or "instance-type" in key for key in planned)
    assert label_tag not in {
        c["key"] for c in run_once(ControllerOptions(state=str(state)), clients=clients).to_json()["tagSync"]
    }

    run_once(
        ControllerOptions(state=str(state), sync_autoscaler_tags="apply", sync_label_tags=True),
        clients=clients,
    )
    after = run_once(plan, clients=clients).to_json()
    assert after["tagSync"] == []
    template = NodeGroupTemplate.from_object(after["nodeGroups"][0])
    assert template.autoscaler is not None and template.autoscaler.labels["team"] == "ml"
    assert [(t.key, t.value, t.effect) for t in template.autoscaler.taints] == [
        ("dedicated", "gpu", "NoSchedule")
    ]


def test_shapes_from_ec2_are_cluster_autoscalers_i386_and_arm64_mac_are_amd64(aws: AwsEnvironment) -> None:
    """moto's DescribeInstanceTypes lists t2.medium as [i386, x86_64] and mac2.metal as [arm64_mac]:
    as cluster-autoscaler's transformInstanceType reads them, both are amd64 (not 386, not arm64);
    p4d.24xlarge's 8 GPUs count. Whole shapes, read from EC2 (moto), not from fitguard's table."""
    clients = AwsClients.from_environment()
    for name, instance_type in (("ng-t2", "t2.medium"), ("ng-mac", "mac2.metal"), ("ng-p4d", "p4d.24xlarge")):
        launch_template(clients.ec2, name, instance_type, 50)
        asg(clients.autoscaling, name, ENABLED)
    groups, _ = discover(clients)
    assert {g.name: (g.shape, g.shape_source) for g in groups} == {
        "ng-t2": (InstanceShape("t2.medium", vcpu=2, memory_mib=4096, gpu=0, architecture="amd64"), "ec2"),
        "ng-mac": (InstanceShape("mac2.metal", vcpu=8, memory_mib=16384, gpu=0, architecture="amd64"), "ec2"),
        "ng-p4d": (
            InstanceShape("p4d.24xlarge", vcpu=96, memory_mib=1179648, gpu=8, architecture="amd64"),
            "ec2",
        ),
    }


def test_cli_once_json_t2_medium_is_amd64_and_p4d_has_737_pods(
    aws: AwsEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fitguard controller --once --dry-run -o json`, two groups at zero: t2.medium's template is
    amd64 in both views (EC2 says i386 first); p4d.24xlarge's estimated node has 737 pods (its
    default network card, as eni-max-pods.txt), not 2942, and the memory EKS reserves for 737."""
    clients = AwsClients.from_environment()
    for name, instance_type in (("ng-t2", "t2.medium"), ("ng-p4d", "p4d.24xlarge")):
        launch_template(clients.ec2, name, instance_type, 50)
        asg(clients.autoscaling, name, ENABLED)
    state = tmp_path / "cluster.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    argv = ["controller", "--once", "--dry-run", "-o", "json", "--state", str(state)]
    code = fitguard_main(argv, only="controller")
    specs = {o["metadata"]["name"]: o["spec"] for o in json.loads(capsys.readouterr().out)["nodeGroups"]}
    assert code == 0
    assert {
        name: (
            spec["autoscaler"]["labels"]["kubernetes.io/arch"],
            spec["actual"]["labels"]["kubernetes.io/arch"],
        )
        for name, spec in specs.items()
    } == {"ng-t2": ("amd64", "amd64"), "ng-p4d": ("amd64", "amd64")}
    assert {name: spec["autoscaler"]["allocatable"] for name, spec in specs.items()} == {
        "ng-t2": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "0", "pods": "110"},
        "ng-p4d": {"cpu": "96", "memory": "1152Gi", "nvidia.com/gpu": "8", "pods": "110"},
    }
    # EKS's reservations written out: cpu 6% of the first core, 1% of the second, 0.5% of the next
    # two, 0.25% of the rest; memory 11 MiB per pod + 255 MiB, plus 100 MiB eviction threshold.
    assert {name: spec["actual"]["allocatable"] for name, spec in specs.items()} == {
        "ng-t2": {
            "cpu": f"{2000 - 60 - 10}m",
            "ephemeral-storage": "44Gi",
            "memory": f"{4096 - (11 * 17 + 255) - 100}Mi",
            "pods": "17",
        },
        "ng-p4d": {
            "cpu": f"{96000 - 60 - 10 - 2 * 5 - 92 * 2.5:.0f}m",
            "ephemeral-storage": "44Gi",
            "memory": f"{1179648 - (11 * 737 + 255) - 100}Mi",
            "pods": "737",
            "vpc.amazonaws.com/pod-eni": "62",
        },
    }
