"""The EC2NodeClass fields and Karpenter controller settings that change an instance type's capacity,
as options objects, and how they are read from an EC2NodeClass object (a dict as the API returns it).

Upstream: aws/karpenter-provider-aws `pkg/apis/v1/ec2nodeclass.go` (`BlockDeviceMapping`,
`InstanceStorePolicy`, `KubeletConfiguration`), `pkg/operator/options/options.go` (`RESERVED_ENIS`
default 0, `VM_MEMORY_OVERHEAD_PERCENT` default 0.075), `pkg/providers/instancetype/types.go`
(`resolveMaxPods`, `resolveResourceExpressions`: with the NodeClassCEL feature gate off, its default,
a string maxPods and a kubeReserved / systemReserved value that is not a quantity are expressions
and are ignored, leaving the family's default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from capacity.karpenter.amifamily import AmiFamily, family_of
from capacity.quantity import QuantityError, parse_quantity

RAID0 = "RAID0"


class NodeClassError(ValueError):
    """A field of an EC2NodeClass that cannot be read; the message names the field."""


@dataclass(frozen=True, slots=True)
class KarpenterOptions:
    """The Karpenter controller's settings that change capacity (its Deployment's environment)."""

    reserved_enis: int = 0
    vm_memory_overhead_percent: float = 0.075
    node_class_cel: bool = False  # AWS_FEATURE_GATES NodeClassCEL: kubelet expressions evaluated


@dataclass(frozen=True, slots=True)
class BlockDevice:
    device_name: str | None
    volume_size_bytes: int | None  # ebs.volumeSize, None when not given
    root_volume: bool = False


@dataclass(frozen=True, slots=True)
class KubeletOptions:
    """spec.kubelet: quantities as written (kube/system reserved: the expressions already dropped)."""

    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    eviction_soft: Mapping[str, str] = field(default_factory=dict)  # read, but no part of allocatable


@dataclass(frozen=True, slots=True)
class NodeClassOptions:
    family: AmiFamily = AmiFamily.AL2023
    block_devices: tuple[BlockDevice, ...] = ()
    instance_store_policy: str | None = None
    kubelet: KubeletOptions = field(default_factory=KubeletOptions)

    @property
    def raid0(self) -> bool:
        return self.instance_store_policy == RAID0


def _map(raw: object, where: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise NodeClassError(f"{where}: expected a map, got {type(raw).__name__}")
    return raw


def _int(raw: object, where: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise NodeClassError(f"{where}: expected a non-negative integer, got {raw!r}")
    return raw


def _is_quantity(value: object) -> bool:
    try:
        parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return False
    return True


def _quantities(raw: object, where: str, cel: bool) -> Mapping[str, str]:
    # an entry that is not a quantity is a CEL expression, honoured only with the NodeClassCEL gate
    entries = {str(k): str(v) for k, v in _map(raw, where).items()}
    expressions = sorted(k for k, v in entries.items() if not _is_quantity(v))
    if cel and expressions:
        raise NodeClassError(f"{where}.{expressions[0]}: {_NO_CEL}")
    return MappingProxyType({k: v for k, v in entries.items() if k not in expressions})


def _strings(raw: object, where: str) -> Mapping[str, str]:
    return MappingProxyType({str(k): str(v) for k, v in _map(raw, where).items()})


_NO_CEL = "an expression Karpenter evaluates with NodeClassCEL on; fitguard does not evaluate it"


def kubelet_from_object(raw: object, cel: bool = False) -> KubeletOptions:
    """spec.kubelet; with `cel` (the gate on) an expression is refused, since Karpenter would use it."""
    spec = _map(raw, "spec.kubelet")
    max_pods = spec.get("maxPods")
    if cel and isinstance(max_pods, str):
        raise NodeClassError(f"spec.kubelet.maxPods: {_NO_CEL}")
    return KubeletOptions(
        max_pods=None if isinstance(max_pods, str) else _int(max_pods, "spec.kubelet.maxPods"),
        pods_per_core=_int(spec.get("podsPerCore"), "spec.kubelet.podsPerCore"),
        kube_reserved=_quantities(spec.get("kubeReserved"), "spec.kubelet.kubeReserved", cel),
        system_reserved=_quantities(spec.get("systemReserved"), "spec.kubelet.systemReserved", cel),
        eviction_hard=_strings(spec.get("evictionHard"), "spec.kubelet.evictionHard"),
        eviction_soft=_strings(spec.get("evictionSoft"), "spec.kubelet.evictionSoft"),
    )


def quantity_bytes(raw: object, where: str) -> int | None:
    if raw is None:
        return None
    try:
        return -(-parse_quantity(raw, where) // 1000)  # whole bytes, rounded up, exactly
    except (QuantityError, TypeError) as err:
        raise NodeClassError(f"{where}: {err}") from None


def block_devices_from_object(raw: object) -> tuple[BlockDevice, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise NodeClassError("spec.blockDeviceMappings: expected a list")
    devices = []
    for index, item in enumerate(raw):
        where = f"spec.blockDeviceMappings[{index}]"
        entry = _map(item, where)
        ebs = _map(entry.get("ebs"), f"{where}.ebs")
        name = entry.get("deviceName")
        devices.append(
            BlockDevice(
                device_name=None if name is None else str(name),
                volume_size_bytes=quantity_bytes(ebs.get("volumeSize"), f"{where}.ebs.volumeSize"),
                root_volume=entry.get("rootVolume") is True,
            )
        )
    return tuple(devices)


def nodeclass_from_object(obj: Mapping[str, Any], cel: bool = False) -> NodeClassOptions:
    """The capacity-changing parts of an EC2NodeClass; raises NodeClassError naming the bad field.
    `cel`: Karpenter runs with the NodeClassCEL gate on (KarpenterOptions.node_class_cel)."""
    spec = _map(obj.get("spec"), "spec")
    terms = spec.get("amiSelectorTerms") or []
    if not isinstance(terms, list):
        raise NodeClassError("spec.amiSelectorTerms: expected a list")
    aliases = tuple(str(t["alias"]) for t in terms if isinstance(t, Mapping) and t.get("alias"))
    family = spec.get("amiFamily")
    try:
        resolved = family_of(None if family is None else str(family), aliases)
    except ValueError as err:
        raise NodeClassError(f"spec.amiFamily / amiSelectorTerms: {err}") from None
    policy = spec.get("instanceStorePolicy")
    return NodeClassOptions(
        family=resolved,
        block_devices=block_devices_from_object(spec.get("blockDeviceMappings")),
        instance_store_policy=None if policy is None else str(policy),
        kubelet=kubelet_from_object(spec.get("kubelet"), cel),
    )
