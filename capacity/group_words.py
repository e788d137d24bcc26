"""The words of one node group's refusal: each reason in the scheduler's words, the figures behind
it, and what a person can do about it (capacity/serve.py `explain` joins them into a line).

Rules the words keep, whatever the figures:
- never a negative quantity: a node whose DaemonSets ask more than it has offers "none";
- when cluster-autoscaler judges the group by its tags (no node), both figures are said: what a
  real node of the group would offer and what cluster-autoscaler sees;
- ephemeral storage comes from the node's root volume, not from its instance type: the advice
  names the volume's size in the launch template (or the managed node group's `diskSize`);
- a group the pod's own node selector or affinity already excludes gets no tag advice: no tag
  makes it serve the pod.
"""

from __future__ import annotations

from collections.abc import Mapping

from capacity.fit import AFFINITY_MISMATCH, PodNeeds, Reason, check_fit, comparable
from capacity.instances import lookup
from capacity.quantity import format_capacity, format_quantity, format_request
from capacity.resources import EPHEMERAL_STORAGE, POD_ENI
from capacity.template import NodeGroupTemplate, View

TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/resources/"
LABEL_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/label/"
# The launch template field that sizes a node's root volume (EC2 RequestLaunchTemplateData), and
# the managed node group's own field when it has no launch template (EKS CreateNodegroup).
VOLUME_SIZE_FIELD = "BlockDeviceMappings[].Ebs.VolumeSize"
DISK_SIZE_FIELD = "diskSize"
ZERO_NODES = "while the group has 0 nodes"
# What cluster-autoscaler can learn of a node at zero only from a tag (docs/design.md failure 1);
# cpu and memory it takes from the instance type.
TAGGED_ONLY = (EPHEMERAL_STORAGE, POD_ENI)

# cluster-autoscaler's UpdateDeprecatedLabels gives its templates no beta os/arch labels.
_STABLE_LABELS = {
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
}


def explain_reasons(
    reasons: tuple[Reason, ...], needs: PodNeeds, template: NodeGroupTemplate, view: View
) -> str:
    """Every reason of a group's refusal, joined by semicolons."""
    excluded = selector_excludes(reasons, needs, template, view)
    return "; ".join(_explain(reason, needs, template, view, excluded) for reason in reasons)


def selector_excludes(
    reasons: tuple[Reason, ...], needs: PodNeeds, template: NodeGroupTemplate, view: View
) -> bool:
    """Whether the pod's own node selector or affinity refuses the group's nodes as they really
    are: the judged view refuses it and so does the actual view (when there is one to ask). A real
    node that matches means only cluster-autoscaler's labels are wrong: a tag fixes that."""
    if not any(r.message == AFFINITY_MISMATCH for r in reasons):
        return False
    actual = template.actual
    if actual is None or view is actual:
        return True
    return any(
        r.message == AFFINITY_MISMATCH for r in check_fit(needs, actual, *template.overhead_of(actual))
    )


def node_phrase(template: NodeGroupTemplate) -> str:
    kind = template.instance_type
    # instance families are read letter by letter: "an m5", "an r6i", "a c5", "a t3"
    article = "an" if kind[:1] in "aefhilmnorsx" else "a"
    return f"{article} {kind} node" if kind else "a node"


def _explain(reason: Reason, needs: PodNeeds, template: NodeGroupTemplate, view: View, excluded: bool) -> str:
    if reason.taint is not None:
        t = reason.taint
        value = f"={t.value}" if t.value else ""
        return f"{reason.message}: add a toleration for {t.key}{value}:{t.effect}"
    if not reason.resource:
        head = f"{reason.message}: its nodes have {_labels(view, needs.selector_keys)}"
        return head if excluded else head + _template_label_hint(needs, template, view)
    if reason.resource == "pods":
        slots = format_quantity(reason.allocatable)
        return f"{reason.message}: DaemonSets already take all {slots} pod slots"
    if reason.resource == POD_ENI:
        facts = lookup(template.instance_type) if template.instance_type else None
        if facts is not None and not facts.trunking:
            return (
                f"{reason.message}: requests {format_request(reason.requested, POD_ENI)}; "
                f"{template.instance_type} supports no branch ENIs (not trunking-compatible): "
                "run pods with security groups on a Nitro type such as m5"
            )
    if view is template.autoscaler:
        return _explain_tags(reason, template, view, excluded)
    offered = offer(view.allocatable.get(reason.resource, 0), template.overhead_of(view)[0], reason.resource)
    head = f"{reason.message}: requests {format_request(reason.requested, reason.resource)}"
    return f"{head}; {node_phrase(template)} offers {offered}: {_advice(reason.resource, template)}"


def _explain_tags(reason: Reason, template: NodeGroupTemplate, view: View, excluded: bool) -> str:
    """A group cluster-autoscaler judges by its tags: what a real node would offer (when fitguard
    knows one), what cluster-autoscaler sees, and the fix."""
    name = reason.resource
    head = f"{reason.message}: requests {format_request(reason.requested, name)}"
    where = "managed node group" if template.provider == "eks-managed" else "ASG"
    tag = f"tag the {where} {TAG_PREFIX}{name}"
    sees = _seen(view, template, name)
    actual = template.actual
    if actual is None:
        # no real node known: the tags are all there is to go by
        fix = _advice(name, template)
        if name in TAGGED_ONLY and not excluded:
            fix = f"request less, or {tag} with what its nodes offer"
        return f"{head}; cluster-autoscaler sees {sees} on {node_phrase(template)} {ZERO_NODES}: {fix}"
    real = actual.allocatable.get(name, 0) - template.daemonset_overhead.get(name, 0)
    would, node = _net(real, name), node_phrase(template)
    if comparable(name, real) >= comparable(name, reason.requested):
        # the real node has it; only the tags cluster-autoscaler reads do not. The request is cut
        # like the offer, so one that fits never reads as more than the offer.
        head = f"{reason.message}: requests {format_capacity(reason.requested, name)}"
        said = f"{head}; {node} would offer {would}, but cluster-autoscaler sees {sees} {ZERO_NODES}"
        return said if excluded else f"{said}: {tag}, or let fitguard sync the tags"
    said = f"{head}; {node} would offer {would}, and cluster-autoscaler sees {sees} {ZERO_NODES}"
    fix = _advice(name, template)
    if name == EPHEMERAL_STORAGE and not excluded and _free(view, template, name) < real:
        fix += f", then {tag} (or let fitguard sync the tags)"
    return f"{said}: {fix}"


def _seen(view: View, template: NodeGroupTemplate, name: str) -> str:
    """What cluster-autoscaler's node built from tags offers, after its own template pods."""
    return _net(_free(view, template, name), name)


def _free(view: View, template: NodeGroupTemplate, name: str) -> int:
    return view.allocatable.get(name, 0) - template.overhead_of(view)[0].get(name, 0)


def _net(free: int, name: str) -> str:
    """A node's figure once its DaemonSets run: `44Gi`, or `none` (never below)."""
    return format_capacity(free, name) if free > 0 else "none"


def offer(allocatable: int, overhead: Mapping[str, int], name: str, whose: str = "DaemonSets") -> str:
    """What a node offers a pod of `name` once `whose` pods run, never below none: `17.8Gi`, `1700m
    after 300m of DaemonSets`, `none`, `none after DaemonSets take 1Gi of its 1Gi`."""
    taken = overhead.get(name, 0)
    free = allocatable - taken
    if free > 0:
        after = f" after {format_quantity(taken, name)} of {whose}" if taken else ""
        return f"{format_capacity(free, name)}{after}"
    if allocatable > 0:
        has = format_capacity(allocatable, name)
        return f"none after {whose} take {format_quantity(taken, name)} of its {has}"
    return "none"


def _advice(name: str, template: NodeGroupTemplate) -> str:
    """What makes a new node of the group offer more of `name`."""
    if name != EPHEMERAL_STORAGE:
        return "request less or use a larger type"
    if template.provider == "eks-managed":
        return (
            f"request less, or raise the managed node group's {DISK_SIZE_FIELD} "
            f"({VOLUME_SIZE_FIELD} if it has a launch template)"
        )
    if template.provider == "aws-asg":
        return f"request less, or raise the root volume in the ASG's launch template ({VOLUME_SIZE_FIELD})"
    return "request less, or give its nodes a larger root volume"


def _template_label_hint(needs: PodNeeds, template: NodeGroupTemplate, view: View) -> str:
    """When a real node has a selected label that cluster-autoscaler's template lacks: which. (CA
    reads label/* tags from the ASG only, a managed node group's ASG included.)"""
    if view is not template.autoscaler or template.actual is None:
        return ""
    missing = [k for k in needs.selector_keys if k in template.actual.labels and k not in view.labels]
    if not missing:
        return ""
    key = missing[0]
    instead = f"select on {_STABLE_LABELS[key]} instead, or " if key in _STABLE_LABELS else ""
    return (
        f"; a real node has {key}, but the node cluster-autoscaler builds {ZERO_NODES} "
        f"does not: {instead}tag the ASG {LABEL_TAG_PREFIX}{key}"
    )


def _labels(view: View, keys: tuple[str, ...]) -> str:
    """The group's values of the labels the pod selects on."""
    shown = [f"{k}={view.labels[k]}" if k in view.labels else f"no {k} label" for k in keys]
    return ", ".join(shown) if shown else "no labels the pod selects on"
