"""Resource lists: `dict[str, int]` of milli-units, and the few operations the scheduler uses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from capacity.quantity import canonical_quantity, format_capacity, parse_quantity

Resources = dict[str, int]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
POD_ENI = "vpc.amazonaws.com/pod-eni"


def parse_resources(raw: object, field: str) -> Resources:
    """A `requests`/`limits`/`allocatable` map parsed; errors name `field.<resource>`."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"{field}: expected a map of resource quantities, got {type(raw).__name__}")
    parsed: Resources = {}
    for name, value in raw.items():
        # a quantity string seen before is not parsed again, nor is its field named (the error
        # path alone needs it): 150,000 pods repeat a few dozen quantities
        milli = _SEEN.get(value) if type(value) is str else None
        if milli is None:
            milli = parse_quantity(value, f"{field}.{name}")
            if type(value) is str and len(_SEEN) < _SEEN_MAX:
                _SEEN[value] = milli
        parsed[str(name)] = milli
    return parsed


_SEEN: dict[str, int] = {}  # quantity string -> milli-units, for strings parse_quantity accepted
_SEEN_MAX = 4096


def add(target: Resources, other: Mapping[str, int]) -> Resources:
    """Adds `other` into `target` and returns it."""
    for name, value in other.items():
        target[name] = target.get(name, 0) + value
    return target


def take_max(target: Resources, other: Mapping[str, int]) -> Resources:
    """Raises each entry of `target` to at least `other`'s, and returns it."""
    for name, value in other.items():
        target[name] = max(target.get(name, value), value)
    return target


def total(lists: Iterable[Mapping[str, int]]) -> Resources:
    result: Resources = {}
    for item in lists:
        add(result, item)
    return result


def to_quantities(resources: Mapping[str, int]) -> dict[str, str]:
    """The map back in API form, sorted by name, e.g. for a NodeGroupTemplate."""
    return {name: canonical_quantity(value, name) for name, value in sorted(resources.items())}


def to_display(resources: Mapping[str, int]) -> dict[str, str]:
    """The map in the units a person reads, sorted by name: bytes in binary suffixes cut to a
    tenth (`17.8Gi`, never more than there is), the rest as counts (`1930m`, `18`). For display
    only (`kubectl get ngt`'s columns): it does not parse back to the same quantities."""
    return {name: format_capacity(value, name) for name, value in sorted(resources.items())}
