"""What the DaemonSet controller does that fitguard's verdicts depend on: which nodes a DaemonSet
puts a pod on, with the tolerations it adds to every pod, and a template's DaemonSet overhead without
one DaemonSet (its own old revision, for its update).

Upstream: kubernetes/kubernetes pkg/controller/daemon/util/daemonset_util.go
(AddOrUpdateDaemonPodTolerations) and pkg/controller/daemon/daemon_controller.go
(NodeShouldRunDaemonPod); docs/upstream.md has the commit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from capacity.fit import HOSTNAME_LABEL, TEMPLATE_NODE_NAME
from capacity.placement import NO_EXECUTE
from capacity.requests import pod_requests
from capacity.resources import Resources
from capacity.selectors import SelectorError, node_selector_map, node_selector_terms
from capacity.taints import Toleration, first_untolerated, parse_tolerations
from capacity.template import NodeGroupTemplate, View

# pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations: every DaemonSet pod
# tolerates these, so a DaemonSet is judged with them (hostNetwork pods also network-unavailable).
DAEMON_TOLERATIONS = (
    Toleration("node.kubernetes.io/not-ready", "Exists", "", NO_EXECUTE),
    Toleration("node.kubernetes.io/unreachable", "Exists", "", NO_EXECUTE),
    Toleration("node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),
)
HOST_NETWORK_TOLERATION = Toleration("node.kubernetes.io/network-unavailable", "Exists", "", "NoSchedule")


def daemon_tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    """The tolerations the DaemonSet controller adds to each pod of a template with this spec."""
    return DAEMON_TOLERATIONS + ((HOST_NETWORK_TOLERATION,) if spec.get("hostNetwork") is True else ())


def runs_on(spec: Mapping[str, Any], view: View, field: str = "spec") -> bool:
    """Whether a DaemonSet whose pod template has this spec puts a pod on a node of `view`:
    nodeSelector, required node affinity and tolerations (the controller's added ones too, as
    daemon_controller.go NodeShouldRunDaemonPod checks them). Raises SelectorError/TypeError."""
    if not node_selector_map(spec.get("nodeSelector"))(view.labels):
        return False
    affinity = spec.get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required and not node_selector_terms(required.get("nodeSelectorTerms"), f"{field}.nodeSelectorTerms")(
        view.labels
    ):
        return False
    tolerations = parse_tolerations(spec.get("tolerations"), f"{field}.tolerations") + daemon_tolerations(
        spec
    )
    return first_untolerated(view.taints, tolerations) is None


def without_daemonset(template: NodeGroupTemplate, spec: Mapping[str, Any]) -> NodeGroupTemplate:
    """The template as it would be without the DaemonSet whose pod template has `spec`: a DaemonSet
    being updated replaces its own pods, so its old revision is no overhead for its new one."""
    try:
        requests = pod_requests(spec, "spec.template.spec")
    except (TypeError, ValueError):
        return template

    def less(overhead: Mapping[str, int], pods: int, view: View | None) -> tuple[Resources, int]:
        try:
            counted = view is not None and runs_on(spec, view)
        except (SelectorError, TypeError, ValueError):
            counted = False
        if not counted:
            return dict(overhead), pods
        return {name: max(value - requests.get(name, 0), 0) for name, value in overhead.items()}, max(
            pods - 1, 0
        )

    actual, actual_pods = less(template.daemonset_overhead, template.daemonset_pods, template.actual)
    tagged, tagged_pods = less(
        template.autoscaler_overhead or {},
        template.autoscaler_overhead_pods or 0,
        _chosen_on(template.autoscaler),
    )
    return dataclasses.replace(
        template,
        daemonset_overhead=actual,
        daemonset_pods=actual_pods,
        autoscaler_overhead=tagged,
        autoscaler_overhead_pods=tagged_pods,
    )


def _chosen_on(view: View | None) -> View | None:
    """The published autoscaler view as its DaemonSets were chosen (capacity/fresh_node.py): with the
    template's hostname, which the published view leaves out. Its template-node marker and
    deprecated twins, added after the choice, are kept: a DaemonSet selecting them is taken out
    though it was never counted, so the overhead errs low (towards admitting the update)."""
    if view is None:
        return None
    return View(
        view.allocatable, {**view.labels, HOSTNAME_LABEL: TEMPLATE_NODE_NAME}, view.taints, view.source
    )
