"""cluster-autoscaler's cached template keeps every label of the node it copied but the hostname
(node_info_utils.go `createSanitizedNode`, mixed_nodeinfos_processor.go `Process`), fitguard's
exhausted label included: a group whose last node carried it when it went is, to
cluster-autoscaler, a group no guarded pod fits, until it restarts. fitguard's record of that
memory keeps the label, so the planner counts guarded pods as demand cluster-autoscaler is blind
to. Whole values compared."""

from __future__ import annotations

from typing import Any

from capacity.autoscaler_memory import AutoscalerProcess, next_memory, parse_time
from capacity.autoscaler_view import InstanceShape
from capacity.demand import autoscaler_sees, classify, pending_shapes
from capacity.names import EXHAUSTED_LABEL
from capacity.resources import POD_ENI
from capacity.template import NodeGroupTemplate, View
from controller.aws.records import AwsNodeGroup
from controller.memory import live_template

T0 = parse_time("2026-11-30T12:00:00Z")
GROUP = AwsNodeGroup(
    name="ng-sg",
    asg_name="ng-sg",
    provider="aws-asg",
    max_size=10,
    availability_zones=("us-east-1a",),
    instance_types=("m5.large",),
    shape=InstanceShape("m5.large", 2, 8192, 0, "amd64"),
    root_volume_gib=50,
)
GUARD = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]}
            ]
        }
    }
}


def exhausted_node() -> dict[str, Any]:
    """ng-sg's last node as it was when the spot reclaim took it: labelled exhausted."""
    return {
        "metadata": {
            "name": "ip-10-0-1-1",
            "labels": {
                "eks.amazonaws.com/nodegroup": "ng-sg",
                "kubernetes.io/hostname": "ip-10-0-1-1",
                EXHAUSTED_LABEL: "true",
            },
        },
        "spec": {"taints": [{"key": "NodeWithImpairedVolumes", "value": "true", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "1930m", "memory": "7220Mi", "pods": "29", POD_ENI: "9"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T10:00:00Z"}],
        },
    }


CACHED = View(
    {"cpu": 1930, "memory": 7220 * 2**20 * 1000, "pods": 29000, POD_ENI: 9000},
    {
        "eks.amazonaws.com/nodegroup": "ng-sg",
        EXHAUSTED_LABEL: "true",
        "cluster-autoscaler.kubernetes.io/template-node": "true",
    },
    (),
    "live-node",
)


def test_the_remembered_node_keeps_the_exhausted_label() -> None:
    """The node cluster-autoscaler would cache now: every label but the hostname, fitguard's
    exhausted label too, its template marker, the condition taint sanitised away."""
    assert live_template(GROUP, [exhausted_node()], T0) == CACHED


def test_a_group_remembered_with_the_label_is_blind_to_guarded_pods_and_fitguard_plans_for_them() -> None:
    """The node went; cluster-autoscaler (running since before it was seen) remembers it with the
    label: it builds ng-sg's nodes from that copy, on which a guarded pod fits nowhere, so the pod is
    demand only fitguard's planner serves; an unguarded pod fits the copy and is left to
    cluster-autoscaler."""
    process = AutoscalerProcess("kube-system/ca", T0 - 3600, "87600h", 87600 * 3600.0)
    seen = next_memory(None, CACHED, process, T0, "pods")
    memory = next_memory(seen, None, process, T0 + 600, "pods")
    assert (memory.remembers, memory.view) == (True, CACHED)
    template = NodeGroupTemplate(
        "ng-sg",
        "aws-asg",
        ("m5.large",),
        0,
        10,
        0,
        nodes=0,
        actual=View(dict(CACHED.allocatable)),
        memory=memory,
    )
    assert autoscaler_sees(template, False) == View(
        CACHED.allocatable, CACHED.labels, (), "autoscaler-memory"
    )
    container = {"name": "c", "resources": {"requests": {"cpu": "100m", POD_ENI: "1"}}}
    unschedulable = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    guarded = {
        "metadata": {"name": "web-0", "namespace": "shop"},
        "spec": {"containers": [container], "affinity": GUARD},
        "status": unschedulable,
    }
    plain = {
        "metadata": {"name": "cron-0", "namespace": "shop"},
        "spec": {"containers": [container]},
        "status": unschedulable,
    }
    shapes, malformed = pending_shapes([guarded, plain])
    demand = classify(shapes, [template])
    assert ([p.key for s in demand.shapes for p in s.pods], malformed) == (["shop/web-0"], [])
    assert [(([p.key for p in s.shape.pods]), s.why) for s in demand.skipped] == [
        (["shop/cron-0"], "cluster-autoscaler can serve it with a node of ng-sg")
    ]
