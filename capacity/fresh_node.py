"""The pods on the node cluster-autoscaler imagines for a group: the ones it copies from the example
node (capacity/node_pods.py) plus a pod for each DaemonSet not running there that it adds. Pure.

Restated from sigs.k8s.io/cluster-autoscaler 33c3f97b pkg/simulator/node_info_utils.go:
- `SanitizedTemplateNodeInfoFromNodeInfo`: the example is sanitised first (`createSanitizedNode`:
  every label kept, the hostname label set to the template's name `template-node-for-<group>-<n>`,
  taints sanitised), the pods expected there are chosen on that node, and only then is the label
  `cluster-autoscaler.kubernetes.io/template-node=true` added. `SanitizedTemplateNodeInfoFromNodeGroup`
  (a template from the cloud provider: the ASG's tags) adds the deprecated label twins
  (`UpdateDeprecatedLabels`) later still. So no DaemonSet lands on a template by selecting the
  marker or a beta label, while one selecting the hostname with `Exists` does.
- `podsExpectedOnFreshNode`, its second half: each DaemonSet not marked running gets a pod when
  `GetDaemonSetPodsForNode` (pkg/utils/daemonset: the DaemonSet controller's
  `NodeShouldRunDaemonPod`, capacity/daemonsets.py `runs_on`) puts one on that node, and it is
  added only when `forceDaemonSets` is set or the pod `isPreemptingSystemNodeCritical`
  (priorityClassName `system-node-critical` and preemptionPolicy unset or PreemptLowerPriority).
  `forceDaemonSets` is true for a template from tags, and cluster-autoscaler's `--force-ds` flag
  (pkg/config/flags/flags.go, default false) for a template from a live node
  (pkg/processors/nodeinfosprovider/mixed_nodeinfos_processor.go `Process`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capacity.daemonsets import runs_on
from capacity.estimate import example_node_view
from capacity.node_pods import NodePods, RememberedPods, TemplatePods, pods_on_node
from capacity.requests import pod_requests
from capacity.resources import Resources, add
from capacity.selectors import SelectorError
from capacity.template import View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions

HOSTNAME_LABEL = "kubernetes.io/hostname"
SYSTEM_NODE_CRITICAL = "system-node-critical"  # pkg/utils/labels/labels.go SystemNodeCriticalLabel
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
# rand.Int63 in decimal in cluster-autoscaler; a stand-in no selector names.
RANDOM_SUFFIX = "random"


def template_node_name(group: str) -> str:
    """The name (and hostname label) cluster-autoscaler gives the node it builds for `group`."""
    return f"template-node-for-{group}-{RANDOM_SUFFIX}"


def example_view(view: View, group: str) -> View:
    """The node the expected pods are chosen on: `view` (labels as copied, taints already sanitised)
    with the template's hostname, before any label cluster-autoscaler adds afterwards."""
    return View(
        view.allocatable, {**view.labels, HOSTNAME_LABEL: template_node_name(group)}, view.taints, view.source
    )


def preempting_system_node_critical(spec: Mapping[str, Any]) -> bool:
    """node_info_utils.go `isPreemptingSystemNodeCritical`, on the pod the DaemonSet would create."""
    if spec.get("priorityClassName") != SYSTEM_NODE_CRITICAL:
        return False
    policy = spec.get("preemptionPolicy")
    return policy is None or policy == PREEMPT_LOWER_PRIORITY


@dataclass(frozen=True, slots=True)
class DaemonPods:
    """The pods DaemonSets add to a node, and the DaemonSets fitguard could not read (left out)."""

    pods: TemplatePods
    ignored: tuple[str, ...] = ()


def daemon_pods(
    daemonsets: Iterable[Mapping[str, Any]],
    view: View,
    *,
    running: frozenset[str] = frozenset(),
    force: bool = True,
) -> DaemonPods:
    """A pod for each DaemonSet whose UID is not in `running` and that would run on a node of
    `view`, when `force` or its pod preempts as system-node-critical."""
    total: Resources = {}
    count = 0
    ignored = []
    for ds in daemonsets:
        meta = ds.get("metadata") or {}
        if str(meta.get("uid") or "") in running:
            continue
        spec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
        try:
            if not runs_on(spec, view, "spec.template.spec"):
                continue
            if not force and not preempting_system_node_critical(spec):
                continue
            add(total, pod_requests(spec, "spec.template.spec"))
        except (SelectorError, TypeError, ValueError) as err:
            ignored.append(f"DaemonSet {meta.get('namespace')}/{meta.get('name')}: {err}")
            continue
        count += 1
    return DaemonPods(TemplatePods(total, count), tuple(ignored))


def expected_pods(
    on_node: NodePods, daemonsets: Iterable[Mapping[str, Any]], example: View, *, force: bool
) -> DaemonPods:
    """`podsExpectedOnFreshNode` whole: the pods copied from the example node plus the missing
    DaemonSets' pods that are added, judged on `example` (capacity.fresh_node.example_view)."""
    added = daemon_pods(daemonsets, example, running=on_node.running_uids, force=force)
    requests = add(dict(on_node.pods.requests), added.pods.requests)
    return DaemonPods(
        TemplatePods(requests, on_node.pods.count + added.pods.count), on_node.ignored + added.ignored
    )


def remembered_pods(
    node: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    daemonsets: Iterable[Mapping[str, Any]],
    *,
    group: str,
    force: bool,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> tuple[RememberedPods, tuple[str, ...]]:
    """The pods on the template cluster-autoscaler (run with `taint_options` and `--force-ds` =
    `force`) builds from this live node of `group`, with `pods` the pods listed on it; and what
    fitguard could not read (left out). Raises ValueError/TypeError on a malformed node."""
    name = str((node.get("metadata") or {}).get("name") or "")
    example = example_node_view(node, template_node_name(group), taint_options)
    on_node = pods_on_node(pods, name)
    expected = expected_pods(on_node, daemonsets, example, force=force)
    return RememberedPods(on_node, expected.pods), expected.ignored
