"""EC2 instance-type facts: branch ENIs, trunking, ENIs and IPs, and cluster-autoscaler's shape.

The facts come from `capacity/data/instance_types.json`, compiled by
`scripts/compile_instance_types.py` from AWS's VPC resource controller table
(aws/amazon-vpc-resource-controller-k8s `pkg/aws/vpc/limits.go`, with a later copy of it for the
types it does not list yet) and cluster-autoscaler's static list (kubernetes/autoscaler
`cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go`), max pods checked against the VPC
CNI's `misc/eni-max-pods.txt`. Each type says which table it came from (`limits_from`,
`shape_from`); `data_source()` says which commits and when, and which table won where two disagree.
The file is read once, lazily, from the package.

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
    default_card_interfaces: int  # ENIs of the default network card: the ones the VPC CNI uses
    limits_from: str  # key of data_source()["tables"]: the table the fields above came from
    vcpu: int | None = None
    memory_mib: int | None = None
    gpu: int | None = None
    architecture: str | None = None
    network_cards: int | None = None
    hypervisor: str | None = None  # "" for bare metal, as EC2 reports it
    bare_metal: bool | None = None
    shape_from: str | None = None  # key of data_source()["tables"] the shape came from, if any

    def max_pods(self) -> int:
        """The EKS AMI's max pods with secondary IPs (no prefix delegation, no CPU cap).

        As aws/amazon-vpc-cni-k8s `scripts/gen_vpc_ip_limits.go` writes `misc/eni-max-pods.txt`
        (printPodLimit, on the ENI limit describeInstanceTypes takes): ENIs of the default network
        card * (IPv4 per ENI - 1) + 2. Only the default card counts (p4d.24xlarge: 15 of its 60
        ENIs, 737 pods); each ENI's primary address is not handed to pods, and the 2 are the
        host-network pods (aws-node, kube-proxy) that take no VPC address.
        """
        return self.default_card_interfaces * (self.ipv4_per_interface - 1) + 2

    def to_json(self) -> dict[str, Any]:
        """The data file's camelCase names, shape fields only where known, plus maxPods."""
        document: dict[str, Any] = {
            "branchInterfaces": self.branch_interfaces,
            "trunking": self.trunking,
            "interfaces": self.interfaces,
            "defaultCardInterfaces": self.default_card_interfaces,
            "ipv4PerInterface": self.ipv4_per_interface,
            "maxPods": self.max_pods(),
            "limitsFrom": self.limits_from,
        }
        optional = {
            "networkCards": self.network_cards,
            "hypervisor": self.hypervisor,
            "bareMetal": self.bare_metal,
            "vcpu": self.vcpu,
            "memoryMiB": self.memory_mib,
            "gpu": self.gpu,
            "architecture": self.architecture,
            "shapeFrom": self.shape_from,
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
        default_card_interfaces=int(raw["defaultCardInterfaces"]),
        limits_from=str(raw["limitsFrom"]),
        vcpu=raw.get("vcpu"),
        memory_mib=raw.get("memoryMiB"),
        gpu=raw.get("gpu"),
        architecture=raw.get("architecture"),
        network_cards=raw.get("networkCards"),
        hypervisor=raw.get("hypervisor"),
        bare_metal=raw.get("bareMetal"),
        shape_from=raw.get("shapeFrom"),
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
    """Where the facts come from: `tables` (repository, path, commit per table), the retrieval date,
    the precedence between tables and `disagreements` (both values, which was taken and why)."""
    return copy.deepcopy(dict(_document()[1]))
