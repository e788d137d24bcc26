"""The actual view without a node (EKS AMI reservations) and a live node sanitised into a template."""

from __future__ import annotations

import pytest

from capacity import estimate
from capacity.quantity import parse_quantity
from capacity.quantity_grammar import FORMAT_WRONG
from capacity.taints import Taint
from capacity.template import View


def test_cpu_reservation_follows_the_eks_ami_ladder() -> None:
    """6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25% above, each range truncated."""
    assert [estimate.reserved_cpu_millicores(n) for n in (1, 2, 4, 5, 8, 96)] == [60, 70, 80, 82, 90, 310]


def test_m5_large_estimate_with_a_50gib_root_volume() -> None:
    """m5.large (2 vCPU, 8 GiB, 29 pods, 9 branch ENIs) on 50 GiB: the figures EKS would give."""
    view = estimate.estimate_view(
        vcpus=2,
        memory_mib=8192,
        max_pods=29,
        branch_enis=9,
        root_volume_gib=50,
        labels={"node.kubernetes.io/instance-type": "m5.large"},
    )
    assert view.source == "launch-template"
    assert view.allocatable["cpu"] == parse_quantity("1930m")
    # 8192Mi - (11 * 29 + 255)Mi kube-reserved - 100Mi eviction
    assert view.allocatable["memory"] == parse_quantity("7518Mi")
    # 50Gi - 1Gi kube-reserved - 10% nodefs eviction threshold
    assert view.allocatable["ephemeral-storage"] == parse_quantity(str(50 * 2**30 - 2**30 - 5 * 2**30))
    assert view.allocatable["pods"] == parse_quantity("29")
    assert view.allocatable["vpc.amazonaws.com/pod-eni"] == parse_quantity("9")


def test_no_pod_eni_without_branch_interfaces_and_no_storage_without_volume() -> None:
    """A non-trunking type offers no pod-eni; an unknown root volume gives no ephemeral-storage."""
    allocatable = estimate.estimate_allocatable(2, 8192, 35, None, 0)
    assert "vpc.amazonaws.com/pod-eni" not in allocatable
    assert "ephemeral-storage" not in allocatable


def test_live_node_is_sanitised_like_cluster_autoscaler_does() -> None:
    """Node-state taints, the hostname and fitguard's exhausted label do not describe the group."""
    node = {
        "metadata": {
            "name": "ip-10-0-0-1",
            "labels": {
                "kubernetes.io/hostname": "ip-10-0-0-1",
                "fitguard.io/branch-eni-exhausted": "true",
                "node.kubernetes.io/instance-type": "m5.large",
            },
        },
        "spec": {
            "taints": [
                {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
                {"key": "ToBeDeletedByClusterAutoscaler", "value": "123", "effect": "NoSchedule"},
                {"key": "DeletionCandidateOfClusterAutoscaler", "value": "123", "effect": "PreferNoSchedule"},
                {
                    "key": "node.cloudprovider.kubernetes.io/uninitialized",
                    "value": "true",
                    "effect": "NoSchedule",
                },
                {"key": "dedicated", "value": "batch", "effect": "NoSchedule"},
            ]
        },
        "status": {"allocatable": {"cpu": "1930m", "ephemeral-storage": "18242267924", "pods": "29"}},
    }
    view = estimate.live_node_view(node)
    assert view.source == "live-node"
    assert view.labels == {"node.kubernetes.io/instance-type": "m5.large"}
    assert view.taints == (Taint("dedicated", "batch", "NoSchedule"),)
    assert view.allocatable["ephemeral-storage"] == 18242267924000


def test_only_ready_schedulable_nodes_count() -> None:
    """Ready=True and neither cordoned nor being deleted."""
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert estimate.node_is_ready(ready)
    assert not estimate.node_is_ready({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not estimate.node_is_ready({**ready, "spec": {"unschedulable": True}})
    assert not estimate.node_is_ready({**ready, "metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})


def test_node_labels_are_the_well_known_ones_plus_the_groups() -> None:
    """What kubelet and the AWS cloud provider label a new node with: os and instance type always
    (stable and beta), arch, region and zone only when known, then the group's own labels on top."""
    assert estimate.node_labels("m5.large", "") == {
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.large",
        "beta.kubernetes.io/instance-type": "m5.large",
    }
    assert estimate.node_labels(
        "m6g.large", "arm64", "eu-west-1", "eu-west-1a", {"team": "ml", "kubernetes.io/os": "bottlerocket"}
    ) == {
        "kubernetes.io/os": "bottlerocket",
        "beta.kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m6g.large",
        "beta.kubernetes.io/instance-type": "m6g.large",
        "kubernetes.io/arch": "arm64",
        "beta.kubernetes.io/arch": "arm64",
        "topology.kubernetes.io/region": "eu-west-1",
        "failure-domain.beta.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "failure-domain.beta.kubernetes.io/zone": "eu-west-1a",
        "team": "ml",
    }


def test_an_estimated_view_is_whole() -> None:
    """An m5.large-like node with a 20 GiB root volume: cpu less 70m, memory less (11 x 29 + 255) MiB
    and the 100 MiB eviction threshold, storage less 1 GiB and 10%, its branch ENIs; the given
    labels and taints; source launch-template."""
    view = estimate.estimate_view(
        vcpus=2,
        memory_mib=8192,
        max_pods=29,
        branch_enis=9,
        root_volume_gib=20,
        labels={"a": "b"},
        taints=[Taint("k", "v", "NoSchedule")],
    )
    assert view == View(
        {
            "cpu": 1930,
            "memory": 7518 * 2**20 * 1000,
            "pods": 29000,
            "ephemeral-storage": 17 * 2**30 * 1000,
            "vpc.amazonaws.com/pod-eni": 9000,
        },
        {"a": "b"},
        (Taint("k", "v", "NoSchedule"),),
        "launch-template",
    )


def test_a_root_volume_too_small_leaves_no_ephemeral_storage() -> None:
    """Root volume less kube-reserved 1 GiB and 10%: never below 0."""
    assert estimate.allocatable_ephemeral_storage(1 * 2**30) == 0
    assert estimate.allocatable_ephemeral_storage(10 * 2**30) == 10 * 2**30 - 2**30 - 2**30


def test_the_estimate_at_its_floors() -> None:
    """Memory that the reservations exceed gives 0 (not a negative or a token amount); a single
    branch ENI is offered; the nodefs threshold is 10% rounded down to whole bytes."""
    assert estimate.estimate_allocatable(1, 256, 29, None, 1) == {
        "cpu": 940,
        "memory": 0,
        "pods": 29000,
        "vpc.amazonaws.com/pod-eni": 1000,
    }
    assert estimate.allocatable_ephemeral_storage(10 * 2**30 + 5) == 8 * 2**30 + 5


def test_a_live_nodes_bad_allocatable_names_its_field() -> None:
    """live_node_view's error names status.allocatable.<resource> with the value and reason."""
    with pytest.raises(ValueError) as raised:
        estimate.live_node_view({"status": {"allocatable": {"cpu": "x"}}})
    assert str(raised.value) == "status.allocatable.cpu: invalid quantity 'x' (" + FORMAT_WRONG + ")"
