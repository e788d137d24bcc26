"""A large synthetic cluster rendered straight to JSON bytes: nodes, pods as the API lists them
(spec, status, managedFields: about 5 KB each) and a stream of watch events.

Pods are rendered from a few dozen full pod objects with placeholders for what differs per pod
(name, uid, node, IP, resourceVersion), so 150,000 of them take seconds, not minutes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.bench import synth

PODS_PER_NODE = 30
VARIANTS = 24
# placeholders: never produced by json.dumps of the rest of the object
NAME, NS, UID, NODE, IP, RV, FINISHED = "@NAME@", "@NS@", "@UID@", "@NODE@", "@IP@", "@RV@", "@FINISHED@"
STARTED = "2024-05-01T11:00:00Z"
LONG_AGO = "2024-05-01T11:59:30Z"  # finished pods of the list released their ENIs long ago


@dataclass
class Rendered:
    nodes: list[bytes]
    pods: list[bytes]
    events: list[bytes]
    resource_version: int
    pod_bytes: int


def node_name(i: int) -> str:
    return f"ip-10-{i // 65025 % 256}-{i // 255 % 255}-{i % 255 + 1}.ec2.internal"


def node(i: int) -> dict[str, Any]:
    kind, cpu, memory, pods, enis = synth.TYPES[i % len(synth.TYPES)]
    name = node_name(i)
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "47233297124"}
    if enis != "0":
        allocatable["vpc.amazonaws.com/pod-eni"] = enis
    conditions = [
        {"type": t, "status": "False", "reason": f"KubeletHas{r}", "lastHeartbeatTime": STARTED}
        for t, r in (("MemoryPressure", "SufficientMemory"), ("DiskPressure", "NoDiskPressure"))
    ]
    conditions.append(
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": STARTED}
    )
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"{i:08x}-0000-4000-8000-{i:012x}",
            "resourceVersion": "1",
            "creationTimestamp": STARTED,
            "labels": {
                "eks.amazonaws.com/nodegroup": synth.group_name(i % 500),
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": kind,
                "topology.kubernetes.io/zone": f"us-east-1{'abc'[i % 3]}",
                "vpc.amazonaws.com/has-trunk-attached": "true" if enis != "0" else "false",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "alpha.kubernetes.io/provided-node-ip": "10.0.0.1",
            },
        },
        "spec": {"providerID": f"aws:///us-east-1a/i-{i:017x}"},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 255 % 255}.{i % 255}"}],
            "nodeInfo": {
                "kubeletVersion": "v1.29.3-eks-ae9a62a",
                "osImage": "Amazon Linux 2",
                "architecture": "amd64",
            },
        },
    }


def _managed_fields() -> list[dict[str, Any]]:
    """What the apiserver keeps per writer; a big share of a real pod's bytes."""
    spec_fields = {
        f"f:{k}": {} for k in ("dnsPolicy", "enableServiceLinks", "restartPolicy", "schedulerName")
    }
    status_fields = {
        'k:{"type":"ContainersReady"}': {".": {}, "f:lastProbeTime": {}, "f:status": {}, "f:type": {}},
        'k:{"type":"Ready"}': {".": {}, "f:lastProbeTime": {}, "f:status": {}, "f:type": {}},
    }
    return [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": STARTED,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}},
                "f:spec": spec_fields,
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": STARTED,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:conditions": status_fields, "f:podIP": {}, "f:startTime": {}}},
            "subresource": "status",
        },
    ]


def pod_variant(rng: random.Random, variant: int) -> tuple[str, str]:
    """(kind of pod, pod JSON with placeholders): Running, some with a branch ENI; finished Job pods
    that held one; unschedulable pending pods."""
    _, pod = synth.admission_pod(rng, rng.randint(1_800, 3_500))
    kind = "running"
    if variant % 12 == 11:
        kind = "pending"
    elif variant % 12 >= 9:
        kind = "finished"
    meta = pod["metadata"]
    meta.update(
        name=NAME,
        namespace=NS,
        uid=UID,
        resourceVersion=RV,
        creationTimestamp=STARTED,
        managedFields=_managed_fields(),
    )
    spec = pod["spec"]
    eni = variant % 3 == 0
    if eni:
        first = spec["containers"][0]["resources"]
        first["requests"]["vpc.amazonaws.com/pod-eni"] = "1"
        first["limits"]["vpc.amazonaws.com/pod-eni"] = "1"
        eni_info = [
            {"eniId": "eni-0a1b2c3d4e5f60789", "ifAddress": "02:ab:cd:ef:01:23", "privateIp": IP, "vlanId": 3}
        ]
        meta["annotations"]["vpc.amazonaws.com/pod-eni"] = json.dumps(eni_info)
    if kind == "finished":
        meta["ownerReferences"][0].update(kind="Job", apiVersion="batch/v1")
        spec["restartPolicy"] = "Never"
    ready = "True" if kind == "running" else "False"
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": STARTED}
    status: dict[str, Any] = {
        "phase": {"running": "Running", "finished": "Succeeded", "pending": "Pending"}[kind],
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": STARTED},
            {"type": "Ready", "status": ready, "lastTransitionTime": STARTED},
            {"type": "ContainersReady", "status": ready, "lastTransitionTime": STARTED},
            scheduled,
        ],
        "qosClass": "Burstable",
    }
    if kind == "pending":
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/5000 nodes are available: 5000 Insufficient cpu.",
                "lastTransitionTime": STARTED,
            }
        ]
    else:
        spec["nodeName"] = NODE
        status.update(hostIP="10.0.0.1", podIP=IP, podIPs=[{"ip": IP}], startTime=STARTED)
        state = (
            {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": STARTED,
                    "finishedAt": FINISHED,
                }
            }
            if kind == "finished"
            else {"running": {"startedAt": STARTED}}
        )
        status["containerStatuses"] = [
            {
                "name": c["name"],
                "state": state,
                "ready": kind == "running",
                "restartCount": 0,
                "image": c["image"],
                "imageID": f"{c['image']}@sha256:{rng.getrandbits(256):064x}",
                "containerID": f"containerd://{rng.getrandbits(256):064x}",
                "started": kind == "running",
            }
            for c in spec["containers"]
        ]
    pod["status"] = status
    return kind, json.dumps(pod, separators=(",", ":"))


def _fill(template: str, *, name: str, uid: str, node: str, ip: str, rv: int, finished: str) -> bytes:
    return (
        template.replace(NAME, name)
        .replace(NS, synth.namespace_name(int(name.rpartition("-")[2]) % synth.NAMESPACES))
        .replace(UID, uid)
        .replace(FINISHED, finished)
        .replace(NODE, node)
        .replace(IP, ip)
        .replace(RV, str(rv))
        .encode()
    )


def render(pod_count: int, event_count: int, seed: int = 5) -> Rendered:
    """Nodes (one per 30 pods), pods spread over them, and `event_count` watch events after the
    list: half status updates (running pods finishing), a quarter new pods, a quarter deletions."""
    rng = random.Random(seed)
    node_count = max(1, pod_count // PODS_PER_NODE)
    nodes = [json.dumps(node(i), separators=(",", ":")).encode() for i in range(node_count)]
    variants = [pod_variant(rng, v) for v in range(VARIANTS)]
    finished = [t for kind, t in variants if kind == "finished"]
    rv = 1000

    # pods that finish during the watch finish now: their branch ENIs are held for the window
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def pod(i: int, template: str, version: int, finished: str = LONG_AGO) -> bytes:
        name, uid, ip = (
            f"pod-{i:07d}",
            f"{i:08x}-1111-4000-8000-{i:012x}",
            f"10.{i // 65025 % 256}.{i // 255 % 255}.{i % 255}",
        )
        return _fill(
            template, name=name, uid=uid, node=node_name(i % node_count), ip=ip, rv=version, finished=finished
        )

    pods = [pod(i, variants[i % VARIANTS][1], rv) for i in range(pod_count)]
    events = []
    added = pod_count
    touched = iter(rng.sample(range(pod_count), min(pod_count, event_count)))  # each pod changes once
    for e in range(event_count):
        rv += 1
        roll = e % 4
        if roll < 2:  # a running pod of the list finishes (MODIFIED, now Succeeded)
            obj = pod(next(touched), finished[e % len(finished)], rv, now)
            kind = "MODIFIED"
        elif roll == 2:
            obj = pod(added, variants[added % VARIANTS][1], rv)
            added += 1
            kind = "ADDED"
        else:
            obj = pod(next(touched), variants[e % VARIANTS][1], rv)
            kind = "DELETED"
        events.append(b'{"type":"' + kind.encode() + b'","object":' + obj + b"}")
    return Rendered(nodes, pods, events, 1000, sum(len(p) for p in pods))
