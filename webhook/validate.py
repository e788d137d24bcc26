"""POST /validate: deny pods and workload pod templates that no node group can serve.

The verdict comes from capacity/serve.py; this module only finds the pod template in the request,
adds what mutation will add (pod-eni for a template that matches a SecurityGroupPolicy), and turns
the verdict into an answer for the configured mode.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from capacity.daemonsets import daemon_tolerations, without_daemonset
from capacity.fit import PodNeeds
from capacity.karpenter.pools import caution_lines, judge_pools, pool_lines
from capacity.place_messages import judged_line, names, pinned_denial
from capacity.placement import (
    DEFAULT_SCHEDULER,
    MIRROR_ANNOTATION,
    Abstention,
    Beyond,
    LiveNode,
    Outcome,
    Pin,
    beyond_groups,
    judge_pinned,
    not_judged,
    pin_of,
)
from capacity.resources import POD_ENI
from capacity.serve import GroupVerdict, denial_message, memory_warnings, refusals
from capacity.string_maps import string_map
from capacity.template import NodeGroupTemplate
from kube.store import Store
from webhook import metrics
from webhook.cluster import ClusterView
from webhook.denial_fields import field_lines, warnings_for, whole_warning
from webhook.mutate import (
    FARGATE_LABEL,
    LINUX,
    PodError,
    check_pod,
    mutate_pod,
    pod_type,
    requests_pod_eni_elsewhere,
    with_resource,
)
from webhook.review import MAPPINGS, Verdict, WebhookOptions, effective_mode, request_namespace
from webhook.shapes import pod_needs

log = logging.getLogger(__name__)
T = TypeVar("T")

# Where each workload kind keeps its pod template (apps/v1, batch/v1, core/v1).
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
COLD_START = "fitguard knows no node group templates yet: not checked"


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """The pod (or pod template) under review: its spec, labels and where it sits in the object."""

    spec: Mapping[str, Any]
    labels: Mapping[str, str]
    path: str  # field path of the pod spec, e.g. "spec.template.spec"
    subject: str  # "pod", "Deployment web"

    @property
    def is_pod(self) -> bool:
        return self.path == "spec"


class Listed:
    """A store's items, listed on the first iteration and kept for the next: a review the memo
    answers never copies the 500 templates out of the store."""

    __slots__ = ("_items", "_store")

    def __init__(self, store: Store[NodeGroupTemplate]) -> None:
        self._store = store
        self._items: list[NodeGroupTemplate] | None = None

    def __iter__(self) -> Iterator[NodeGroupTemplate]:
        if self._items is None:
            self._items = self._store.items()
        return iter(self._items)


def pod_template(kind: str, obj: object) -> PodTemplate | None:
    """The pod template of a supported kind, or None (unsupported kind or no template)."""
    steps = TEMPLATE_PATHS.get(kind)
    if steps is None or not isinstance(obj, MAPPINGS):
        return None
    node: object = obj
    for step in steps:
        node = node.get(step) if isinstance(node, MAPPINGS) else None
    if not isinstance(node, MAPPINGS):
        return None
    meta = node.get("metadata") or {}
    spec = node.get("spec")
    if not isinstance(spec, MAPPINGS) or not isinstance(meta, MAPPINGS):
        return None
    path = ".".join([*steps, "spec"])
    top = obj.get("metadata")
    top = top if isinstance(top, MAPPINGS) else {}
    name = str(top.get("name") or top.get("generateName") or "")
    subject = "pod" if kind == "Pod" else f"{kind} {name}".strip()
    return PodTemplate(spec, string_map(meta.get("labels")), path, subject)


def _template_changed(request: Mapping[str, Any], kind: str) -> bool:
    new = pod_template(kind, request.get("object"))
    old = pod_template(kind, request.get("oldObject"))
    return old is None or new is None or (old.spec, old.labels) != (new.spec, new.labels)


def _with_injected_eni(
    template: PodTemplate, namespace: str, cluster: ClusterView, config: WebhookOptions
) -> Mapping[str, Any]:
    """A workload's pods will be mutated at creation: judge its template as /mutate will leave
    them (the same code, without the guard affinity, which no new node's labels can fail). Of what
    /mutate injects only the resource is in the spec (a Fargate pod is not judged), so the spec is
    built with it rather than by applying the patch."""
    if template.is_pod:
        return template.spec  # a pod reaches /validate already mutated
    pod = {"metadata": {"labels": dict(template.labels)}, "spec": template.spec}
    try:
        resource = mutate_pod(pod, namespace, cluster, _without_guard(config)).resource
    except (PodError, LookupError):
        # malformed: the fit check names the field; no ServiceAccount: /mutate denies its pods
        return template.spec
    return with_resource(template.spec, resource) if resource else template.spec


@functools.lru_cache(maxsize=8)
def _without_guard(config: WebhookOptions) -> WebhookOptions:
    """The options /mutate is judged with from /validate (one object per configuration)."""
    return dataclasses.replace(config, eni_guard=False)


def review(request: Mapping[str, Any], cluster: ClusterView, config: WebhookOptions) -> Verdict:
    kind_info = request.get("kind") or {}
    kind = str(kind_info.get("kind", "")) if isinstance(kind_info, MAPPINGS) else ""
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE") or (kind == "Pod" and operation != "CREATE"):
        return Verdict()
    template = pod_template(kind, request.get("object"))
    if template is None or (operation == "UPDATE" and not _template_changed(request, kind)):
        return Verdict()
    if template.labels.get(FARGATE_LABEL):
        return Verdict()  # Fargate pods run on no node group
    abstention = never_judged(request.get("object"), template.spec)
    if abstention is not None:
        return abstain(abstention, template.subject)
    namespace = request_namespace(request)
    spec = _with_injected_eni(template, namespace, cluster, config)
    if kind == "DaemonSet":
        spec = with_daemon_tolerations(spec)
    try:
        needs = pod_needs(spec, template.path)
    except (TypeError, ValueError) as err:
        # The API server's own validation rejects such an object; never deny out of confusion.
        metrics.count(metrics.UNCHECKED, "malformed")
        return Verdict(warnings=[whole_warning(f"fitguard could not check this {template.subject}: {err}")])
    old = pod_template(kind, request.get("oldObject")) if kind == "DaemonSet" else None
    judged = Judged(template, spec, kind, namespace, cluster, config, remembered=old is None)
    pin = pin_of(spec)
    if pin is not None:
        return _judge_pinned(judged, needs, pin)
    if not len(cluster.templates) and not len(cluster.nodepool_templates):
        metrics.count(metrics.UNCHECKED, "no templates")
        return Verdict(warnings=[COLD_START])
    if old is not None:
        # its own old revision is no overhead for its new one: judged apart from the memo
        templates: Iterable[NodeGroupTemplate] = [
            without_daemonset(t, old.spec) for t in cluster.templates.items()
        ]
        verdicts = refusals(needs, templates)
    else:
        templates = Listed(cluster.templates)
        verdicts = cluster.verdicts.refusals(needs, templates, cluster.templates.version)
    if verdicts is None:
        relied = cluster.verdicts.memory_reliance(needs, templates, cluster.templates.version)
        if relied:
            metrics.count(metrics.MEMORY_ADMISSIONS)
            warnings = memory_warnings(relied, needs, template.subject)
            return Verdict(warnings=[whole_warning(line) for line in warnings])
        return Verdict()
    return _beyond_groups(judged, needs, verdicts, templates)


@dataclass(frozen=True, slots=True)
class Judged:
    """The object under review and what it is judged with."""

    template: PodTemplate
    spec: Mapping[str, Any]  # its pod spec as its pods will be (injections, added tolerations)
    kind: str
    namespace: str
    cluster: ClusterView
    config: WebhookOptions
    # judged by the templates in the store, so the memo may answer (not a DaemonSet's update, which
    # is judged without its own old revision)
    remembered: bool = True

    def remember(self, key: tuple[Any, ...], generation: object, compute: Callable[[], T]) -> T:
        """`compute()`, from the memo of the places beyond the groups when it may answer."""
        return self.cluster.places.remember(key, generation, compute) if self.remembered else compute()

    def refuse(self, message: str, warnings: Callable[[], list[str]]) -> Verdict:
        """`refuse` in the namespace's mode; `warnings` are built only where the mode answers with
        them (warn): for a workload refused by 500 groups they cost milliseconds."""
        mode = effective_mode(self.namespace, self.cluster, self.config)
        return refuse(message, mode, warnings() if mode == "warn" else [])


def _beyond_groups(
    judged: Judged, needs: PodNeeds, verdicts: list[GroupVerdict], templates: Iterable[NodeGroupTemplate]
) -> Verdict:
    """No group's next node serves the object: the live nodes and the capacity fitguard does not
    model decide whether it is denied, admitted, or admitted unjudged. Remembered per pod shape
    for one generation of templates, nodes and NodePools (a pod denied again is answered from it)."""
    cluster, template = judged.cluster, judged.template
    selects_a_group = None
    if judged.kind == "DaemonSet":
        verdicts = [v for v in verdicts if selects(v)]
        selects_a_group = bool(verdicts)
    generation = (  # every store published_pools() reads too: a judged NodePool's nodes are known
        cluster.templates.version,
        cluster.nodes.version,
        cluster.node_pools.version,
        cluster.nodepool_templates.version,
        cluster.ec2_node_classes.version,
        cluster.auto_node_classes.version,
    )

    def judge() -> Beyond:
        nodes, pools = cluster.nodes.items(), cluster.node_pool_names()
        return beyond_groups(
            needs,
            nodes,
            templates,
            pools,
            daemonset_selects_a_group=selects_a_group,
            published=cluster.published_pools(),  # their live nodes are known capacity
        )

    beyond = judged.remember(("beyond", needs.key, selects_a_group), generation, judge)
    if beyond.outcome in (Outcome.SERVED, Outcome.SELECTS_NOTHING):
        return Verdict()
    if beyond.outcome is Outcome.UNMODELED:
        return abstain(Abstention.UNMODELED_NODES, template.subject, names(list(beyond.names), 3))
    if beyond.outcome is Outcome.NODEPOOLS:
        return _nodepools(judged, needs, verdicts, beyond)
    policies = _injecting_policies(judged, verdicts)
    fields = [] if template.is_pod else field_lines(verdicts, judged.spec, template.path, policies)
    extra = (*fields, judged_line(beyond.groups, beyond.nodes))
    message = judged.remember(
        ("denial", needs.key, template.subject, extra),
        generation,
        lambda: denial_message(verdicts, needs, template.subject, extra),
    )
    return judged.refuse(message, lambda: warnings_for(verdicts, judged.spec, template.path, policies))


def _nodepools(judged: Judged, needs: PodNeeds, verdicts: list[GroupVerdict], beyond: Beyond) -> Verdict:
    """No group and no live node serves it, and Karpenter NodePools might launch a node for it:
    each judged by its published template (capacity/karpenter/pools.py). Admitted when one takes
    it (with a warning for each caution: a type that would never give it its branch ENI, or whose
    live nodes are short), unjudged when one cannot be judged, else denied naming each NodePool
    and the field to change. A DaemonSet's pods are never what a NodePool launches a node for:
    not judged."""
    template, cluster = judged.template, judged.cluster
    if judged.kind == "DaemonSet":
        return abstain(Abstention.NODEPOOLS, template.subject, names(list(beyond.names), 3))
    pools = judge_pools(beyond.names, cluster.published_pools(), judged.spec, needs.requests)
    if pools.admitted:
        return Verdict(warnings=[whole_warning(line) for line in caution_lines(pools.cautions)])
    if pools.unjudged:
        return abstain(Abstention.NODEPOOLS, template.subject, names(list(pools.unjudged), 3))
    groups = sorted(v.group for v in verdicts)
    policies = _injecting_policies(judged, verdicts)
    fields = [] if template.is_pod else field_lines(verdicts, judged.spec, template.path, policies)
    refusals = pool_lines(pools.refused)
    judged_all = judged_line(groups, len(cluster.nodes), len(pools.refused))
    lines = (*refusals, *fields, judged_all)
    if verdicts:
        message = denial_message(verdicts, needs, template.subject, lines)
    else:
        message = "\n".join((f"{template.subject} does not fit any Karpenter NodePool", *lines))

    # under warn, the person applying reads the groups' fields and each NodePool's refusal
    def warnings() -> list[str]:
        fields = warnings_for(verdicts, judged.spec, template.path, policies) if verdicts else []
        return [*fields, *(whole_warning(line) for line in refusals)]

    return judged.refuse(message, warnings)


def _injecting_policies(judged: Judged, verdicts: list[GroupVerdict]) -> list[str]:
    """The SecurityGroupPolicies that give the pods their pod-eni request, when a group refuses
    them for it (looked up on a denial only)."""
    if not any(r.resource == POD_ENI for v in verdicts for r in v.reasons):
        return []
    template = judged.template
    pod = {"metadata": {"labels": dict(template.labels)}, "spec": template.spec}
    try:
        check_pod(pod)
    except PodError:
        return []
    if pod_type(pod) != LINUX or requests_pod_eni_elsewhere(pod):
        return []  # /mutate injects nothing: the request is the manifest's own
    return judged.cluster.matching_policies(judged.namespace, pod)


def _judge_pinned(judged: Judged, needs: PodNeeds, pin: Pin) -> Verdict:
    """A pod bound to named nodes is judged against them alone, never against a new node."""
    cluster = judged.cluster
    nodes = _one(cluster, pin.node_name) if pin.node_name else {n.name: n for n in cluster.nodes.items()}
    verdict = judge_pinned(needs, pin, nodes)
    if verdict.unknown:
        return abstain(Abstention.UNKNOWN_NODE, judged.template.subject, names(list(verdict.unknown), 3))
    if verdict.serves:
        return Verdict()
    message = pinned_denial(verdict.judged, needs, judged.template.subject)
    return judged.refuse(message, lambda: [whole_warning(line) for line in message.splitlines()[1:]])


def _one(cluster: ClusterView, name: str) -> dict[str, LiveNode]:
    node = cluster.nodes.get("", name)
    return {name: node} if node is not None else {}


def refuse(message: str, mode: str, warnings: list[str]) -> Verdict:
    """A refusal as the mode answers it: denied; allowed with warnings and a finding; allowed with
    the message and a finding (audit)."""
    if mode == "enforce":
        return Verdict.deny(message)
    if mode == "warn":
        # the warnings are for the person applying; the whole message is a finding, as in audit
        return Verdict(warnings=warnings, finding=message, finding_mode=mode)
    return Verdict(message=message, finding=message, finding_mode=mode)


def abstain(abstention: Abstention, subject: str, detail: str = "") -> Verdict:
    """Admitted without a verdict: said to the person applying, counted, and recorded in the API
    server's audit log (the response's audit annotation)."""
    metrics.count(metrics.UNCHECKED, abstention.value)
    return Verdict(warnings=[whole_warning(not_judged(abstention, subject, detail))], abstained=abstention)


def never_judged(obj: object, spec: Mapping[str, Any]) -> Abstention | None:
    """The objects fitguard leaves to others whatever the cluster: placed by another scheduler, or
    the mirror of a static pod the kubelet already runs."""
    scheduler = spec.get("schedulerName")
    if isinstance(scheduler, str) and scheduler not in ("", DEFAULT_SCHEDULER):
        return Abstention.OTHER_SCHEDULER
    meta = obj.get("metadata") if isinstance(obj, MAPPINGS) else None
    annotations = meta.get("annotations") if isinstance(meta, MAPPINGS) else None
    if isinstance(annotations, MAPPINGS) and MIRROR_ANNOTATION in annotations:
        return Abstention.STATIC_POD
    return None


def with_daemon_tolerations(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A DaemonSet's template as its pods will be: with the tolerations its controller adds."""
    own = spec.get("tolerations")
    if own is not None and not isinstance(own, list):
        return spec  # malformed: the fit check names the field
    added = [{"key": t.key, "operator": t.operator, "effect": t.effect} for t in daemon_tolerations(spec)]
    return {**spec, "tolerations": [*(own or []), *added]}


def selects(verdict: GroupVerdict) -> bool:
    """Whether a DaemonSet puts a pod on the group's next node: refused for its size, not for its
    node affinity, its tolerations or a group that cannot grow."""
    if verdict.why_closed:
        return False
    return not any(r.taint is not None or not r.resource for r in verdict.reasons)
