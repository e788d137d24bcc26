"""EC2 instance-type facts: branch ENIs, trunking, ENIs and IPs, and cluster-autoscaler's shape.

The facts come from `capacity/data/instance_types.json`, compiled by
`scripts/compile_instance_types.py` from AWS's VPC resource controller table
(aws/amazon-vpc-resource-controller-k8s `pkg/aws/vpc/limits.go`) and cluster-autoscaler's static
list (kubernetes/autoscaler `cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go`);
`data_source()` says which commits and when. The file is read once, lazily, from the package.

An unknown type is `None`, never zero: zero branch ENIs is a fact (t3, m4), not a default.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

_DATA_FILE = "data/instance_types.json"


@dataclass(frozen=True, slots=True)
class InstanceFacts:
    """What one EC2 instance type offers pods; the shape fields are None where CA lists no shape."""

    name: str
    branch_interfaces: int  # vpc.amazonaws.com/pod-eni a node of this type offers; 0 unless trunking
    trunking: bool
    interfaces: int  # ENIs, all network cards together
    ipv4_per_interface: int
    vcpu: int | None = None
    memory_mib: int | None = None
    gpu: int | None = None
    architecture: str | None = None
    network_cards: int | None = None
    hypervisor: str | None = None  # "" for bare metal, as EC2 reports it
    bare_metal: bool | None = None

    def max_pods(self) -> int:
        """The EKS AMI's max pods with secondary IPs (no prefix delegation, no CPU cap).

        Source: awslabs/amazon-eks-ami eni-max-pods.txt / max-pods-calculator and the AWS docs
        ("Amazon EKS recommended maximum Pods"): ENIs * (IPv4 per ENI - 1) + 2; each ENI's
        primary address is not handed to pods, and the 2 are the host-network pods (aws-node,
        kube-proxy) that take no VPC address.
        """
        return self.interfaces * (self.ipv4_per_interface - 1) + 2

    def to_json(self) -> dict[str, Any]:
        """The data file's camelCase names, shape fields only where known, plus maxPods."""
        document: dict[str, Any] = {
            "branchInterfaces": self.branch_interfaces,
            "trunking": self.trunking,
            "interfaces": self.interfaces,
            "ipv4PerInterface": self.ipv4_per_interface,
            "maxPods": self.max_pods(),
        }
        optional = {
            "networkCards": self.network_cards,
            "hypervisor": self.hypervisor,
            "bareMetal": self.bare_metal,
            "vcpu": self.vcpu,
            "memoryMiB": self.memory_mib,
            "gpu": self.gpu,
            "architecture": self.architecture,
        }
        document.update({key: value for key, value in optional.items() if value is not None})
        return document


def _facts(name: str, raw: Mapping[str, Any]) -> InstanceFacts:
    return InstanceFacts(
        name=name,
        branch_interfaces=int(raw["branchInterfaces"]),
        trunking=bool(raw["trunking"]),
        interfaces=int(raw["interfaces"]),
        ipv4_per_interface=int(raw["ipv4PerInterface"]),
        vcpu=raw.get("vcpu"),
        memory_mib=raw.get("memoryMiB"),
        gpu=raw.get("gpu"),
        architecture=raw.get("architecture"),
        network_cards=raw.get("networkCards"),
        hypervisor=raw.get("hypervisor"),
        bare_metal=raw.get("bareMetal"),
    )


@cache
def _document() -> tuple[Mapping[str, InstanceFacts], Mapping[str, Any]]:
    # read once: lookups sit on the admission path and must not touch the file again
    text = resources.files("capacity").joinpath(_DATA_FILE).read_text(encoding="utf-8")
    raw = json.loads(text)
    table = {name: _facts(name, entry) for name, entry in raw["types"].items()}
    return MappingProxyType(table), MappingProxyType(raw["_source"])


def lookup(instance_type: str) -> InstanceFacts | None:
    """The facts of `instance_type` (exact EC2 name, e.g. "m5.large"), None when unknown."""
    return _document()[0].get(instance_type)


def known_types() -> list[str]:
    """Every instance type in the data file, sorted."""
    return sorted(_document()[0])


def data_source() -> dict[str, Any]:
    """Where the facts come from (repositories, paths, commits, retrieval date, field meanings)."""
    return copy.deepcopy(dict(_document()[1]))
