"""The autoscaler view: the node cluster-autoscaler builds for an AWS node group from tags alone.

Transcribed in behaviour (not code) from kubernetes/autoscaler
cluster-autoscaler/cloudprovider/aws/aws_manager.go (buildNodeFromTemplate, buildGenericLabels,
extractLabelsFromAsg, extractTaintsFromAsg, extractAllocatableResources*, getAsgTemplate) and
aws_wrapper.go (getManagedNodegroupInfo, taintEksTranslator). Its quirks are kept on purpose, since
the point is to predict what CA will really do:
- tag prefixes are found with Go's `strings.Split(key, prefix)[1]`: anywhere in the key, and the
  name ends where a second copy of the prefix begins;
- taint values are matched by an unanchored regex and split at the first colon, effect unchecked;
- allocatable is capacity (no kube-reserved, no eviction threshold), pods is always 110;
- no ephemeral-storage and no pod-eni unless a `resources/*` tag says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.fresh_node import example_view
from capacity.quantity import MILLI, QuantityError, parse_quantity
from capacity.resources import CPU, MEMORY, PODS, Resources
from capacity.string_maps import string_map
from capacity.taints import Taint
from capacity.template import View
from capacity.template_pods import KUBE_PROXY_REQUESTS
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions, sanitize_taints

TEMPLATE_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
RESOURCES_PREFIX = TEMPLATE_PREFIX + "resources/"
LABEL_PREFIX = TEMPLATE_PREFIX + "label/"
TAINT_PREFIX = TEMPLATE_PREFIX + "taint/"
EKS_TAG_MARK = "eks:"
NVIDIA_GPU = "nvidia.com/gpu"
TEMPLATE_PODS = 110  # "TODO: get a real value." in buildNodeFromTemplate, unchanged for years
DEFAULT_OS = "linux"  # cloudprovider.DefaultOS
LABEL_EBS_CSI_ZONE = "topology.ebs.csi.aws.com/zone"
# AwsNodeGroup.TemplateNodeInfo puts a kube-proxy mirror pod with this request on every template.
TEMPLATE_KUBE_PROXY_REQUESTS: Resources = KUBE_PROXY_REQUESTS

Tags = Iterable[tuple[str, str]]
# cluster-autoscaler's regexp "(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)", used with MatchString.
_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")
_EKS_EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "NO_EXECUTE": "NoExecute",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
}


@dataclass(frozen=True, slots=True)
class InstanceShape:
    """What CA knows of an instance type (its InstanceType struct): no disk, no ENIs."""

    instance_type: str
    vcpu: int
    memory_mib: int
    gpu: int = 0
    architecture: str = ""


@dataclass(frozen=True, slots=True)
class ManagedNodegroupInfo:
    """What CA takes from EKS DescribeNodegroup: labels (incl. the synthetic ones), taints, tags."""

    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InstanceRequirements:
    """The minimums CA reads from a mixed instances policy that has requirements but no type list."""

    vcpu_min: int | None = None
    memory_mib_min: int | None = None
    nvidia_gpu_min: int | None = None  # set only when manufacturers has nvidia and types has gpu


def after_prefix(key: str, prefix: str) -> str | None:
    """Go's `strings.Split(key, prefix)[1]` when the split has more than one part, else None."""
    parts = key.split(prefix)
    return parts[1] if len(parts) > 1 else None


def tag_pairs(tags: Iterable[Mapping[str, Any]] | Mapping[str, str]) -> list[tuple[str, str]]:
    """ASG TagDescriptions ({Key, Value}) or an EKS tag map as (key, value) pairs, in order."""
    if isinstance(tags, Mapping):
        return [(str(k), str(v)) for k, v in tags.items()]
    return [(str(t.get("Key", "")), str(t.get("Value", ""))) for t in tags]


def resources_from_tags(tags: Tags) -> Resources:
    """`resources/<name>` tags; unparseable quantities and empty names are skipped, as CA does."""
    result: Resources = {}
    for key, value in tags:
        name = after_prefix(key, RESOURCES_PREFIX)
        if not name:
            continue
        try:
            result[name] = parse_quantity(value)
        except QuantityError:
            continue
    return result


def labels_from_tags(tags: Tags) -> dict[str, str]:
    """`label/<name>` tags, else any key containing `eks:` (named by the text after it)."""
    result: dict[str, str] = {}
    for key, value in tags:
        name = after_prefix(key, LABEL_PREFIX)
        if name is None:
            name = after_prefix(key, EKS_TAG_MARK)
        if name:
            result[name] = value
    return result


def taints_from_tags(tags: Tags) -> list[Taint]:
    """`taint/<key>` tags valued `<value>:<Effect>`; no empty-key check, unlike labels."""
    taints: list[Taint] = []
    for key, value in tags:
        if _TAINT_VALUE.search(value) is None:
            continue
        name = after_prefix(key, TAINT_PREFIX)
        if name is None:
            continue
        taint_value, _, effect = value.partition(":")
        taints.append(Taint(key=name, value=taint_value, effect=effect))
    return taints


def region_and_zone(availability_zones: list[str]) -> tuple[str, str]:
    """The first AZ and its region (the AZ less its last character). Raises ValueError on none."""
    if not availability_zones:
        raise ValueError("unable to get first AvailabilityZone")
    zone = availability_zones[0]
    return zone[:-1], zone


def generic_labels(shape: InstanceShape, region: str, zone: str, node_name: str) -> dict[str, str]:
    return {
        "kubernetes.io/arch": shape.architecture,
        "kubernetes.io/os": DEFAULT_OS,
        "node.kubernetes.io/instance-type": shape.instance_type,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        LABEL_EBS_CSI_ZONE: zone,
        "kubernetes.io/hostname": node_name,
    }


def join_managed_labels(extracted: Mapping[str, str], managed: Mapping[str, str]) -> dict[str, str]:
    """Despite CA's function name (…ChoosingUserValuesOverAPIValues), the EKS API value wins."""
    return {**extracted, **managed}


def eks_taint_effect(effect: str) -> str:
    """EKS's NO_SCHEDULE style to Kubernetes' NoSchedule. Raises ValueError on anything else."""
    try:
        return _EKS_EFFECTS[effect]
    except KeyError:
        raise ValueError(f"taint effect {effect!r} is not valid") from None


def managed_nodegroup_info(nodegroup: Mapping[str, Any]) -> ManagedNodegroupInfo:
    """CA's reading of a DescribeNodegroup `nodegroup`. Raises ValueError on an unknown effect."""
    labels: dict[str, str] = {}
    if nodegroup.get("diskSize") is not None:
        labels["diskSize"] = str(int(nodegroup["diskSize"]))
    for source, label in (
        ("amiType", "amiType"),
        ("capacityType", "eks.amazonaws.com/capacityType"),
        ("version", "k8sVersion"),
        ("nodegroupName", "eks.amazonaws.com/nodegroup"),
    ):
        if nodegroup.get(source):
            labels[label] = str(nodegroup[source])
    for key, value in (nodegroup.get("labels") or {}).items():
        if value is not None:
            labels[str(key)] = str(value)
    taints = tuple(
        Taint(key=str(t["key"]), value=str(t["value"]), effect=eks_taint_effect(str(t["effect"])))
        for t in nodegroup.get("taints") or ()
        if t and t.get("key") is not None and t.get("value") is not None and t.get("effect") is not None
    )
    tags = string_map(nodegroup.get("tags") or {}, "nodegroup.tags")
    return ManagedNodegroupInfo(labels=labels, taints=taints, tags=tags)


def managed_nodegroup_ref(labels: Mapping[str, str]) -> tuple[str, str] | None:
    """(nodegroup, cluster) when CA would consult DescribeNodegroup: both `eks:` labels set."""
    nodegroup, cluster = labels.get("nodegroup-name", ""), labels.get("cluster-name", "")
    return (nodegroup, cluster) if nodegroup and cluster else None


def base_capacity(shape: InstanceShape, requirements: InstanceRequirements | None = None) -> Resources:
    capacity: Resources = {
        PODS: TEMPLATE_PODS * MILLI,
        CPU: shape.vcpu * MILLI,
        NVIDIA_GPU: shape.gpu * MILLI,  # present even when 0
        MEMORY: shape.memory_mib * 2**20 * MILLI,
    }
    if requirements is not None:
        if requirements.vcpu_min is not None:
            capacity[CPU] = requirements.vcpu_min * MILLI
        if requirements.memory_mib_min is not None:
            capacity[MEMORY] = requirements.memory_mib_min * 2**20 * MILLI
        if requirements.nvidia_gpu_min is not None:
            capacity[NVIDIA_GPU] = requirements.nvidia_gpu_min * MILLI
    return capacity


def build_autoscaler_view(
    shape: InstanceShape,
    tags: Tags,
    *,
    region: str = "",
    zone: str = "",
    node_name: str = "",
    managed: ManagedNodegroupInfo | None = None,
    requirements: InstanceRequirements | None = None,
) -> View:
    """buildNodeFromTemplate: capacity (= allocatable), labels and taints, in CA's order.

    `managed` is applied only when the ASG's tags give both `nodegroup-name` and `cluster-name`
    labels, as CA only then calls DescribeNodegroup; pass None when that call failed.
    """
    pairs = list(tags)
    capacity = base_capacity(shape, requirements)
    capacity.update(resources_from_tags(pairs))
    labels = {**generic_labels(shape, region, zone, node_name), **labels_from_tags(pairs)}
    taints = taints_from_tags(pairs)
    if managed is not None and managed_nodegroup_ref(labels) is not None:
        labels = join_managed_labels(labels, managed.labels)
        taints.extend(managed.taints)
        capacity.update(resources_from_tags(tag_pairs(managed.tags)))
    return View(allocatable=capacity, labels=labels, taints=tuple(taints), source="tags")


@dataclass(frozen=True, slots=True)
class AsgTemplate:
    """getAsgTemplate: the instance shape, region and zone a group's template is built from."""

    shape: InstanceShape
    region: str
    zone: str


def asg_template(
    asg_name: str, availability_zones: list[str], instance_type: str, shapes: Mapping[str, InstanceShape]
) -> AsgTemplate:
    """Raises ValueError with CA's message when there is no AZ or the type is not in the table."""
    if not availability_zones:
        raise ValueError(f"unable to get first AvailabilityZone for ASG {asg_name!r}")
    region, zone = region_and_zone(availability_zones)
    shape = shapes.get(instance_type)
    if shape is None:
        raise ValueError(f"ASG {asg_name!r} uses the unknown EC2 instance type {instance_type!r}")
    return AsgTemplate(shape=shape, region=region, zone=zone)


# sigs.k8s.io/cluster-autoscaler pkg/utils/labels/labels.go, UpdateDeprecatedLabels: only these three
# stable labels get their deprecated twin on a template. No beta.kubernetes.io/os or /arch: a pod
# that selects on those fits no template cluster-autoscaler builds from tags.
_DEPRECATED_LABELS = {
    "node.kubernetes.io/instance-type": "beta.kubernetes.io/instance-type",
    "topology.kubernetes.io/region": "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone": "failure-domain.beta.kubernetes.io/zone",
}
TEMPLATE_NODE_LABEL = "cluster-autoscaler.kubernetes.io/template-node"


def sanitized_template_labels(labels: Mapping[str, str], node_name: str) -> dict[str, str]:
    """simulator.SanitizedTemplateNodeInfoFromNodeGroup's labels: the deprecated twins of the
    stable labels, the template-node marker (CA 1.36+), and the template's new hostname."""
    result = dict(labels)
    for stable, deprecated in _DEPRECATED_LABELS.items():
        if stable in result:
            result[deprecated] = result[stable]
    result[TEMPLATE_NODE_LABEL] = "true"
    result["kubernetes.io/hostname"] = node_name
    return result


def sanitized_template(view: View, taint_config: TaintOptions = DEFAULT_TAINT_CONFIG) -> View:
    """buildNodeFromTemplate's node as SanitizedTemplateNodeInfoFromNodeGroup hands it to the
    scheduler simulation: taints sanitised (capacity.template_taints), deprecated labels added, the
    template-node marker set, and no hostname (random per template: no pod can rely on it)."""
    labels = sanitized_template_labels(view.labels, "")
    del labels["kubernetes.io/hostname"]
    return View(
        allocatable=view.allocatable,
        labels=labels,
        taints=sanitize_taints(view.taints, taint_config),
        source=view.source,
    )


def sanitized_example(view: View, group: str, taint_config: TaintOptions = DEFAULT_TAINT_CONFIG) -> View:
    """buildNodeFromTemplate's node as `createSanitizedNode` copies it, which is the node
    `podsExpectedOnFreshNode` chooses the DaemonSet pods on (capacity/fresh_node.py): taints
    sanitised, the template's hostname set, and neither the deprecated twins nor the template-node
    marker yet (SanitizedTemplateNodeInfoFromNodeGroup adds those after the pods are chosen)."""
    sanitized = View(view.allocatable, view.labels, sanitize_taints(view.taints, taint_config), view.source)
    return example_view(sanitized, group)
