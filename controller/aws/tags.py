"""The only AWS writes of tag sync: one tag on an ASG, or on an EKS managed node group."""

from __future__ import annotations

from controller.aws.clients import AwsClients


def put_asg_tag(clients: AwsClients, asg_name: str, key: str, value: str) -> None:
    """CreateOrUpdateTags; not propagated at launch: the tag describes the group, not instances."""
    clients.autoscaling.create_or_update_tags(
        Tags=[
            {
                "ResourceId": asg_name,
                "ResourceType": "auto-scaling-group",
                "Key": key,
                "Value": value,
                "PropagateAtLaunch": False,
            }
        ]
    )


def put_nodegroup_tag(clients: AwsClients, nodegroup_arn: str, key: str, value: str) -> None:
    """eks:TagResource on the node group, where cluster-autoscaler reads it (DescribeNodegroup)."""
    clients.eks.tag_resource(resourceArn=nodegroup_arn, tags={key: value})
