"""Karpenter's capacity, overhead and allocatable per instance type (capacity/karpenter/allocatable.py):
the issue's m5.large anchor, the cases of karpenter-provider-aws' own suite_test.go
(tests/upstream/karpenter_instancetype.py), and the whole fleet against Karpenter's published
instance-type reference (tests/data/karpenter_instance_types.json, its source and commit inside)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capacity.karpenter.allocatable import InstanceCapacity, instance_capacity
from capacity.karpenter.amifamily import AmiFamily
from capacity.karpenter.controller_options import KarpenterOptionsError, karpenter_options
from capacity.karpenter.facts import REFERENCE_BRANCH_TABLE, KarpenterFacts, karpenter_facts
from capacity.karpenter.nodeclass import (
    KarpenterOptions,
    NodeClassError,
    NodeClassOptions,
    nodeclass_from_object,
)
from capacity.quantity import parse_quantity
from tests.upstream.karpenter_instancetype import CASES, Case

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "karpenter_instance_types.json"
# Types the reference lists that fitguard's instance facts do not: the VPC resource controller's
# table (and Karpenter's copy of it) does not list them, so fitguard has no ENI facts for them.
# Karpenter reads their ENIs from live DescribeInstanceTypes.
MISSING_FROM_FITGUARD = {
    "hpc6a.48xlarge",
    "hpc6id.32xlarge",
    "hpc7a.12xlarge",
    "hpc7a.24xlarge",
    "hpc7a.48xlarge",
    "hpc7a.96xlarge",
    "hpc8a.96xlarge",
    "trn2.48xlarge",
}


def _facts(name: str, table: str | None = None) -> KarpenterFacts:
    facts = karpenter_facts(name) if table is None else karpenter_facts(name, table)
    assert facts is not None, name
    return facts


def _allocatable(name: str, obj: dict[str, Any] | None = None, **settings: Any) -> dict[str, int]:
    nodeclass = nodeclass_from_object({"spec": obj or {"amiSelectorTerms": [{"alias": "al2023@latest"}]}})
    return instance_capacity(_facts(name), nodeclass, KarpenterOptions(**settings)).allocatable()


def _q(text: str) -> int:
    return parse_quantity(text)


def test_m5_large_on_al2023_offers_what_the_issue_says() -> None:
    """The issue's anchor: m5.large, AL2023, no block device mappings: 1930m cpu, 6903Mi memory,
    17Gi ephemeral-storage, 29 pods, 9 branch ENIs."""
    allocatable = _allocatable("m5.large")
    assert allocatable["cpu"] == _q("1930m")
    assert allocatable["memory"] == _q("6903Mi")
    assert allocatable["ephemeral-storage"] == _q("17Gi")
    assert allocatable["pods"] == _q("29")
    assert allocatable["vpc.amazonaws.com/pod-eni"] == _q("9")


def _part(capacity: InstanceCapacity, part: str) -> dict[str, int]:
    return {
        "capacity": dict(capacity.capacity),
        "kubeReserved": dict(capacity.kube_reserved),
        "systemReserved": dict(capacity.system_reserved),
        "evictionThreshold": dict(capacity.eviction_threshold),
        "allocatable": capacity.allocatable(),
    }[part]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_upstream_suite_case(case: Case) -> None:
    """Each case of karpenter-provider-aws' suite_test.go (named in the case) gives the same
    quantities here; an absent resource in an overhead part is upstream's zero."""
    settings = KarpenterOptions(case.reserved_enis, case.vm_memory_overhead_percent)
    nodeclass = nodeclass_from_object({"spec": case.spec})
    capacity = instance_capacity(_facts(case.instance_type), nodeclass, settings)
    for key, expected in case.expect.items():
        part, resource = key.split(".", 1)
        assert _part(capacity, part).get(resource, 0) == _q(expected), (case.upstream, key)


def _reference() -> dict[str, Any]:
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


def test_every_type_of_the_published_reference_is_computed_alike() -> None:
    """Every type Karpenter's instance-type reference lists (AL2023, no block device mappings,
    default settings, its branch-ENI table of the same commit) has exactly the listed resources
    here, and every resource computed non-zero is listed (the reference omits zeros). The types
    fitguard has no facts for are exactly MISSING_FROM_FITGUARD."""
    reference = _reference()
    assert reference["_source"]["reference"]["commit"] == REFERENCE_BRANCH_TABLE
    nodeclass = NodeClassOptions(family=AmiFamily.AL2023)
    missing, checked, wrong = set(), 0, []
    for name, listed in reference["types"].items():
        facts = karpenter_facts(name, REFERENCE_BRANCH_TABLE)
        if facts is None:
            missing.add(name)
            continue
        ours = {k: v for k, v in instance_capacity(facts, nodeclass).allocatable().items() if v != 0}
        theirs = {k: _q(v) for k, v in listed["resources"].items()}
        if ours != theirs:
            wrong.append((name, ours, theirs))
        checked += 1
    assert wrong == []
    assert missing == MISSING_FROM_FITGUARD
    assert checked == len(reference["types"]) - len(MISSING_FROM_FITGUARD) == 1355


def test_the_newest_branch_table_differs_from_the_references_only_where_karpenter_changed_it() -> None:
    """The branch-ENI table is chosen by Karpenter commit: the newest makes c9g.large trunk (9
    branch ENIs) where the reference's own table did not list it as trunking."""
    assert _facts("c9g.large", REFERENCE_BRANCH_TABLE).branch_enis == 0
    assert _facts("c9g.large").branch_enis == 9
    with pytest.raises(KeyError, match="no Karpenter branch-ENI table"):
        karpenter_facts("m5.large", "0" * 40)


def test_an_unknown_type_is_none_not_zero() -> None:
    """A type fitguard has no facts for is None: it cannot say what Karpenter would offer."""
    assert karpenter_facts("hpc7a.96xlarge") is None
    assert karpenter_facts("nosuch.large") is None


def test_graviton_loses_64_mib_before_the_vm_overhead() -> None:
    """memory(): arm64 types lose 64 MiB of CMA, then 7.5% (rounded up to MiB): a1.medium's 2048
    MiB -> 1984 -> 1984 - 149 = 1835Mi capacity; 8 pods reserve 343Mi, eviction 100Mi: 1392Mi."""
    capacity = instance_capacity(_facts("a1.medium"), NodeClassOptions())
    assert capacity.capacity["memory"] == _q("1835Mi")
    assert capacity.allocatable()["memory"] == _q("1392Mi")


def test_percent_of_vm_overhead_and_a_nodefs_eviction_percentage_are_applied() -> None:
    """VM_MEMORY_OVERHEAD_PERCENT changes memory; evictionHard nodefs.available as a percentage
    is taken of the ephemeral capacity (rounded up), replacing the default 10%."""
    none = _allocatable("m5.large", vm_memory_overhead_percent=0.0)
    assert none["memory"] == _q("8192Mi") - _q("574Mi") - _q("100Mi")
    spec = {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "kubelet": {"evictionHard": {"nodefs.available": "15%"}},
    }
    storage = 20 * 2**30
    assert (
        _allocatable("m5.large", spec)["ephemeral-storage"]
        == (storage - 2**30 - -(-storage * 15 // 100)) * 1000
    )


def test_windows_counts_its_private_ipv4_addresses_and_110_pods() -> None:
    """NewInstanceType: a Windows node class offers vpc.amazonaws.com/PrivateIPv4Address = IPv4
    per ENI - 1 (amd64 only), and 110 pods whatever its ENIs; kube-reserved memory for 110 pods."""
    spec = {"amiSelectorTerms": [{"alias": "windows2022@latest"}]}
    capacity = instance_capacity(_facts("m5.large"), nodeclass_from_object({"spec": spec}))
    assert capacity.capacity["vpc.amazonaws.com/PrivateIPv4Address"] == _q("9")
    assert capacity.capacity["pods"] == _q("110")
    assert capacity.kube_reserved["memory"] == _q("1465Mi")
    linux = instance_capacity(_facts("m5.large"), NodeClassOptions())
    assert "vpc.amazonaws.com/PrivateIPv4Address" not in linux.capacity
    graviton = instance_capacity(_facts("m7g.large"), nodeclass_from_object({"spec": spec}))
    assert "vpc.amazonaws.com/PrivateIPv4Address" not in graviton.capacity


def test_raid0_takes_the_nvme_store_in_decimal_gigabytes() -> None:
    """ephemeralStorage under RAID0: TotalSizeInGB as "<n>G"; eviction 10% of it."""
    spec = {"amiSelectorTerms": [{"alias": "al2023@latest"}], "instanceStorePolicy": "RAID0"}
    capacity = instance_capacity(_facts("m5d.large"), nodeclass_from_object({"spec": spec}))
    assert capacity.capacity["ephemeral-storage"] == _q("75G")
    assert capacity.eviction_threshold["ephemeral-storage"] == _q("7500M")


def test_a_cel_expression_is_ignored_as_the_gate_off_default_does() -> None:
    """With NodeClassCEL off (the default), a string maxPods and a non-quantity kubeReserved value
    are expressions Karpenter ignores: the family defaults stay."""
    spec = {
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "kubelet": {"maxPods": "self.vcpus * 4", "kubeReserved": {"memory": "max_pods * 11", "cpu": "100m"}},
    }
    capacity = instance_capacity(_facts("m5.large"), nodeclass_from_object({"spec": spec}))
    assert capacity.capacity["pods"] == _q("29")
    assert capacity.kube_reserved["memory"] == _q("574Mi")
    assert capacity.kube_reserved["cpu"] == _q("100m")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"amiFamily": "Ubuntu2"}, "amiFamily"),
        ({"amiSelectorTerms": [{"alias": "ubuntu@latest"}]}, "alias family"),
        ({"amiSelectorTerms": [{"alias": "al2023"}]}, "family@version"),
        ({"blockDeviceMappings": [{"ebs": {"volumeSize": "lots"}}]}, "blockDeviceMappings[0].ebs.volumeSize"),
        ({"blockDeviceMappings": {"deviceName": "/dev/xvda"}}, "blockDeviceMappings"),
        ({"kubelet": {"maxPods": -1}}, "maxPods"),
        ({"kubelet": {"podsPerCore": True}}, "podsPerCore"),
        ({"kubelet": {"evictionHard": ["memory.available"]}}, "evictionHard"),
    ],
)
def test_a_bad_field_is_named(spec: dict[str, Any], field: str) -> None:
    """Every field that cannot be read is refused with its name, never read as a default."""
    with pytest.raises(NodeClassError, match=field.replace("[", r"\[").replace("]", r"\]")):
        nodeclass_from_object({"spec": spec})


def test_the_family_is_the_amifamily_field_first_then_the_first_alias() -> None:
    """AMIFamily(): spec.amiFamily when set, else the first alias term's family; none is Custom."""
    assert nodeclass_from_object({"spec": {"amiFamily": "Bottlerocket"}}).family is AmiFamily.BOTTLEROCKET
    terms = [{"id": "ami-1"}, {"alias": "bottlerocket@v1.2"}, {"alias": "al2@latest"}]
    assert nodeclass_from_object({"spec": {"amiSelectorTerms": terms}}).family is AmiFamily.BOTTLEROCKET
    assert nodeclass_from_object({"spec": {"amiSelectorTerms": [{"id": "ami-1"}]}}).family is AmiFamily.CUSTOM
    both = {"amiFamily": "AL2", "amiSelectorTerms": [{"alias": "bottlerocket@latest"}]}
    assert nodeclass_from_object({"spec": both}).family is AmiFamily.AL2


def _container(env: dict[str, str] | None = None, args: list[str] | None = None) -> dict[str, Any]:
    return {
        "name": "controller",
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        "args": args or [],
    }


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        (_container(), KarpenterOptions(0, 0.075, False)),
        (
            _container({"RESERVED_ENIS": "1", "VM_MEMORY_OVERHEAD_PERCENT": "0.1"}),
            KarpenterOptions(1, 0.1, False),
        ),
        # an environment value that does not parse is the default (env.WithDefaultInt, WithDefaultFloat64)
        (
            _container({"RESERVED_ENIS": "one", "VM_MEMORY_OVERHEAD_PERCENT": "10%"}),
            KarpenterOptions(0, 0.075, False),
        ),
        # a flag overrides its environment variable; the last flag wins; both flag forms
        (
            _container({"RESERVED_ENIS": "1"}, ["--reserved-enis=2", "--reserved-enis", "3"]),
            KarpenterOptions(3, 0.075),
        ),
        (_container(None, ["-vm-memory-overhead-percent=0"]), KarpenterOptions(0, 0.0)),
        (_container({"AWS_FEATURE_GATES": "NodeClassCEL=true"}), KarpenterOptions(0, 0.075, True)),
    ],
)
def test_the_controller_settings_are_read_as_karpenter_reads_them(
    container: dict[str, Any], expected: Any
) -> None:
    """options.go AddFlags: env as each flag's default, flags over env, unparsable env ignored."""
    assert karpenter_options(container) == expected


@pytest.mark.parametrize(
    ("container", "message"),
    [
        (_container({"RESERVED_ENIS": "-1"}), "negative"),
        (_container(None, ["--reserved-enis=x"]), "not an integer"),
        (_container(None, ["--vm-memory-overhead-percent"]), "needs a value"),
        (_container({"AWS_FEATURE_GATES": "NodeClassCEL"}), "Name=true"),
        (
            {"env": [{"name": "RESERVED_ENIS", "valueFrom": {"configMapKeyRef": {"name": "k", "key": "r"}}}]},
            "valueFrom",
        ),
    ],
)
def test_a_setting_the_controller_refuses_or_fitguard_cannot_read_is_named(
    container: dict[str, Any], message: str
) -> None:
    """Karpenter stops at start on these (or fitguard cannot resolve them): a clear error, never a default."""
    with pytest.raises(KarpenterOptionsError, match=message):
        karpenter_options(container)


def test_with_node_class_cel_on_an_expression_is_refused_not_ignored() -> None:
    """With the NodeClassCEL gate on Karpenter evaluates expressions fitguard cannot: refused."""
    spec = {"amiSelectorTerms": [{"alias": "al2023@latest"}], "kubelet": {"maxPods": "self.vcpus * 4"}}
    assert nodeclass_from_object({"spec": spec}).kubelet.max_pods is None
    with pytest.raises(NodeClassError, match="maxPods"):
        nodeclass_from_object({"spec": spec}, cel=True)
    reserved = {**spec, "kubelet": {"kubeReserved": {"memory": "max_pods * 11"}}}
    with pytest.raises(NodeClassError, match=r"kubeReserved\.memory"):
        nodeclass_from_object({"spec": reserved}, cel=True)
