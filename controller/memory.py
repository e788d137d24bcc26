"""cluster-autoscaler's memory of each node group, recorded on its NodeGroupTemplate: find the running
cluster-autoscaler (its pods, by label), then for each group keep the live node cluster-autoscaler
would take as its template, when it was last seen, and whether cluster-autoscaler remembers it now
(capacity/autoscaler_memory.py decides). The record lives in the object itself
(`spec.autoscalerMemory`), so a new leader, or the next `--once`, reads it back."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from capacity.autoscaler_flags import pod_selector
from capacity.autoscaler_memory import AutoscalerProcess, next_memory, running_autoscaler
from capacity.autoscaler_readiness import is_template_candidate
from capacity.estimate import remembered_node_view
from capacity.template import NodeGroupTemplate, View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.aws.records import AwsNodeGroup
from controller.discovery import FactsLookup, GroupOutcome, group_nodes, template_node

if TYPE_CHECKING:
    from kube.client import ApiLike

log = logging.getLogger(__name__)


def looked_for(selector: str, namespace: str) -> str:
    """How cluster-autoscaler was sought, for the reason a person reads."""
    if not selector:
        return "--autoscaler-selector is empty: not looked for"
    where = f"namespace {namespace}" if namespace else "all namespaces"
    return f"pods {selector} in {where}"


def autoscaler_pods(
    selector: str,
    namespace: str,
    *,
    state_pods: Iterable[Mapping[str, Any]] | None = None,
    api: ApiLike | None = None,
) -> Sequence[Mapping[str, Any]]:
    """cluster-autoscaler's pods: from a state file's pods, or listed from the API (the API server
    applies the selector). An empty selector looks for none. Raises KubeError from the API, and
    ValueError for a selector it cannot read."""
    if not selector:
        return []
    if state_pods is not None:
        wanted = pod_selector(selector)
        return [
            pod
            for pod in state_pods
            if wanted(((pod.get("metadata") or {}).get("labels")) or {})
            and (not namespace or (pod.get("metadata") or {}).get("namespace") == namespace)
        ]
    from kube.api import list_pods_by_label

    if api is None:
        raise ValueError("cluster-autoscaler's pods: neither a state file's pods nor an API client")
    return list_pods_by_label(api, namespace or None, selector)


def observe(
    selector: str,
    namespace: str,
    *,
    state_pods: Iterable[Mapping[str, Any]] | None = None,
    api: ApiLike | None = None,
) -> tuple[AutoscalerProcess | None, str]:
    """The running cluster-autoscaler (None: none found, or its pods could not be listed: then every
    group at zero is judged by its tags, and the reason says why) and how it was sought."""
    sought = looked_for(selector, namespace)
    if state_pods is not None:
        return running_autoscaler(autoscaler_pods(selector, namespace, state_pods=state_pods)), sought
    from kube.client import KubeError

    try:
        pods = autoscaler_pods(selector, namespace, api=api)
    except KubeError as err:
        log.warning("cluster-autoscaler pods unreadable (%s): groups judged by their tags: %s", sought, err)
        return None, f"{sought}: unreadable ({err})"
    return running_autoscaler(pods), sought


def live_template(
    group: AwsNodeGroup,
    nodes: list[Mapping[str, Any]],
    facts: FactsLookup,
    now: float,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> View | None:
    """The node cluster-autoscaler (run with `taint_options`) would cache as the group's template
    now: among its good template candidates (capacity/autoscaler_readiness.py), the one fitguard's
    actual view would take, as cluster-autoscaler copies it: its labels kept, fitguard's exhausted
    label too (capacity/estimate.py `remembered_node_view`). None when it has none."""
    candidates = [n for n in nodes if is_template_candidate(n, now, taint_options)]
    node = template_node(group, candidates)
    if node is None:
        return None
    try:
        return remembered_node_view(node, taint_options)
    except (TypeError, ValueError) as err:
        log.warning("node group %s: live node unreadable for the memory record: %s", group.name, err)
        return None


def remember(
    outcomes: list[GroupOutcome],
    groups: Iterable[AwsNodeGroup],
    nodes: Iterable[Mapping[str, Any]],
    previous: Mapping[str, NodeGroupTemplate],
    *,
    process: AutoscalerProcess | None,
    sought: str,
    now: float,
    facts: FactsLookup,
    group_label: str = "",
) -> list[GroupOutcome]:
    """Each freshly built template with its memory carried forward from the previous one; a kept
    (stale) template keeps its record as it was."""
    groups = list(groups)
    by_name = {g.name: g for g in groups}
    grouped = group_nodes(nodes, groups, group_label)
    taint_options = process.taint_options if process is not None else DEFAULT_TAINT_CONFIG
    result = []
    for outcome in outcomes:
        template = outcome.template
        group = by_name.get(outcome.name)
        if template is None or outcome.stale or group is None:
            result.append(outcome)
            continue
        before = previous.get(outcome.name)
        live = live_template(group, grouped.get(outcome.name, []), facts, now, taint_options)
        memory = next_memory(before.memory if before else None, live, process, now, sought)
        result.append(dataclasses.replace(outcome, template=dataclasses.replace(template, memory=memory)))
    return result
