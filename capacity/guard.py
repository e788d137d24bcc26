"""The exhausted-node guard: which nodes carry `fitguard.io/branch-eni-exhausted=true`, and when the
guard steps aside so that it never blinds cluster-autoscaler (issue 14).

- The label marks what the scheduler cannot see: a node is labelled while branch ENIs are held on it
  (finished or deleted pods within the release window, or leaked ones) and its true free count is
  zero or less. A node full of running pods is not labelled: the scheduler already counts them.
- cluster-autoscaler builds the template of a group with live nodes from the first good candidate
  among them (ready, schedulable) in its node lister's order, which promises none, and keeps that
  node's labels (upstream cluster-autoscaler/processors/nodeinfosprovider/
  mixed_nodeinfos_processor.go `Process`, `isNodeGoodTemplateCandidate`; cluster-autoscaler/
  simulator/node_info_utils.go `createSanitizedNode` replaces only the hostname and sanitises
  taints). So the label blinds it for a group exactly when every candidate node carries it.
- A blind group with guarded pods pending on it (unschedulable, the scheduler's message naming node
  affinity, and fitting a node of the group once fitguard's label is set aside): fitguard scales the
  group itself when `--scaling=on` covers it; otherwise, after a grace period, the label is lifted
  from the group's nodes until the group has a node with a free branch ENI or the pods have left.
- A Karpenter NodePool's nodes blind nothing: Karpenter builds a new NodeClaim's requirements from
  the NodePool alone (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/
  nodeclaimtemplate.go `NewNodeClaimTemplate`), and reads a live node's labels only to place pods
  on that node (existingnode.go `NewExistingNode`, `CanAdd`). A labelled node makes Karpenter launch
  a new node for the guarded pod, so a group all of whose nodes are Karpenter's keeps its labels
  (KARPENTER): never lifted, its last node never spared.

Pure: the books, the nodes, the pending pods, the previous state and `now` in; the labels wanted,
their reasons, what happened to each group and the next state out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capacity.branch_eni_words import none_free
from capacity.fit import AFFINITY_MISMATCH, PodNeeds, check_fit
from capacity.names import EXHAUSTED_LABEL
from capacity.selectors import required_node_terms
from capacity.template import View
from capacity.template_taints import DEFAULT_TAINT_CONFIG, TaintOptions, sanitize_taints

DEFAULT_GRACE = 30.0
# The scheduler's nodeaffinity filter names itself so in the PodScheduled message.
AFFINITY_WORDS = ("node affinity", AFFINITY_MISMATCH)

# What became of a group in one pass.
CLEAR = "clear"  # not blind: some candidate node is unlabelled (or no candidate at all)
BLIND = "blind"  # every candidate labelled, no guarded pod pending on it
GRACE = "grace"  # blind with guarded pods pending: waiting out the grace period
SCALING = "scaling"  # blind with guarded pods pending: `--scaling=on` covers the group
LIFTED = "lifted"  # the guard stepped aside for cluster-autoscaler
LAST_NODE = "last-node"  # held ENIs, but the group's last ready node: left unlabelled (memory)
KARPENTER = "karpenter"  # every ready node labelled, but a NodePool's: Karpenter is not blinded


@dataclass(frozen=True, slots=True)
class GuardNode:
    """One node as the guard sees it: its books and what cluster-autoscaler would copy from it."""

    name: str
    group: str  # "" when no label names it: judged alone, as any node may be a group's template
    capacity: int | None  # branch ENIs; None: unknown
    in_use: int = 0
    held: int = 0  # by finished or deleted pods within the release window
    leaked: int = 0  # claimed by no pod past the window (--verify-with-ec2)
    # A good template candidate (capacity/autoscaler_readiness.py): cluster-autoscaler may build
    # the group's template from it, and caches that template for when the group has no candidate.
    candidate: bool = True
    view: View | None = None  # allocatable, labels (as they are now), taints (unsanitised)
    autoscaled: bool = True  # its group may be cluster-autoscaler's (not Karpenter's)

    @property
    def true_free(self) -> int | None:
        if self.capacity is None:
            return None
        return self.capacity - self.in_use - self.held - self.leaked

    @property
    def group_key(self) -> str:
        return self.group or f"node/{self.name}"


@dataclass(frozen=True, slots=True)
class PendingPod:
    """An unschedulable pod: whether it carries the guard affinity and what the scheduler said."""

    namespace: str
    name: str
    uid: str
    message: str
    needs: PodNeeds
    guarded: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def affinity_named(self) -> bool:
        """The scheduler counts node affinity among the reasons (our label may be one)."""
        return any(words in self.message for words in AFFINITY_WORDS)


def is_guarded(spec: Mapping[str, Any]) -> bool:
    """The pod's required node affinity holds `fitguard.io/branch-eni-exhausted DoesNotExist`."""
    for term in required_node_terms(spec):
        for expression in term.get("matchExpressions") or ():
            if (
                isinstance(expression, Mapping)
                and expression.get("key") == EXHAUSTED_LABEL
                and expression.get("operator") == "DoesNotExist"
            ):
                return True
    return False


def pending_pod(namespace: str, name: str, uid: str, message: str, spec: Mapping[str, Any]) -> PendingPod:
    """Raises ValueError/TypeError (naming the field) on a spec the scheduler could not have read."""
    return PendingPod(namespace, name, uid, message, PodNeeds.from_spec(spec), is_guarded(spec))


@dataclass(frozen=True, slots=True)
class GuardState:
    """What the guard remembers between passes: since when each group has been blind with guarded
    pods pending (the grace runs from then), and since when it has been lifted."""

    blind_since: Mapping[str, float] = field(default_factory=dict)
    lifted: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    group: str
    state: str  # CLEAR, BLIND, GRACE, SCALING, LIFTED, LAST_NODE, KARPENTER
    reason: str
    nodes: tuple[str, ...] = ()
    pods: tuple[PendingPod, ...] = ()
    since: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "nodes": list(self.nodes),
            "pods": [p.key for p in self.pods],
            "since": self.since,
        }


@dataclass(frozen=True)
class GuardDecision:
    labels: dict[str, bool]  # node -> should carry the label
    reasons: dict[str, str]  # node -> why it is or is not labelled
    groups: dict[str, GroupVerdict]
    lifted_now: tuple[GroupVerdict, ...]  # groups lifted in this pass (events)
    restored_now: tuple[GroupVerdict, ...]  # groups whose lift ended in this pass (events)
    state: GuardState


def held_reason(node: GuardNode) -> str | None:
    """Why the node must carry the label, or None when it must not."""
    free = node.true_free
    if not node.capacity or free is None:
        return None  # no branch ENIs (or unknown): the label would mean nothing
    unseen = node.held + node.leaked
    if unseen <= 0 or free > 0:
        return None
    parts = [f"{node.held} held by finished or deleted pods"] if node.held else []
    parts += [f"{node.leaked} leaked"] if node.leaked else []
    taken_by = " or ".join(word for word, count in (("held", node.held), ("leaked", node.leaked)) if count)
    seen = none_free(node.capacity - node.in_use, taken_by)
    return f"{' and '.join(parts)} of {node.capacity} branch ENIs; {seen}"


def unlabelled_reason(node: GuardNode) -> str:
    free = node.true_free
    if not node.capacity or free is None:
        return "no branch ENIs"
    if free <= 0:
        return f"all {node.capacity} branch ENIs in use by running pods: the scheduler counts them"
    return f"{free} of {node.capacity} branch ENIs are free"


def fits_without_guard(
    pod: PendingPod, node: GuardNode, taint_options: TaintOptions = DEFAULT_TAINT_CONFIG
) -> bool:
    """The pod fits a fresh node copied from this one with fitguard's label set aside: what
    cluster-autoscaler would see without fitguard. The copy is its template (node_info_utils.go
    `createSanitizedNode`): taints sanitised with its options, the hostname its own (capacity/fit.py
    gives a view of a live node the template's). DaemonSet overhead is not counted: when in doubt
    the guard steps aside."""
    if node.view is None:
        return False
    labels = {k: v for k, v in node.view.labels.items() if k != EXHAUSTED_LABEL}
    taints = sanitize_taints(node.view.taints, taint_options)
    return not check_fit(pod.needs, View(node.view.allocatable, labels, taints, node.view.source))


def guarded_waiting(
    pods: Iterable[PendingPod],
    candidates: Sequence[GuardNode],
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> tuple[PendingPod, ...]:
    """Guarded pods the scheduler refused for node affinity and that a node of the group would take
    but for the label: the pods the label keeps from cluster-autoscaler."""
    return tuple(
        p
        for p in pods
        if p.guarded and p.affinity_named and any(fits_without_guard(p, n, taint_options) for n in candidates)
    )


def spared(members: Sequence[GuardNode], scaled: bool) -> bool:
    """Whether the group's nodes are left unlabelled because cluster-autoscaler would remember the
    label: when a group has no good candidate left, cluster-autoscaler builds its nodes from the
    template it cached from the last one, every label kept (mixed_nodeinfos_processor.go `Process`,
    node_info_utils.go `createSanitizedNode`), until it restarts. So a group cluster-autoscaler may
    scale, with at most one candidate, carries no label unless fitguard scales it itself. Karpenter
    remembers no node for a NodePool (its NodeClaims come from the NodePool): a group of Karpenter's
    nodes alone is never spared."""
    return not scaled and any(n.autoscaled for n in members) and sum(n.candidate for n in members) <= 1


def decide(
    nodes: Iterable[GuardNode],
    pending: Iterable[PendingPod],
    state: GuardState,
    now: float,
    *,
    grace: float = DEFAULT_GRACE,
    scaled_groups: frozenset[str] | None = frozenset(),
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG,
) -> GuardDecision:
    """One pass. `scaled_groups`: the groups `--scaling=on` covers (fitguard scales them instead of
    stepping aside); None while that is not yet known (scaling on, no cycle yet): nothing is lifted,
    and no group's last ready node is labelled. `taint_options`: the running cluster-autoscaler's."""
    pending = list(pending)
    groups: dict[str, list[GuardNode]] = {}
    for node in nodes:
        groups.setdefault(node.group_key, []).append(node)
    labels: dict[str, bool] = {}
    reasons: dict[str, str] = {}
    verdicts: dict[str, GroupVerdict] = {}
    lifted_now: list[GroupVerdict] = []
    restored_now: list[GroupVerdict] = []
    blind_since: dict[str, float] = {}
    lifted: dict[str, float] = {}
    this_pass = _Pass(pending, state, now, grace, scaled_groups, taint_options)
    for key, members in sorted(groups.items()):
        members.sort(key=lambda n: n.name)
        held = {n.name: held_reason(n) for n in members}
        was_lifted = state.lifted.get(key)
        verdict = verdicts[key] = _group_verdict(key, members, held, this_pass)
        _label_members(members, held, verdict, labels, reasons)
        if verdict.state == LIFTED and verdict.since is not None:
            lifted[key] = verdict.since
            if was_lifted is None:
                lifted_now.append(verdict)
        elif verdict.state == GRACE and verdict.since is not None:
            blind_since[key] = verdict.since
        if key in lifted:
            for n in members:
                labels[n.name] = False
                reasons[n.name] = f"guard lifted for {key}: {verdict.reason}"
        elif was_lifted is not None:
            restored_now.append(verdict)
    return GuardDecision(
        labels,
        reasons,
        verdicts,
        tuple(lifted_now),
        tuple(restored_now),
        GuardState(blind_since, lifted),
    )


def _label_members(
    members: Sequence[GuardNode],
    held: Mapping[str, str | None],
    verdict: GroupVerdict,
    labels: dict[str, bool],
    reasons: dict[str, str],
) -> None:
    """Each member's label and reason: held ENIs earn it, unless the group's last ready node is
    spared (LAST_NODE)."""
    spare = verdict.state == LAST_NODE
    for n in members:
        why = held[n.name]
        labels[n.name] = why is not None and not spare
        reasons[n.name] = why or unlabelled_reason(n)
        if spare and why:
            reasons[n.name] = f"{why}; not labelled: {verdict.reason}"


@dataclass(frozen=True, slots=True)
class _Pass:
    """What every group of one pass is judged against (decide's arguments)."""

    pending: Sequence[PendingPod]
    state: GuardState
    now: float
    grace: float
    scaled_groups: frozenset[str] | None
    taint_options: TaintOptions


def _group_verdict(
    key: str, members: Sequence[GuardNode], held: Mapping[str, str | None], this_pass: _Pass
) -> GroupVerdict:
    """One group's state in this pass: spared (last node), clear, a NodePool's (never blind),
    blind, scaling, lifted (since when) or in its grace period (blind since when)."""
    pending, state, now = this_pass.pending, this_pass.state, this_pass.now
    scaled_groups = this_pass.scaled_groups
    candidates = [n for n in members if n.candidate]
    names = tuple(n.name for n in members)
    if any(held.values()) and spared(members, scaled_groups is not None and key in scaled_groups):
        return GroupVerdict(key, LAST_NODE, spared_message(key), names)
    blind = bool(candidates) and all(held[n.name] for n in candidates)
    pods = guarded_waiting(pending, candidates, this_pass.taint_options) if blind else ()
    was_lifted = state.lifted.get(key)
    if not blind:
        why = "no ready node" if not candidates else "a ready node is not labelled"
        return GroupVerdict(key, CLEAR, why, names)
    if not any(n.autoscaled for n in members):  # a NodePool's: nothing to lift, nothing to scale
        return GroupVerdict(key, KARPENTER, nodepool_message(key, pods), names, pods)
    if not pods:
        why = "every ready node is labelled; no guarded pod is pending for node affinity on it"
        return GroupVerdict(key, BLIND, why, names)
    if scaled_groups is None or key in scaled_groups:
        who = "--scaling=on scales it" if scaled_groups is not None else "the first scaling cycle decides"
        why = f"every ready node is labelled and {len(pods)} guarded pods pend on it: {who}"
        return GroupVerdict(key, SCALING, why, names, pods)
    if was_lifted is not None:
        return GroupVerdict(key, LIFTED, lift_message(key, pods), names, pods, was_lifted)
    since = state.blind_since.get(key, now)
    if now - since >= this_pass.grace:
        return GroupVerdict(key, LIFTED, lift_message(key, pods), names, pods, now)
    why = f"every ready node is labelled and {len(pods)} guarded pods pend on it: grace period"
    return GroupVerdict(key, GRACE, why, names, pods, since)


def spared_message(group: str) -> str:
    """Why a group's last ready node is left unlabelled."""
    return (
        f"{group} has at most one ready node cluster-autoscaler may template it on, and fitguard does "
        "not scale it: once that node goes, cluster-autoscaler builds the group's nodes from its "
        "remembered copy, every label kept, until it restarts"
    )


def nodepool_message(group: str, pods: Sequence[PendingPod]) -> str:
    """Why a NodePool's labels stay although every ready node of it carries one."""
    waiting = f"{len(pods)} guarded pods pend on it" if pods else "no guarded pod pends on it"
    return (
        f"every ready node is labelled and {waiting}; Karpenter builds NodePool {group}'s new nodes "
        "from the NodePool, never from a live node, so the label hides no new node from it: kept"
    )


def lift_message(group: str, pods: Sequence[PendingPod]) -> str:
    """The event text on the pods and the nodes when the guard steps aside."""
    return (
        f"every ready node of {group} carries {EXHAUSTED_LABEL} (branch ENIs held) and {len(pods)} "
        "guarded pods pend on it: the guard steps aside (label lifted from the group's nodes) so that "
        "cluster-autoscaler, which copies a ready node's labels into the group's template, can scale "
        "it up; with --scaling=on fitguard would scale the group itself and keep the label"
    )
