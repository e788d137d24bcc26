"""--verify-with-ec2 against moto in server mode: the VPC resource controller's trunk and branch
ENIs are read by their tags over boto3, counted per node, and an ENI no pod claims past the window
is reported as leaked with an event on its node."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capacity.records import project_node, project_pod
from capacity.resources import POD_ENI
from controller.aws.eni_verify import OWNER_TAG, TRUNK_DESCRIPTION, TRUNK_TAG, Ec2Verifier
from kube.events import EventRecorder
from tests import objects
from tests.awsfixtures import inject_errors


def tags(pairs: dict[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": "network-interface", "Tags": [{"Key": k, "Value": v} for k, v in pairs.items()]}]


@pytest.fixture
def ec2_with_branch_enis(aws: Any) -> tuple[Any, str, list[str]]:
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="m5.large")["Instances"][
        0
    ]
    owner = {OWNER_TAG[0]: OWNER_TAG[1], "kubernetes.io/cluster/demo": "owned"}
    trunk = ec2.create_network_interface(
        SubnetId=subnet["SubnetId"], Description=TRUNK_DESCRIPTION, TagSpecifications=tags(owner)
    )["NetworkInterface"]["NetworkInterfaceId"]
    ec2.attach_network_interface(NetworkInterfaceId=trunk, InstanceId=instance["InstanceId"], DeviceIndex=1)
    branches = [
        ec2.create_network_interface(
            SubnetId=subnet["SubnetId"],
            Description="aws-k8s-branch-eni",
            TagSpecifications=tags({**owner, TRUNK_TAG: trunk}),
        )["NetworkInterface"]["NetworkInterfaceId"]
        for _ in range(3)
    ]
    ec2.create_network_interface(SubnetId=subnet["SubnetId"], Description="someone else's")  # not counted
    return ec2, instance["InstanceId"], branches


def node(instance_id: str) -> Any:
    return project_node(
        {
            "metadata": {"name": "node-a"},
            "spec": {"providerID": f"aws:///us-east-1a/{instance_id}"},
            "status": {},
        }
    )


def pod(name: str, eni: str) -> Any:
    annotation = json.dumps([{"eniId": eni, "ifAddress": "0a:1b", "privateIp": "10.0.1.5", "vlanId": 1}])
    running = objects.pod(
        name, node="node-a", annotations={POD_ENI: annotation}, phase="Running", containers=[]
    )
    return project_pod(running)


def test_branch_enis_are_counted_and_the_unclaimed_one_leaks_after_the_window(
    ec2_with_branch_enis: Any,
) -> None:
    ec2, instance_id, (first, second, third) = ec2_with_branch_enis
    recorder = EventRecorder(None, "test")
    verifier = Ec2Verifier(ec2, window=90, cluster_name="demo", recorder=recorder)
    pods = [pod("a", first), pod("b", second)]
    result = verifier.verify(pods, [node(instance_id)], now=1000, window=90)
    assert result == {"perNode": {"node-a": 3}, "leaked": []}
    result = verifier.verify(pods, [node(instance_id)], now=1091, window=90)
    assert result["leaked"] == [
        {"eniId": third, "node": "node-a", "instanceId": instance_id, "unclaimedSeconds": 91}
    ]
    notes = [e["event"]["note"] for e in recorder.recent if e["event"]["reason"] == "BranchENILeaked"]
    assert len(notes) == 1 and third in notes[0]
    verifier.verify(pods, [node(instance_id)], now=1200, window=90)
    assert len([e for e in recorder.recent if e["event"]["reason"] == "BranchENILeaked"]) == 1, (
        "reported once"
    )


def test_an_ec2_failure_is_reported_and_decides_nothing(ec2_with_branch_enis: Any) -> None:
    ec2, instance_id, _ = ec2_with_branch_enis
    verifier = Ec2Verifier(ec2, window=0, cluster_name="demo")
    inject_errors(ec2, "DescribeNetworkInterfaces", code="UnauthorizedOperation", status=403, times=10)
    result = verifier.verify([], [node(instance_id)], now=0, window=0)
    assert "UnauthorizedOperation" in result["error"]
    assert verifier.tracker._since == {}
