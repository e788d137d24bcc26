"""tests/awsfixtures.py: boto3 really talks to moto over HTTP, and injected AWS errors behave like AWS's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.awsfixtures import AwsEnvironment, inject_errors

GROUP = "ng-batch"


def create_group(aws: AwsEnvironment, name: str = GROUP) -> Any:
    """A launch template and an ASG of 0..5 m5.large using it; returns the autoscaling client."""
    aws.client("ec2").create_launch_template(
        LaunchTemplateName=f"{name}-lt",
        LaunchTemplateData={"InstanceType": "m5.large", "ImageId": "ami-12c6146b"},
    )
    autoscaling = aws.client("autoscaling")
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateName": f"{name}-lt", "Version": "$Latest"},
        MinSize=0,
        MaxSize=5,
        DesiredCapacity=0,
        AvailabilityZones=["us-east-1a"],
        Tags=[{"Key": "k8s.io/cluster-autoscaler/enabled", "Value": "true", "PropagateAtLaunch": False}],
    )
    return autoscaling


def desired_capacity(autoscaling: Any, name: str = GROUP) -> int:
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return groups[0]["DesiredCapacity"]


def test_boto3_reaches_the_moto_server_through_aws_endpoint_url(aws: AwsEnvironment) -> None:
    autoscaling = create_group(aws)
    seen = inject_errors(autoscaling, "DescribeAutoScalingGroups", times=0)

    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"]

    assert [group["AutoScalingGroupName"] for group in groups] == [GROUP]
    assert groups[0]["LaunchTemplate"]["LaunchTemplateName"] == f"{GROUP}-lt"
    assert autoscaling.meta.endpoint_url == aws.url
    assert [call.url.startswith(aws.url) for call in seen.calls] == [True]
    # The server's own backends hold the group: the request went over HTTP, not to an in-process mock.
    server_groups = aws.model_data()["autoscaling"]["FakeAutoScalingGroup"]
    assert [group["name"] for group in server_groups] == [GROUP]


def test_standard_retries_recover_from_two_injected_throttles(aws: AwsEnvironment) -> None:
    autoscaling = create_group(aws)
    throttle = inject_errors(autoscaling, "SetDesiredCapacity", code="Throttling", times=2)

    response = autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=2)

    assert len(throttle.calls) == 3
    assert [call.injected for call in throttle.calls] == [True, True, False]
    assert response["ResponseMetadata"]["RetryAttempts"] == 2
    assert desired_capacity(autoscaling) == 2


def test_more_throttles_than_retries_raise_throttling(aws: AwsEnvironment) -> None:
    autoscaling = create_group(aws)
    throttle = inject_errors(autoscaling, "SetDesiredCapacity", code="Throttling", times=10)

    with pytest.raises(ClientError) as error:
        autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=2)

    assert error.value.response["Error"]["Code"] == "Throttling"
    assert error.value.response["Error"]["Message"] == "Rate exceeded"
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert throttle.injected == 3  # standard mode: 3 attempts in all
    assert desired_capacity(autoscaling) == 0


def test_a_non_retryable_query_error_fails_once_then_calls_reach_moto(aws: AwsEnvironment) -> None:
    autoscaling = create_group(aws)
    inject_errors(
        autoscaling,
        "SetDesiredCapacity",
        code="ScalingActivityInProgress",
        message="Scaling activity is in progress",
        times=1,
    )

    with pytest.raises(ClientError) as error:
        autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=3, HonorCooldown=True)
    assert error.value.response["Error"] == {
        "Type": "Sender",
        "Code": "ScalingActivityInProgress",
        "Message": "Scaling activity is in progress",
    }
    autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=3, HonorCooldown=True)
    assert desired_capacity(autoscaling) == 3


def test_ec2_errors_use_the_ec2_error_document(aws: AwsEnvironment) -> None:
    ec2 = aws.client("ec2")
    inject_errors(ec2, "DescribeInstanceTypes", code="UnauthorizedOperation", status=403, message="nope")

    with pytest.raises(ClientError) as error:
        ec2.describe_instance_types(InstanceTypes=["m5.large"])
    assert error.value.response["Error"] == {"Code": "UnauthorizedOperation", "Message": "nope"}

    types = ec2.describe_instance_types(InstanceTypes=["m5.large"])["InstanceTypes"]
    assert [t["InstanceType"] for t in types] == ["m5.large"]


def test_eks_errors_use_the_rest_json_error_document(aws: AwsEnvironment) -> None:
    eks = aws.client("eks")
    inject_errors(eks, "ListClusters", code="ServerException", status=500, message="try later", times=1)

    # A 500 is retried by standard mode, so one injected failure is invisible to the caller...
    assert eks.list_clusters()["clusters"] == []
    failing = inject_errors(
        eks, "DescribeNodegroup", code="ResourceNotFoundException", status=404, message="No node group"
    )
    # ...and a 404 is not: the code comes from the X-Amzn-Errortype header.
    with pytest.raises(eks.exceptions.ResourceNotFoundException) as error:
        eks.describe_nodegroup(clusterName="c", nodegroupName="ng")
    assert error.value.response["Error"]["Message"] == "No node group"
    assert failing.injected == 1


def test_injecting_into_an_unknown_operation_is_refused(aws: AwsEnvironment) -> None:
    with pytest.raises(ValueError, match="has no operation 'SetDesiredCapacities'"):
        inject_errors(aws.client("autoscaling"), "SetDesiredCapacities")


@pytest.mark.xdist_group("moto-reset")
@pytest.mark.parametrize("run", ["first", "second"])
def test_moto_state_is_reset_before_each_test(aws: AwsEnvironment, run: str) -> None:
    # Both runs share one moto server; whichever runs second would see the other's group without a reset.
    autoscaling = aws.client("autoscaling")
    assert autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"] == []
    create_group(aws, name=f"reset-probe-{run}")


@pytest.fixture
def developer_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What a developer's shell may hold: a profile that does not exist here and a per-service endpoint."""
    monkeypatch.setenv("AWS_PROFILE", "fitguard-not-a-profile")
    monkeypatch.setenv("AWS_ENDPOINT_URL_AUTO_SCALING", "http://127.0.0.1:9")
    yield


def test_the_developers_aws_settings_do_not_leak_in(developer_environment: None, aws: AwsEnvironment) -> None:
    autoscaling = aws.client("autoscaling")
    assert autoscaling.meta.endpoint_url == aws.url
    assert autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"] == []
