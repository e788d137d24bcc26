"""From what AWS says about the node groups and what the API says about nodes and DaemonSets, the
NodeGroupTemplate of each group with both views (docs/design.md, failure 1). No I/O here.

A group whose AWS data is incomplete keeps its last known template, with the reason; it is never
rebuilt from half the data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from capacity import autoscaler_view as av
from capacity.estimate import estimate_view, live_node_view, node_is_ready, node_labels
from capacity.fresh_node import daemon_pods
from capacity.records import provider_instance_id
from capacity.resources import Resources
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate, ScaleFromZero, View, instance_capacity, live_capacity
from capacity.template_pods import template_node_pods
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions, sanitize_taints
from controller.aws.records import AwsNodeGroup

log = logging.getLogger(__name__)
EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
FactsLookup = Callable[[str], Any]  # capacity.instances.lookup: type -> InstanceFacts | None


class TemplateError(Exception):
    """The group's template cannot be built; the message is the reason."""


@dataclass(frozen=True)
class GroupOutcome:
    """One group's result this cycle: its template (fresh, or kept from before) and why if kept."""

    name: str
    template: NodeGroupTemplate | None
    reason: str = ""  # empty: built fresh from complete data

    @property
    def stale(self) -> bool:
        return bool(self.reason)


def instance_id_of(node: Mapping[str, Any]) -> str:
    """`aws:///us-east-1a/i-0123456789abcdef0` -> `i-0123456789abcdef0` ("" when not an EC2 node)."""
    return provider_instance_id((node.get("spec") or {}).get("providerID"))


def group_nodes(
    nodes: Iterable[Mapping[str, Any]], groups: Iterable[AwsNodeGroup], group_label: str = ""
) -> dict[str, list[Mapping[str, Any]]]:
    """Nodes by node group: the configured label, else EKS's node group label, else the ASG that
    holds the node's instance (from its providerID). Nodes of no known group are left out."""
    groups = list(groups)
    names = {g.name for g in groups}
    by_instance = {instance: g.name for g in groups for instance in g.instance_ids}
    grouped: dict[str, list[Mapping[str, Any]]] = {g.name: [] for g in groups}
    for node in nodes:
        labels = _labels(node)
        name = ""
        for label in (group_label, EKS_NODEGROUP_LABEL):
            if label and labels.get(label) in names:
                name = labels[label]
                break
        name = name or by_instance.get(instance_id_of(node), "")
        if name:
            grouped[name].append(node)
    return grouped


def daemonset_overhead(daemonsets: Iterable[Mapping[str, Any]], view: View) -> tuple[Resources, int]:
    """The requests of the DaemonSet pods that would run on a node of this view, and their count:
    nodeSelector, required node affinity and tolerations of the pod template checked
    (capacity/fresh_node.py `daemon_pods`, every DaemonSet counted, as on a tag-built template)."""
    found = daemon_pods(daemonsets, view)
    for why in found.ignored:
        log.warning("%s ignored", why)
    return found.pods.requests, found.pods.count


def tag_built_view(group: AwsNodeGroup) -> View | None:
    """The node cluster-autoscaler's AWS provider builds for the group with no node, before
    cluster-autoscaler sanitises it; None when it cannot build one."""
    if group.shape is None or not group.availability_zones:
        return None
    region, zone = av.region_and_zone(list(group.availability_zones))
    managed = None
    if group.nodegroup is not None:
        try:
            managed = av.managed_nodegroup_info(group.nodegroup)
        except ValueError as err:  # CA logs it and builds the node without the node group's data
            log.warning(
                "node group %s: DescribeNodegroup data unusable by cluster-autoscaler: %s", group.name, err
            )
    return av.build_autoscaler_view(
        group.shape, group.tags, region=region, zone=zone, managed=managed, requirements=group.requirements
    )


def estimated_actual_view(
    group: AwsNodeGroup, facts: FactsLookup, taint_options: TaintOptions = DEFAULT_TAINT_CONFIG
) -> View:
    """The actual view with no live node: the instance type, the root volume, EKS's reservations."""
    if group.shape is None:
        raise TemplateError("instance type unknown")
    instance_facts = facts(group.shape.instance_type)
    if instance_facts is None:
        raise TemplateError(
            f"unknown instance type {group.shape.instance_type!r} (no max pods, no branch ENIs)"
        )
    branch_enis = int(instance_facts.branch_interfaces) if instance_facts.trunking else 0
    zones = group.availability_zones
    region = zones[0][:-1] if zones else ""
    extra, taints = _declared_node_labels_and_taints(group)
    labels = node_labels(
        group.shape.instance_type,
        group.shape.architecture,
        region,
        zones[0] if len(zones) == 1 else "",
        extra,
    )
    view = estimate_view(
        vcpus=group.shape.vcpu,
        memory_mib=group.shape.memory_mib,
        max_pods=int(instance_facts.max_pods()),
        branch_enis=branch_enis,
        root_volume_gib=group.root_volume_gib,
        labels=labels,
        taints=sanitize_taints(taints, taint_options),  # as a live node's (estimate.live_node_view)
    )
    return replace(view, capacity=instance_capacity(group.shape.vcpu, group.shape.memory_mib))


def _declared_node_labels_and_taints(group: AwsNodeGroup) -> tuple[dict[str, str], list[Taint]]:
    """What the group's nodes will carry beyond the well-known labels: for a managed node group,
    what EKS puts on its nodes; for a plain ASG, what its template tags declare."""
    if group.nodegroup is None:
        declared = [(k, v) for k, v in group.tags if av.after_prefix(k, av.LABEL_PREFIX) is not None]
        return av.labels_from_tags(declared), av.taints_from_tags(group.tags)
    ng = group.nodegroup
    labels = {EKS_NODEGROUP_LABEL: group.name}
    if ng.get("capacityType"):
        labels["eks.amazonaws.com/capacityType"] = str(ng["capacityType"])
    labels.update({str(k): str(v) for k, v in (ng.get("labels") or {}).items() if v is not None})
    taints = []
    for raw in ng.get("taints") or []:
        try:
            effect = av.eks_taint_effect(str(raw.get("effect")))
        except ValueError:
            continue
        taints.append(Taint(str(raw.get("key", "")), str(raw.get("value") or ""), effect))
    return labels, taints


def actual_view(
    group: AwsNodeGroup,
    ready_nodes: list[Mapping[str, Any]],
    facts: FactsLookup,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> View:
    """A live ready node when there is one (of the type cluster-autoscaler assumes, if any), else
    the estimate; taints sanitised as cluster-autoscaler run with `taint_options` sanitises a
    template's, so both views drop the same ones. Raises TemplateError."""
    node = template_node(group, ready_nodes)
    if node is not None:
        try:
            return replace(live_node_view(node, taint_options), capacity=live_capacity(node))
        except (TypeError, ValueError) as err:
            raise TemplateError(f"live node unreadable: {err}") from None
    return estimated_actual_view(group, facts, taint_options)


def template_node(group: AwsNodeGroup, nodes: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The live node fitguard takes for the group: of the type cluster-autoscaler assumes if any,
    the first by name (cluster-autoscaler's lister promises no order)."""
    wanted = group.instance_types[0] if group.instance_types else ""
    ordered = sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name")))
    same_type = [n for n in ordered if _labels(n).get("node.kubernetes.io/instance-type") == wanted]
    chosen = same_type or ordered
    return chosen[0] if chosen else None


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def build_template(
    group: AwsNodeGroup,
    nodes: list[Mapping[str, Any]],
    daemonsets: list[Mapping[str, Any]],
    facts: FactsLookup,
    scale_from_zero: ScaleFromZero = ScaleFromZero.AUTOSCALER,
    *,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> NodeGroupTemplate:
    """The group's template from complete data, with the running cluster-autoscaler's taint options
    (its flags). Raises TemplateError."""
    if group.error:
        raise TemplateError(group.error)
    ready = [n for n in nodes if node_is_ready(n)]
    actual = actual_view(group, ready, facts, taint_options)
    overhead, ds_pods = daemonset_overhead(daemonsets, actual)
    built = tag_built_view(group)
    autoscaler = av.sanitized_template(built, taint_options) if built is not None else None
    on_template = None
    if built is not None:
        # cluster-autoscaler chooses the DaemonSet pods on its sanitised copy of the built node,
        # before it adds the template-node marker and the deprecated labels (capacity/fresh_node.py)
        example = av.sanitized_example(built, group.asg_name, taint_options)
        on_template = template_node_pods(*daemonset_overhead(daemonsets, example))
    return NodeGroupTemplate(
        name=group.name,
        provider=group.provider,
        instance_types=group.instance_types,
        min_size=group.min_size,
        max_size=group.max_size,
        desired_size=group.desired_size,
        nodes=len(ready),
        node_names=tuple(sorted(str((n.get("metadata") or {}).get("name") or "") for n in nodes)),
        actual=actual,
        autoscaler=autoscaler,
        daemonset_overhead=overhead,
        daemonset_pods=ds_pods,
        scale_from_zero=scale_from_zero,
        autoscaler_overhead=on_template[0] if on_template else None,
        autoscaler_overhead_pods=on_template[1] if on_template else None,
    )


def build_templates(
    groups: Iterable[AwsNodeGroup],
    grouped: Mapping[str, list[Mapping[str, Any]]],
    daemonsets: Iterable[Mapping[str, Any]],
    previous: Mapping[str, NodeGroupTemplate],
    *,
    facts: FactsLookup,
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> list[GroupOutcome]:
    """Every group's outcome, by name, from its nodes (`grouped`, group_nodes): fresh, or its last
    template kept with the reason. Taints are sanitised with `taint_options`: the running
    cluster-autoscaler's flags, or only what every cluster-autoscaler drops when none was found."""
    groups = list(groups)
    daemonsets = list(daemonsets)
    outcomes = []
    for group in sorted(groups, key=lambda g: g.name):
        before = previous.get(group.name)
        try:
            template = build_template(
                group,
                list(grouped.get(group.name, [])),
                daemonsets,
                facts,
                before.scale_from_zero if before else ScaleFromZero.AUTOSCALER,
                taint_options=taint_options,
            )
        except TemplateError as err:
            kept = "kept its last template" if before else "no template yet"
            log.warning("node group %s: %s: %s", group.name, kept, err)
            outcomes.append(GroupOutcome(group.name, before, str(err)))
            continue
        outcomes.append(GroupOutcome(group.name, template))
    return outcomes
