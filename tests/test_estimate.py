"""The actual view without a node (EKS AMI reservations) and a live node sanitised into a template."""

from __future__ import annotations

from capacity import estimate
from capacity.quantity import parse_quantity
from capacity.taints import Taint


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
