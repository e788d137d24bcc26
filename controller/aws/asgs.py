"""The scaling driver's AWS calls: an ASG's desired and max size and fitguard's last-scale-up tag,
raising its desired capacity, and leaving the tag. Errors are botocore's (controller/aws/clients.py
classifies them); the driver (controller/scaling.py) decides what to do about them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from capacity.names import LAST_SCALE_UP_TAG

DESCRIBE_BATCH = 50  # DescribeAutoScalingGroups takes at most 50 names per call (Auto Scaling API reference)


@dataclass(frozen=True)
class AsgState:
    name: str
    desired: int
    max_size: int
    last_scale_up: float | None


def parse_last_scale_up(value: str | None) -> float | None:
    """`<target>@<epoch seconds>` as `tag_last_scale_up` writes it; None when absent or unreadable."""
    if not value or "@" not in value:
        return None
    try:
        return float(value.split("@", 1)[1])
    except ValueError:
        return None


def describe_asgs(autoscaling: Any, names: Sequence[str]) -> dict[str, AsgState]:
    """Desired and max size and fitguard's tag, as AWS has them now. Raises AWS errors."""
    states: dict[str, AsgState] = {}
    paginator = autoscaling.get_paginator("describe_auto_scaling_groups")
    for start in range(0, len(names), DESCRIBE_BATCH):
        for page in paginator.paginate(AutoScalingGroupNames=list(names[start : start + DESCRIBE_BATCH])):
            for asg in page.get("AutoScalingGroups", []):
                tags = {t.get("Key"): t.get("Value") for t in asg.get("Tags") or []}
                name = asg["AutoScalingGroupName"]
                states[name] = AsgState(
                    name,
                    int(asg.get("DesiredCapacity", 0)),
                    int(asg.get("MaxSize", 0)),
                    parse_last_scale_up(tags.get(LAST_SCALE_UP_TAG)),
                )
    return states


def set_desired_capacity(autoscaling: Any, asg: str, target: int) -> None:
    """SetDesiredCapacity without honouring the ASG's cooldown (the planner keeps its own)."""
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg, DesiredCapacity=target, HonorCooldown=False)


def tag_last_scale_up(autoscaling: Any, asg: str, target: int, now: float) -> None:
    """`fitguard.io/last-scale-up` = `<target>@<epoch seconds>` on the ASG (not propagated at launch)."""
    autoscaling.create_or_update_tags(
        Tags=[
            {
                "ResourceId": asg,
                "ResourceType": "auto-scaling-group",
                "Key": LAST_SCALE_UP_TAG,
                "Value": f"{target}@{int(now)}",
                "PropagateAtLaunch": False,
            }
        ]
    )


class AsgGroups:
    """The ASGs as the scaling driver reads and grows them: what cluster-autoscaler's
    `cloudprovider.NodeGroup` offers (`TargetSize`, `MaxSize`, `IncreaseSize`), for many groups at
    once, on one Auto Scaling client. Every method raises the AWS errors as they come."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def describe(self, names: Sequence[str]) -> dict[str, AsgState]:
        return describe_asgs(self.client, names)

    def set_desired(self, asg: str, target: int) -> None:
        set_desired_capacity(self.client, asg, target)

    def note_scale_up(self, asg: str, target: int, now: float) -> None:
        tag_last_scale_up(self.client, asg, target, now)
