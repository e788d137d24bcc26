"""Differential test: for 150 generated ASG / launch template / launch configuration / tag / managed
node group combinations (300 under `make test-deep`) created in moto (server mode, boto3 over HTTP),
the autoscaler view that `fitguard controller --once` publishes equals an independent re-statement
of what cluster-autoscaler builds, written here from its Go source without fitguard's code (its own
quantity parser, its own tag reading, its own DescribeNodegroup reading): labels, taints,
allocatable (which is capacity on a template) and the pods already on the template node, each
compared whole.

Re-stated from kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws: aws_manager.go
(getAsgTemplate, buildNodeFromTemplate, updateCapacityWithRequirementsOverrides, buildGenericLabels,
extractLabelsFromAsg, extractAllocatableResourcesFromAsg/FromTags, extractTaintsFromAsg),
aws_wrapper.go (getInstanceTypesForAsgs, getManagedNodegroupInfo, taintEksTranslator),
auto_scaling_groups.go (buildAsgFromAWS), aws_cloud_provider.go (TemplateNodeInfo); and
kubernetes-sigs/cluster-autoscaler pkg/simulator/node_info_utils.go
(SanitizedTemplateNodeInfoFromNodeGroup), pkg/utils/labels (UpdateDeprecatedLabels),
pkg/utils/taints (SanitizeTaints), pkg/cloudprovider/utils.go (BuildKubeProxy).
"""

from __future__ import annotations

import os
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from controller.aws.clients import AwsClients
from controller.run import ControllerOptions, run_once
from tests.awsfixtures import AwsEnvironment, fake_instance_requirements
from tests.budget import deep

# 150 reach every way of naming the type, 37 managed node groups and a missing one (the generator's
# coverage is asserted below); each group costs moto about 0.2 s of CPU here. `make test-deep`: 300.
COMBINATIONS = int(os.environ.get("FITGUARD_DIFF_COMBINATIONS", "300" if deep() else "150"))
SEED = 1313
CLUSTER = "diff"
RES = "k8s.io/cluster-autoscaler/node-template/resources/"
LABEL = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
ENABLED = "k8s.io/cluster-autoscaler/enabled"
TYPES = ["m5.large", "c5.xlarge", "r5.large", "m6g.large", "g4dn.xlarge", "c6g.xlarge", "m5.2xlarge"]
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]

# ---------------------------------------------------------------- cluster-autoscaler, restated

_SUFFIXES = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(1000),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
}
_QUANTITY = re.compile(r"([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(Ki|Mi|Gi|Ti|m|k|M|G|T)?")


def quantity(text: str) -> Fraction | None:
    """resource.ParseQuantity for the forms generated here (None: it would fail to parse)."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    return Fraction(match.group(1)) * _SUFFIXES[match.group(2) or ""]


def instance_facts(ec2: Any) -> dict[str, dict[str, Any]]:
    """What cluster-autoscaler's InstanceType holds: vCPUs, memory, NVIDIA GPUs, architecture."""
    facts = {}
    for info in ec2.describe_instance_types(InstanceTypes=TYPES)["InstanceTypes"]:
        gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
        facts[info["InstanceType"]] = {
            "vcpu": info["VCpuInfo"]["DefaultVCpus"],
            "memory_mib": info["MemoryInfo"]["SizeInMiB"],
            "gpu": sum(g["Count"] for g in gpus if g["Manufacturer"] == "NVIDIA"),
            "arch": {"x86_64": "amd64", "arm64": "arm64"}[info["ProcessorInfo"]["SupportedArchitectures"][0]],
            "ec2_arch": info["ProcessorInfo"]["SupportedArchitectures"][0],
        }
    return facts


def managed_nodegroup_info(eks: Any, nodegroup: str, cluster: str) -> dict[str, Any] | None:
    """getManagedNodegroupInfo: labels (with the synthetic ones), taints, tags; None on an error."""
    try:
        ng = eks.describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup)["nodegroup"]
    except eks.exceptions.ResourceNotFoundException:
        return None
    labels: dict[str, str] = {}
    if ng.get("diskSize") is not None:
        labels["diskSize"] = str(ng["diskSize"])
    if ng.get("amiType"):
        labels["amiType"] = ng["amiType"]
    if ng.get("capacityType"):
        labels["eks.amazonaws.com/capacityType"] = ng["capacityType"]
    if ng.get("version"):
        labels["k8sVersion"] = ng["version"]
    if ng.get("nodegroupName"):
        labels["eks.amazonaws.com/nodegroup"] = ng["nodegroupName"]
    labels.update(ng.get("labels") or {})
    effects = {
        "NO_SCHEDULE": "NoSchedule",
        "NO_EXECUTE": "NoExecute",
        "PREFER_NO_SCHEDULE": "PreferNoSchedule",
    }
    taints = []
    for t in ng.get("taints") or []:
        if "key" in t and "value" in t:
            if t["effect"] not in effects:
                return None
            taints.append({"key": t["key"], "value": t["value"], "effect": effects[t["effect"]]})
    return {"labels": labels, "taints": taints, "tags": dict(ng.get("tags") or {})}


def ca_template(
    asg: dict[str, Any], itype: str, facts: dict[str, Any], lt_data: dict[str, Any], eks: Any
) -> dict[str, Any]:
    """The template node cluster-autoscaler simulates for an ASG at zero, hostname left out."""
    tags = [(t["Key"], t["Value"]) for t in asg["Tags"]]
    zone = asg["AvailabilityZones"][0]
    region = zone[:-1]
    shape = facts[itype]
    capacity: dict[str, Fraction] = {
        "pods": Fraction(110),
        "cpu": Fraction(shape["vcpu"]),
        "nvidia.com/gpu": Fraction(shape["gpu"]),
        "memory": Fraction(shape["memory_mib"] * 1024 * 1024),
    }
    policy = asg.get("MixedInstancesPolicy")
    if policy is not None:
        overrides = policy["LaunchTemplate"].get("Overrides") or []
        if not [o for o in overrides if o.get("InstanceType")]:
            if len(overrides) == 1 and overrides[0].get("InstanceRequirements"):
                req = overrides[0]["InstanceRequirements"]
            else:
                req = lt_data.get("InstanceRequirements") or {}
            if (req.get("VCpuCount") or {}).get("Min") is not None:
                capacity["cpu"] = Fraction(req["VCpuCount"]["Min"])
            if (req.get("MemoryMiB") or {}).get("Min") is not None:
                capacity["memory"] = Fraction(req["MemoryMiB"]["Min"] * 1024 * 1024)
            for manufacturer in req.get("AcceleratorManufacturers") or []:
                for kind in req.get("AcceleratorTypes") or []:
                    if manufacturer == "nvidia" and kind == "gpu":
                        capacity["nvidia.com/gpu"] = Fraction(req["AcceleratorCount"]["Min"])
    for key, value in tags:
        parts = key.split(RES)
        if len(parts) > 1 and parts[1] != "" and quantity(value) is not None:
            capacity[parts[1]] = quantity(value)  # type: ignore[assignment]
    labels = {
        "kubernetes.io/arch": shape["arch"],
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": itype,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "topology.ebs.csi.aws.com/zone": zone,
        "kubernetes.io/hostname": "template",
    }
    for key, value in tags:
        parts = key.split(LABEL)
        if len(parts) <= 1:
            parts = key.split("eks:")
        if len(parts) > 1 and parts[1] != "":
            labels[parts[1]] = value
    taints = []
    for key, value in tags:
        if re.search("(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)", value):
            parts = key.split(TAINT)
            if len(parts) > 1:
                taint_value, effect = value.split(":", 1)
                taints.append({"key": parts[1], "value": taint_value, "effect": effect})
    if labels.get("nodegroup-name") and labels.get("cluster-name"):
        mng = managed_nodegroup_info(eks, labels["nodegroup-name"], labels["cluster-name"])
        if mng is not None:
            labels.update(mng["labels"])
            taints += mng["taints"]
            for key, value in mng["tags"].items():
                parts = key.split(RES)
                if len(parts) > 1 and parts[1] != "" and quantity(value) is not None:
                    capacity[parts[1]] = quantity(value)  # type: ignore[assignment]
    # SanitizedTemplateNodeInfoFromNodeGroup: SanitizeTaints, the template-node label, then
    # UpdateDeprecatedLabels; the hostname is random, and fitguard does not publish it.
    dropped = {
        "ToBeDeletedByClusterAutoscaler",
        "DeletionCandidateOfClusterAutoscaler",
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/pid-pressure",
        "node.cloudprovider.kubernetes.io/uninitialized",
        "node.cloudprovider.kubernetes.io/shutdown",
        "cloud.google.com/impending-node-termination",
        "NodeWithImpairedVolumes",
    }
    prefixes = (
        "ignore-taint.cluster-autoscaler.kubernetes.io/",
        "startup-taint.cluster-autoscaler.kubernetes.io/",
        "status-taint.cluster-autoscaler.kubernetes.io/",
    )
    taints = [t for t in taints if t["key"] not in dropped and not t["key"].startswith(prefixes)]
    labels["cluster-autoscaler.kubernetes.io/template-node"] = "true"
    for stable, beta in (
        ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type"),
        ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"),
        ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"),
    ):
        if stable in labels:
            labels[beta] = labels[stable]
    del labels["kubernetes.io/hostname"]
    return {
        "allocatable": capacity,
        "labels": labels,
        "taints": [{k: v for k, v in t.items() if k != "value" or v} for t in taints],
        "pods_on_template": {"cpu": Fraction(1, 10), "pods": Fraction(1)},  # BuildKubeProxy only
    }


# ---------------------------------------------------------------- the generated combinations

LABEL_CHOICES = [
    (LABEL + "team", ["ml", "web", ""]),
    (LABEL + "kubernetes.io/arch", ["amd64", "arm64"]),
    (LABEL + "node.kubernetes.io/instance-type", ["custom"]),
    (LABEL + "topology.kubernetes.io/zone", ["us-east-1z"]),
    (LABEL + "beta.kubernetes.io/os", ["linux"]),
    (LABEL, ["empty-name"]),
    ("team/" + LABEL + "tier", ["gold"]),
    (LABEL + "a/" + LABEL + "b", ["cut"]),
    ("eks:extra", ["x"]),
]
RESOURCE_CHOICES = [
    (RES + "ephemeral-storage", ["44Gi", "20G", "bogus", ""]),
    (RES + "vpc.amazonaws.com/pod-eni", ["9", "18"]),
    (RES + "cpu", ["3920m", "1.5", "2"]),
    (RES + "memory", ["7Gi", "16000Mi", "12Q"]),
    (RES + "pods", ["58", "29"]),
    (RES + "nvidia.com/gpu", ["4"]),
    (RES, ["5"]),
]
TAINT_CHOICES = [
    (
        TAINT + "dedicated",
        ["gpu:NoSchedule", ":NoExecute", "a:b:PreferNoSchedule", "v:Bogus", "x:NoScheduleX"],
    ),
    (TAINT + "node.kubernetes.io/out-of-service", ["nodeshutdown:NoExecute"]),
    (TAINT + "NodeWithImpairedVolumes", ["true:NoSchedule"]),
    (TAINT + "node.kubernetes.io/not-ready", [":NoExecute"]),
    (TAINT + "ignore-taint.cluster-autoscaler.kubernetes.io/cni", ["x:NoSchedule"]),
    (TAINT + "startup-taint.cluster-autoscaler.kubernetes.io/agent", ["x:NoSchedule"]),
    (TAINT + "status-taint.cluster-autoscaler.kubernetes.io/gpu", ["x:NoSchedule"]),
    (TAINT, ["y:NoSchedule"]),
]
MANAGED = [
    {"name": "mng-plain"},
    {"name": "mng-labels", "labels": {"workload": "batch", "kubernetes.io/arch": "wrong"}},
    {"name": "mng-taints", "taints": [{"key": "gpu", "value": "true", "effect": "NO_SCHEDULE"}]},
    {"name": "mng-storage", "tags": {RES + "ephemeral-storage": "80Gi", RES + "cpu": "bogus"}},
    {
        "name": "mng-all",
        "labels": {"team": "ng"},
        "taints": [{"key": "NodeWithImpairedVolumes", "value": "true", "effect": "NO_EXECUTE"}],
        "tags": {RES + "vpc.amazonaws.com/pod-eni": "3"},
    },
]


def seed_network(clients: AwsClients) -> tuple[str, str]:
    """An EKS cluster for the managed node groups; its subnet and role."""
    ec2 = clients.ec2
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20")["Subnet"]["SubnetId"]
    role = "arn:aws:iam::123456789012:role/fitguard-diff"
    clients.eks.create_cluster(name=CLUSTER, roleArn=role, resourcesVpcConfig={"subnetIds": [subnet]})
    return subnet, role


def create_nodegroup(clients: AwsClients, name: str, variant: dict[str, Any], subnet: str, role: str) -> None:
    clients.eks.create_nodegroup(
        clusterName=CLUSTER,
        nodegroupName=name,
        nodeRole=role,
        subnets=[subnet],
        instanceTypes=["m5.large"],
        labels=variant.get("labels", {}),
        taints=variant.get("taints", []),
        tags=variant.get("tags", {}),
        scalingConfig={"minSize": 0, "maxSize": 3, "desiredSize": 0},
    )


def pick(rng: random.Random, choices: list[tuple[str, list[str]]]) -> dict[str, str]:
    return {key: rng.choice(values) for key, values in rng.sample(choices, rng.randint(0, 3))}


def generate(rng: random.Random, index: int) -> dict[str, Any]:
    """One combination: how the ASG names its instance type, its zones, its tags."""
    tags = {
        ENABLED: "true",
        **pick(rng, LABEL_CHOICES),
        **pick(rng, RESOURCE_CHOICES),
        **pick(rng, TAINT_CHOICES),
    }
    managed = None
    if rng.random() < 0.3:
        # an existing managed node group (one of the variants) or one EKS does not know
        managed = rng.choice([*MANAGED, None])
        tags["eks:nodegroup-name"] = f"{managed['name'] if managed else 'missing'}-{index:03d}"
        if rng.random() < 0.8:
            tags["eks:cluster-name"] = CLUSTER
    source = rng.choice(
        [
            "launch-template",
            "launch-template",
            "configuration",
            "overrides",
            "requirements",
            "lt-requirements",
        ]
    )
    return {
        "name": f"asg-{index:03d}",
        "zones": rng.sample(ZONES, rng.randint(1, 3)),
        "tags": tags,
        "source": source,
        "types": rng.sample(TYPES, rng.randint(1, 3)),
        "vcpu_min": rng.choice([2, 4]),
        # arm64 types here have 8 GiB: an lt-requirements group (arm64 image) must match one
        "memory_min": rng.choice([4096, 8192] if source == "lt-requirements" else [4096, 8192, 16384]),
        "nvidia": rng.random() < 0.3,
        "managed": managed,
    }


def create(
    clients: AwsClients, combo: dict[str, Any], images: dict[str, str], network: tuple[str, str]
) -> None:
    name, first = combo["name"], combo["types"][0]
    if combo["managed"] is not None:
        create_nodegroup(clients, combo["tags"]["eks:nodegroup-name"], combo["managed"], *network)
    requirements = {
        "VCpuCount": {"Min": combo["vcpu_min"], "Max": 8},
        "MemoryMiB": {"Min": combo["memory_min"]},
    }
    if combo["nvidia"]:
        requirements.update(
            AcceleratorManufacturers=["nvidia"], AcceleratorTypes=["gpu"], AcceleratorCount={"Min": 1}
        )
    extra: dict[str, Any] = {}
    if combo["source"] == "configuration":
        clients.autoscaling.create_launch_configuration(
            LaunchConfigurationName=name, ImageId=images["x86_64"], InstanceType=first
        )
        extra["LaunchConfigurationName"] = name
    else:
        data: dict[str, Any] = {"ImageId": images["x86_64"], "InstanceType": first}
        if combo["source"] == "lt-requirements":
            data = {"ImageId": images["arm64"], "InstanceRequirements": requirements}
        clients.ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=data)
        spec = {"LaunchTemplateName": name, "Version": "$Latest"}
        if combo["source"] in ("launch-template", "lt-requirements"):
            extra["LaunchTemplate"] = spec
        elif combo["source"] == "overrides":
            overrides = [{"InstanceType": t} for t in combo["types"]]
            extra["MixedInstancesPolicy"] = {
                "LaunchTemplate": {"LaunchTemplateSpecification": spec, "Overrides": overrides}
            }
        else:
            overrides = [{"InstanceRequirements": requirements}]
            extra["MixedInstancesPolicy"] = {
                "LaunchTemplate": {"LaunchTemplateSpecification": spec, "Overrides": overrides}
            }
    clients.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        MinSize=0,
        MaxSize=5,
        DesiredCapacity=0,
        AvailabilityZones=combo["zones"],
        Tags=[
            {
                "ResourceId": name,
                "ResourceType": "auto-scaling-group",
                "Key": k,
                "Value": v,
                "PropagateAtLaunch": False,
            }
            for k, v in combo["tags"].items()
        ],
        **extra,
    )


def ca_instance_type(
    clients: AwsClients,
    asg: dict[str, Any],
    facts: dict[str, Any],
    catalogue: list[tuple[str, int, int, str]],
) -> tuple[str, dict[str, Any]]:
    """getInstanceTypesForAsgs, with EC2's GetInstanceTypesFromInstanceRequirements as the fake
    answers it (the first catalogue type in range for the image's architecture)."""
    if asg.get("LaunchConfigurationName"):
        [config] = clients.autoscaling.describe_launch_configurations(
            LaunchConfigurationNames=[asg["LaunchConfigurationName"]]
        )["LaunchConfigurations"]
        return config["InstanceType"], {}
    spec = (
        asg.get("LaunchTemplate")
        or asg["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
    )
    [version] = clients.ec2.describe_launch_template_versions(
        LaunchTemplateName=spec["LaunchTemplateName"], Versions=[spec["Version"]]
    )["LaunchTemplateVersions"]
    data = version["LaunchTemplateData"]
    overrides = (asg.get("MixedInstancesPolicy") or {}).get("LaunchTemplate", {}).get("Overrides") or []
    if overrides and overrides[0].get("InstanceType"):
        return overrides[0]["InstanceType"], data
    requirements = overrides[0]["InstanceRequirements"] if overrides else data.get("InstanceRequirements")
    if not requirements:
        return data["InstanceType"], data
    [image] = clients.ec2.describe_images(ImageIds=[data["ImageId"]])["Images"]
    for name, vcpu, mib, arch in catalogue:
        vcpus, memory = requirements["VCpuCount"], requirements["MemoryMiB"]
        if (
            arch == image["Architecture"]
            and vcpus["Min"] <= vcpu <= vcpus.get("Max", vcpu)
            and mib >= memory["Min"]
        ):
            return name, data
    raise AssertionError(f"no catalogue type for {asg['AutoScalingGroupName']}")


def test_autoscaler_view_equals_cluster_autoscalers_template(aws: AwsEnvironment, tmp_path: Path) -> None:
    """COMBINATIONS generated groups at zero: fitguard's autoscaler view of each equals the
    restatement of cluster-autoscaler above, field by field (labels, taints, allocatable, pods on
    the template)."""
    clients = AwsClients.from_environment()
    network = seed_network(clients)
    images = {
        arch: clients.ec2.describe_images(Filters=[{"Name": "architecture", "Values": [arch]}])["Images"][0][
            "ImageId"
        ]
        for arch in ("x86_64", "arm64")
    }
    facts = instance_facts(clients.ec2)
    catalogue = [(t, f["vcpu"], f["memory_mib"], f["ec2_arch"]) for t, f in sorted(facts.items())]
    fake_instance_requirements(clients.ec2, catalogue)
    rng = random.Random(SEED)
    combos = [generate(rng, i) for i in range(COMBINATIONS)]
    for combo in combos:
        create(clients, combo, images, network)
    state = tmp_path / "empty.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}))

    report = run_once(ControllerOptions(state=str(state)), clients=clients).to_json()

    published = {o["metadata"]["name"]: o["spec"] for o in report["nodeGroups"]}
    asgs = clients.autoscaling.get_paginator("describe_auto_scaling_groups").paginate().build_full_result()
    assert len(asgs["AutoScalingGroups"]) == COMBINATIONS
    managed_applied = 0
    for asg in asgs["AutoScalingGroups"]:
        tags = {t["Key"]: t["Value"] for t in asg["Tags"]}
        name = tags.get("eks:nodegroup-name") or asg["AutoScalingGroupName"]
        itype, lt_data = ca_instance_type(clients, asg, facts, catalogue)
        want = ca_template(asg, itype, facts, lt_data, clients.eks)
        got = published[name]
        assert got.get("staleReason") is None, name
        assert got["instanceTypes"][0] == itype, name
        view = got["autoscaler"]
        assert view["labels"] == want["labels"], name
        assert view["taints"] == want["taints"], name
        assert {k: quantity(v) for k, v in view["allocatable"].items()} == want["allocatable"], name
        assert {k: quantity(v) for k, v in got["autoscalerOverhead"].items()} == want["pods_on_template"], (
            name
        )
        managed_applied += "eks.amazonaws.com/nodegroup" in want["labels"]
    assert len(published) == COMBINATIONS
    # the generator reached every way of naming the type and both managed node group outcomes
    assert {c["source"] for c in combos} == {
        "launch-template",
        "configuration",
        "overrides",
        "requirements",
        "lt-requirements",
    }
    assert managed_applied >= COMBINATIONS // 15
    assert any(c["tags"].get("eks:nodegroup-name", "").startswith("missing-") for c in combos)
