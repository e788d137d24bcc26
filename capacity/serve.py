"""Which node groups can serve a pod, and, for each that cannot, why and what a person can do.

A group serves a pod when the pod fits the view that will really be used for its next node
(`NodeGroupTemplate.judged_view`), after the DaemonSet overhead of a new node. When the group is
judged by its autoscaler view and the actual view would fit, the pod is in the classic trap of
docs/design.md failure 1: cluster-autoscaler will not scale for it until the ASG carries the tag. While
cluster-autoscaler remembers a live node of a group at zero, the group is judged by that node; a pod
that only the remembered node serves is admitted with a warning (`memory_reliance`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from capacity.fit import PodNeeds, Reason, check_fit
from capacity.group_words import LABEL_TAG_PREFIX, TAG_PREFIX, explain_reasons
from capacity.template import NodeGroupTemplate, View

MAX_GROUP_LINES = 12  # beyond this many groups a message stops being read
CACHE_NOTE = (
    "cluster-autoscaler may still scale it while it remembers an earlier node of the group, until it restarts"
)


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    group: str
    serves: bool
    reasons: tuple[Reason, ...] = ()
    trap: bool = False  # judged by tags that miss what the real node has
    why_closed: str = ""  # set when the group cannot add a node at all (max size 0)
    template: NodeGroupTemplate | None = None  # to explain it, only if it is shown
    view: View | None = None
    remembered: bool = False  # served only by the node cluster-autoscaler remembers, until it restarts


def judge(needs: PodNeeds, template: NodeGroupTemplate) -> GroupVerdict:
    view, why = template.judged_view()
    if view is None:
        return _closed(template, why)
    return _verdict(needs, template, view, tuple(_check(needs, template, view)))


def refusals(needs: PodNeeds, templates: Iterable[NodeGroupTemplate]) -> list[GroupVerdict] | None:
    """None as soon as one group serves the pod (most pods: the rest is never looked at); else
    every group's verdict, by name. The trap check, a second fit, runs only for a denial."""
    closed: list[GroupVerdict] = []
    refused: list[tuple[NodeGroupTemplate, View, tuple[Reason, ...]]] = []
    for template in templates:
        view, why = template.judged_view()
        if view is None:
            closed.append(_closed(template, why))
            continue
        reasons = tuple(_check(needs, template, view))
        if not reasons:
            return None
        refused.append((template, view, reasons))
    verdicts = closed + [_verdict(needs, t, view, reasons) for t, view, reasons in refused]
    return sorted(verdicts, key=lambda v: v.group)


def memory_reliance(needs: PodNeeds, templates: Iterable[NodeGroupTemplate]) -> list[GroupVerdict] | None:
    """For a pod `refusals` lets through: None when some group serves it for good (a live node, its
    tags, fitguard's own scaling); else, by name, the groups that serve it only while
    cluster-autoscaler remembers their last node, each with the reasons its tags alone refuse it."""
    templates = list(templates)
    if all(t.remembered is None for t in templates):
        return None  # nothing is remembered: whatever served the pod serves it for good
    relied: list[GroupVerdict] = []
    for template in templates:
        view, _ = template.judged_view(with_memory=False)
        if view is None:
            continue
        reasons = tuple(_check(needs, template, view))
        if not reasons:
            return None
        remembered = template.remembered
        if remembered is not None and view is not remembered and not _check(needs, template, remembered):
            relied.append(GroupVerdict(template.name, False, reasons, False, "", template, view, True))
    return sorted(relied, key=lambda v: v.group)


def memory_warnings(relied: Sequence[GroupVerdict], needs: PodNeeds, subject: str = "pod") -> list[str]:
    """What an admitted pod that rests on cluster-autoscaler's memory is told: which groups, that it
    lasts until cluster-autoscaler restarts, and the tags that make it permanent."""
    names = ", ".join(v.group for v in relied[:MAX_GROUP_LINES])
    lines = [
        f"{subject} fits only the node cluster-autoscaler remembers of {names}: "
        "it scales up for it only until it restarts"
    ]
    for verdict in relied[:MAX_GROUP_LINES]:
        tags, taints = _fixes(verdict, needs)
        managed = verdict.template is not None and verdict.template.provider == "eks-managed"
        where = "managed node group" if managed else "ASG"
        if tags:
            lines.append(f"to make it permanent, tag the {where} of {verdict.group} " + ", ".join(tags))
        for key in taints:
            lines.append(f"to make it permanent on {verdict.group}, tolerate its tagged taint {key}")
    lines.append("or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply")
    return lines


def _fixes(verdict: GroupVerdict, needs: PodNeeds) -> tuple[list[str], list[str]]:
    """The cluster-autoscaler template tags the group lacks for the pod, and the taints its tags
    add that the pod does not tolerate, by the reasons its tags refuse it."""
    tags: list[str] = []
    taints: list[str] = []
    for reason in verdict.reasons:
        if reason.taint is not None:
            taints.append(reason.taint.key)
        elif not reason.resource:
            tags += [f"{LABEL_TAG_PREFIX}{key}" for key in needs.selector_keys]
        elif reason.resource != "pods":
            tags.append(f"{TAG_PREFIX}{reason.resource}")
    return list(dict.fromkeys(tags)), taints


def _closed(template: NodeGroupTemplate, why: str) -> GroupVerdict:
    return GroupVerdict(template.name, False, (), False, why, template)


def _verdict(
    needs: PodNeeds, template: NodeGroupTemplate, view: View, reasons: tuple[Reason, ...]
) -> GroupVerdict:
    if not reasons:
        return GroupVerdict(template.name, True)
    trap = (
        view is template.autoscaler
        and template.actual is not None
        and not _check(needs, template, template.actual)
    )
    return GroupVerdict(template.name, False, reasons, trap, "", template, view)


def explain(verdict: GroupVerdict, needs: PodNeeds) -> str:
    """One line a person can act on: the group, each reason and its fix."""
    if verdict.template is None or verdict.view is None:
        return f"{verdict.group}: {verdict.why_closed}: it cannot add a node"
    return f"{verdict.group}: " + explain_reasons(verdict.reasons, needs, verdict.template, verdict.view)


def judge_all(needs: PodNeeds, templates: Iterable[NodeGroupTemplate]) -> list[GroupVerdict]:
    return [judge(needs, t) for t in sorted(templates, key=lambda t: t.name)]


def _check(needs: PodNeeds, template: NodeGroupTemplate, view: View) -> list[Reason]:
    return check_fit(needs, view, *template.overhead_of(view))


def denial_message(
    verdicts: list[GroupVerdict], needs: PodNeeds, subject: str = "pod", extra: Sequence[str] = ()
) -> str:
    """The text kubectl shows: one short line, then one line per node group (the most actionable
    first: tag traps, then the groups closest to fitting; the rest counted by reason, as the
    scheduler counts nodes), then `extra` lines."""
    refused = sorted((v for v in verdicts if not v.serves), key=_actionable)
    shown, rest = refused[:MAX_GROUP_LINES], refused[MAX_GROUP_LINES:]
    lines = [f"{subject} does not fit any node group"]
    lines += [explain(v, needs) for v in shown]
    if rest:
        counts = Counter(_kind(r) for v in rest for r in v.reasons)
        counts.update("max size 0" for v in rest if v.why_closed)
        summary = ", ".join(f"{n} {message}" for message, n in counts.most_common())
        lines.append(f"and {len(rest)} more node groups: {summary}")
    lines += extra
    if any(v.trap and _memory_unknown(v.template) for v in verdicts):
        lines.append(f"note: {CACHE_NOTE}")
    return "\n".join(lines)


def _memory_unknown(template: NodeGroupTemplate | None) -> bool:
    """fitguard cannot tell whether cluster-autoscaler remembers the group (no memory recorded, or
    no cluster-autoscaler observed): the note that it might still scale it stays."""
    memory = template.memory if template is not None else None
    return memory is None or not memory.autoscaler


def _kind(reason: Reason) -> str:
    """A reason without its particulars, to count many groups at once."""
    return "node(s) had untolerated taints" if reason.taint is not None else reason.message


def _actionable(verdict: GroupVerdict) -> tuple[bool, bool, int, str]:
    return (not verdict.trap, bool(verdict.why_closed), len(verdict.reasons), verdict.group)
