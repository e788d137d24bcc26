"""cluster-autoscaler's memory of each node group, recorded on its NodeGroupTemplate: find the running
cluster-autoscaler (its pods, by label), then for each group keep the live node cluster-autoscaler
would take as its template, when it was last seen, and whether cluster-autoscaler remembers it now
(capacity/autoscaler_memory.py decides). The record lives in the object itself
(`spec.autoscalerMemory`), so a new leader, or the next `--once`, reads it back."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capacity.autoscaler_flags import pod_selector
from capacity.autoscaler_memory import AutoscalerProcess, next_memory
from capacity.autoscaler_readiness import is_template_candidate
from capacity.estimate import remembered_node_view
from capacity.fresh_node import remembered_pods
from capacity.node_pods import RememberedPods
from capacity.template import NodeGroupTemplate, View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.aws.records import AwsNodeGroup
from controller.discovery import GroupOutcome, template_node

log = logging.getLogger(__name__)


def looked_for(selector: str, namespace: str) -> str:
    """How cluster-autoscaler was sought, for the reason a person reads."""
    if not selector:
        return "--autoscaler-selector is empty: not looked for"
    where = f"namespace {namespace}" if namespace else "all namespaces"
    return f"pods {selector} in {where}"


def select_pods(pods: Iterable[Mapping[str, Any]], selector: str, namespace: str) -> list[Mapping[str, Any]]:
    """The pods a label selector picks (cluster-autoscaler's, Karpenter's) among a state file's, as
    the API server picks them (the live cache asks the API server to). An empty selector picks
    none. Raises ValueError for a selector it cannot read."""
    if not selector:
        return []
    wanted = pod_selector(selector)
    return [
        pod
        for pod in pods
        if wanted(((pod.get("metadata") or {}).get("labels")) or {})
        and (not namespace or (pod.get("metadata") or {}).get("namespace") == namespace)
    ]


def live_template(
    group: AwsNodeGroup,
    nodes: list[Mapping[str, Any]],
    now: float,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> View | None:
    """The node cluster-autoscaler (run with `taint_options`) would cache as the group's template
    now: among its good template candidates (capacity/autoscaler_readiness.py), the one fitguard's
    actual view would take, as cluster-autoscaler copies it: its labels kept, fitguard's exhausted
    label too (capacity/estimate.py `remembered_node_view`). None when it has none."""
    node = _live_node(group, nodes, now, taint_options)
    return _view_of(group, node, taint_options) if node is not None else None


def _live_node(
    group: AwsNodeGroup, nodes: list[Mapping[str, Any]], now: float, taint_options: TaintOptions
) -> Mapping[str, Any] | None:
    candidates = [n for n in nodes if is_template_candidate(n, now, taint_options)]
    return template_node(group, candidates)


def _view_of(group: AwsNodeGroup, node: Mapping[str, Any], taint_options: TaintOptions) -> View | None:
    try:
        return remembered_node_view(node, taint_options)
    except (TypeError, ValueError) as err:
        log.warning("node group %s: live node unreadable for the memory record: %s", group.name, err)
        return None


PodsOn = Callable[[str], Iterable[Mapping[str, Any]]]  # node name -> the pods bound to it


def live_pods(
    group: AwsNodeGroup,
    node: Mapping[str, Any],
    *,
    pods_on: PodsOn,
    daemonsets: Iterable[Mapping[str, Any]],
    process: AutoscalerProcess | None,
    kept: RememberedPods | None,
) -> RememberedPods | None:
    """The pods cluster-autoscaler caches with the group's template from `node`
    (capacity/fresh_node.py `remembered_pods`), with its `--force-ds` and taint options (none found:
    the defaults). The node's pods unreadable: `kept`, the last record, with a warning."""
    from kube.client import KubeError

    name = str((node.get("metadata") or {}).get("name") or "")
    try:
        on_node = pods_on(name)
    except KubeError as err:
        log.warning("node group %s: pods on %s unreadable, its pods record kept: %s", group.name, name, err)
        return kept
    found, ignored = remembered_pods(
        node,
        on_node,
        daemonsets,
        group=group.asg_name,
        force=process.force_daemonsets if process is not None else False,
        taint_options=process.taint_options if process is not None else DEFAULT_TAINT_CONFIG,
    )
    for why in found.on_node.ignored + ignored:
        log.warning("node group %s: left out of the remembered template's pods: %s", group.name, why)
    return found


@dataclass(frozen=True)
class Observed:
    """What a cycle saw of cluster-autoscaler and of what it caches with a node: the running
    process (None: none found) and how it was sought, the DaemonSets, and how to list the pods on a
    node (None: the pods of cluster-autoscaler's template are not recorded)."""

    process: AutoscalerProcess | None
    sought: str
    daemonsets: Sequence[Mapping[str, Any]] = ()
    pods_on: PodsOn | None = None


def remember(
    outcomes: list[GroupOutcome],
    groups: Iterable[AwsNodeGroup],
    grouped: Mapping[str, list[Mapping[str, Any]]],
    previous: Mapping[str, NodeGroupTemplate],
    *,
    observed: Observed,
    now: float,
) -> list[GroupOutcome]:
    """Each freshly built template with its memory carried forward from the previous one; a kept
    (stale) template keeps its record as it was. `grouped`: each group's nodes (group_nodes)."""
    process, sought, pods_on = observed.process, observed.sought, observed.pods_on
    by_name = {g.name: g for g in groups}
    taint_options = process.taint_options if process is not None else DEFAULT_TAINT_CONFIG
    result = []
    for outcome in outcomes:
        template = outcome.template
        group = by_name.get(outcome.name)
        if template is None or outcome.stale or group is None:
            result.append(outcome)
            continue
        before = previous.get(outcome.name)
        before_memory = before.memory if before else None
        node = _live_node(group, grouped.get(outcome.name, []), now, taint_options)
        live = _view_of(group, node, taint_options) if node is not None else None
        pods = None
        if node is not None and live is not None and pods_on is not None:
            kept = before_memory.pods if before_memory is not None else None
            daemonsets = observed.daemonsets
            pods = live_pods(group, node, pods_on=pods_on, daemonsets=daemonsets, process=process, kept=kept)
        memory = next_memory(before_memory, live, process, now, sought, live_pods=pods)
        result.append(dataclasses.replace(outcome, template=dataclasses.replace(template, memory=memory)))
    return result
