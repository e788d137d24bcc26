"""What AWS told us about one node group, as plain data: the input of template building."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.autoscaler_view import InstanceRequirements, InstanceShape
from capacity.string_maps import string_map


@dataclass(frozen=True)
class AwsNodeGroup:
    """One ASG (and its EKS managed node group, when it backs one).

    `error` says why the data is incomplete: a template must then not be built from it.
    """

    name: str  # the managed node group's name, else the ASG's
    asg_name: str
    provider: str  # aws-asg | eks-managed
    min_size: int = 0
    max_size: int = 0
    desired_size: int = 0
    availability_zones: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()  # the ASG's tags, in the order AWS lists them
    instance_types: tuple[str, ...] = ()  # the first is the one cluster-autoscaler assumes
    instance_ids: tuple[str, ...] = ()
    shape: InstanceShape | None = None  # of instance_types[0]
    shape_source: str = ""  # ec2 (DescribeInstanceTypes) | facts (fitguard's table)
    root_volume_gib: int | None = None
    requirements: InstanceRequirements | None = None
    cluster_name: str = ""
    nodegroup: Mapping[str, Any] | None = None  # DescribeNodegroup's `nodegroup`, for managed groups
    nodegroup_error: str = ""  # why a managed group has no `nodegroup`: its views are built without it
    error: str = ""

    @property
    def tag_map(self) -> dict[str, str]:
        return dict(self.tags)

    @property
    def nodegroup_tags(self) -> dict[str, str]:
        return string_map((self.nodegroup or {}).get("tags") or {}, "nodegroup.tags")


@dataclass(frozen=True)
class DiscoverySelection:
    """Which ASGs are node groups: explicit names, else every ASG matching one tag filter set."""

    names: tuple[str, ...] = ()
    tag_filters: tuple[Mapping[str, str], ...] = field(default_factory=tuple)
