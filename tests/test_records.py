"""Pod and node records (capacity/records.py): projected once from raw JSON, compact, and a
malformed object is refused with an error the caller counts, never a crash of the whole list."""

from __future__ import annotations

import copy
import json
import tracemalloc
from typing import Any

import pytest

from capacity.records import (
    NodeRecord,
    PodRecord,
    branch_eni_count,
    parse_time,
    project_node,
    project_pod,
)
from capacity.resources import POD_ENI
from capacity.taints import Taint
from capacity.template import View

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
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        records = [project_pod(raw) for raw in raws]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert len(records) == 500
    assert grown / len(records) < 1024
