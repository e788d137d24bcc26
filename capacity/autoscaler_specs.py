"""cluster-autoscaler's AWS configuration, read as it reads it: `--node-group-auto-discovery` and
`--nodes` specs, the per-ASG `autoscaling-options/*` tags, and which instance type it picks.

Behaviour from kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/aws_manager.go
(parseASGAutoDiscoverySpec, GetAsgOptions, extractAutoscalingOptionsFromTags), aws_wrapper.go
(getInstanceTypesForAsgs) and cloudprovider/dynamic (SpecFromString, scale to zero allowed on AWS).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from capacity.autoscaler_flags import parse_go_duration
from capacity.autoscaler_view import InstanceRequirements

OPTIONS_PREFIX = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"
DEFAULT_DISCOVERY_TAG = "k8s.io/cluster-autoscaler/enabled"


class SpecError(ValueError):
    """A flag value cluster-autoscaler refuses at start-up."""


def parse_auto_discovery_spec(spec: str) -> dict[str, str]:
    """`asg:tag=k1[=v1],k2...` as the tags an ASG must carry (value "" means: any value)."""
    discoverer, sep, param = spec.partition(":")
    if not sep:
        raise SpecError(f"invalid node group auto discovery spec: {spec}")
    if discoverer != "asg":
        raise SpecError(f"unsupported discoverer: {discoverer}")
    key, sep, value = param.partition("=")
    if not sep:
        raise SpecError(f"invalid key=value pair {param!r}")
    if key != "tag":
        raise SpecError(f"unsupported parameter key {key!r} for discoverer asg; the only one is 'tag'")
    if not value:
        raise SpecError("tag value not supplied")
    tags: dict[str, str] = {}
    for item in value.split(","):
        name, _, wanted = item.partition("=")
        tags[name] = wanted
    return tags


def default_discovery_tags(cluster_name: str = "") -> dict[str, str]:
    """What EKS documents for CA: `k8s.io/cluster-autoscaler/enabled` (+ `.../<cluster>`)."""
    tags = {DEFAULT_DISCOVERY_TAG: ""}
    if cluster_name:
        tags[f"k8s.io/cluster-autoscaler/{cluster_name}"] = ""
    return tags


def matches_discovery(asg_tags: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    """Every wanted key present, with the wanted value when one is given (CA's tag filters)."""
    return all(k in asg_tags and (not v or asg_tags[k] == v) for k, v in wanted.items())


@dataclass(frozen=True, slots=True)
class NodesSpec:
    min_size: int
    max_size: int
    name: str


def parse_nodes_spec(spec: str) -> NodesSpec:
    """`--nodes=<min>:<max>:<name>`; min may be 0 on AWS, max must not be below min."""
    tokens = spec.split(":", 2)
    if len(tokens) != 3:
        raise SpecError(f"wrong nodes configuration: {spec}")
    try:
        low, high = _go_atoi(tokens[0]), _go_atoi(tokens[1])
    except ValueError:
        raise SpecError(f"wrong nodes configuration: {spec}") from None
    if low < 0 or high < low or not tokens[2]:
        raise SpecError(f"wrong nodes configuration: {spec}")
    return NodesSpec(low, high, tokens[2])


def _go_atoi(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(text)
    return int(text)


@dataclass(frozen=True, slots=True)
class AsgOptions:
    """NodeGroupAutoscalingOptions that an ASG may override; durations in seconds."""

    scale_down_utilization_threshold: float
    scale_down_gpu_utilization_threshold: float
    scale_down_unneeded_time: float
    scale_down_unready_time: float
    ignore_daemonsets_utilization: bool


def options_from_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """`autoscaling-options/<name>` tags by name (prefix required at the start here, unlike the rest)."""
    options = {}
    for key, value in tags.items():
        if not key.startswith(OPTIONS_PREFIX):
            continue
        parts = key.split(OPTIONS_PREFIX)
        if len(parts) == 2 and parts[1]:
            options[parts[1]] = value
    return options


def asg_options(options: Mapping[str, str], defaults: AsgOptions) -> AsgOptions:
    """Each known, well-formed option replaces its default; others are ignored (CA logs them)."""
    parsers: dict[str, tuple[str, Callable[[str], Any]]] = {
        "scaledownutilizationthreshold": ("scale_down_utilization_threshold", go_parse_float),
        "scaledowngpuutilizationthreshold": ("scale_down_gpu_utilization_threshold", go_parse_float),
        "scaledownunneededtime": ("scale_down_unneeded_time", parse_go_duration),
        "scaledownunreadytime": ("scale_down_unready_time", parse_go_duration),
        "ignoredaemonsetsutilization": ("ignore_daemonsets_utilization", go_parse_bool),
    }
    result = defaults
    for key, (attribute, parse) in parsers.items():
        if key not in options:
            continue
        try:
            result = replace(result, **{attribute: parse(options[key])})
        except ValueError:
            continue
    return result


_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_BOOLS |= {"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def go_parse_float(text: str) -> float:
    """strconv.ParseFloat for decimal text (no surrounding spaces, no underscores)."""
    if not _FLOAT.fullmatch(text):
        raise ValueError(f"invalid float {text!r}")
    return float(text)


def go_parse_bool(text: str) -> bool:
    try:
        return _BOOLS[text]
    except KeyError:
        raise ValueError(f"invalid bool {text!r}") from None


@dataclass(frozen=True, slots=True)
class InstanceTypeSource:
    """Where CA reads an ASG's instance type: the first match of its precedence order."""

    kind: str  # launch-configuration | launch-template | override | requirements
    name: str = ""  # launch configuration or launch template name, or the override type
    version: str = ""


def instance_type_source(asg: Mapping[str, Any]) -> InstanceTypeSource:
    """LaunchConfigurationName > LaunchTemplate > the mixed instances policy's first type override >
    its single requirements override > its launch template (aws_wrapper.go getInstanceTypesForAsgs).
    A launch template may itself hold InstanceRequirements instead of a type
    (getInstanceTypeByLaunchTemplate): the caller resolves that. Raises ValueError when the ASG
    names none, or has both type and requirements overrides (buildAsgFromAWS refuses it)."""
    if asg.get("LaunchConfigurationName"):
        return InstanceTypeSource("launch-configuration", str(asg["LaunchConfigurationName"]))
    template = asg.get("LaunchTemplate")
    if template:
        return InstanceTypeSource("launch-template", *_template_ref(template))
    policy = asg.get("MixedInstancesPolicy")
    if policy:
        types = mixed_policy_types(policy)
        if types and requirements_override(policy) is not None:
            raise ValueError("invalid setup of both instance type and instance requirements overrides")
        if types:
            return InstanceTypeSource("override", types[0])
        spec = (policy.get("LaunchTemplate") or {}).get("LaunchTemplateSpecification") or {}
        if requirements_override(policy) is not None:
            return InstanceTypeSource("requirements", *_template_ref(spec))
        if spec:
            return InstanceTypeSource("launch-template", *_template_ref(spec))
    raise ValueError(f"ASG {asg.get('AutoScalingGroupName', '')!r} has no launch configuration or template")


def mixed_policy_types(policy: Mapping[str, Any]) -> list[str]:
    """All override instance types of a mixed instances policy, in order."""
    overrides = (policy.get("LaunchTemplate") or {}).get("Overrides") or []
    return [str(o["InstanceType"]) for o in overrides if o.get("InstanceType")]


def requirements_override(policy: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The InstanceRequirements of the policy's override when it has exactly one override and that
    one has requirements (auto_scaling_groups.go, buildAsgFromAWS: getInstanceTypeRequirements)."""
    overrides = (policy.get("LaunchTemplate") or {}).get("Overrides") or []
    if len(overrides) != 1:
        return None
    return overrides[0].get("InstanceRequirements") or None


# The fields aws_wrapper.go getRequirementsRequestFromAutoscaling / getRequirementsRequestFromEC2
# carry into GetInstanceTypesFromInstanceRequirements (the ASG and EC2 APIs name them alike).
REQUEST_FIELDS = (
    "MemoryMiB",
    "VCpuCount",
    "AcceleratorCount",
    "AcceleratorManufacturers",
    "AcceleratorNames",
    "AcceleratorTotalMemoryMiB",
    "AcceleratorTypes",
    "BareMetal",
    "BaselineEbsBandwidthMbps",
    "BurstablePerformance",
    "CpuManufacturers",
    "ExcludedInstanceTypes",
    "InstanceGenerations",
    "LocalStorage",
    "LocalStorageTypes",
    "MemoryGiBPerVCpu",
    "NetworkInterfaceCount",
    "OnDemandMaxPricePercentageOverLowestPrice",
    "RequireHibernateSupport",
    "SpotMaxPricePercentageOverLowestPrice",
    "TotalLocalStorageGB",
)


def requirements_request(requirements: Mapping[str, Any]) -> dict[str, Any]:
    """The InstanceRequirementsRequest cluster-autoscaler sends for these requirements: the fields
    above that are set, nothing else (AllowedInstanceTypes and newer fields are not carried)."""
    return {
        name: requirements[name] for name in REQUEST_FIELDS if requirements.get(name) not in (None, "", [])
    }


def capacity_requirements(
    policy: Mapping[str, Any] | None, template_data: Mapping[str, Any]
) -> InstanceRequirements | None:
    """What aws_manager.go updateCapacityWithRequirementsOverrides puts over the instance type's
    cpu, memory and GPUs: only for a mixed instances policy without instance type overrides; the
    requirements of its single override, else of its launch template (buildAsgFromAWS)."""
    if not policy or mixed_policy_types(policy):
        return None
    raw = requirements_override(policy) or template_data.get("InstanceRequirements") or {}
    vcpu = (raw.get("VCpuCount") or {}).get("Min")
    memory = (raw.get("MemoryMiB") or {}).get("Min")
    gpu = None
    if "nvidia" in (raw.get("AcceleratorManufacturers") or []) and "gpu" in (
        raw.get("AcceleratorTypes") or []
    ):
        # CA reads AcceleratorCount.Min unguarded (a Go nil dereference when absent): none is taken here.
        gpu = (raw.get("AcceleratorCount") or {}).get("Min")
    return InstanceRequirements(
        vcpu_min=None if vcpu is None else int(vcpu),
        memory_mib_min=None if memory is None else int(memory),
        nvidia_gpu_min=None if gpu is None else int(gpu),
    )


def launch_template_spec(asg: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name or id, version) of the template new instances are launched from, if any."""
    spec = asg.get("LaunchTemplate") or (
        ((asg.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get(
            "LaunchTemplateSpecification"
        )
    )
    return _template_ref(spec) if spec else None


def _template_ref(spec: Mapping[str, Any]) -> tuple[str, str]:
    # A missing Version means $Default to the ASG API (CA issue #1728).
    name = spec.get("LaunchTemplateName") or spec.get("LaunchTemplateId") or ""
    return str(name), str(spec.get("Version") or "$Default")
