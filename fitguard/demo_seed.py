"""Seeds moto with the demo's AWS side (examples/aws-seed.yaml) through boto3, as a user would
create it: an image, launch templates, ASGs, an EKS cluster and its managed node group."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
import yaml

DEFAULT_SEED = Path(__file__).resolve().parents[1] / "examples" / "aws-seed.yaml"


def load_seed(path: str | Path = DEFAULT_SEED) -> dict[str, Any]:
    with Path(path).open(encoding="utf-8") as handle:
        seed = yaml.safe_load(handle)
    if not isinstance(seed, Mapping):
        raise ValueError(f"{path}: expected a map")
    return dict(seed)


def seed_moto(
    path: str | Path = DEFAULT_SEED, *, endpoint_url: str | None = None, region: str | None = None
) -> dict[str, Any]:
    """Creates the seed's resources; endpoint and region default to the boto3 environment.
    Returns {"clusterName", "region", "autoScalingGroups": [names], "imageId"}."""
    seed = load_seed(path)
    region = region or str(seed.get("region") or "us-east-1")
    session = boto3.session.Session(region_name=region)
    ec2 = session.client("ec2", endpoint_url=endpoint_url)
    autoscaling = session.client("autoscaling", endpoint_url=endpoint_url)
    eks = session.client("eks", endpoint_url=endpoint_url)

    image = seed["image"]
    image_id = ec2.register_image(Name=image["name"], Description=image.get("description", ""))["ImageId"]
    # The launch template sizes the volume at the image's own root device, as on EKS.
    root_device = ec2.describe_images(ImageIds=[image_id])["Images"][0]["RootDeviceName"]
    for template in seed.get("launchTemplates", []):
        ec2.create_launch_template(
            LaunchTemplateName=template["name"],
            LaunchTemplateData={
                "ImageId": image_id,
                "InstanceType": template["instanceType"],
                "BlockDeviceMappings": [
                    {
                        "DeviceName": root_device,
                        "Ebs": {"VolumeSize": int(template["rootVolumeGiB"]), "VolumeType": "gp3"},
                    }
                ],
            },
        )
    cluster = str(seed.get("clusterName") or "demo")
    names = []
    for group in seed.get("autoScalingGroups", []):
        autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=group["name"],
            LaunchTemplate={"LaunchTemplateName": group["launchTemplate"], "Version": "$Latest"},
            MinSize=int(group["minSize"]),
            MaxSize=int(group["maxSize"]),
            DesiredCapacity=int(group["desiredCapacity"]),
            AvailabilityZones=list(group["availabilityZones"]),
            Tags=[
                {
                    "ResourceId": group["name"],
                    "ResourceType": "auto-scaling-group",
                    "Key": key,
                    "Value": str(value),
                    "PropagateAtLaunch": False,
                }
                for key, value in (group.get("tags") or {}).items()
            ],
        )
        names.append(group["name"])
    if seed.get("managedNodeGroups"):
        _seed_eks(ec2, eks, cluster, seed["managedNodeGroups"])
    return {"clusterName": cluster, "region": region, "autoScalingGroups": names, "imageId": image_id}


def _seed_eks(ec2: Any, eks: Any, cluster: str, nodegroups: list[Mapping[str, Any]]) -> None:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20")["Subnet"]["SubnetId"]
    role = "arn:aws:iam::123456789012:role/fitguard-demo"
    eks.create_cluster(name=cluster, roleArn=role, resourcesVpcConfig={"subnetIds": [subnet]})
    for nodegroup in nodegroups:
        eks.create_nodegroup(
            clusterName=cluster,
            nodegroupName=nodegroup["name"],
            nodeRole=role,
            subnets=[subnet],
            instanceTypes=list(nodegroup["instanceTypes"]),
            labels=dict(nodegroup.get("labels") or {}),
            taints=list(nodegroup.get("taints") or []),
            scalingConfig={
                "minSize": int(nodegroup["minSize"]),
                "maxSize": int(nodegroup["maxSize"]),
                "desiredSize": int(nodegroup["desiredSize"]),
            },
        )
