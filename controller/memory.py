"""cluster-autoscaler's memory of each node group, recorded on its NodeGroupTemplate: find the running
cluster-autoscaler (its pods, by label), then for each group keep the live node cluster-autoscaler
would take as its template, when it was last seen, and whether cluster-autoscaler remembers it now
(capacity/autoscaler_memory.py decides). The record lives in the object itself
(`spec.autoscalerMemory`), so a new leader, or the next `--once`, reads it back."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from capacity.autoscaler_flags import pod_selector
from capacity.autoscaler_memory import AutoscalerProcess, next_memory
from capacity.autoscaler_readiness import is_template_candidate
from capacity.estimate import remembered_node_view
from capacity.template import NodeGroupTemplate, View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions
from controller.aws.records import AwsNodeGroup
from controller.discovery import FactsLookup, GroupOutcome, template_node

log = logging.getLogger(__name__)


def looked_for(selector: str, namespace: str) -> str:
    """How cluster-autoscaler was sought, for the reason a person reads."""
    if not selector:
        return "--autoscaler-selector is empty: not looked for"
    where = f"namespace {namespace}" if namespace else "all namespaces"
    return f"pods {selector} in {where}"


def select_autoscaler_pods(
    pods: Iterable[Mapping[str, Any]], selector: str, namespace: str
) -> list[Mapping[str, Any]]:
    """cluster-autoscaler's pods among a state file's pods, picked as the API server picks them for
    a label selector (the live cache asks the API server to). An empty selector looks for none.
    Raises ValueError for a selector it cannot read."""
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
    grouped: Mapping[str, list[Mapping[str, Any]]],
    previous: Mapping[str, NodeGroupTemplate],
    *,
    found: tuple[AutoscalerProcess | None, str],
    now: float,
    facts: FactsLookup,
) -> list[GroupOutcome]:
    """Each freshly built template with its memory carried forward from the previous one; a kept
    (stale) template keeps its record as it was. `grouped`: each group's nodes (group_nodes);
    `found`: the running cluster-autoscaler (None: none) and how it was sought."""
    process, sought = found
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
        live = live_template(group, grouped.get(outcome.name, []), facts, now, taint_options)
        memory = next_memory(before.memory if before else None, live, process, now, sought)
        result.append(dataclasses.replace(outcome, template=dataclasses.replace(template, memory=memory)))
    return result
