"""Pod and node records (capacity/records.py): projected once from raw JSON, compact, and a
malformed object is refused with an error the caller counts, never a crash of the whole list."""

from __future__ import annotations

import copy
import json
import math
import sys
from typing import Any

import pytest

from capacity import records
from capacity.quantity_grammar import FORMAT_WRONG
from capacity.records import (
    NodeRecord,
    PodRecord,
    branch_eni_count,
    discovery_node,
    eni_ids_of,
    parse_time,
    project_node,
    project_pod,
    provider_instance_id,
)
from capacity.resources import POD_ENI
from capacity.taints import Taint
from capacity.template import View
from tests.capacity.record_bytes import bytes_per_record

ENI = [
    {"eniId": "eni-0a1b", "ifAddress": "02:aa", "privateIp": "10.0.1.5", "vlanId": 1, "subnetCidr": "10/19"}
]


def job_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "job-a-x7k2",
            "namespace": "batch",
            "uid": "6c1f2a8e-0d3b-4a55-9b1e-2f3c4d5e6f70",
            "creationTimestamp": "2024-05-01T11:59:00Z",
            "labels": {"job-name": "job-a", "fitguard.io/keep": "true"},
            "annotations": {"vpc.amazonaws.com/pod-eni": json.dumps(ENI)},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "job-a", "uid": "j1", "controller": True}
            ],
        },
        "spec": {
            "nodeName": "ip-10-0-1-23.ec2.internal",
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}],
            "containers": [
                {
                    "name": "main",
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi", "ephemeral-storage": "1Gi"},
                        "limits": {"vpc.amazonaws.com/pod-eni": "1"},
                    },
                }
            ],
        },
        "status": {
            "phase": "Succeeded",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T11:59:01Z"},
                {"type": "Ready", "status": "False", "lastTransitionTime": "2024-05-01T11:59:41Z"},
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "startedAt": "2024-05-01T11:59:05Z",
                            "finishedAt": "2024-05-01T11:59:40Z",
                        }
                    },
                }
            ],
        },
    }


def test_a_finished_job_pod_is_projected_with_what_the_books_need() -> None:
    pod = project_pod(job_pod())
    assert (pod.namespace, pod.name, pod.node) == ("batch", "job-a-x7k2", "ip-10-0-1-23.ec2.internal")
    assert (pod.phase, pod.terminal, pod.started) == ("Succeeded", True, True)
    assert pod.pod_eni == 1  # from the limit, as API defaulting copies it into requests
    assert (pod.eni_count, pod.has_eni) == (1, True)
    # released when the status last changed: Ready turned False a second after the container exited
    assert pod.finished_at == parse_time("2024-05-01T11:59:41Z")
    assert pod.scheduled_at == parse_time("2024-05-01T11:59:01Z")
    assert (pod.owner_kind, pod.owner_name, pod.keep) == ("Job", "job-a", True)
    assert pod.cpu == 1000  # the init container's 1 cpu beats the main container's 250m
    assert (pod.memory, pod.ephemeral_storage) == (256 * 2**20 * 1000, 2**30 * 1000)
    assert pod.unschedulable is None and pod.deleted_at is None


def test_a_pending_unschedulable_pod_keeps_the_scheduler_message() -> None:
    raw = job_pod()
    del raw["spec"]["nodeName"]
    del raw["metadata"]["annotations"]
    raw["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:30Z"
    raw["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient vpc.amazonaws.com/pod-eni.",
            }
        ],
    }
    pod = project_pod(raw)
    assert (pod.node, pod.eni_count, pod.started, pod.finished_at) == ("", 0, False, None)
    assert pod.unschedulable == "0/3 nodes are available: 3 Insufficient vpc.amazonaws.com/pod-eni."
    assert pod.deleted_at == parse_time("2024-05-01T12:00:30Z")
    # a pod-eni pod the scheduler refused keeps what decides where it fits, for the guard: of its
    # containers only their resources and restartPolicy (no name, image, env or probes)
    init_kept = [{"resources": c["resources"]} for c in raw["spec"]["initContainers"]]
    main_kept = [{"resources": c["resources"]} for c in raw["spec"]["containers"]]
    assert pod.pending_spec == {"initContainers": init_kept, "containers": main_kept}
    raw["spec"]["affinity"] = {"nodeAffinity": {}}
    raw["spec"]["schedulerName"] = "default-scheduler"
    raw["spec"]["initContainers"][0]["restartPolicy"] = "Always"
    raw["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    assert project_pod(raw).pending_spec == {
        "initContainers": [{**init_kept[0], "restartPolicy": "Always"}],
        "containers": main_kept,
        "affinity": {"nodeAffinity": {}},
    }
    del raw["spec"]["containers"][0]["resources"]["limits"]  # no pod-eni: no guard, nothing kept
    assert project_pod(raw).pending_spec is None


def test_a_bound_pod_keeps_no_pending_spec() -> None:
    assert project_pod(job_pod()).pending_spec is None


def test_a_finished_pod_without_container_times_uses_its_ready_condition() -> None:
    raw = job_pod()
    del raw["status"]["containerStatuses"]
    assert project_pod(raw).finished_at == parse_time("2024-05-01T11:59:41Z")


@pytest.mark.parametrize(
    ("annotation", "count"),
    [
        (json.dumps(ENI * 2), 2),
        ("[]", 0),
        ("", 0),
        ("not json", 0),
        ('{"eniId": "x"}', 0),
        (None, 0),
        (7, 0),
        (ENI, 0),
    ],
)
def test_only_a_non_empty_list_annotation_counts_as_assigned_enis(annotation: object, count: int) -> None:
    """Only a string holding a JSON list counts; a value that is not a string (a number, or the list
    itself in a hand-made state file) counts none and raises nothing."""
    assert branch_eni_count(annotation) == count


@pytest.mark.parametrize(
    "breakage",
    [
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="lots"),
        lambda p: p["spec"].update(containers="main"),
        lambda p: p["metadata"].pop("name"),
        lambda p: p.update(status=["Running"]),
        lambda p: p["metadata"].update(creationTimestamp="yesterday"),
    ],
    ids=["bad-quantity", "containers-not-a-list", "no-name", "status-not-a-map", "bad-timestamp"],
)
def test_a_malformed_pod_is_refused_with_an_error_the_caller_can_count(breakage: Any) -> None:
    raw = job_pod()
    breakage(raw)
    with pytest.raises((TypeError, ValueError)):
        project_pod(raw)


def test_a_store_skips_and_counts_malformed_pods() -> None:
    from kube.store import Store

    store: Store[PodRecord] = Store("pods", project_pod)
    good, bad = job_pod(), job_pod()
    bad["metadata"]["name"] = "broken"
    bad["spec"]["containers"] = "main"
    store.replace([good, bad])
    assert [p.name for p in store.items()] == ["job-a-x7k2"]
    assert store.rejected == 1


def test_a_node_is_projected_with_group_type_and_pod_eni() -> None:
    raw = {
        "kind": "Node",
        "metadata": {
            "name": "ip-10-0-1-23.ec2.internal",
            "labels": {
                "node.kubernetes.io/instance-type": "m5.large",
                "eks.amazonaws.com/nodegroup": "ng-batch",
                "fitguard.io/branch-eni-exhausted": "true",
            },
        },
        "spec": {"unschedulable": True},
        "status": {
            "allocatable": {"cpu": "1930m", "vpc.amazonaws.com/pod-eni": "9"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    node = project_node(raw)
    assert node == NodeRecord(
        "ip-10-0-1-23.ec2.internal",
        "ng-batch",
        "m5.large",
        pod_eni=9,
        ready=True,
        unschedulable=True,
        exhausted=True,
        view=View(
            {"cpu": 1930, POD_ENI: 9000},
            {
                "node.kubernetes.io/instance-type": "m5.large",
                "eks.amazonaws.com/nodegroup": "ng-batch",
                "fitguard.io/branch-eni-exhausted": "true",
            },
            (),
            "live-node",
        ),
    )
    raw["spec"]["taints"] = [{"key": "dedicated", "value": "sg", "effect": "NoSchedule"}]
    assert project_node(raw).view.taints == (Taint("dedicated", "sg", "NoSchedule"),)
    raw["status"]["allocatable"]["cpu"] = "lots"  # unreadable: still booked, without a view
    assert (project_node(raw).pod_eni, project_node(raw).view) == (9, None)
    raw["status"]["allocatable"]["cpu"] = "1930m"
    del raw["status"]["allocatable"]["vpc.amazonaws.com/pod-eni"]
    raw["status"]["conditions"] = []
    assert (project_node(raw).pod_eni, project_node(raw).ready) == (None, False)


def test_a_pod_record_stays_under_a_kilobyte() -> None:
    """Measured with tracemalloc over many realistic pods (about 0.35 KB each when written)."""
    raws = []
    for i in range(500):
        raw = job_pod()
        raw = copy.deepcopy(raw)
        raw["metadata"]["name"] = f"job-a-{i:05d}"
        raw["metadata"]["uid"] = f"6c1f2a8e-0d3b-4a55-9b1e-{i:012d}"
        raws.append(raw)
    assert bytes_per_record(raws) < 1024


# --------------------------------------------------------------------------------------------------
# Pod and node records compared whole (every slot, through the records' `__eq__`): which owner,
# which finish time, when a pod counts as started, what the scheduler said, the branch ENI ids, the
# node's group and instance id; and the helpers' answers at their edges (timestamps, maps and lists
# of the wrong type, provider IDs, the discovery cache's copy of a node).


T0 = 1_714_564_800.0  # 2024-05-01T12:00:00Z


def at(seconds: int) -> str:
    return f"2024-05-01T12:00:{seconds:02}Z"


def test_timestamps() -> None:
    """RFC 3339 with Z or an offset; None or empty is no time; another type is refused by name."""
    assert parse_time("2024-05-01T12:00:00Z") == T0
    assert parse_time("2024-05-01T14:00:05+02:00") == T0 + 5
    assert parse_time(None) is None
    assert parse_time("") is None
    with pytest.raises(TypeError, match=r"^timestamp: expected a string, got int$"):
        parse_time(5)


def test_a_pod_with_several_owners_containers_and_enis_is_whole() -> None:
    """The controlling owner wins over the first; the latest time of the status (a condition's
    transition here, after every container's finish); the ENI ids of the entries that have one; a
    pod-eni request rounded up to whole ENIs."""
    annotation = json.dumps([{"eniId": "eni-1"}, {"ifAddress": "x"}, "junk", {"eniId": "eni-2"}])
    raw = {
        "metadata": {
            "name": "p",
            "uid": "u1",
            "creationTimestamp": at(1),
            "annotations": {POD_ENI: annotation},
            "labels": {"fitguard.io/keep": "yes"},
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": "first"},
                {"kind": "Job", "name": "boss", "controller": True},
            ],
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", POD_ENI: "1500m"}}}],
        },
        "status": {
            "phase": "Failed",
            "initContainerStatuses": [{"state": {"terminated": {"finishedAt": at(50)}}}],
            "containerStatuses": [
                {"state": {"terminated": {"finishedAt": at(30)}}},
                {"state": {"terminated": {}}},
                {"state": {"terminated": {"finishedAt": at(40)}}},
            ],
            "conditions": [{"type": "Ready", "lastTransitionTime": at(59)}],
        },
    }
    assert project_pod(raw) == PodRecord(
        "u1",
        "default",
        "p",
        node="n1",
        phase="Failed",
        pod_eni=2,
        eni_count=4,
        eni_ids=("eni-1", "eni-2"),
        started=True,
        finished_at=T0 + 59,  # Ready's transition, the status's latest time
        created_at=T0 + 1,
        owner_kind="Job",
        owner_name="boss",
        keep=False,
        cpu=2000,
    )


def test_a_pod_without_a_controlling_owner_or_uid_or_phase() -> None:
    """The first owner when none controls; the uid made of namespace and name; Pending by default;
    a Running pod has no finish time even with a finished container."""
    raw = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "ownerReferences": [{"kind": "Node", "name": "n1"}, "x"],
        },
        "status": {"containerStatuses": [{"state": {"waiting": {}}, "lastState": {"terminated": {}}}]},
    }
    assert project_pod(raw) == PodRecord(
        "ns/p", "ns", "p", phase="Pending", started=True, owner_kind="Node", owner_name="n1"
    )
    raw["status"] = {
        "phase": "Running",
        "containerStatuses": [{"state": {"terminated": {"finishedAt": at(3)}}}],
    }
    raw["metadata"]["ownerReferences"] = ["x", {"kind": "Job", "name": "j"}]  # the first is not a map
    assert project_pod(raw) == PodRecord("ns/p", "ns", "p", phase="Running", started=True)


@pytest.mark.parametrize(
    ("statuses", "started"),
    [
        ([{"state": {"running": {}}}], True),
        ([{"state": {"terminated": {}}}], True),
        ([{"state": {"waiting": {}}, "lastState": {"terminated": {}}}], True),
        ([{"state": {"waiting": {}}, "lastState": {"running": {}}}], False),
        ([{"state": {"waiting": {}}}], False),
        ([], False),
    ],
    ids=["running", "terminated", "restarted", "last-state-running-only", "waiting", "none"],
)
def test_when_a_pod_has_started(statuses: list[dict[str, Any]], started: bool) -> None:
    for key in ("initContainerStatuses", "containerStatuses"):
        raw = {"metadata": {"name": "p"}, "status": {key: statuses}}
        assert project_pod(raw).started is started, key


@pytest.mark.parametrize(
    ("conditions", "scheduled_at", "unschedulable"),
    [
        (
            [
                {"type": "Ready", "status": "True"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(7)},
            ],
            T0 + 7,
            None,
        ),
        (
            [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}],
            None,
            "0/3 nodes",
        ),
        ([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}], None, "Unschedulable"),
        (
            [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError", "message": "m"}],
            None,
            None,
        ),
        ([], None, None),
    ],
    ids=["scheduled", "unschedulable", "unschedulable-without-message", "other-reason", "none"],
)
def test_what_the_scheduler_said(
    conditions: list[dict[str, Any]], scheduled_at: float | None, unschedulable: str | None
) -> None:
    raw = {"metadata": {"name": "p"}, "status": {"conditions": conditions}}
    record = project_pod(raw)
    assert (record.scheduled_at, record.unschedulable) == (scheduled_at, unschedulable)


@pytest.mark.parametrize(
    ("status", "released"),
    [
        ({"containerStatuses": [{"state": {"terminated": {"finishedAt": at(40)}}}]}, T0 + 40),
        (
            {
                "containerStatuses": [{"state": {"terminated": {"finishedAt": at(40)}}}],
                "conditions": [
                    {"type": "PodScheduled", "lastTransitionTime": at(2)},
                    {"type": "Ready", "status": "False", "lastTransitionTime": at(41)},
                    {"type": "PodReadyToStartContainers", "status": "False", "lastTransitionTime": at(43)},
                ],
            },
            T0 + 43,
        ),
        (
            {
                "initContainerStatuses": [{"state": {"terminated": {"finishedAt": at(10)}}}],
                "containerStatuses": [{"state": {"terminated": {"finishedAt": at(40)}}}],
                "ephemeralContainerStatuses": [{"state": {"terminated": {"finishedAt": at(45)}}}],
                "conditions": [{"type": "Ready", "lastTransitionTime": at(41)}],
            },
            T0 + 45,
        ),
        (
            {
                "containerStatuses": [{"state": {"terminated": {"finishedAt": at(40)}}}],
                "conditions": [{"type": "Ready", "lastTransitionTime": at(30)}],
            },
            T0 + 40,
        ),
        ({"conditions": [{"type": "PodScheduled", "lastTransitionTime": at(2)}]}, T0 + 2),
        ({"conditions": [{"type": "Ready"}], "containerStatuses": [{"state": {"waiting": {}}}]}, None),
    ],
    ids=[
        "container-only",
        "a-later-condition",
        "an-ephemeral-container-last",
        "container-after-conditions",
        "scheduled-only",
        "no-time",
    ],
)
def test_a_terminal_pods_branch_enis_are_released_at_its_status_latest_time(
    status: dict[str, Any], released: float | None
) -> None:
    """The VPC resource controller stamps the release when it processes the terminal phase
    (trunk.go PushBranchENIsToCoolDownQueue), after the kubelet wrote it: the record takes the
    latest time the status carries, any container's finishedAt (init, regular, ephemeral) or any
    condition's lastTransitionTime, so the release is never dated before the last of them."""
    raw = {"metadata": {"name": "p"}, "status": {"phase": "Succeeded", **status}}
    assert project_pod(raw).finished_at == released


def test_a_terminal_pod_finished_when_its_containers_ready_condition_changed() -> None:
    """Without container times the Ready or ContainersReady condition dates the finish; nothing: None."""
    for kind in ("Ready", "ContainersReady"):
        raw = {
            "metadata": {"name": "p"},
            "status": {
                "phase": "Succeeded",
                "conditions": [
                    {"type": "Initialized", "lastTransitionTime": at(1)},
                    {"type": kind, "lastTransitionTime": at(9)},
                ],
            },
        }
        assert project_pod(raw).finished_at == T0 + 9, kind
    assert project_pod({"metadata": {"name": "p"}, "status": {"phase": "Succeeded"}}).finished_at is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"metadata": {"name": ""}}, "^metadata.name: missing$"),
        ({"metadata": 3}, "^metadata: expected a map, got int$"),
        (
            {"metadata": {"name": "p"}, "status": {"conditions": {}}},
            "^conditions: expected a list, got dict$",
        ),
    ],
)
def test_a_malformed_pod_is_refused_with_the_field_named(raw: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        project_pod(raw)


def test_eni_ids() -> None:
    assert eni_ids_of([{"eniId": "a"}, {"eniId": ""}, {"eniId": 7}, ["eniId"]]) == ("a", "7")
    assert eni_ids_of([]) == ()


def test_a_node_is_whole_with_the_first_group_label_and_instance_id() -> None:
    """eksctl's label when the EKS one is empty; the beta instance-type label; the EC2 instance id."""
    raw = {
        "metadata": {
            "name": "n1",
            "labels": {
                "eks.amazonaws.com/nodegroup": "",
                "alpha.eksctl.io/nodegroup-name": "ng-eksctl",
                "karpenter.sh/nodepool": "pool",
                "beta.kubernetes.io/instance-type": "m5.xlarge",
            },
        },
        "spec": {"providerID": "aws:///us-east-1a/i-0abc/"},
        "status": {
            "allocatable": {"cpu": "2"},
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "MemoryPressure", "status": "True"},
            ],
        },
    }
    assert project_node(raw) == NodeRecord(
        "n1",
        "ng-eksctl",
        "m5.xlarge",
        pod_eni=None,
        ready=False,
        unschedulable=False,
        exhausted=False,
        instance_id="i-0abc",
        view=View({"cpu": 2000}, {k: str(v) for k, v in raw["metadata"]["labels"].items()}, (), "live-node"),
    )
    with pytest.raises(ValueError, match=r"^metadata\.name: missing$"):
        project_node({"metadata": {}})


def test_a_node_without_group_or_type_labels_is_whole_and_a_bad_pod_eni_is_named() -> None:
    """No group label and no instance-type label: both are empty, not an error; a label written as
    a number (a hand-made state file) is kept as text in the view; 9 pod-eni is read as 9; an
    unreadable pod-eni is refused with the field named in the whole message."""
    raw: dict[str, Any] = {
        "metadata": {"name": "n2", "labels": {"rack": 7}},
        "spec": {"unschedulable": True},
        "status": {"allocatable": {POD_ENI: "9"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert project_node(raw) == NodeRecord(
        "n2",
        "",
        "",
        pod_eni=9,
        ready=True,
        unschedulable=True,
        exhausted=False,
        instance_id="",
        view=View({POD_ENI: 9000}, {"rack": "7"}, (), "live-node"),
    )
    raw["status"]["allocatable"][POD_ENI] = "lots"
    with pytest.raises(ValueError) as refused:
        project_node(raw)
    assert str(refused.value) == f"status.allocatable.{POD_ENI}: invalid quantity 'lots' ({FORMAT_WRONG})"


@pytest.mark.parametrize(
    ("provider_id", "instance_id"),
    [
        ("aws:///us-east-1a/i-0123", "i-0123"),
        ("aws:///us-east-1a/i-0123/", "i-0123"),
        ("gce://project/zone/vm", ""),
        (None, ""),
        ("", ""),
    ],
)
def test_provider_instance_id(provider_id: object, instance_id: str) -> None:
    assert provider_instance_id(provider_id) == instance_id


def test_the_discovery_copy_of_a_node_keeps_exactly_what_discovery_reads() -> None:
    """Name, labels, Karpenter's EC2NodeClass hash annotations (capacity/karpenter/live.py) and
    deletion of the metadata, the whole spec, capacity, allocatable and the conditions' type, status
    and transition time; nothing else (managedFields, other annotations, uid,
    addresses, nodeInfo, images, a condition's reason, message and heartbeat). A conditions value
    that is not a list, and a condition that is not a map, are kept as they came (the readers judge
    them as on the whole node); equal strings of two nodes are one object."""
    raw = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": "n1",
            "uid": "u-1",
            "labels": {"a": "b"},
            "annotations": {
                "x": "y",
                "karpenter.k8s.aws/ec2nodeclass-hash": "123",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            },
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {"providerID": "aws:///z/i-1", "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "2", "memory": "1Gi"},
            "allocatable": {"cpu": "2"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                    "lastTransitionTime": "2025-12-31T00:00:00Z",
                },
                "not a map",
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "images": [{"names": ["x"]}],
            "volumesInUse": [],
            "volumesAttached": [],
            "daemonEndpoints": {},
            "nodeInfo": {"kubeletVersion": "v1.30"},
        },
    }
    assert discovery_node(raw) == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": "n1",
            "labels": {"a": "b"},
            "annotations": {
                "karpenter.k8s.aws/ec2nodeclass-hash": "123",
                "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
            },
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"providerID": "aws:///z/i-1", "taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "2", "memory": "1Gi"},
            "allocatable": {"cpu": "2"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-12-31T00:00:00Z"},
                "not a map",
            ],
        },
    }
    odd = {
        "metadata": {"name": "n2", "labels": "not a map", "annotations": {"x": "y"}},
        "status": {"conditions": "none"},
    }
    assert discovery_node(odd) == {
        "metadata": {"name": "n2", "labels": "not a map"},
        "spec": {},
        "status": {"conditions": "none"},
    }
    first, second = (
        discovery_node({"metadata": {"name": n, "labels": {"zone": "".join(["us-east-", "1a"])}}})
        for n in ("a", "b")
    )
    assert first["metadata"]["labels"]["zone"] is second["metadata"]["labels"]["zone"]
    # keys interned too (written out of parts, so not the compiler's constant); a key or value that
    # is not a string (a YAML state file may hold one) kept as it came, never refused
    third = discovery_node(
        {
            "metadata": {"name": "c", "labels": {"".join(["topology.kubernetes.io/", "zone"]): "a", 1: 2}},
            "status": {"allocatable": {"".join(["c", "pu"]): 4}},
        }
    )
    assert third["metadata"]["labels"] == {"topology.kubernetes.io/zone": "a", 1: 2}
    assert third["status"]["allocatable"] == {"cpu": 4}
    for kept in (third["metadata"]["labels"], third["status"]["allocatable"]):
        assert all(key is sys.intern(key) for key in kept if type(key) is str)
    with pytest.raises(ValueError, match=r"^node without metadata\.name$"):
        discovery_node({"metadata": {}})


def test_records_print_and_compare() -> None:
    assert repr(PodRecord("u", "ns", "p")) == "PodRecord(ns/p on - Pending)"
    assert repr(PodRecord("u", "ns", "p", node="n1", phase="Running")) == "PodRecord(ns/p on n1 Running)"
    assert repr(NodeRecord("n1")) == "NodeRecord(n1 ? pod-eni=None)"
    assert repr(NodeRecord("n1", "ng", "m5.large", pod_eni=9)) == "NodeRecord(n1 m5.large pod-eni=9)"
    assert PodRecord("u", "ns", "p") != PodRecord("u", "ns", "p", cpu=1)
    assert PodRecord("u", "ns", "p") != "u"
    assert NodeRecord("n1") != NodeRecord("n1", ready=False)
    assert NodeRecord("n1") != "n1"
    assert PodRecord("u", "ns", "p", phase="Failed").terminal is True
    assert PodRecord("u", "ns", "p", phase="Running").terminal is False


def test_records_hold_their_defaults_and_what_they_were_given_slot_by_slot() -> None:
    """Records compare slot by slot, so a default changed in `__init__` would change both sides of a
    whole comparison: here every slot is read against a written-out value."""
    slots = NodeRecord.__slots__
    assert {s: getattr(NodeRecord("n1"), s) for s in slots} == {
        "exhausted": False,
        "instance_id": "",
        "instance_type": "",
        "name": "n1",
        "node_group": "",
        "pod_eni": None,
        "ready": True,
        "ready_since": -math.inf,
        "unschedulable": False,
        "view": None,
    }
    given = NodeRecord(
        "n2",
        "ng",
        "m5.large",
        pod_eni=9,
        ready=False,
        ready_since=1_700_000_000.0,
        unschedulable=True,
        exhausted=True,
        instance_id="i-1",
    )
    assert {s: getattr(given, s) for s in slots} == {
        "exhausted": True,
        "instance_id": "i-1",
        "instance_type": "m5.large",
        "name": "n2",
        "node_group": "ng",
        "pod_eni": 9,
        "ready": False,
        "ready_since": 1_700_000_000.0,
        "unschedulable": True,
        "view": None,
    }
    pod = PodRecord("ns/p", "ns", "p")
    assert (pod.started, pod.owner_kind, pod.owner_name, pod.eni_ids) == (False, "", "", ())
    assert PodRecord("ns/q", "ns", "q", eni_ids=("eni-1",)).eni_ids == ("eni-1",)


def test_an_owner_without_a_name_is_named_empty() -> None:
    """A controlling owner reference without a name: its kind is kept, its name is empty."""
    raw = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "ownerReferences": [{"kind": "Job", "controller": True}],
        },
    }
    record = project_pod(raw)
    assert (record.owner_kind, record.owner_name) == ("Job", "")
    assert record == PodRecord("ns/p", "ns", "p", owner_kind="Job")


@pytest.mark.parametrize(("compute_type", "pod_eni"), [("auto", None), ("hybrid", 9), (None, 9)])
def test_an_auto_mode_node_offers_no_branch_eni_to_the_books(
    compute_type: str | None, pod_eni: int | None
) -> None:
    """A node labelled eks.amazonaws.com/compute-type=auto (EKS Auto Mode) is one the VPC resource
    controller never manages: the books count no branch ENI there even if its status advertised
    some; any other compute type, or none, keeps what the node advertises."""
    labels = {"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/nodepool": "general-purpose"}
    if compute_type is not None:
        labels["eks.amazonaws.com/compute-type"] = compute_type
    raw = {
        "metadata": {"name": "i-0auto", "labels": labels},
        "status": {"allocatable": {"vpc.amazonaws.com/pod-eni": "9"}},
    }
    assert project_node(raw).pod_eni == pod_eni


def test_equal_requests_and_times_of_two_pods_are_one_object_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pods with the same requests and creation time share the int and float objects (the memo
    keys ints and floats apart, so a value keeps its type); once the memo holds its limit it starts
    again, and what it gives is still the equal value."""
    first, second = job_pod(), job_pod()
    second["metadata"]["name"] = "other"
    a, b = project_pod(json.loads(json.dumps(first))), project_pod(json.loads(json.dumps(second)))
    assert a.memory == b.memory and a.memory is b.memory and type(a.memory) is int
    assert a.cpu is b.cpu and a.created_at is b.created_at and type(a.created_at) is float
    assert a.finished_at is b.finished_at
    monkeypatch.setattr(records, "_SHARED_NUMBERS", 1)
    monkeypatch.setattr(records, "_ints", {})
    monkeypatch.setattr(records, "_floats", {})
    c = project_pod(json.loads(json.dumps(first)))
    assert (c.memory, c.created_at) == (a.memory, a.created_at)
    assert (len(records._ints), len(records._floats)) == (1, 1)
    assert records._shared_time(None) is None


def test_words_that_are_not_strings_are_read_as_their_text() -> None:
    """A hand-written state file may give a number where the API gives a string: the record reads
    its text (never refuses the pod, never reads it as empty), an empty value as ""."""
    record = project_pod(
        {
            "metadata": {
                "name": "p",
                "namespace": 5,
                "uid": "u",
                "ownerReferences": [{"kind": 7, "name": 8, "controller": True}],
            },
            "spec": {"nodeName": 12, "containers": []},
            "status": {"phase": "Running"},
        }
    )
    assert (record.namespace, record.node, record.owner_kind, record.owner_name) == ("5", "12", "7", "8")
    assert project_pod({"metadata": {"name": "p", "uid": "u"}, "spec": {"nodeName": 0}}).node == ""
