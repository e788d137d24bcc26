"""Capacity, overhead and allocatable of one instance type, exactly as Karpenter computes them.

Upstream (aws/karpenter-provider-aws, `pkg/providers/instancetype/types.go`): `NewInstanceType`
(which pods count the kube-reserved memory), `computeCapacity`, `cpu`, `memory`, `ephemeralStorage`,
`pods`, `ENILimitedPods`, `awsPodENI`, `privateIPv4Address`, `kubeReservedResources`,
`systemReservedResources`, `evictionThreshold`, `computeEvictionSignal`; and kubernetes-sigs/karpenter
`pkg/cloudprovider/types.go` `computeAllocatable` (capacity less `InstanceTypeOverhead.Total`, over
capacity's resources only). Floating point is used where upstream uses float64, in the same order,
so the rounding is the same.

Quantities are fitguard's milli-units (`capacity/resources.py`): cpu 1930m is 1930, memory in
bytes times 1000.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from capacity.karpenter.amifamily import AmiFamily, defaults
from capacity.karpenter.facts import KarpenterFacts
from capacity.karpenter.nodeclass import KarpenterOptions, NodeClassOptions
from capacity.quantity import parse_quantity
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, POD_ENI, PODS, Resources

MI = 2**20
GI = 2**30
M = 1000  # milli-units per unit
PRIVATE_IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"
MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"
# kubeReservedResources: the share of each band of millicores reserved for the kubelet
_CPU_BANDS = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))


@dataclass(frozen=True, slots=True)
class InstanceCapacity:
    """One instance type under one EC2NodeClass: what Karpenter believes a node of it offers."""

    name: str
    capacity: Mapping[str, int]
    kube_reserved: Mapping[str, int]
    system_reserved: Mapping[str, int]
    eviction_threshold: Mapping[str, int]

    def overhead(self) -> Resources:
        """`InstanceTypeOverhead.Total`: the three summed."""
        total: Resources = {}
        for part in (self.kube_reserved, self.system_reserved, self.eviction_threshold):
            for name, value in part.items():
                total[name] = total.get(name, 0) + value
        return total

    def allocatable(self) -> Resources:
        """`computeAllocatable`: capacity less overhead, for capacity's resources only."""
        overhead = self.overhead()
        return {name: value - overhead.get(name, 0) for name, value in self.capacity.items()}


def memory_bytes(facts: KarpenterFacts, karpenter: KarpenterOptions) -> int:
    """`memory`: EC2's MiB (less 64 MiB of CMA on Graviton) less the VM overhead, rounded up to MiB."""
    mib = facts.memory_mib - (64 if facts.architecture == "arm64" else 0)
    total = mib * MI
    overhead_mib = math.ceil(float(total) * karpenter.vm_memory_overhead_percent / 1024 / 1024)
    return total - overhead_mib * MI


def ephemeral_bytes(facts: KarpenterFacts, nodeclass: NodeClassOptions) -> int:
    """`ephemeralStorage`: the instance store under RAID0, else the root volume, else the family's."""
    if nodeclass.raid0 and facts.local_nvme_gb is not None:
        return facts.local_nvme_gb * 10**9  # "%dG": decimal gigabytes
    family = defaults(nodeclass.family)
    devices = nodeclass.block_devices
    if devices:
        root = next((d for d in devices if d.root_volume), None)
        if root is not None and root.volume_size_bytes is not None:
            return root.volume_size_bytes
        if nodeclass.family is AmiFamily.CUSTOM:
            # the AMI's own volumes are unknown: the last mapping's size, else DefaultEBS
            last = devices[-1].volume_size_bytes
            return last if last is not None else family.default_ephemeral_bytes()
        named = next((d for d in devices if d.device_name == family.ephemeral_device), None)
        if named is not None and named.volume_size_bytes is not None:
            return named.volume_size_bytes
    return family.default_ephemeral_bytes()


def eni_limited_pods(facts: KarpenterFacts, reserved_enis: int) -> int:
    """`ENILimitedPods`: usable ENIs of the default card x (IPv4 per ENI - 1) + 2; 0 with none usable."""
    usable = max(facts.default_card_enis - reserved_enis, 0)
    if usable == 0:
        return 0
    return usable * (facts.ipv4_per_eni - 1) + 2


def pods(facts: KarpenterFacts, nodeclass: NodeClassOptions, karpenter: KarpenterOptions) -> int:
    """`pods`: maxPods, else ENI-limited (reserved ENIs taken off) where the family supports it,
    else 110; then at most podsPerCore x vCPUs where the family honours podsPerCore."""
    flags = defaults(nodeclass.family).flags
    kubelet = nodeclass.kubelet
    if kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif flags.supports_eni_limited_pod_density:
        count = eni_limited_pods(facts, karpenter.reserved_enis)
    else:
        count = 110
    if kubelet.pods_per_core and flags.pods_per_core_enabled:
        count = min(kubelet.pods_per_core * facts.vcpu, count)
    return count


def kube_reserved(cpu_milli: int, pod_count: int, overrides: Mapping[str, str]) -> Resources:
    """`kubeReservedResources`: 11 MiB a pod + 255 MiB, 1Gi of storage, cpu by bands; then overrides."""
    reserved: Resources = {MEMORY: (11 * pod_count + 255) * MI * M, EPHEMERAL_STORAGE: GI * M}
    cpu_overhead = 0
    for start, end, share in _CPU_BANDS:
        if cpu_milli >= start:
            span = float(min(cpu_milli, end) - start)
            cpu_overhead += int(span * share)
    reserved[CPU] = cpu_overhead
    reserved.update(
        {name: parse_quantity(value, f"kubeReserved.{name}") for name, value in overrides.items()}
    )
    return reserved


def eviction_signal(capacity_milli: int, value: str) -> int:
    """`computeEvictionSignal`: a percentage of capacity rounded up (100% disables it), else a quantity."""
    if value.endswith("%"):
        percent = float(value.strip("%"))
        if percent == 100:
            percent = 0.0
        return math.ceil(float(capacity_milli // M) / 100 * percent) * M
    return parse_quantity(value, "evictionHard")


def eviction_threshold(memory_milli: int, storage_milli: int, eviction_hard: Mapping[str, str]) -> Resources:
    """`evictionThreshold`: 100Mi and 10% of storage, each replaced by evictionHard's signal;
    evictionSoft is a warning threshold and takes nothing from allocatable."""
    threshold: Resources = {
        MEMORY: 100 * MI * M,
        EPHEMERAL_STORAGE: math.ceil(float(storage_milli // M) / 100 * 10) * M,
    }
    if MEMORY_AVAILABLE in eviction_hard:
        threshold[MEMORY] = eviction_signal(memory_milli, eviction_hard[MEMORY_AVAILABLE])
    if NODEFS_AVAILABLE in eviction_hard:
        threshold[EPHEMERAL_STORAGE] = eviction_signal(storage_milli, eviction_hard[NODEFS_AVAILABLE])
    return threshold


def _capacity(facts: KarpenterFacts, nodeclass: NodeClassOptions, karpenter: KarpenterOptions) -> Resources:
    capacity: Resources = {
        CPU: facts.vcpu * M,
        MEMORY: memory_bytes(facts, karpenter) * M,
        EPHEMERAL_STORAGE: ephemeral_bytes(facts, nodeclass) * M,
        PODS: pods(facts, nodeclass, karpenter) * M,
        POD_ENI: facts.branch_enis * M,
        "nvidia.com/gpu": facts.nvidia_gpus * M,
        "amd.com/gpu": facts.amd_gpus * M,
        "aws.amazon.com/neuron": facts.neuron_devices * M,
        "aws.amazon.com/neuroncore": facts.neuron_cores * M,
        "habana.ai/gaudi": 0,  # no source for Gaudi counts: see docs/upstream.md
        "vpc.amazonaws.com/efa": facts.efa * M,
    }
    # NewInstanceType: Windows (os windows is only offered on amd64) counts its secondary IPv4s
    if nodeclass.family.is_windows and facts.architecture == "amd64":
        capacity[PRIVATE_IPV4] = (facts.ipv4_per_eni - 1) * M
    return capacity


def instance_capacity(
    facts: KarpenterFacts, nodeclass: NodeClassOptions, karpenter: KarpenterOptions | None = None
) -> InstanceCapacity:
    """`NewInstanceType`'s capacity and overhead for `facts` under `nodeclass`."""
    karpenter = karpenter or KarpenterOptions()
    capacity = _capacity(facts, nodeclass, karpenter)
    flags = defaults(nodeclass.family).flags
    # AL2, AL2023, Custom reserve memory for the ENI-limited pods with no ENI reserved, whatever
    # maxPods says; Bottlerocket and Windows for the pods the node will run
    reserve_for = (
        eni_limited_pods(facts, 0) if flags.uses_eni_limited_memory_overhead else capacity[PODS] // M
    )
    kubelet = nodeclass.kubelet
    return InstanceCapacity(
        name=facts.name,
        capacity=capacity,
        kube_reserved=kube_reserved(capacity[CPU], reserve_for, kubelet.kube_reserved),
        system_reserved={
            n: parse_quantity(v, f"systemReserved.{n}") for n, v in kubelet.system_reserved.items()
        },
        eviction_threshold=eviction_threshold(
            capacity[MEMORY], capacity[EPHEMERAL_STORAGE], kubelet.eviction_hard
        ),
    )
