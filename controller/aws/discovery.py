"""Node group discovery in AWS: the ASGs, what launches their instances (launch template or
configuration, image, root volume, instance types) and the EKS managed node groups behind them.

Calls: DescribeAutoScalingGroups (paginated), DescribeLaunchTemplateVersions,
DescribeLaunchConfigurations, DescribeImages, DescribeInstanceTypes,
GetInstanceTypesFromInstanceRequirements (paginated), eks:DescribeNodegroup.
A failure on one group's data makes that group an error record, except DescribeNodegroup: like
cluster-autoscaler, the group is then built without its managed node group's data (and says so in
`nodegroup_error`). Only a failure to list the ASGs fails the whole discovery (the caller then keeps
every template it had).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from capacity.autoscaler_specs import (
    capacity_requirements,
    instance_type_source,
    launch_template_spec,
    matches_discovery,
    mixed_policy_types,
    requirements_override,
    requirements_request,
)
from capacity.autoscaler_view import InstanceShape
from capacity.ec2_shape import shape_from_ec2
from controller.aws.clients import AWS_ERRORS, AwsClients, describe_error
from controller.aws.records import AwsNodeGroup, DiscoverySelection

log = logging.getLogger(__name__)
PAGE_SIZE = 100  # DescribeAutoScalingGroups' maximum MaxRecords (cluster-autoscaler uses it too)
_LAUNCH_TEMPLATE_ID = re.compile(r"lt-[0-9a-f]{8,}")
FactsLookup = Callable[[str], Any]  # capacity.instances.lookup: type -> InstanceFacts | None
ShapeCache = dict[str, tuple[InstanceShape, str] | str]  # per cycle: type -> (shape, source) or reason


class DiscoveryError(Exception):
    """The ASG list itself could not be read: nothing is known this cycle."""


class GroupDataError(Exception):
    """One group's data is incomplete; the message is the reason shown to the user."""


class AwsDiscovery:
    """Reads node groups from AWS; one instance per controller, one `node_groups()` per cycle."""

    def __init__(
        self,
        clients: AwsClients,
        selection: DiscoverySelection,
        cluster_name: str = "",
        facts: FactsLookup | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.clients = clients
        self.selection = selection
        self.cluster_name = cluster_name
        self.facts = facts
        self.page_size = page_size

    def node_groups(self) -> list[AwsNodeGroup]:
        """Every selected node group, each complete or carrying its error. Raises DiscoveryError."""
        asgs = self.describe_asgs()
        shapes: ShapeCache = {}
        groups = []
        for asg in asgs:
            try:
                groups.append(self._group(asg, shapes))
            except GroupDataError as err:
                name = _group_name(asg)
                log.warning("node group %s: keeping its last template: %s", name, err)
                groups.append(_bare_group(asg, self._cluster_of(asg), str(err)))
        return groups

    def describe_asgs(self) -> list[dict[str, Any]]:
        paginator = self.clients.autoscaling.get_paginator("describe_auto_scaling_groups")
        found: dict[str, dict[str, Any]] = {}
        try:
            for request in self._asg_requests():
                for page in paginator.paginate(**request, PaginationConfig={"PageSize": self.page_size}):
                    for asg in page.get("AutoScalingGroups", []):
                        if self._selected(asg):
                            found[asg["AutoScalingGroupName"]] = asg
        except AWS_ERRORS as err:
            raise DiscoveryError(describe_error("DescribeAutoScalingGroups", err)) from err
        return [found[name] for name in sorted(found)]

    def _asg_requests(self) -> Iterable[dict[str, Any]]:
        names = list(self.selection.names)
        for start in range(0, len(names), 100):  # the API takes at most 100 names per call
            yield {"AutoScalingGroupNames": names[start : start + 100]}
        for filters in self.selection.tag_filters:
            # Server-side filters like cluster-autoscaler's; values are re-checked on our side.
            yield {
                "Filters": [
                    {"Name": f"tag:{k}", "Values": [v]} if v else {"Name": "tag-key", "Values": [k]}
                    for k, v in filters.items()
                ]
            }

    def _selected(self, asg: Mapping[str, Any]) -> bool:
        if asg["AutoScalingGroupName"] in self.selection.names:
            return True
        tags = {t["Key"]: t.get("Value", "") for t in asg.get("Tags", [])}
        return any(matches_discovery(tags, wanted) for wanted in self.selection.tag_filters)

    def _cluster_of(self, asg: Mapping[str, Any]) -> str:
        tags = {t["Key"]: t.get("Value", "") for t in asg.get("Tags", [])}
        return tags.get("eks:cluster-name") or self.cluster_name

    def _group(self, asg: Mapping[str, Any], shapes: ShapeCache) -> AwsNodeGroup:
        tags = tuple((str(t["Key"]), str(t.get("Value", ""))) for t in asg.get("Tags", []))
        tag_map = dict(tags)
        cluster = self._cluster_of(asg)
        nodegroup, nodegroup_error = None, ""
        if tag_map.get("eks:nodegroup-name"):
            try:
                nodegroup = self._describe_nodegroup(cluster, tag_map["eks:nodegroup-name"])
            except GroupDataError as err:
                # aws_manager.go buildNodeFromTemplate logs a failed DescribeNodegroup and builds the
                # node without the managed node group's labels, taints and tags: so does fitguard.
                nodegroup_error = str(err)
                log.warning(
                    "node group %s: built without its managed node group's data: %s",
                    tag_map["eks:nodegroup-name"],
                    err,
                )
        instance_types, data = self._launch_data(asg)
        requirements = capacity_requirements(asg.get("MixedInstancesPolicy"), data)
        shape, shape_source = self._shape(instance_types[0], shapes)
        root_gib = None
        if nodegroup is not None and nodegroup.get("diskSize") and not nodegroup.get("launchTemplate"):
            root_gib = int(nodegroup["diskSize"])  # EKS builds the launch template from diskSize
        if root_gib is None:
            root_gib = self._root_volume_gib(data.get("ImageId"), data.get("BlockDeviceMappings") or [])
        return AwsNodeGroup(
            name=tag_map.get("eks:nodegroup-name") or asg["AutoScalingGroupName"],
            asg_name=asg["AutoScalingGroupName"],
            provider="eks-managed" if tag_map.get("eks:nodegroup-name") else "aws-asg",
            min_size=int(asg.get("MinSize", 0)),
            max_size=int(asg.get("MaxSize", 0)),
            desired_size=int(asg.get("DesiredCapacity", 0)),
            availability_zones=tuple(asg.get("AvailabilityZones", [])),
            tags=tags,
            instance_types=tuple(instance_types),
            instance_ids=tuple(i["InstanceId"] for i in asg.get("Instances", [])),
            shape=shape,
            shape_source=shape_source,
            root_volume_gib=root_gib,
            requirements=requirements,
            cluster_name=cluster,
            nodegroup=nodegroup,
            nodegroup_error=nodegroup_error,
        )

    def _describe_nodegroup(self, cluster: str, name: str) -> Mapping[str, Any]:
        if not cluster:
            raise GroupDataError("no eks:cluster-name tag and no --cluster-name to ask EKS with")
        return self._call(
            "DescribeNodegroup",
            lambda: self.clients.eks.describe_nodegroup(clusterName=cluster, nodegroupName=name)["nodegroup"],
        )

    def _launch_data(self, asg: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """The instance types (CA's pick first) and the launch data: ImageId, BlockDeviceMappings,
        InstanceRequirements (aws_wrapper.go getInstanceTypesForAsgs and what it calls)."""
        try:
            source = instance_type_source(asg)
        except ValueError as err:
            raise GroupDataError(str(err)) from None
        if source.kind == "launch-configuration":
            configs = self._call(
                "DescribeLaunchConfigurations",
                lambda: self.clients.autoscaling.describe_launch_configurations(
                    LaunchConfigurationNames=[source.name]
                )["LaunchConfigurations"],
            )
            if not configs:
                raise GroupDataError(f"launch configuration {source.name!r} not found")
            return [str(configs[0]["InstanceType"])], configs[0]
        ref = launch_template_spec(asg)
        data = self._launch_template_data(*ref) if ref else {}
        policy = asg.get("MixedInstancesPolicy") or {}
        if source.kind == "override":
            return mixed_policy_types(policy), data
        if source.kind == "requirements":
            # getInstanceTypeFromRequirementsOverrides: the launch template's image, the override's needs
            wanted = requirements_override(policy) or {}
            return [self._first_matching_type(data.get("ImageId"), wanted)], data
        if data.get("InstanceType"):
            return [str(data["InstanceType"])], data
        if data.get("InstanceRequirements") and data.get("ImageId"):
            # getInstanceTypeByLaunchTemplate: a template with requirements instead of a type
            return [self._first_matching_type(data["ImageId"], data["InstanceRequirements"])], data
        raise GroupDataError("unable to find the instance type of the launch template")

    def _first_matching_type(self, image_id: str | None, requirements: Mapping[str, Any]) -> str:
        """aws_wrapper.go getInstanceTypeFromInstanceRequirements: the image's architectures and
        virtualization types with the requirements; the first type EC2 lists is the one."""
        if not image_id:
            raise GroupDataError("the launch template has no ImageId to match instance requirements with")
        images = self._call(
            "DescribeImages", lambda: self.clients.ec2.describe_images(ImageIds=[image_id])["Images"]
        )
        request = {
            "ArchitectureTypes": [str(i["Architecture"]) for i in images if i.get("Architecture")],
            "VirtualizationTypes": [
                str(i["VirtualizationType"]) for i in images if i.get("VirtualizationType")
            ],
            "InstanceRequirements": requirements_request(requirements),
        }
        paginator = self.clients.ec2.get_paginator("get_instance_types_from_instance_requirements")
        pages = self._call(
            "GetInstanceTypesFromInstanceRequirements", lambda: list(paginator.paginate(**request))
        )
        types = [str(t["InstanceType"]) for page in pages for t in page.get("InstanceTypes", [])]
        if not types:
            raise GroupDataError("no instance types found for the instance requirements")
        return types[0]

    def _launch_template_data(self, name_or_id: str, version: str) -> dict[str, Any]:
        key = "LaunchTemplateId" if _LAUNCH_TEMPLATE_ID.fullmatch(name_or_id) else "LaunchTemplateName"
        versions = self._call(
            "DescribeLaunchTemplateVersions",
            lambda: self.clients.ec2.describe_launch_template_versions(
                **{key: name_or_id}, Versions=[version]
            )["LaunchTemplateVersions"],
        )
        if not versions:
            raise GroupDataError(f"launch template {name_or_id!r} version {version} not found")
        return dict(versions[0].get("LaunchTemplateData") or {})

    def _root_volume_gib(self, image_id: str | None, mappings: list[Mapping[str, Any]]) -> int | None:
        """The size of the volume mounted at the image's root device: the launch template's
        mapping for that device when it sets a size, else the image's own mapping."""
        if not image_id:
            return None
        images = self._call(
            "DescribeImages", lambda: self.clients.ec2.describe_images(ImageIds=[image_id])["Images"]
        )
        if not images:
            raise GroupDataError(f"image {image_id} not found (deregistered?)")
        image = images[0]
        root = image.get("RootDeviceName")
        for source in (mappings, image.get("BlockDeviceMappings") or []):
            for mapping in source:
                size = (mapping.get("Ebs") or {}).get("VolumeSize")
                if mapping.get("DeviceName") == root and size:
                    return int(size)
        return None

    def _shape(self, instance_type: str, cache: ShapeCache) -> tuple[InstanceShape, str]:
        if instance_type not in cache:
            cache[instance_type] = self._describe_shape(instance_type)
        found = cache[instance_type]
        if isinstance(found, str):
            raise GroupDataError(found)
        return found

    def _describe_shape(self, instance_type: str) -> tuple[InstanceShape, str] | str:
        """DescribeInstanceTypes, else fitguard's instance facts, else the reason neither knows it."""
        ec2_reason = ""
        try:
            described = self.clients.ec2.describe_instance_types(InstanceTypes=[instance_type])[
                "InstanceTypes"
            ]
        except AWS_ERRORS as err:
            described, ec2_reason = [], describe_error("DescribeInstanceTypes", err)
        if described:
            # as cluster-autoscaler's transformInstanceType reads it (i386 is amd64, every GPU counts)
            return shape_from_ec2(instance_type, described[0]), "ec2"
        facts = self.facts(instance_type) if self.facts else None
        # fitguard's table may know a type's ENIs but not its size: then it cannot stand in for EC2
        if facts is not None and facts.vcpu is not None and facts.memory_mib is not None:
            if ec2_reason:
                log.info("instance type %s from fitguard's table (%s)", instance_type, ec2_reason)
            shape = InstanceShape(
                instance_type=instance_type,
                vcpu=int(facts.vcpu),
                memory_mib=int(facts.memory_mib),
                gpu=int(getattr(facts, "gpu", 0) or 0),
                architecture=str(getattr(facts, "architecture", "") or ""),
            )
            return shape, "facts"
        because = f" ({ec2_reason})" if ec2_reason else ""
        return f"unknown instance type {instance_type!r}{because}"

    @staticmethod
    def _call(operation: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except AWS_ERRORS as err:
            raise GroupDataError(describe_error(operation, err)) from err


def _group_name(asg: Mapping[str, Any]) -> str:
    tags = {t["Key"]: t.get("Value", "") for t in asg.get("Tags", [])}
    return tags.get("eks:nodegroup-name") or asg["AutoScalingGroupName"]


def _bare_group(asg: Mapping[str, Any], cluster: str, error: str) -> AwsNodeGroup:
    tags = tuple((str(t["Key"]), str(t.get("Value", ""))) for t in asg.get("Tags", []))
    return AwsNodeGroup(
        name=_group_name(asg),
        asg_name=asg["AutoScalingGroupName"],
        provider="eks-managed" if dict(tags).get("eks:nodegroup-name") else "aws-asg",
        min_size=int(asg.get("MinSize", 0)),
        max_size=int(asg.get("MaxSize", 0)),
        desired_size=int(asg.get("DesiredCapacity", 0)),
        availability_zones=tuple(asg.get("AvailabilityZones", [])),
        tags=tags,
        instance_ids=tuple(i["InstanceId"] for i in asg.get("Instances", [])),
        cluster_name=cluster,
        error=error,
    )
