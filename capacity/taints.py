"""Taints and tolerations, as the scheduler's TaintToleration filter applies them.

Upstream: k8s.io/api/core/v1 Toleration.ToleratesTaint and
k8s.io/component-helpers/scheduling/corev1/helpers FindMatchingUntoleratedTaint: only NoSchedule
and NoExecute taints filter; the first untolerated one is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> Taint:
        return cls(str(raw.get("key", "")), str(raw.get("value") or ""), str(raw.get("effect", "")))

    def to_object(self) -> dict[str, str]:
        obj = {"key": self.key, "effect": self.effect}
        if self.value:
            obj["value"] = self.value
        return obj


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> Toleration:
        return cls(
            key=str(raw.get("key") or ""),
            operator=str(raw.get("operator") or "Equal"),
            value=str(raw.get("value") or ""),
            effect=str(raw.get("effect") or ""),
        )

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator == "Equal" and self.value == taint.value


def parse_tolerations(raw: object, field: str) -> tuple[Toleration, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(t, Mapping) for t in raw):
        raise TypeError(f"{field}: expected a list of tolerations")
    return tuple(Toleration.from_object(t) for t in raw)


def first_untolerated(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> Taint | None:
    for taint in taints:
        if taint.effect in FILTERING_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
