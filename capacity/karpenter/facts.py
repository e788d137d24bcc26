"""The facts of one instance type that Karpenter's capacity computation reads.

Karpenter reads EC2's DescribeInstanceTypes live (aws/karpenter-provider-aws
`pkg/providers/instancetype/types.go`: `cpu`, `memory`, `ENILimitedPods`, `ephemeralStorage`, the GPU,
Neuron and EFA counts) and its own copy of the VPC resource controller's table for branch ENIs
(`awsPodENI` reads `Limits` in `zz_generated.vpclimits.go`). fitguard has no live EC2, so:

- ENIs of the default network card and IPv4 per ENI come from fitguard's instance facts
  (`capacity/instances.py`, the resource controller's table: the same `NetworkCards` /
  `DefaultNetworkCardIndex` / `IPv4PerInterface` EC2 reports);
- vCPUs, memory and architecture from fitguard's instance facts (cluster-autoscaler's static list),
  or, for the types it does not list, from Karpenter's published instance-type reference;
- NVMe instance store size, GPU, Neuron and EFA counts, and the labels Karpenter sets from EC2 facts
  fitguard has no other source for (processor, bandwidths, GPU names) from that reference
  (`capacity/data/karpenter_facts.json`, compiled by `scripts/compile_karpenter_facts.py`);
- branch ENIs from Karpenter's own table at a chosen commit (`BranchTable`), since a Karpenter
  release plans with the table compiled into it, whatever the controller on the cluster offers.

A type fitguard knows nothing of is `None`: Karpenter may offer it, fitguard cannot say what it offers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from capacity.instances import lookup

_DATA_FILE = "data/karpenter_facts.json"
# the newest of Karpenter's branch-ENI tables the data file holds (aws/karpenter-provider-aws commit)
NEWEST_BRANCH_TABLE = "1d927085dd81a9df9301e613f371dac5b4d16bfe"
# the table of the commit the published instance-type reference was generated at
REFERENCE_BRANCH_TABLE = "692ccdd0629e488300821443f0fa0bc3c3e08047"


@dataclass(frozen=True, slots=True)
class KarpenterFacts:
    """One instance type as Karpenter's `NewInstanceType` sees it."""

    name: str
    vcpu: int
    memory_mib: int
    architecture: str  # amd64 or arm64 (Karpenter's AWSToKubeArchitectures)
    default_card_enis: int
    ipv4_per_eni: int
    branch_enis: int  # awsPodENI: the table's BranchInterface when trunking-compatible, else 0
    local_nvme_gb: int | None = None  # InstanceStorageInfo.TotalSizeInGB where the store is NVMe
    nvidia_gpus: int = 0
    amd_gpus: int = 0
    neuron_devices: int = 0
    neuron_cores: int = 0
    efa: int = 0
    hypervisor: str | None = None
    # the reference's labels of STORED_LABELS (scripts/compile_karpenter_facts.py); None: not listed
    labels: Mapping[str, str] | None = None


@cache
def _document() -> tuple[Mapping[str, Any], Mapping[str, Mapping[str, int]]]:
    text = resources.files("capacity").joinpath(_DATA_FILE).read_text(encoding="utf-8")
    raw = json.loads(text)
    tables = {commit: MappingProxyType(table) for commit, table in raw["branchInterfaces"].items()}
    return MappingProxyType(raw["types"]), MappingProxyType(tables)


def branch_tables() -> tuple[str, ...]:
    """The commits of Karpenter's branch-ENI tables the data file holds."""
    return tuple(_document()[1])


@cache  # immutable facts from immutable data: each (type, table) is built once
def karpenter_facts(name: str, branch_table: str = NEWEST_BRANCH_TABLE) -> KarpenterFacts | None:
    """The facts of `name` (exact EC2 name), None when fitguard lacks its ENIs or its shape."""
    tables = _document()[1]
    if branch_table not in tables:
        raise KeyError(f"no Karpenter branch-ENI table for commit {branch_table!r}; known: {sorted(tables)}")
    base = lookup(name)
    extra: Mapping[str, Any] = _document()[0].get(name, {})
    if base is None:
        return None
    vcpu = base.vcpu if base.vcpu is not None else extra.get("vcpu")
    memory = base.memory_mib if base.memory_mib is not None else extra.get("memoryMiB")
    architecture = base.architecture if base.architecture is not None else extra.get("architecture")
    if vcpu is None or memory is None or architecture is None:
        return None
    return KarpenterFacts(
        name=name,
        vcpu=int(vcpu),
        memory_mib=int(memory),
        architecture=str(architecture),
        default_card_enis=base.default_card_interfaces,
        ipv4_per_eni=base.ipv4_per_interface,
        branch_enis=int(tables[branch_table].get(name, 0)),
        local_nvme_gb=extra.get("localNvmeGB"),
        nvidia_gpus=int(extra.get("nvidiaGpu", 0)),
        amd_gpus=int(extra.get("amdGpu", 0)),
        neuron_devices=int(extra.get("neuron", 0)),
        neuron_cores=int(extra.get("neuronCores", 0)),
        efa=int(extra.get("efa", 0)),
        hypervisor=base.hypervisor,
        labels=MappingProxyType(dict(extra["labels"])) if "labels" in extra else None,
    )
