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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capacity.quantity import milli_to_units
from capacity.requests import pod_requests
from capacity.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Resources
from capacity.selectors import Predicate, node_selector_map, node_selector_terms
from capacity.taints import Taint, Toleration, first_untolerated, parse_tolerations
from capacity.template import View

TOO_MANY_PODS = "Too many pods"
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
        return cls(requests, match, tolerations, checked, tuple(dict.fromkeys(keys)))


def _map(raw: object, field: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"{field}: expected a map")
    return raw


def check_fit(
    needs: PodNeeds, view: View, overhead: Mapping[str, int] | None = None, overhead_pods: int = 0
) -> list[Reason]:
    """Every reason the pod cannot run on a new node of `view`; empty when it fits.

    `overhead` is what the node's DaemonSet pods already take (milli-units), `overhead_pods` their
    count. A resource missing from allocatable counts as zero.
    """
    reasons: list[Reason] = []
    taint = first_untolerated(view.taints, needs.tolerations)
    if taint is not None:
        reasons.append(Reason(f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}", taint=taint))
    if not needs.node_match(view.labels):
        reasons.append(Reason(AFFINITY_MISMATCH))
    allocatable = view.allocatable
    overhead = overhead or {}
    pods_allowed = milli_to_units(allocatable.get(PODS, 0))
    if overhead_pods + 1 > pods_allowed:
        free_slots = (pods_allowed - overhead_pods) * 1000
        reasons.append(Reason(TOO_MANY_PODS, PODS, 1000, free_slots, pods_allowed * 1000))
    for name, wanted in needs.checked:
        have = allocatable.get(name, 0)
        free = have - overhead.get(name, 0)
        if wanted > comparable(name, free):
            reasons.append(Reason(f"Insufficient {name}", name, needs.requests[name], free, have))
    return reasons


def fits(
    needs: PodNeeds, view: View, overhead: Mapping[str, int] | None = None, overhead_pods: int = 0
) -> bool:
    return not check_fit(needs, view, overhead, overhead_pods)
