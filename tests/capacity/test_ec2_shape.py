"""cluster-autoscaler's reading of DescribeInstanceTypes (aws_util.go transformInstanceType,
getGpuCount, interpretEc2SupportedArchitecure), restated in capacity/ec2_shape.py.

The records below are InstanceTypeInfo as EC2 returns them for these types (the fields CA reads);
the expected shapes are CA's static list, which the same function wrote (tests/upstream/)."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.autoscaler_view import InstanceShape
from capacity.ec2_shape import autoscaler_architecture, autoscaler_gpu_count, shape_from_ec2
from tests.upstream.ec2_instance_types import ARCHITECTURES, STATIC_LIST


def _info(
    vcpu: int, mib: int, architectures: list[str], gpus: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    info: dict[str, Any] = {
        "VCpuInfo": {"DefaultVCpus": vcpu},
        "MemoryInfo": {"SizeInMiB": mib},
        "ProcessorInfo": {"SupportedArchitectures": architectures},
    }
    if gpus is not None:
        info["GpuInfo"] = {"Gpus": gpus}
    return info


# DescribeInstanceTypes records (abridged to the fields CA reads).
EC2_RECORDS: dict[str, dict[str, Any]] = {
    "t2.medium": _info(2, 4096, ["i386", "x86_64"]),
    "t1.micro": _info(1, 627, ["i386", "x86_64"]),
    "mac1.metal": _info(12, 32768, ["x86_64_mac"]),
    "mac2.metal": _info(8, 16384, ["arm64_mac"]),
    "a1.medium": _info(1, 2048, ["arm64"]),
    "m5.large": _info(2, 8192, ["x86_64"]),
    "g4ad.xlarge": _info(
        4, 16384, ["x86_64"], [{"Name": "Radeon Pro V520", "Manufacturer": "AMD", "Count": 1}]
    ),
    "g4ad.16xlarge": _info(
        64, 262144, ["x86_64"], [{"Name": "Radeon Pro V520", "Manufacturer": "AMD", "Count": 4}]
    ),
    "dl1.24xlarge": _info(
        96, 786432, ["x86_64"], [{"Name": "Gaudi HL-205", "Manufacturer": "Habana", "Count": 8}]
    ),
    "p4d.24xlarge": _info(96, 1179648, ["x86_64"], [{"Name": "A100", "Manufacturer": "NVIDIA", "Count": 8}]),
    "g5g.xlarge": _info(4, 8192, ["arm64"], [{"Name": "T4g", "Manufacturer": "NVIDIA", "Count": 1}]),
}


@pytest.mark.parametrize("name", sorted(EC2_RECORDS))
def test_shape_from_ec2_is_the_shape_cas_static_list_has(name: str) -> None:
    """From EC2 as from CA's generated list: t2.medium (i386 first) and mac2.metal (arm64_mac) are
    amd64; g4ad.xlarge's AMD GPU and dl1.24xlarge's 8 Habana GPUs count."""
    vcpu, memory, gpu, architecture = STATIC_LIST[name]
    assert shape_from_ec2(name, EC2_RECORDS[name]) == InstanceShape(
        instance_type=name, vcpu=vcpu, memory_mib=memory, gpu=gpu, architecture=architecture
    )


@pytest.mark.parametrize(("ec2_name", "expected"), ARCHITECTURES)
def test_architecture_as_interpret_ec2_supported_architecture(ec2_name: str, expected: str) -> None:
    """arm64 stays arm64; every other name, known or not, is amd64."""
    assert autoscaler_architecture(ec2_name) == expected


def test_gpus_of_several_entries_and_manufacturers_add_up() -> None:
    """getGpuCount sums every entry; an entry without a Count adds nothing; no GpuInfo is 0."""
    gpus = {
        "Gpus": [{"Manufacturer": "AMD", "Count": 2}, {"Manufacturer": "NVIDIA", "Count": 3}, {"Name": "x"}]
    }
    assert (autoscaler_gpu_count(gpus), autoscaler_gpu_count(None), autoscaler_gpu_count({})) == (5, 0, 0)


def test_a_record_without_processor_or_sizes_gives_zeros_and_no_architecture() -> None:
    """transformInstanceType leaves what EC2 does not say at Go's zero values: 0 vCPU, 0 MiB, no
    GPU and an empty architecture (it sets one only from a non-empty SupportedArchitectures)."""
    assert shape_from_ec2("z1.odd", {}) == InstanceShape(
        "z1.odd", vcpu=0, memory_mib=0, gpu=0, architecture=""
    )
    no_archs = _info(2, 1024, [])
    assert shape_from_ec2("z1.odd", no_archs) == InstanceShape("z1.odd", 2, 1024, 0, "")
