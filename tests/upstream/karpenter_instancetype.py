"""Cases from aws/karpenter-provider-aws `pkg/providers/instancetype/suite_test.go` at
1d927085dd81a9df9301e613f371dac5b4d16bfe, restated as (instance type, EC2NodeClass spec, controller
settings) -> expected quantities. Each case names the `It` / `Entry` it comes from. Where upstream
asserts "about 10% of capacity" (BeNumerically "~"), the exact value Karpenter's arithmetic gives is
written, with the arithmetic beside it. The instance facts are upstream's fake EC2 data
(`pkg/fake/zz_generated.describe_instance_types.go`), which equal fitguard's for these types:
t3.large 2 vCPU, 8192 MiB, 3 ENIs x 12 IPv4; m5.xlarge 4 vCPU, 16384 MiB, 4 ENIs x 15 IPv4;
m6idn.32xlarge 8 ENIs x 50 IPv4 on its default card, 7600 GB NVMe.

`expect` keys are `<part>.<resource>` with part one of capacity, kubeReserved, systemReserved,
evictionThreshold, allocatable; values are Kubernetes quantities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    name: str
    upstream: str  # the Context / It (or DescribeTable Entry) it restates
    instance_type: str
    spec: dict[str, Any]
    expect: dict[str, str]
    reserved_enis: int = 0
    vm_memory_overhead_percent: float = 0.075
    settings_note: str = field(default="")


AL2023 = {"amiSelectorTerms": [{"alias": "al2023@latest"}]}
_RESERVED_20_10 = {"systemReserved": {"memory": "20Gi"}, "kubeReserved": {"memory": "10Gi"}}


def _kubelet(**kubelet: Any) -> dict[str, Any]:
    return {**AL2023, "kubelet": kubelet}


def _family(alias: str, family: str, **extra: Any) -> dict[str, Any]:
    return {"amiFamily": family, "amiSelectorTerms": [{"alias": alias}], **extra}


OVERHEAD = [
    Case(
        "system-reserved-defaults",
        "Overhead/System Reserved: should use defaults when no kubelet is specified",
        "m5.xlarge",
        _kubelet(),
        {"systemReserved.cpu": "0", "systemReserved.memory": "0", "systemReserved.ephemeral-storage": "0"},
    ),
    Case(
        "system-reserved-override",
        "Overhead/System Reserved: should override system reserved cpus when specified",
        "m5.xlarge",
        _kubelet(systemReserved={"cpu": "2", "memory": "20Gi", "ephemeral-storage": "10Gi"}),
        {
            "systemReserved.cpu": "2",
            "systemReserved.memory": "20Gi",
            "systemReserved.ephemeral-storage": "10Gi",
            # computeAllocatable: 4000m less 80m kube-reserved less 2 cpus system-reserved
            "allocatable.cpu": "1920m",
        },
    ),
    # 60m + 10m + 10m for 4000m; 11 * 58 + 255 MiB (4 ENIs x 14 + 2 = 58 pods)
    Case(
        "kube-reserved-defaults",
        "Overhead/Kube Reserved: should use defaults when no kubelet is specified",
        "m5.xlarge",
        _kubelet(),
        {"kubeReserved.cpu": "80m", "kubeReserved.memory": "893Mi", "kubeReserved.ephemeral-storage": "1Gi"},
    ),
    Case(
        "kube-reserved-override",
        "Overhead/Kube Reserved: should override kube reserved when specified",
        "m5.xlarge",
        _kubelet(
            systemReserved={"cpu": "1", "memory": "20Gi", "ephemeral-storage": "1Gi"},
            kubeReserved={"cpu": "2", "memory": "10Gi", "ephemeral-storage": "2Gi"},
        ),
        {"kubeReserved.cpu": "2", "kubeReserved.memory": "10Gi", "kubeReserved.ephemeral-storage": "2Gi"},
    ),
]

_EVICTION = "Overhead/Eviction Thresholds (VM_MEMORY_OVERHEAD_PERCENT 0)"
# m5.xlarge's memory capacity with no VM overhead: 16384Mi = 17179869184 bytes
EVICTION = [
    Case(
        "eviction-hard-quantity",
        f"{_EVICTION}/Eviction Hard: should override ... specified as a quantity",
        "m5.xlarge",
        _kubelet(**_RESERVED_20_10, evictionHard={"memory.available": "500Mi"}),
        {"evictionThreshold.memory": "500Mi"},
        vm_memory_overhead_percent=0,
    ),
    # ceil(17179869184 / 100 * 10)
    Case(
        "eviction-hard-percent",
        f"{_EVICTION}/Eviction Hard: should override ... as a percentage value",
        "m5.xlarge",
        _kubelet(**_RESERVED_20_10, evictionHard={"memory.available": "10%"}),
        {"evictionThreshold.memory": "1717986919"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-hard-100-percent",
        f"{_EVICTION}/Eviction Hard: should consider ... disabled when specified as 100%",
        "m5.xlarge",
        _kubelet(**_RESERVED_20_10, evictionHard={"memory.available": "100%"}),
        {"evictionThreshold.memory": "0"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-soft-only",
        f"{_EVICTION}/Eviction Hard: should used default ... when evictionHard not specified",
        "m5.xlarge",
        _kubelet(**_RESERVED_20_10, evictionSoft={"memory.available": "50Mi"}),
        {"evictionThreshold.memory": "100Mi"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-soft-500mi",
        f"{_EVICTION}/Eviction Soft: should use default threshold when only evictionSoft",
        "m5.xlarge",
        _kubelet(**_RESERVED_20_10, evictionSoft={"memory.available": "500Mi"}),
        {"evictionThreshold.memory": "100Mi"},
        vm_memory_overhead_percent=0,
    ),
    # ceil(17179869184 / 100 * 5)
    Case(
        "eviction-hard-percent-soft-ignored",
        f"{_EVICTION}/Eviction Soft: should use evictionHard percentage",
        "m5.xlarge",
        _kubelet(
            **_RESERVED_20_10,
            evictionHard={"memory.available": "5%"},
            evictionSoft={"memory.available": "10%"},
        ),
        {"evictionThreshold.memory": "858993460"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-soft-100-percent",
        f"{_EVICTION}/Eviction Soft: should use default threshold when evictionSoft 100%",
        "m5.xlarge",
        _kubelet(**_RESERVED_20_10, evictionSoft={"memory.available": "100%"}),
        {"evictionThreshold.memory": "100Mi"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-bottlerocket",
        f"{_EVICTION}/Eviction Soft: should ignore eviction threshold when using Bottlerocket",
        "m5.xlarge",
        {
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "kubelet": {
                **_RESERVED_20_10,
                "evictionHard": {"memory.available": "1Gi"},
                "evictionSoft": {"memory.available": "10Gi"},
            },
        },
        {"evictionThreshold.memory": "1Gi"},
        vm_memory_overhead_percent=0,
    ),
    # 10% of the 20Gi root volume
    Case(
        "eviction-defaults",
        f"{_EVICTION}: should take the default eviction threshold when none is specified",
        "m5.xlarge",
        _kubelet(),
        {
            "evictionThreshold.cpu": "0",
            "evictionThreshold.memory": "100Mi",
            "evictionThreshold.ephemeral-storage": "2Gi",
        },
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-hard-over-soft",
        f"{_EVICTION}: should use only evictionHard for overhead, ignoring evictionSoft",
        "m5.xlarge",
        _kubelet(
            **_RESERVED_20_10,
            evictionSoft={"memory.available": "3Gi"},
            evictionHard={"memory.available": "1Gi"},
        ),
        {"evictionThreshold.memory": "1Gi"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-hard-percent-over-soft",
        f"{_EVICTION}: should use only evictionHard percentage for overhead",
        "m5.xlarge",
        _kubelet(
            **_RESERVED_20_10,
            evictionSoft={"memory.available": "2%"},
            evictionHard={"memory.available": "5%"},
        ),
        {"evictionThreshold.memory": "858993460"},
        vm_memory_overhead_percent=0,
    ),
    Case(
        "eviction-hard-mixed",
        f"{_EVICTION}: should use only evictionHard value with mixed percentage/value types",
        "m5.xlarge",
        _kubelet(
            **_RESERVED_20_10,
            evictionSoft={"memory.available": "10%"},
            evictionHard={"memory.available": "1Gi"},
        ),
        {"evictionThreshold.memory": "1Gi"},
        vm_memory_overhead_percent=0,
    ),
]

_FAMILIES = [
    ("al2", "al2@latest", "AL2"),
    ("al2023", "al2023@latest", "AL2023"),
    ("bottlerocket", "bottlerocket@latest", "Bottlerocket"),
    ("windows2019", "windows2019@latest", "Windows2019"),
    ("windows2022", "windows2022@latest", "Windows2022"),
    ("windows2025", "windows2025@latest", "Windows2025"),
    ("custom", None, "Custom"),
]


def _family_spec(alias: str | None, family: str, **extra: Any) -> dict[str, Any]:
    if alias is None:  # upstream's Entry uses an AMI id term; no alias
        return {"amiFamily": family, "amiSelectorTerms": [{"id": "ami-123"}], **extra}
    return _family(alias, family, **extra)


# DescribeTable "should set max-pods to user-defined value if specified" (t3.large, maxPods 10):
# kube-reserved memory is 11 * 35 + 255 for the ENI-limited families, 11 * 10 + 255 for the others
_MAX_PODS_MEMORY = {"al2": "640Mi", "al2023": "640Mi", "custom": "640Mi"}
MAX_PODS_PER_FAMILY = [
    Case(
        f"max-pods-10-{key}",
        f"DescribeTable should set max-pods to user-defined value/Entry {key}",
        "t3.large",
        _family_spec(alias, family, kubelet={"maxPods": 10}),
        {"capacity.pods": "10", "kubeReserved.memory": _MAX_PODS_MEMORY.get(key, "365Mi")},
    )
    for key, alias, family in _FAMILIES
]

# DescribeTable "should reserve ENIs when aws.reservedENIs is set" (t3.large, RESERVED_ENIS=1):
# (3 - 1) * 11 + 2 = 24 pods; Windows does not count ENIs (110)
_RESERVED_PODS = {"windows2019": "110", "windows2022": "110", "windows2025": "110"}
_RESERVED_MEMORY = {
    "bottlerocket": "519Mi",
    "windows2019": "1465Mi",
    "windows2022": "1465Mi",
    "windows2025": "1465Mi",
}
RESERVED_ENIS_PER_FAMILY = [
    Case(
        f"reserved-enis-1-{key}",
        f"DescribeTable should reserve ENIs when aws.reservedENIs is set/Entry {key}",
        "t3.large",
        _family_spec(alias, family),
        {
            "capacity.pods": _RESERVED_PODS.get(key, "24"),
            "kubeReserved.memory": _RESERVED_MEMORY.get(key, "640Mi"),
        },
        reserved_enis=1,
    )
    for key, alias, family in _FAMILIES
]

PODS = [
    Case(
        "max-pods-from-enis-t3",
        "should default max pods based off of network interfaces (t3.large)",
        "t3.large",
        _kubelet(),
        {"capacity.pods": "35"},
    ),
    Case(
        "max-pods-from-enis-m6idn",
        "should default max pods based off of network interfaces (m6idn.32xlarge)",
        "m6idn.32xlarge",
        _kubelet(),
        {"capacity.pods": "394"},
    ),
    Case(
        "max-pods-user",
        "should set max-pods to user-defined value if specified",
        "m5.xlarge",
        _kubelet(maxPods=10),
        {"capacity.pods": "10"},
    ),
    Case(
        "reserved-enis-not-below-zero",
        "should reserve ENIs ... and not go below 0 ENIs in max-pods calculation",
        "t3.large",
        _kubelet(),
        {"capacity.pods": "0"},
        reserved_enis=1_000_000,
    ),
    Case(
        "pods-per-core-1",
        "should override pods-per-core value (min of vCPUs and ENI-limited pods)",
        "m5.xlarge",
        _kubelet(podsPerCore=1),
        {"capacity.pods": "4"},
    ),
    Case(
        "pods-per-core-and-max-pods",
        "should take the minimum of pods-per-core and max-pods",
        "m5.xlarge",
        _kubelet(podsPerCore=4, maxPods=20),
        {"capacity.pods": "16"},
    ),
    Case(
        "pods-per-core-bottlerocket",
        "should ignore pods-per-core when using Bottlerocket AMI",
        "m5.xlarge",
        {"amiSelectorTerms": [{"alias": "bottlerocket@latest"}], "kubelet": {"podsPerCore": 1}},
        {"capacity.pods": "58"},
    ),
    Case(
        "pods-per-core-0",
        "should take limited pod density to be the default pods number when pods-per-core is 0",
        "t3.large",
        _kubelet(podsPerCore=0),
        {"capacity.pods": "35"},
    ),
    Case(
        "pods-110-windows",
        "should set pods to 110 if AMI Family doesn't support",
        "m5.xlarge",
        {"amiSelectorTerms": [{"alias": "windows2022@latest"}]},
        {"capacity.pods": "110"},
    ),
    Case(
        "no-pod-eni-on-t3",
        "should not launch AWS Pod ENI on a t3",
        "t3.large",
        _kubelet(),
        {"capacity.vpc.amazonaws.com/pod-eni": "0", "allocatable.vpc.amazonaws.com/pod-eni": "0"},
    ),
    Case(
        "pod-eni-on-m5",
        "should launch vpc.amazonaws.com/pod-eni on a compatible instance type",
        "m5.xlarge",
        _kubelet(),
        {"capacity.vpc.amazonaws.com/pod-eni": "18"},
    ),
]

_XVDA_NO_SIZE = [{"deviceName": "/dev/xvda", "ebs": {"snapshotID": "snap-xxxxxxxx"}}]
EPHEMERAL = [
    Case(
        "ebs-default-custom",
        "Ephemeral Storage: should default to EBS defaults ... for custom AMIs",
        "m5.large",
        {
            "amiFamily": "Custom",
            "amiSelectorTerms": [{"tags": {"*": "*"}}],
            "blockDeviceMappings": _XVDA_NO_SIZE,
        },
        {"capacity.ephemeral-storage": "20Gi"},
    ),
    Case(
        "custom-takes-the-last-mapping",
        "ephemeralStorage: a Custom AMI's volumes are unknown, the last mapping's size is taken",
        "m5.large",
        {
            "amiFamily": "Custom",
            "amiSelectorTerms": [{"id": "ami-123"}],
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "10Gi"}},
                {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "30Gi"}},
            ],
        },
        {"capacity.ephemeral-storage": "30Gi"},
    ),
    Case(
        "ebs-default-al2",
        "Ephemeral Storage: should default to EBS defaults ... for AL2 Root volume",
        "m5.large",
        {"amiSelectorTerms": [{"alias": "al2@latest"}], "blockDeviceMappings": _XVDA_NO_SIZE},
        {"capacity.ephemeral-storage": "20Gi"},
    ),
    Case(
        "ebs-default-al2023",
        "Ephemeral Storage: should default to EBS defaults ... for AL2023 Root volume",
        "m5.large",
        {**AL2023, "blockDeviceMappings": _XVDA_NO_SIZE},
        {"capacity.ephemeral-storage": "20Gi"},
    ),
    Case(
        "ebs-default-bottlerocket",
        "Ephemeral Storage: should default to EBS defaults ... Bottlerocket Root volume",
        "m5.large",
        {
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "blockDeviceMappings": [{"deviceName": "/dev/xvdb", "ebs": {"snapshotID": "snap-xxxxxxxx"}}],
        },
        {"capacity.ephemeral-storage": "20Gi"},
    ),
    Case(
        "raid0-instance-store",
        "should launch instances w/ instance storage ... when disks are mounted (RAID0)",
        "m6idn.32xlarge",
        {**AL2023, "instanceStorePolicy": "RAID0"},
        {"capacity.ephemeral-storage": "7600G"},
    ),
    Case(
        "no-raid0-ebs-only",
        "should not launch instances w/ instance storage ... when exceeding blockDeviceMapping",
        "m6idn.32xlarge",
        AL2023,
        {"capacity.ephemeral-storage": "20Gi"},
    ),
    # "changes to nodeclass fields should result in a different set of instance types": each change's value
    Case(
        "root-volume-beats-device-name",
        "cache key: rootVolume /dev/sda1 10G beside /dev/xvda 20G",
        "m5.large",
        {
            **AL2023,
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20G"}, "rootVolume": False},
                {"deviceName": "/dev/sda1", "ebs": {"volumeSize": "10G"}, "rootVolume": True},
            ],
        },
        {"capacity.ephemeral-storage": "10G"},
    ),
    Case(
        "device-name-without-root-volume",
        "cache key: /dev/xvda 15G, rootVolume false",
        "m5.large",
        {**AL2023, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "15G"}}]},
        {"capacity.ephemeral-storage": "15G"},
    ),
    Case(
        "root-volume-any-device-name",
        "cache key: /dev/yvda 25G, rootVolume true",
        "m5.large",
        {
            **AL2023,
            "blockDeviceMappings": [
                {"deviceName": "/dev/yvda", "ebs": {"volumeSize": "25G"}, "rootVolume": True}
            ],
        },
        {"capacity.ephemeral-storage": "25G"},
    ),
    Case(
        "raid0-without-instance-store",
        "ephemeralStorage: RAID0 on a type with no instance store takes the EBS",
        "m5.large",
        {**AL2023, "instanceStorePolicy": "RAID0"},
        {"capacity.ephemeral-storage": "20Gi"},
    ),
    Case(
        "bottlerocket-root-is-not-ephemeral",
        "ephemeralStorage: Bottlerocket's pods write to /dev/xvdb, not xvda",
        "m5.large",
        {
            "amiSelectorTerms": [{"alias": "bottlerocket@latest"}],
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "4Gi"}},
                {"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}},
            ],
        },
        {"capacity.ephemeral-storage": "100Gi"},
    ),
    Case(
        "windows-default-50gi",
        "amifamily/windows.go DefaultBlockDeviceMappings: /dev/sda1 50Gi",
        "m5.large",
        {"amiSelectorTerms": [{"alias": "windows2022@latest"}]},
        {"capacity.ephemeral-storage": "50Gi"},
    ),
]

CASES = OVERHEAD + EVICTION + MAX_PODS_PER_FAMILY + RESERVED_ENIS_PER_FAMILY + PODS + EPHEMERAL
