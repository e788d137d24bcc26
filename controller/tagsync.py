"""`--sync-autoscaler-tags`: put on each node group the `resources/*` tags that make
cluster-autoscaler's template (the autoscaler view) offer what its nodes really do (the actual
view): ephemeral-storage and vpc.amazonaws.com/pod-eni, which CA never derives by itself.

Plan (the default) lists the changes; apply writes them. Only missing or different tags are
written, and a user's other tags are never touched or removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from capacity.autoscaler_view import (
    LABEL_PREFIX,
    RESOURCES_PREFIX,
    TAINT_PREFIX,
    resources_from_tags,
    tag_pairs,
)
from capacity.names import GROUP
from capacity.quantity import canonical_quantity
from capacity.resources import EPHEMERAL_STORAGE, POD_ENI
from capacity.template import NodeGroupTemplate
from controller.aws.clients import AWS_ERRORS, AwsClients, describe_error
from controller.aws.records import AwsNodeGroup
from controller.aws.tags import put_asg_tag, put_nodegroup_tag

log = logging.getLogger(__name__)
SYNCED_RESOURCES = (EPHEMERAL_STORAGE, POD_ENI)
CACHE_NOTE = (
    "cluster-autoscaler keeps the node info it cached from a group's last live node until it "
    "restarts unless --node-info-cache-expire-time is set, so this tag may take effect only then"
)


@dataclass(frozen=True)
class TagChange:
    node_group: str
    target: str  # asg | eks-nodegroup
    resource: str  # the ASG name or the node group ARN
    key: str
    value: str
    current: str | None  # the tag's value now; None when missing

    def to_json(self) -> dict[str, str]:
        return {"nodeGroup": self.node_group, "key": self.key, "value": self.value}

    def explain(self) -> str:
        now = "missing" if self.current is None else f"{self.current!r}"
        if self.key.startswith(RESOURCES_PREFIX):
            why = f"the actual view offers {self.value}"
            who = "pods that request it"
        else:
            why = "the group's live nodes carry it"
            who = "pods that select or tolerate it"
        return (
            f"node group {self.node_group}: tag {self.key}={self.value} on {self.target} {self.resource} "
            f"(now {now}): {why} and cluster-autoscaler's template must say so to scale up from zero "
            f"for {who}; {CACHE_NOTE}"
        )


# Labels a node gets from kubelet, the cloud provider or EKS itself, or that differ per node:
# cluster-autoscaler builds these for its template on its own, so they are never tagged.
GENERATED_LABEL_PREFIXES = (
    "kubernetes.io/",
    "beta.kubernetes.io/",
    "node.kubernetes.io/",
    "topology.kubernetes.io/",
    "topology.ebs.csi.aws.com/",
    "failure-domain.beta.kubernetes.io/",
    "k8s.io/",
    "eks.amazonaws.com/",
    "vpc.amazonaws.com/",
    f"{GROUP}/",
)


def plan_tag_sync(
    groups: Iterable[AwsNodeGroup], templates: dict[str, NodeGroupTemplate], labels_and_taints: bool = False
) -> list[TagChange]:
    """The tags to write: for each complete group, each synced resource of its actual view whose
    tag (as cluster-autoscaler resolves it: node group tags over ASG tags) is missing or differs;
    with `labels_and_taints`, also the label/* and taint/* tags of what live nodes carry and the
    autoscaler view lacks (self-managed ASGs: a managed group's come from DescribeNodegroup)."""
    changes = []
    for group in sorted(groups, key=lambda g: g.name):
        template = templates.get(group.name)
        if group.error or template is None or template.actual is None:
            continue
        if group.nodegroup_error:  # a managed group whose node group EKS did not describe: no target
            continue
        if labels_and_taints and group.nodegroup is None and template.actual.source == "live-node":
            changes += _label_and_taint_changes(group, template)
        asg_tags = resources_from_tags(group.tags)
        managed_tags = resources_from_tags(tag_pairs(group.nodegroup_tags))
        for resource in SYNCED_RESOURCES:
            wanted = template.actual.allocatable.get(resource, 0)
            if wanted <= 0:
                continue
            effective = managed_tags.get(resource, asg_tags.get(resource))
            if effective == wanted:
                continue
            key = RESOURCES_PREFIX + resource
            if group.nodegroup is not None:
                arn = str(group.nodegroup.get("nodegroupArn", ""))
                target, where, current = "eks-nodegroup", arn, group.nodegroup_tags
            else:
                target, where, current = "asg", group.asg_name, group.tag_map
            value = canonical_quantity(wanted, resource)
            changes.append(TagChange(group.name, target, where, key, value, current.get(key)))
    return changes


def _label_and_taint_changes(group: AwsNodeGroup, template: NodeGroupTemplate) -> list[TagChange]:
    actual, autoscaler = template.actual, template.autoscaler
    if actual is None or autoscaler is None:
        return []
    wanted: dict[str, str] = {
        LABEL_PREFIX + key: value
        for key, value in actual.labels.items()
        if not key.startswith(GENERATED_LABEL_PREFIXES) and autoscaler.labels.get(key) != value
    }
    known = {(t.key, t.value, t.effect) for t in autoscaler.taints}
    wanted.update(
        (TAINT_PREFIX + t.key, f"{t.value}:{t.effect}")
        for t in actual.taints
        if (t.key, t.value, t.effect) not in known
    )
    current = group.tag_map
    return [
        TagChange(group.name, "asg", group.asg_name, key, value, current.get(key))
        for key, value in sorted(wanted.items())
        if current.get(key) != value
    ]


def apply_tag_sync(
    clients: AwsClients, changes: Iterable[TagChange], note: Callable[[TagChange, str], None] | None = None
) -> list[tuple[TagChange, str]]:
    """Writes each change; returns the ones that failed with why. `note(change, message)` is told
    of every change made (for an event on the node group's template)."""
    failed = []
    for change in changes:
        try:
            if change.target == "asg":
                put_asg_tag(clients, change.resource, change.key, change.value)
            else:
                put_nodegroup_tag(clients, change.resource, change.key, change.value)
        except AWS_ERRORS as err:
            reason = describe_error("CreateOrUpdateTags" if change.target == "asg" else "TagResource", err)
            log.warning("node group %s: tag %s not written: %s", change.node_group, change.key, reason)
            failed.append((change, reason))
            continue
        message = "wrote " + change.explain()
        log.info(message)
        if note is not None:
            note(change, message)
    return failed


def log_plan(changes: Iterable[TagChange]) -> None:
    for change in changes:
        log.info("plan (use --sync-autoscaler-tags=apply to write): %s", change.explain())
