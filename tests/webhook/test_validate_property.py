"""Issue 26's property: for generated clusters (nodes with labels, taints, allocatable and the pods
on them; node groups that own some of them; nodes of no group) and generated pods, whenever the
scheduler's own filters say an existing node fits the pod now, fitguard admits it.

The filters are restated here independently of capacity/ (k8s.io/kubernetes
pkg/scheduler/framework/plugins: nodename, nodeaffinity with matchFields, tainttoleration,
nodeunschedulable, noderesources fitsRequest), from plain dicts, so a bug shared by fitguard's fit
check and this test cannot hide.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.cluster import from_objects
from webhook.review import WebhookOptions
from webhook.validate import review

Obj = dict[str, Any]
NAMES = ["n-0", "n-1", "n-2", "n-3"]
TAINTS = [
    {"key": "dedicated", "value": "x", "effect": "NoSchedule"},
    {"key": "gone", "value": "", "effect": "NoExecute"},
    {"key": "soft", "value": "y", "effect": "PreferNoSchedule"},
]
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


# -- the scheduler's filters, restated -------------------------------------------------------------


def tolerates(toleration: Obj, taint: Obj) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator") == "Exists":
        return True
    return toleration.get("value", "") == taint.get("value", "")


def requirement_holds(expr: Obj, labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


def affinity_holds(pod: Obj, node: Obj) -> bool:
    labels = node["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in (pod["spec"].get("nodeSelector") or {}).items()):
        return False
    required = ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    for term in required["nodeSelectorTerms"]:
        exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not exprs and not fields:
            continue
        if all(requirement_holds(e, labels) for e in exprs) and all(
            (node["metadata"]["name"] == f["values"][0]) == (f["operator"] == "In") for f in fields
        ):
            return True
    return False


def fits_now(pod: Obj, node: Obj, running: list[Obj]) -> bool:
    spec = pod["spec"]
    if spec.get("nodeName") and spec["nodeName"] != node["metadata"]["name"]:
        return False
    tolerations = spec.get("tolerations") or []
    if node["spec"].get("unschedulable") and not any(
        tolerates(t, {"key": UNSCHEDULABLE, "value": "", "effect": "NoSchedule"}) for t in tolerations
    ):
        return False
    for taint in node["spec"].get("taints") or []:
        if taint["effect"] in ("NoSchedule", "NoExecute") and not any(
            tolerates(t, taint) for t in tolerations
        ):
            return False
    if not affinity_holds(pod, node):
        return False
    allocatable = node["status"]["allocatable"]
    if len(running) + 1 > int(allocatable["pods"]):
        return False
    used = sum(milli(p) for p in running)
    return milli(pod) == 0 or used + milli(pod) <= int(allocatable["cpu"].removesuffix("m"))


def milli(pod: Obj) -> int:
    return sum(int(c["resources"]["requests"]["cpu"].removesuffix("m")) for c in pod["spec"]["containers"])


# -- generated clusters and pods --------------------------------------------------------------------


def a_pod(cpu: int) -> Obj:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}]}}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], dict[str, list[Obj]], list[Obj]]:
    """(nodes, the pods running on each, node group templates)."""
    count = draw(st.integers(1, 4))
    nodes, running = [], {}
    group_of = {}
    groups = draw(st.lists(st.sampled_from(["ng-a", "ng-b"]), max_size=2, unique=True))
    overhead = {g: draw(st.sampled_from([0, 100, 300])) for g in groups}
    for name in NAMES[:count]:
        group = draw(st.sampled_from([*groups, ""]))
        cpu = draw(st.integers(500, 4000))
        labels = {"kubernetes.io/hostname": name, "zone": draw(st.sampled_from(["a", "b"]))}
        if draw(st.booleans()):
            labels["workload"] = draw(st.sampled_from(["x", "y"]))
        if group:
            labels["eks.amazonaws.com/nodegroup"] = group if draw(st.booleans()) else "unrelated"
            group_of[name] = group
        spec: Obj = {
            "taints": draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"]))
        }
        if draw(st.booleans()):
            spec["unschedulable"] = draw(st.booleans())
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "status": {"allocatable": {"cpu": f"{cpu}m", "pods": str(draw(st.integers(1, 6)))}},
            }
        )
        # a node of a group runs that group's DaemonSets: they are the overhead its template counts
        ds = [a_pod(overhead[group])] if group and overhead[group] else []
        others = [a_pod(c) for c in draw(st.lists(st.integers(0, 800), max_size=3))]
        running[name] = ds + others
    templates = [
        {
            "apiVersion": "fitguard.io/v1alpha1",
            "kind": "NodeGroupTemplate",
            "metadata": {"name": g},
            "spec": {
                "provider": "manual",
                "maxSize": draw(st.integers(0, 3)),
                "nodes": 0,
                "nodeNames": sorted(n for n, of in group_of.items() if of == g),
                "actual": {
                    "allocatable": {"cpu": f"{draw(st.integers(500, 4000))}m", "pods": "10"},
                    "labels": {"zone": "a"},
                    "taints": draw(st.lists(st.sampled_from(TAINTS[:1]), max_size=1)),
                },
                "daemonSetOverhead": {"cpu": f"{overhead[g]}m", "pods": "1" if overhead[g] else "0"},
            },
        }
        for g in groups
    ]
    return nodes, running, templates


@st.composite
def pods(draw: st.DrawFn) -> Obj:
    spec: Obj = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{draw(st.integers(0, 4500))}m"}}}]
    }
    placement = draw(st.sampled_from(["free", "nodeName", "matchFields", "hostname", "selector"]))
    target = draw(st.sampled_from([*NAMES, "elsewhere"]))
    if placement == "nodeName":
        spec["nodeName"] = target
    elif placement == "matchFields":
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [target]}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    elif placement == "hostname":
        expr = {"key": "kubernetes.io/hostname", "operator": "In", "values": [target]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr]}]
                }
            }
        }
    elif placement == "selector":
        spec["nodeSelector"] = {"workload": draw(st.sampled_from(["x", "y"]))}
    tolerations = draw(
        st.lists(
            st.sampled_from(
                [
                    {"key": "dedicated", "operator": "Exists"},
                    {"key": "gone", "operator": "Exists", "effect": "NoExecute"},
                    {"key": UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"},
                    {"operator": "Exists"},
                ]
            ),
            max_size=2,
        )
    )
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


BASE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}},
]


@settings(max_examples=300, deadline=None)
@given(clusters(), pods())
def test_a_pod_an_existing_node_fits_now_is_admitted(cluster: Any, pod: Obj) -> None:
    """If the scheduler's filters place the pod on some live node now, fitguard admits it."""
    nodes, running, templates = cluster
    view = from_objects([*BASE, *nodes, *templates])
    request = {
        "uid": "u",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": "default",
        "object": pod,
    }
    verdict = review(request, view, WebhookOptions(mode="enforce"))
    if any(fits_now(pod, node, running[node["metadata"]["name"]]) for node in nodes):
        assert verdict.allowed, verdict.message
