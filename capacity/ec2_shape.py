"""cluster-autoscaler's reading of an EC2 DescribeInstanceTypes record: the shape of a template node.

Restates kubernetes/autoscaler `cluster-autoscaler/cloudprovider/aws/aws_util.go`:
`transformInstanceType` (the fields it takes), `getGpuCount` (GPUs of every manufacturer) and
`interpretEc2SupportedArchitecure` (arm64 is arm64, every other name amd64). The same functions write
CA's static list (`ec2_instance_types/gen.go`), so a shape from EC2 and one from fitguard's table agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.autoscaler_view import InstanceShape


def autoscaler_architecture(ec2_architecture: str) -> str:
    """`interpretEc2SupportedArchitecure`: "arm64" stays arm64; i386, x86_64, x86_64_mac, arm64_mac
    and any name EC2 adds later are amd64 (CA's switch has no other answer)."""
    return "arm64" if ec2_architecture == "arm64" else "amd64"


def autoscaler_gpu_count(gpu_info: Mapping[str, Any] | None) -> int:
    """`getGpuCount`: the Count of every GPU entry, whatever its manufacturer (NVIDIA, AMD,
    Habana...); CA then offers them all as nvidia.com/gpu."""
    return sum(int(gpu.get("Count") or 0) for gpu in (gpu_info or {}).get("Gpus") or ())


def shape_from_ec2(instance_type: str, info: Mapping[str, Any]) -> InstanceShape:
    """`transformInstanceType` on one InstanceTypeInfo: a missing size is 0, and the architecture is
    empty when EC2 lists none (CA sets it only from the first supported architecture)."""
    architectures = (info.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ()
    return InstanceShape(
        instance_type=instance_type,
        vcpu=int((info.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
        memory_mib=int((info.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
        gpu=autoscaler_gpu_count(info.get("GpuInfo")),
        architecture=autoscaler_architecture(str(architectures[0])) if architectures else "",
    )
