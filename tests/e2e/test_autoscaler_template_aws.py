"""cluster-autoscaler's template of an AWS group at zero, built by fitguard from moto (server mode,
boto3 over HTTP) and judged through `fitguard controller --once -o json` and POST /validate: the
deprecated labels, the kube-proxy pod, the taints it keeps, attribute-based instance selection and
a failed DescribeNodegroup, each as cluster-autoscaler has them (capacity/autoscaler_view.py cites
the upstream functions)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from capacity.autoscaler_view import LABEL_PREFIX, RESOURCES_PREFIX, TAINT_PREFIX
from controller.aws.clients import AwsClients
from controller.run import ControllerOptions, run_once
from fitguard.cli import main as fitguard_main
from tests.awsfixtures import AwsEnvironment, fake_instance_requirements
from tests.controller.test_discovery_aws import ENABLED, asg, launch_template
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import WebhookOptions

# Every label cluster-autoscaler's m5.large template in us-east-1a carries, and no other.
M5_LARGE_TEMPLATE_LABELS = {
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": "m5.large",
    "beta.kubernetes.io/instance-type": "m5.large",
    "topology.kubernetes.io/region": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1",
    "topology.kubernetes.io/zone": "us-east-1a",
    "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
    "topology.ebs.csi.aws.com/zone": "us-east-1a",
    "cluster-autoscaler.kubernetes.io/template-node": "true",
}


def controller_once(tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: dict[str, Any]) -> Any:
    """`fitguard controller --once --dry-run -o json` against moto and a state file of `objects`."""
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    capsys.readouterr()
    argv = ["controller", "--once", "--dry-run", "-o", "json", "--state", str(state)]
    assert fitguard_main(argv, only="controller") == 0
    return json.loads(capsys.readouterr().out)


def validate(objects: list[dict[str, Any]], pod_spec: dict[str, Any]) -> dict[str, Any]:
    """POST /validate with an AdmissionReview of a pod; the `response` of the answer."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c"}], **pod_spec},
    }
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": "default",
            "object": pod,
        },
    }
    client = create_app(from_objects(objects), WebhookOptions(mode="enforce")).test_client()
    answer = client.post("/validate", json=review)
    assert answer.status_code == 200
    return dict(answer.get_json()["response"])


def daemonset(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}
            }
        },
    }


def test_beta_os_selector_fits_no_template_and_validate_says_so(
    aws: AwsEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An m5.large ASG at zero: its autoscaler view has exactly the labels cluster-autoscaler gives
    (UpdateDeprecatedLabels: beta instance-type, region and zone; no beta os or arch). A pod that
    selects beta.kubernetes.io/os=linux is refused with the label named and the fix; the same pod
    selecting kubernetes.io/os=linux is admitted."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-zero", "m5.large", 50)
    asg(clients.autoscaling, "ng-zero", ENABLED)
    report = controller_once(tmp_path, capsys)
    [group] = report["nodeGroups"]
    assert group["spec"]["autoscaler"]["labels"] == M5_LARGE_TEMPLATE_LABELS
    assert group["spec"]["actual"]["labels"]["beta.kubernetes.io/os"] == "linux"

    denied = validate(report["nodeGroups"], {"nodeSelector": {"beta.kubernetes.io/os": "linux"}})
    assert denied["allowed"] is False
    lines = denied["status"]["message"].splitlines()
    assert lines[0] == "pod does not fit any node group"
    assert lines[1] == (
        "ng-zero: node(s) didn't match Pod's node affinity/selector: its nodes have no "
        "beta.kubernetes.io/os label; a real node has beta.kubernetes.io/os, but the node "
        "cluster-autoscaler builds while the group has 0 nodes does not: select on kubernetes.io/os "
        "instead, or tag the ASG k8s.io/cluster-autoscaler/node-template/label/beta.kubernetes.io/os"
    )
    assert validate(report["nodeGroups"], {"nodeSelector": {"kubernetes.io/os": "linux"}})["allowed"] is True


def test_kube_proxy_pod_and_matching_daemonsets_count_on_the_template(
    aws: AwsEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cluster-autoscaler's template node runs its kube-proxy mirror pod (100m cpu, one pod) and the
    DaemonSets that match the template's own labels: one selecting beta.kubernetes.io/os runs on a
    real node but not on the template. A pod asking for 1950m of the 2 cpus is refused, 1900m fits."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-zero", "m5.large", 50)
    asg(clients.autoscaling, "ng-zero", {**ENABLED, RESOURCES_PREFIX + "cpu": "2"})
    everywhere = daemonset("node-agent", "50m", tolerations=[{"operator": "Exists"}])
    beta_only = daemonset("beta-agent", "70m", nodeSelector={"beta.kubernetes.io/os": "linux"})
    report = controller_once(tmp_path, capsys, everywhere, beta_only)
    [group] = report["nodeGroups"]
    assert group["spec"]["daemonSetOverhead"] == {"cpu": "120m", "pods": "2"}
    assert group["spec"]["autoscalerOverhead"] == {"cpu": "150m", "pods": "2"}

    objects = [*report["nodeGroups"], everywhere, beta_only]
    refused = validate(objects, {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1900m"}}}]})
    assert refused["allowed"] is False
    assert refused["status"]["message"].splitlines()[1] == (
        "ng-zero: Insufficient cpu: requests 1900m; an m5.large node would offer 1810m, and "
        "cluster-autoscaler sees 1850m while the group has 0 nodes: request less or use a larger type"
    )
    fits = validate(objects, {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1850m"}}}]})
    assert fits["allowed"] is True


def test_taints_cluster_autoscaler_keeps_and_drops(
    aws: AwsEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Taint tags as SanitizeTaints leaves them: out-of-service and dedicated kept;
    NodeWithImpairedVolumes and the startup, status and ignore prefixes dropped. A live node's
    taints go through the same rule in the actual view."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-t", "m5.large", 50)
    tags = {
        **ENABLED,
        TAINT_PREFIX + "node.kubernetes.io/out-of-service": "nodeshutdown:NoExecute",
        TAINT_PREFIX + "NodeWithImpairedVolumes": "true:NoSchedule",
        TAINT_PREFIX + "startup-taint.cluster-autoscaler.kubernetes.io/cni": "x:NoSchedule",
        TAINT_PREFIX + "status-taint.cluster-autoscaler.kubernetes.io/gpu": "x:NoSchedule",
        TAINT_PREFIX + "ignore-taint.cluster-autoscaler.kubernetes.io/agent": "x:NoSchedule",
        TAINT_PREFIX + "dedicated": "gpu:NoSchedule",
    }
    asg(clients.autoscaling, "ng-t", tags)
    node_taints = [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"},
        {"key": "NodeWithImpairedVolumes", "value": "true", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
        {"key": "status-taint.cluster-autoscaler.kubernetes.io/gpu", "value": "x", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    ]
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ip-10-0-0-1", "labels": {"eks.amazonaws.com/nodegroup": "ng-t"}},
        "spec": {"taints": node_taints},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    kept = [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    ]
    [at_zero] = controller_once(tmp_path, capsys)["nodeGroups"]
    assert at_zero["spec"]["autoscaler"]["taints"] == kept
    assert at_zero["spec"]["actual"]["taints"] == kept
    [live] = controller_once(tmp_path, capsys, node)["nodeGroups"]
    assert live["spec"]["actual"]["source"] == "live-node"
    assert live["spec"]["actual"]["taints"] == kept


CATALOGUE = [
    ("c5.large", 2, 4096, "x86_64"),
    ("m6g.xlarge", 4, 16384, "arm64"),
    ("m5.xlarge", 4, 16384, "x86_64"),
    ("m5.2xlarge", 8, 32768, "x86_64"),
]


def _image(ec2: Any, architecture: str = "x86_64") -> str:
    """One of moto's preloaded public images of this architecture (register_image sets none)."""
    images = ec2.describe_images(Filters=[{"Name": "architecture", "Values": [architecture]}])["Images"]
    return str(images[0]["ImageId"])


def test_requirements_override_takes_the_first_matching_type_and_its_minimums(
    aws: AwsEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mixed instances policy whose one override has InstanceRequirements (4-8 vCPUs, 16 GiB+,
    one NVIDIA GPU): the group's type is the first EC2 lists for the image's architecture, and the
    autoscaler view's cpu, memory and GPU are the requirements' minimums."""
    clients = AwsClients.from_environment()
    clients.ec2.create_launch_template(
        LaunchTemplateName="ng-abs", LaunchTemplateData={"ImageId": _image(clients.ec2)}
    )
    requirements = {
        "VCpuCount": {"Min": 4, "Max": 8},
        "MemoryMiB": {"Min": 16384},
        "AcceleratorManufacturers": ["nvidia"],
        "AcceleratorTypes": ["gpu"],
        "AcceleratorCount": {"Min": 1},
    }
    policy = {
        "LaunchTemplate": {
            "LaunchTemplateSpecification": {"LaunchTemplateName": "ng-abs", "Version": "$Latest"},
            "Overrides": [{"InstanceRequirements": requirements}],
        }
    }
    asg(clients.autoscaling, "ng-abs", ENABLED, MixedInstancesPolicy=policy)
    fake = fake_instance_requirements(clients.ec2, CATALOGUE)
    report = run_once(ControllerOptions(state=str(_empty_state(tmp_path))), clients=clients).to_json()
    [group] = report["nodeGroups"]
    assert group["spec"]["instanceTypes"] == ["m5.xlarge"]
    assert group["spec"]["autoscaler"]["allocatable"] == {
        "cpu": "4",
        "memory": "16Gi",
        "nvidia.com/gpu": "1",
        "pods": "110",
    }
    assert group["spec"]["autoscaler"]["labels"]["node.kubernetes.io/instance-type"] == "m5.xlarge"
    assert fake.requests == [
        {
            "Action": "GetInstanceTypesFromInstanceRequirements",
            "Version": "2016-11-15",
            "ArchitectureType.1": "x86_64",
            "VirtualizationType.1": "hvm",
            "InstanceRequirements.VCpuCount.Min": "4",
            "InstanceRequirements.VCpuCount.Max": "8",
            "InstanceRequirements.MemoryMiB.Min": "16384",
            "InstanceRequirements.AcceleratorManufacturer.1": "nvidia",
            "InstanceRequirements.AcceleratorType.1": "gpu",
            "InstanceRequirements.AcceleratorCount.Min": "1",
        }
    ]


def test_launch_template_requirements_take_the_first_matching_type_as_it_is(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """A launch template with InstanceRequirements and no type, used directly by the ASG: the type
    is the first match for the image's architecture (arm64 here), and its own shape is used (no
    mixed instances policy, so no minimums over it). With no match: no template, and why."""
    clients = AwsClients.from_environment()
    data = {
        "ImageId": _image(clients.ec2, "arm64"),
        "InstanceRequirements": {"VCpuCount": {"Min": 4}, "MemoryMiB": {"Min": 8192}},
    }
    clients.ec2.create_launch_template(LaunchTemplateName="ng-arm", LaunchTemplateData=data)
    asg(clients.autoscaling, "ng-arm", ENABLED)
    impossible = {
        "ImageId": data["ImageId"],
        "InstanceRequirements": {"VCpuCount": {"Min": 96}, "MemoryMiB": {"Min": 1024}},
    }
    clients.ec2.create_launch_template(LaunchTemplateName="ng-none", LaunchTemplateData=impossible)
    asg(clients.autoscaling, "ng-none", ENABLED)
    fake_instance_requirements(clients.ec2, CATALOGUE)
    report = run_once(ControllerOptions(state=str(_empty_state(tmp_path))), clients=clients).to_json()
    [group] = report["nodeGroups"]
    assert group["metadata"]["name"] == "ng-arm"
    assert group["spec"]["instanceTypes"] == ["m6g.xlarge"]
    assert group["spec"]["autoscaler"]["allocatable"] == {
        "cpu": "4",
        "memory": "16Gi",
        "nvidia.com/gpu": "0",
        "pods": "110",
    }
    assert group["spec"]["autoscaler"]["labels"]["kubernetes.io/arch"] == "arm64"


def test_failed_describe_nodegroup_builds_the_group_without_its_data(
    aws: AwsEnvironment, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An ASG tagged as a managed node group whose DescribeNodegroup fails (EKS does not know the
    cluster): like cluster-autoscaler, the group still gets both views, built from the ASG alone,
    the failure is logged, and no tag is planned for a node group nobody could describe."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "eks-ng-gone", "m5.large", 20)
    tags = {
        **ENABLED,
        "eks:nodegroup-name": "ng-gone",
        "eks:cluster-name": "nowhere",
        LABEL_PREFIX + "team": "a",
    }
    asg(clients.autoscaling, "eks-ng-gone", tags)
    with caplog.at_level(logging.WARNING, logger="controller.aws.discovery"):
        report = run_once(ControllerOptions(state=str(_empty_state(tmp_path))), clients=clients).to_json()
    [group] = report["nodeGroups"]
    assert group["metadata"]["name"] == "ng-gone" and group["spec"]["provider"] == "eks-managed"
    assert group["spec"]["autoscaler"]["labels"] == {
        **M5_LARGE_TEMPLATE_LABELS,
        "nodegroup-name": "ng-gone",
        "cluster-name": "nowhere",
        "team": "a",
    }
    assert group["spec"]["autoscaler"]["allocatable"] == {
        "cpu": "2",
        "memory": "8Gi",
        "nvidia.com/gpu": "0",
        "pods": "110",
    }
    assert "staleReason" not in group["spec"]
    assert [r.getMessage() for r in caplog.records if "built without" in r.getMessage()] == [
        "node group ng-gone: built without its managed node group's data: DescribeNodegroup: "
        + _describe_nodegroup_error(caplog)
    ]
    assert report["tagSync"] == []


def _describe_nodegroup_error(caplog: pytest.LogCaptureFixture) -> str:
    message = next(r.getMessage() for r in caplog.records if "built without" in r.getMessage())
    return message.split("DescribeNodegroup: ", 1)[1]


def _empty_state(tmp_path: Path) -> Path:
    state = tmp_path / "empty.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}))
    return state
