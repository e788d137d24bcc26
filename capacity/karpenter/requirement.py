"""One Karpenter requirement: a label key and the set of values it allows, restated from
kubernetes-sigs/karpenter `pkg/scheduling/requirement.go` (`NewRequirementWithFlexibility`,
`Intersection`, `HasIntersection`, `Has`, `Operator`, `Len`, `withinBounds`).

A requirement is a set of values (`In`), or its complement (`NotIn`; `Exists` is the complement of
nothing), optionally bounded by integers (`Gt n` is held as `>= n+1`, `Lt n` as `<= n-1`, Karpenter's
own `Gte` / `Lte` as written). `DoesNotExist` is the empty set.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

MAX_INT = 2**63 - 1  # Go's math.MaxInt on 64-bit; `Len` of a complement counts down from it
_INT = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi's syntax


class Operator(enum.Enum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"
    GTE = "Gte"  # Karpenter's own (NodePool requirements), not the core API's
    LTE = "Lte"


class RequirementError(ValueError):
    """A requirement the API server (or Karpenter's validation) would refuse."""


def atoi(text: str) -> int | None:
    """strconv.Atoi: the int64 value, None when it is not one."""
    if not _INT.fullmatch(text):
        return None
    value = int(text)
    return value if -MAX_INT - 1 <= value <= MAX_INT else None


def _bound(operator: Operator, values: tuple[str, ...]) -> int:
    value = atoi(values[0]) if len(values) == 1 else None
    if value is None:
        raise RequirementError(f"{operator.value} needs exactly one integer value, got {list(values)}")
    return value


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    complement: bool
    values: frozenset[str]
    gte: int | None = None  # inclusive bounds
    lte: int | None = None
    min_values: int | None = None

    @classmethod
    def of(
        cls, key: str, operator: Operator, values: tuple[str, ...] = (), min_values: int | None = None
    ) -> Requirement:
        """`NewRequirementWithFlexibility` (the key already normalised by the caller)."""
        if operator is Operator.IN:
            return cls(key, False, frozenset(values), min_values=min_values)
        if operator is Operator.DOES_NOT_EXIST:
            return cls(key, False, frozenset(), min_values=min_values)
        if operator is Operator.NOT_IN:
            return cls(key, True, frozenset(values), min_values=min_values)
        if operator is Operator.EXISTS:
            return cls(key, True, frozenset(), min_values=min_values)
        bound = _bound(operator, values)
        if operator is Operator.GT:
            if bound == MAX_INT:  # nothing is greater
                return cls(key, False, frozenset())
            return cls(key, True, frozenset(), gte=bound + 1, min_values=min_values)
        if operator is Operator.LT:
            return cls(key, True, frozenset(), lte=bound - 1, min_values=min_values)
        if operator is Operator.GTE:
            return cls(key, True, frozenset(), gte=bound, min_values=min_values)
        return cls(key, True, frozenset(), lte=bound, min_values=min_values)

    def length(self) -> int:
        """`Len`: the number of values; a complement counts down from MaxInt."""
        return MAX_INT - len(self.values) if self.complement else len(self.values)

    def operator(self) -> Operator:
        """`Operator`: bounded complements read as Exists, as upstream."""
        if self.complement:
            return Operator.NOT_IN if self.length() < MAX_INT else Operator.EXISTS
        return Operator.IN if self.values else Operator.DOES_NOT_EXIST

    def within_bounds(self, value: str, gte: int | None = None, lte: int | None = None) -> bool:
        if gte is None and lte is None:
            return True
        number = atoi(value)
        if number is None:  # with bounds, a value that is not an integer is outside them
            return False
        return (gte is None or number >= gte) and (lte is None or number <= lte)

    def has(self, value: str) -> bool:
        """`Has`: whether a node labelled `value` meets this requirement."""
        inside = self.within_bounds(value, self.gte, self.lte)
        return inside and ((value not in self.values) if self.complement else (value in self.values))

    def _bounds(self, other: Requirement) -> tuple[int | None, int | None]:
        gte = max((b for b in (self.gte, other.gte) if b is not None), default=None)
        lte = min((b for b in (self.lte, other.lte) if b is not None), default=None)
        return gte, lte

    def has_intersection(self, other: Requirement) -> bool:
        """`HasIntersection`: some value meets both."""
        gte, lte = self._bounds(other)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if self.complement:
            return any(v not in self.values and self.within_bounds(v, gte, lte) for v in other.values)
        if other.complement:
            return any(v not in other.values and self.within_bounds(v, gte, lte) for v in self.values)
        return any(v in other.values and self.within_bounds(v, gte, lte) for v in self.values)

    def intersection(self, other: Requirement) -> Requirement:
        """`Intersection`: the values both allow; the larger minValues is kept."""
        gte, lte = self._bounds(other)
        min_values = max((m for m in (self.min_values, other.min_values) if m is not None), default=None)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, False, frozenset(), min_values=min_values)
        complement = self.complement and other.complement
        if complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        values = frozenset(v for v in values if self.within_bounds(v, gte, lte))
        if not complement:  # a concrete set carries no bounds
            gte, lte = None, None
        return Requirement(self.key, complement, values, gte, lte, min_values)
