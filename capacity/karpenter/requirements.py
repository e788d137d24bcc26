"""Sets of Karpenter requirements, one per label key, and how two sets are judged together.

Upstream: kubernetes-sigs/karpenter `pkg/scheduling/requirements.go` (`Requirements.Add`, `Get`,
`Compatible`, `Intersects`, `NewNodeSelectorRequirementsWithMinValues`, `NewLabelRequirements`,
`newPodRequirements`), `pkg/controllers/provisioning/scheduling/nodeclaim.go` `CanAdd` (a pod against
a NodePool's template is `Compatible` with `AllowUndefinedWellKnownLabels`), `preferences.go` (a
pod whose first required node-selector term cannot be met is retried with the next one).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from capacity.karpenter.labels import WELL_KNOWN_LABELS, normalized
from capacity.karpenter.requirement import Operator, Requirement, RequirementError


class Refusal(enum.Enum):
    UNDEFINED_LABEL = "label has no known values"  # a custom key the NodePool does not define
    NO_INTERSECTION = "no value meets both"


@dataclass(frozen=True, slots=True)
class Incompatible:
    key: str
    refusal: Refusal
    incoming: Requirement
    existing: Requirement | None = None


class Requirements(Mapping[str, Requirement]):
    """Immutable: `add` returns a new set (upstream's `Add` intersects in place)."""

    __slots__ = ("_by_key",)

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        by_key: dict[str, Requirement] = {}
        for requirement in requirements:
            existing = by_key.get(requirement.key)
            by_key[requirement.key] = requirement if existing is None else requirement.intersection(existing)
        self._by_key = MappingProxyType(by_key)

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __repr__(self) -> str:
        return f"Requirements({list(self._by_key.values())!r})"

    def add(self, *others: Requirements) -> Requirements:
        return Requirements([*self._by_key.values(), *(r for o in others for r in o.values())])

    def get_or_exists(self, key: str) -> Requirement:
        """`Get`: a key not constrained allows any value."""
        return self._by_key.get(key) or Requirement.of(key, Operator.EXISTS)

    def intersects(self, incoming: Requirements) -> tuple[Incompatible, ...]:
        """`Intersects`: every key both constrain has a common value; two exclusions (NotIn or
        DoesNotExist on both sides) always agree. Keys only one side constrains are allowed."""
        refused = []
        smaller, larger = (self, incoming) if len(self) <= len(incoming) else (incoming, self)
        for key in sorted(k for k in smaller if k in larger):
            existing, coming = self._by_key[key], incoming[key]
            if existing.has_intersection(coming):
                continue
            exclusions = (Operator.NOT_IN, Operator.DOES_NOT_EXIST)
            if coming.operator() in exclusions and existing.operator() in exclusions:
                continue
            refused.append(Incompatible(key, Refusal.NO_INTERSECTION, coming, existing))
        return tuple(refused)

    def compatible(
        self, incoming: Requirements, allow_undefined: frozenset[str] = frozenset()
    ) -> Incompatible | None:
        """`Compatible`: a custom key the set does not define is refused unless `incoming` only
        excludes (NotIn, DoesNotExist); keys in `allow_undefined` (the well-known labels, for a pod
        against a NodePool) need only intersect. The first refusal, or None."""
        for key in incoming:
            if key in allow_undefined or key in self._by_key:
                continue
            if incoming[key].operator() in (Operator.NOT_IN, Operator.DOES_NOT_EXIST):
                continue
            return Incompatible(key, Refusal.UNDEFINED_LABEL, incoming[key])
        refused = self.intersects(incoming)
        return refused[0] if refused else None

    def pod_compatible(self, pod: Requirements) -> Incompatible | None:
        """`CanAdd`'s check of a pod's requirements against a NodePool template's."""
        return self.compatible(pod, WELL_KNOWN_LABELS)


def _operator(raw: object, where: str) -> Operator:
    for operator in Operator:
        if operator.value == raw:
            return operator
    raise RequirementError(f"{where}.operator: {raw!r} is not one of {[o.value for o in Operator]}")


def from_selector_requirements(raw: object, where: str, with_min_values: bool = False) -> Requirements:
    """NodeSelectorRequirements (a NodePool's may carry `minValues`), keys normalised."""
    if raw is None:
        return Requirements()
    if not isinstance(raw, list):
        raise RequirementError(f"{where}: expected a list of requirements")
    parsed = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("key"), str):
            raise RequirementError(f"{at}: expected a requirement with a key")
        values = item.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise RequirementError(f"{at}.values: expected a list of strings")
        min_values = item.get("minValues") if with_min_values else None
        if min_values is not None and (isinstance(min_values, bool) or not isinstance(min_values, int)):
            raise RequirementError(f"{at}.minValues: expected an integer")
        operator = _operator(item.get("operator"), at)
        parsed.append(Requirement.of(normalized(item["key"]), operator, tuple(values), min_values))
    return Requirements(parsed)


def from_labels(labels: Mapping[str, str]) -> Requirements:
    """`NewLabelRequirements`: each label as `In [value]`."""
    return Requirements(Requirement.of(normalized(k), Operator.IN, (v,)) for k, v in labels.items())


def pod_alternatives(spec: Mapping[str, Any]) -> tuple[Requirements, ...]:
    """The pod's strict requirements, one set per required node-selector term (its nodeSelector
    in each): Karpenter tries the first term and relaxes to the next while one is left.
    Preferred terms are relaxed away before a pod is given up, so they never decide a fit."""
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, Mapping):
        raise RequirementError("spec.nodeSelector: expected a map")
    base = from_labels({str(k): str(v) for k, v in selector.items()})
    where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required: Any = spec.get("affinity") or {}
    for key in ("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
        if not isinstance(required, Mapping):
            raise RequirementError(f"{where}: expected a map at {key}")
        required = required.get(key) or {}
    terms = required.get("nodeSelectorTerms") or [] if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not all(isinstance(t, Mapping) for t in terms):
        raise RequirementError(f"{where}.nodeSelectorTerms: expected a list of terms")
    if not terms:
        return (base,)
    return tuple(
        base.add(from_selector_requirements(term.get("matchExpressions"), f"{where}.nodeSelectorTerms[{i}]"))
        for i, term in enumerate(terms)
    )
