"""The pods cluster-autoscaler puts on the node it builds for a group, case by case, restated from its
source and its own unit tests.

Sources: kubernetes-sigs/cluster-autoscaler at 33c3f97b (2026-08-21): pkg/simulator/node_info_utils.go
(SanitizedTemplateNodeInfoFromNodeGroup, SanitizedTemplateNodeInfoFromNodeInfo, createSanitizedNode,
podsExpectedOnFreshNode, isPreemptingSystemNodeCritical) and its node_info_utils_test.go
(TestSanitizedTemplateNodeInfoFromNodeGroup, TestSanitizedTemplateNodeInfoFromNodeInfo: the example
node, the four DaemonSets ds1-ds4 and the pods p1-p4 are theirs); pkg/utils/pod/pod.go (IsMirrorPod,
IsDaemonSetPod); pkg/utils/daemonset/daemonset.go (GetDaemonSetPodsForNode); pkg/utils/kubernetes/
listers.go (AllPodLister.List); pkg/utils/labels/labels.go (UpdateDeprecatedLabels).

Upstream's cases compare the set of pods on the template. Here each pod and each DaemonSet's pod
template asks a distinct power of two of milli-cpu (upstream's ask 100m each, or nothing), so the
whole value compared, the requests and the count, names exactly that set. `expected.pods` lists the
pods as upstream's `wantPods` does (a DaemonSet's name stands for the pod it adds or that ran);
`expected.running` the DaemonSets marked running; `expected.labels`, when given, the template's labels.

`upstream` names the file and function each case restates; `test`, when present, the upstream test
(and its case name) it follows; cases without one are derived from the code named.
"""

from __future__ import annotations

from typing import Any

CORE = "kubernetes-sigs/cluster-autoscaler "
UTILS = CORE + "pkg/simulator/node_info_utils.go "
UTILS_TEST = "node_info_utils_test.go "
MIRROR = {"kubernetes.io/config.mirror": "mirror"}
CRITICAL = "system-node-critical"

# millicpu each pod asks: their sum names the set of pods on a template
CPU = {
    "p1": 1,
    "p2": 2,
    "p3": 4,
    "p4": 8,
    "ds1": 16,
    "ds2": 32,
    "ds3": 64,
    "ds4": 128,
    "ds5": 256,
    "ds6": 512,
}


def _spec(name: str, **extra: Any) -> dict[str, Any]:
    requests = {"cpu": f"{CPU[name]}m"}
    return {"containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}], **extra}


def daemonset(name: str, **spec: Any) -> dict[str, Any]:
    """A DaemonSet of namespace `<name>-namespace` and UID `<name>`, as upstream's ds1-ds4."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": f"{name}-namespace", "uid": name},
        "spec": {"template": {"spec": _spec(name, **spec)}},
    }


# upstream's testDaemonSets: ds3 selects key=value (the example node lacks it), ds4 is
# system-node-critical; ds5 and ds6 are this table's, for the order of the labels.
DS = {
    "ds1": daemonset("ds1"),
    "ds2": daemonset("ds2"),
    "ds3": daemonset("ds3", nodeSelector={"key": "value"}),
    "ds4": daemonset("ds4", priorityClassName=CRITICAL),
}
UPSTREAM_DAEMONSETS = ["ds1", "ds2", "ds3", "ds4"]


def pod(
    name: str, *, node: str = "n", mirror: bool = False, deleted: bool = False, **meta: Any
) -> dict[str, Any]:
    """upstream's BuildScheduledTestPod, SetMirrorPodSpec and setDeletionTimestamp."""
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"{name}-uid", **meta}
    if mirror:
        metadata["annotations"] = dict(MIRROR)
    if deleted:
        metadata["deletionTimestamp"] = "2026-08-21T12:00:00Z"
    return {"metadata": metadata, "spec": {"nodeName": node, **_spec(name)}, "status": {"phase": "Running"}}


def ds_pod(ds: str, *, node: str = "n", deleted: bool = False) -> dict[str, Any]:
    """upstream's buildDSPod: the DaemonSet's pod, its controller the DaemonSet (by UID)."""
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": ds, "uid": ds, "controller": True}
    made = pod(ds, node=node, deleted=deleted, ownerReferences=[owner])
    made["metadata"]["namespace"] = f"{ds}-namespace"
    return made


# upstream's exampleNode: BuildTestNode("n", 1000, 10), a ToBeDeleted taint, three labels.
EXAMPLE_LABELS = {
    "custom": "label",
    "node.kubernetes.io/instance-type": "some-instance",
    "topology.kubernetes.io/region": "some-region",
}
TO_BE_DELETED = ["ToBeDeletedByClusterAutoscaler", "2312532423", "NoSchedule"]
TEMPLATE_MARK = {"cluster-autoscaler.kubernetes.io/template-node": "true"}
DEPRECATED = {
    "beta.kubernetes.io/instance-type": "some-instance",
    "failure-domain.beta.kubernetes.io/region": "some-region",
}
ALL_KINDS = [
    pod("p1"),
    pod("p2"),
    pod("p3", mirror=True),
    pod("p4", mirror=True, deleted=True),
    ds_pod("ds1"),
    ds_pod("ds2", deleted=True),
]

# SanitizedTemplateNodeInfoFromNodeGroup: forceDaemonSets true, deprecated labels added last.
FROM_NODE_GROUP: list[dict[str, Any]] = [
    {
        "id": "simple-template-with-no-pods",
        "upstream": UTILS + "SanitizedTemplateNodeInfoFromNodeGroup, podsExpectedOnFreshNode",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeGroup 'simple template with no pods'",
        "input": {
            "labels": EXAMPLE_LABELS,
            "taints": [TO_BE_DELETED],
            "pods": [],
            "daemonsets": UPSTREAM_DAEMONSETS,
        },
        "expected": {
            "pods": ["ds1", "ds2", "ds4"],
            "running": [],
            "labels": {**EXAMPLE_LABELS, **TEMPLATE_MARK, **DEPRECATED},
        },
    },
    {
        "id": "template-with-all-kinds-of-pods",
        "upstream": UTILS + "SanitizedTemplateNodeInfoFromNodeGroup, podsExpectedOnFreshNode",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeGroup 'template with all kinds of pods'",
        "input": {
            "labels": EXAMPLE_LABELS,
            "taints": [TO_BE_DELETED],
            "pods": ALL_KINDS,
            "daemonsets": UPSTREAM_DAEMONSETS,
        },
        "expected": {
            "pods": ["p3", "ds1", "ds2", "ds4"],
            "running": ["ds1"],
            "labels": {**EXAMPLE_LABELS, **TEMPLATE_MARK, **DEPRECATED},
        },
    },
    {
        "id": "no-daemonset-lands-by-a-deprecated-label-or-the-template-marker",
        "upstream": UTILS
        + "SanitizedTemplateNodeInfoFromNodeGroup (UpdateDeprecatedLabels after "
        + "SanitizedTemplateNodeInfoFromNodeInfo, which adds the marker after podsExpectedOnFreshNode)",
        "input": {
            "labels": EXAMPLE_LABELS,
            "taints": [],
            "pods": [],
            "daemonsets": ["ds5-beta-instance-type", "ds6-template-marker", "ds4-hostname-exists"],
        },
        "expected": {
            "pods": ["ds4"],
            "running": [],
            "labels": {**EXAMPLE_LABELS, **TEMPLATE_MARK, **DEPRECATED},
        },
    },
    {
        "id": "the-taints-are-sanitised-before-the-daemonsets-are-chosen",
        "upstream": UTILS
        + "SanitizedTemplateNodeInfoFromNodeInfo (createSanitizedNode before podsExpectedOnFreshNode)",
        "input": {
            "labels": EXAMPLE_LABELS,
            "taints": [TO_BE_DELETED, ["dedicated", "batch", "NoSchedule"]],
            "pods": [],
            "daemonsets": ["ds1"],
        },
        # ds1 tolerates nothing: the ToBeDeleted taint is gone, `dedicated` is kept and keeps it off
        "expected": {"pods": [], "running": []},
    },
]

# The DaemonSets of the label-order case: each selects a label the template gets only after the
# pods are chosen, but for the last, which selects the hostname createSanitizedNode sets.
DS.update(
    {
        "ds5-beta-instance-type": {
            **daemonset("ds5", nodeSelector={"beta.kubernetes.io/instance-type": "some-instance"}),
        },
        "ds6-template-marker": daemonset("ds6", nodeSelector=dict(TEMPLATE_MARK)),
        "ds4-hostname-exists": daemonset(
            "ds4",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}
                        ]
                    }
                }
            },
        ),
    }
)

# SanitizedTemplateNodeInfoFromNodeInfo: a live node's template (and what cluster-autoscaler caches);
# no deprecated labels, the marker added after the pods are chosen.
FROM_NODE_INFO: list[dict[str, Any]] = [
    {
        "id": "node-without-any-pods",
        "upstream": UTILS + "SanitizedTemplateNodeInfoFromNodeInfo",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node without any pods'",
        "input": {"pods": [], "daemonsets": [], "force": False},
        "expected": {"pods": [], "running": [], "labels": {**EXAMPLE_LABELS, **TEMPLATE_MARK}},
    },
    {
        "id": "node-with-non-ds-mirror-pods",
        "upstream": UTILS + "podsExpectedOnFreshNode",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with non-DS/mirror pods'",
        "input": {"pods": [pod("p1"), pod("p2")], "daemonsets": [], "force": False},
        "expected": {"pods": [], "running": []},
    },
    {
        "id": "node-with-a-mirror-pod",
        "upstream": UTILS + "podsExpectedOnFreshNode; " + CORE + "pkg/utils/pod/pod.go IsMirrorPod",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with a mirror pod'",
        "input": {"pods": [pod("p1", mirror=True)], "daemonsets": [], "force": False},
        "expected": {"pods": ["p1"], "running": []},
    },
    {
        "id": "node-with-a-deleted-mirror-pod",
        "upstream": UTILS + "podsExpectedOnFreshNode (DeletionTimestamp set: skipped)",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with a deleted mirror pod'",
        "input": {
            "pods": [pod("p1", mirror=True), pod("p2", mirror=True, deleted=True)],
            "daemonsets": [],
            "force": False,
        },
        "expected": {"pods": ["p1"], "running": []},
    },
    {
        "id": "node-with-ds-pods-no-force-no-daemonsets",
        "upstream": UTILS + "podsExpectedOnFreshNode",
        "test": UTILS_TEST
        + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with DS pods [forceDS=false, no daemon sets]'",
        "input": {"pods": [ds_pod("ds1"), ds_pod("ds2", deleted=True)], "daemonsets": [], "force": False},
        "expected": {"pods": ["ds1"], "running": ["ds1"]},
    },
    {
        "id": "node-with-ds-pods-no-force-some-daemonsets",
        "upstream": UTILS + "podsExpectedOnFreshNode, isPreemptingSystemNodeCritical",
        "test": UTILS_TEST
        + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with DS pods [forceDS=false, some daemon sets]'",
        "input": {
            "pods": [ds_pod("ds1"), ds_pod("ds2", deleted=True)],
            "daemonsets": UPSTREAM_DAEMONSETS,
            "force": False,
        },
        "expected": {"pods": ["ds1", "ds4"], "running": ["ds1"]},
    },
    {
        "id": "node-with-a-ds-pod-force-no-daemonsets",
        "upstream": UTILS + "podsExpectedOnFreshNode",
        "test": UTILS_TEST
        + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with a DS pod [forceDS=true, no daemon sets]'",
        "input": {"pods": [ds_pod("ds1"), ds_pod("ds2", deleted=True)], "daemonsets": [], "force": True},
        "expected": {"pods": ["ds1"], "running": ["ds1"]},
    },
    {
        "id": "node-with-a-ds-pod-force-some-daemonsets",
        "upstream": UTILS + "podsExpectedOnFreshNode",
        "test": UTILS_TEST
        + "TestSanitizedTemplateNodeInfoFromNodeInfo 'node with a DS pod [forceDS=true, some daemon sets]'",
        "input": {
            "pods": [ds_pod("ds1"), ds_pod("ds2", deleted=True)],
            "daemonsets": UPSTREAM_DAEMONSETS,
            "force": True,
        },
        "expected": {"pods": ["ds1", "ds2", "ds4"], "running": ["ds1"]},
    },
    {
        "id": "everything-together-no-force",
        "upstream": UTILS + "podsExpectedOnFreshNode",
        "test": UTILS_TEST
        + "TestSanitizedTemplateNodeInfoFromNodeInfo 'everything together [forceDS=false]'",
        "input": {"pods": ALL_KINDS, "daemonsets": UPSTREAM_DAEMONSETS, "force": False},
        "expected": {"pods": ["p3", "ds1", "ds4"], "running": ["ds1"]},
    },
    {
        "id": "everything-together-force",
        "upstream": UTILS + "podsExpectedOnFreshNode",
        "test": UTILS_TEST + "TestSanitizedTemplateNodeInfoFromNodeInfo 'everything together [forceDS=true]'",
        "input": {"pods": ALL_KINDS, "daemonsets": UPSTREAM_DAEMONSETS, "force": True},
        "expected": {"pods": ["p3", "ds1", "ds2", "ds4"], "running": ["ds1"]},
    },
    {
        "id": "the-marker-comes-after-the-daemonsets-the-hostname-before",
        "upstream": UTILS
        + "SanitizedTemplateNodeInfoFromNodeInfo (createSanitizedNode sets the hostname, "
        + "podsExpectedOnFreshNode, then the template-node label)",
        "input": {"pods": [], "daemonsets": ["ds6-template-marker", "ds4-hostname-exists"], "force": True},
        "expected": {"pods": ["ds4"], "running": [], "labels": {**EXAMPLE_LABELS, **TEMPLATE_MARK}},
    },
    {
        "id": "a-critical-daemonset-that-never-preempts-is-not-added",
        "upstream": UTILS
        + "isPreemptingSystemNodeCritical (PreemptionPolicy set and not PreemptLowerPriority)",
        "input": {"pods": [], "daemonsets": ["ds4-never-preempts", "ds4-preempts-lower"], "force": False},
        "expected": {"pods": ["ds4"], "running": []},
    },
    {
        "id": "a-pod-annotated-as-a-daemonset-pod-is-kept-but-marks-nothing-running",
        "upstream": CORE + "pkg/utils/pod/pod.go IsDaemonSetPod; " + UTILS + "podsExpectedOnFreshNode",
        "input": {
            "pods": [pod("p1", annotations={"cluster-autoscaler.kubernetes.io/daemonset-pod": "true"})],
            "daemonsets": [],
            "force": False,
        },
        "expected": {"pods": ["p1"], "running": []},
    },
    {
        "id": "an-owner-that-is-not-the-controller-makes-no-daemonset-pod",
        "upstream": "k8s.io/apimachinery metav1.GetControllerOf; "
        + CORE
        + "pkg/utils/pod/pod.go IsDaemonSetPod",
        "input": {
            "pods": [pod("p1", ownerReferences=[{"kind": "DaemonSet", "name": "ds1", "uid": "ds1"}])],
            "daemonsets": ["ds1"],
            "force": True,
        },
        "expected": {"pods": ["ds1"], "running": []},
    },
    {
        "id": "finished-pods-and-other-nodes-pods-are-not-in-the-snapshot",
        "upstream": CORE + "pkg/utils/kubernetes/listers.go AllPodLister.List (no Succeeded or Failed pod)",
        "input": {
            "pods": [
                {**pod("p1", mirror=True), "status": {"phase": "Succeeded"}},
                pod("p2", mirror=True, node="other"),
                pod("p3", mirror=True),
            ],
            "daemonsets": [],
            "force": False,
        },
        "expected": {"pods": ["p3"], "running": []},
    },
]

DS.update(
    {
        "ds4-never-preempts": daemonset("ds5", priorityClassName=CRITICAL, preemptionPolicy="Never"),
        "ds4-preempts-lower": daemonset(
            "ds4", priorityClassName=CRITICAL, preemptionPolicy="PreemptLowerPriority"
        ),
    }
)
