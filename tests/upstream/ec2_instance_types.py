"""cluster-autoscaler's instance shapes, written from its static list and its EC2 reading.

Source: kubernetes/autoscaler `cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go`
(`var InstanceTypes`, StaticListLastUpdateTime 2026-01-22) at commit
55c37cd5eb550756c5ccc5a89e9068d77797e575, read 2026-12-01. The list is written by
`ec2_instance_types/gen.go` through `transformInstanceType` in `aws_util.go`, the same function CA
applies to DescribeInstanceTypes at startup: the first supported architecture, "arm64" kept and
every other name (i386, x86_64, x86_64_mac, arm64_mac) amd64 (`interpretEc2SupportedArchitecure`);
the GPU count of every manufacturer summed (`getGpuCount`).
"""

from __future__ import annotations

# type: (VCPU, MemoryMb, GPU, Architecture)
STATIC_LIST: dict[str, tuple[int, int, int, str]] = {
    "a1.medium": (1, 2048, 0, "arm64"),
    "c6g.medium": (1, 2048, 0, "arm64"),
    "dl1.24xlarge": (96, 786432, 8, "amd64"),  # 8 Habana Gaudi
    "g4ad.16xlarge": (64, 262144, 4, "amd64"),  # AMD Radeon Pro V520
    "g4ad.xlarge": (4, 16384, 1, "amd64"),  # AMD Radeon Pro V520
    "g5.xlarge": (4, 16384, 1, "amd64"),
    "g5g.xlarge": (4, 8192, 1, "arm64"),
    "i4i.large": (2, 16384, 0, "amd64"),
    "inf1.xlarge": (4, 8192, 0, "amd64"),  # Inferentia is no GPU to EC2
    "m5.large": (2, 8192, 0, "amd64"),
    "mac1.metal": (12, 32768, 0, "amd64"),  # EC2: x86_64_mac
    "mac2.metal": (8, 16384, 0, "amd64"),  # EC2: arm64_mac, amd64 to CA
    "p4d.24xlarge": (96, 1179648, 8, "amd64"),
    "t1.micro": (1, 627, 0, "amd64"),  # EC2: i386 first
    "t2.medium": (2, 4096, 0, "amd64"),  # EC2: i386 first
    "trn1.32xlarge": (128, 524288, 0, "amd64"),
    "x8i.64xlarge": (256, 4194304, 0, "amd64"),
}

# (EC2 SupportedArchitectures[0], CA's kubernetes.io/arch), from interpretEc2SupportedArchitecure.
ARCHITECTURES: tuple[tuple[str, str], ...] = (
    ("arm64", "arm64"),
    ("i386", "amd64"),
    ("x86_64", "amd64"),
    ("x86_64_mac", "amd64"),
    ("arm64_mac", "amd64"),  # no case of its own: the default
    ("riscv64", "amd64"),  # a name EC2 does not use (yet): the default
)
