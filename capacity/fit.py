"""Does a pod fit a node of a template? The scheduler's own filters, with its own reason strings.

Upstream (k8s.io/kubernetes/pkg/scheduler/framework/plugins):
- noderesources/fit.go fitsRequest: `Too many pods` when the node's pod count would exceed
  allocatable pods; a pod requesting nothing else always fits; cpu is compared in milli-units,
  everything else in whole units (Quantity.Value(), rounded up); `Insufficient <resource>`.
- nodeaffinity: `node(s) didn't match Pod's node affinity/selector`.
- tainttoleration: `node(s) had untolerated taint {<key>: <value>}` for the first NoSchedule or
  NoExecute taint the pod does not tolerate.
The scheduler stops at the first failing plugin; we report every failing check, because a person
fixing a manifest wants all of them at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capacity.quantity import milli_to_units
from capacity.requests import pod_requests
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources
from capacity.selectors import NODE_NAME_FIELD, Predicate, node_selector_map, node_selector_terms
from capacity.taints import FILTERING_EFFECTS, Taint, Toleration, first_untolerated, parse_tolerations
from capacity.template import View

TOO_MANY_PODS = "Too many pods"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# cluster-autoscaler names the node it imagines for a group `template-node-for-<group>-<random>` and
# gives it that hostname label (core/utils sanitizeTemplateNode; the AWS provider's
# buildGenericLabels): a name no live node has, so hostname Exists fits and hostname In [a node]
# does not. Only a live node ("node" views) keeps its own name and hostname.
TEMPLATE_NODE_NAME = "template-node-for-group"
LIVE_NODE_SOURCE = "node"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"

_NATIVE = (CPU, MEMORY, EPHEMERAL_STORAGE)


def is_scheduled_resource(name: str) -> bool:
    """Resources the fit filter compares: native ones, extended (`a/b`), hugepages, volumes."""
    return name in _NATIVE or "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


def comparable(name: str, milli: int) -> int:
    return milli if name == CPU else milli_to_units(milli)


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason a pod does not fit, in the scheduler's words, with the figures behind it."""

    message: str
    resource: str = ""
    requested: int = 0  # milli-units
    available: int = 0  # milli-units, after DaemonSet overhead
    allocatable: int = 0  # milli-units, before overhead
    taint: Taint | None = None


@dataclass(frozen=True, slots=True)
class PodNeeds:
    """What a pod asks of a node, compiled once and checked against many views."""

    requests: Resources
    node_match: Predicate
    tolerations: tuple[Toleration, ...]
    checked: tuple[tuple[str, int], ...]  # (resource, comparable request) for non-zero requests
    selector_keys: tuple[str, ...] = ()  # the node labels the pod selects on, to explain a mismatch
    key: tuple[Any, ...] = ()  # equal for pods that every node group judges alike (a workload's)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], field: str = "spec") -> PodNeeds:
        """Raises ValueError/TypeError naming the field when the spec is malformed."""
        requests = pod_requests(spec, field)
        selector = node_selector_map(_map(spec.get("nodeSelector"), f"{field}.nodeSelector"))
        affinity = _map(spec.get("affinity"), f"{field}.affinity")
        node_affinity = _map(affinity.get("nodeAffinity"), f"{field}.affinity.nodeAffinity")
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        match = selector
        keys = [str(k) for k in spec.get("nodeSelector") or {}]
        if required is not None:
            where = f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            raw_terms = _map(required, where).get("nodeSelectorTerms") or []
            terms = node_selector_terms(raw_terms, f"{where}.nodeSelectorTerms")
            keys += [
                str(expr.get("key"))
                for term in raw_terms
                for expr in (term.get("matchExpressions") or [])
                # positive requirements: a NotIn/DoesNotExist key is rarely what a group lacks
                if isinstance(expr, Mapping) and expr.get("operator") in ("In", "Exists", "Gt", "Lt")
            ]

            def match(labels: Mapping[str, str]) -> bool:
                return selector(labels) and terms(labels)

        checked = tuple(
            (name, comparable(name, value))
            for name, value in sorted(requests.items())
            if value > 0 and is_scheduled_resource(name)
        )
        tolerations = parse_tolerations(spec.get("tolerations"), f"{field}.tolerations")
        placement = json.dumps([spec.get("nodeSelector"), required], sort_keys=True, default=str)
        key = (checked, tolerations, placement)
        return cls(requests, match, tolerations, checked, tuple(dict.fromkeys(keys)), key)


# The parts of a pod spec `PodNeeds.from_spec` reads (by `.get`, so an absent part and a null one
# read alike); of each container, what `pod_requests` reads.
NEEDS_PARTS = ("resources", "overhead", "nodeSelector", "affinity", "tolerations")
CONTAINER_PARTS = ("resources", "restartPolicy")


def needs_parts(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Every part of a pod spec that `PodNeeds.from_spec` reads, null and absent ones left out:
    specs with equal parts (maps in the same order: a node selector's order is the order its keys
    are named in) get equal PodNeeds (the field path only names errors), so a replica's needs can
    be looked up, by these parts written out, before they are built."""
    parts = {key: spec[key] for key in NEEDS_PARTS if spec.get(key) is not None}
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if containers is not None:
            parts[key] = _read_of_containers(containers)
    return parts


def _read_of_containers(containers: object) -> object:
    """What `pod_requests` reads of each container (anything but a list of maps as it is: it is
    refused, and a map's projection is a map, which no refused element is)."""
    if not isinstance(containers, list):
        return containers
    return [
        {key: c[key] for key in CONTAINER_PARTS if c.get(key) is not None} if isinstance(c, Mapping) else c
        for c in containers
    ]


def _map(raw: object, field: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"{field}: expected a map")
    return raw


@dataclass(frozen=True, slots=True)
class Offer:
    """What a new node of a view offers a pod once its DaemonSets run, compiled for many checks."""

    view: View
    labels: Mapping[str, str]  # the view's, with a template node's name and hostname
    free: dict[str, int]  # milli-units after DaemonSets, for every resource allocatable or used
    comparable_free: dict[str, int]  # the same, in the units the scheduler compares
    pods_allowed: int
    pods_free: int
    taints: tuple[Taint, ...]  # only the filtering ones (NoSchedule, NoExecute)

    @classmethod
    def of(cls, view: View, overhead: Mapping[str, int] | None = None, overhead_pods: int = 0) -> Offer:
        overhead = overhead or {}
        free = {
            name: view.allocatable.get(name, 0) - overhead.get(name, 0)
            for name in {*view.allocatable, *overhead}
        }
        pods_allowed = milli_to_units(view.allocatable.get(PODS, 0))
        labels = view.labels
        if view.source != LIVE_NODE_SOURCE:
            labels = {**labels, HOSTNAME_LABEL: TEMPLATE_NODE_NAME, NODE_NAME_FIELD: TEMPLATE_NODE_NAME}
        return cls(
            view,
            labels,
            free,
            {name: comparable(name, value) for name, value in free.items()},
            pods_allowed,
            pods_allowed - overhead_pods,
            tuple(t for t in view.taints if t.effect in FILTERING_EFFECTS),
        )


def check_offer(needs: PodNeeds, offer: Offer) -> list[Reason]:
    """Every reason the pod cannot run on a new node of the offer; empty when it fits. A resource
    missing from allocatable counts as zero."""
    reasons: list[Reason] = []
    if offer.taints:
        taint = first_untolerated(offer.taints, needs.tolerations)
        if taint is not None:
            reasons.append(
                Reason(f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}", taint=taint)
            )
    if not needs.node_match(offer.labels):
        reasons.append(Reason(AFFINITY_MISMATCH))
    if offer.pods_free < 1:
        reasons.append(Reason(TOO_MANY_PODS, PODS, 1000, offer.pods_free * 1000, offer.pods_allowed * 1000))
    comparable_free = offer.comparable_free
    for name, wanted in needs.checked:
        if wanted > comparable_free.get(name, 0):
            have = offer.view.allocatable.get(name, 0)
            reasons.append(
                Reason(f"Insufficient {name}", name, needs.requests[name], offer.free.get(name, 0), have)
            )
    return reasons


MEMO_SIZE = 8  # offers kept per view: one per overhead it is checked with, normally one


def offer_of(view: View, overhead: Mapping[str, int] | None = None, overhead_pods: int = 0) -> Offer:
    """The view's offer after this overhead, compiled once and kept on the view. The memo keeps
    the overhead object itself, so its id cannot be reused for another while the entry lives."""
    cached = view.memo.get(id(overhead))
    if cached is not None and cached[0] is overhead and cached[1] == overhead_pods:
        kept: Offer = cached[2]
        return kept
    offer = Offer.of(view, overhead, overhead_pods)
    if len(view.memo) >= MEMO_SIZE:
        view.memo.clear()
    view.memo[id(overhead)] = (overhead, overhead_pods, offer)
    return offer


def check_fit(
    needs: PodNeeds, view: View, overhead: Mapping[str, int] | None = None, overhead_pods: int = 0
) -> list[Reason]:
    """Every reason the pod cannot run on a new node of `view` after `overhead` (what the node's
    DaemonSet pods take, milli-units) and `overhead_pods` (their count); empty when it fits."""
    return check_offer(needs, offer_of(view, overhead, overhead_pods))


def fits(
    needs: PodNeeds, view: View, overhead: Mapping[str, int] | None = None, overhead_pods: int = 0
) -> bool:
    return not check_fit(needs, view, overhead, overhead_pods)
