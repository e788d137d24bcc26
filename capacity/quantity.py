"""Kubernetes resource quantities, parsed exactly into integer milli-units.

Why not `kubernetes.utils.parse_quantity`: it accepts strings the API server rejects (`1.5e3m`,
`1e`-less forms aside), returns Decimal (slow on the admission path), and importing it loads the
whole API client into a package that must stay free of I/O libraries. Which strings are quantities
is capacity/quantity_grammar.py, restated from k8s.io/apimachinery/pkg/api/resource/quantity.go
ParseQuantity; a refusal carries ParseQuantity's own error text.

A quantity is held as an `int` count of thousandths ("milli-units"), rounded up, exactly as the
API server canonicalises it ("0.1m will be rounded up to 1m"). Python ints are unbounded, so
`12345678901234567890` is held exactly.
"""

from __future__ import annotations

import math
from functools import lru_cache

from capacity.quantity_grammar import GrammarError, scan

MILLI = 1000

# Far beyond any real resource (2^63 bytes is 8Ei) yet small enough that no input can make us
# build a giant integer. The API server accepts such quantities (inf.Dec holds them), but the
# scheduler counts in int64 (Quantity.MilliValue overflows): fitguard cannot judge them either.
_MAX_DIGITS = 64
_MAX_EXPONENT = 64
# quantity.go ParseQuantity: a binary-suffixed quantity is capped, silently, at this many units
_BINARY_CAP = 2**63 - 1


class QuantityError(ValueError):
    """A quantity that the API server would reject, with the field it came from."""

    def __init__(self, value: object, field: str = "", why: str = "") -> None:
        self.value = value
        self.field = field
        self.why = why
        where = f"{field}: " if field else ""
        because = f" ({why})" if why else ""
        super().__init__(f"{where}invalid quantity {value!r}{because}")


class QuantityOutOfRange(QuantityError):
    """A quantity the API server accepts but that is beyond what the scheduler can count (int64
    milli-units) and beyond what fitguard holds: it can be neither judged nor misread."""


def parse_quantity(value: object, field: str = "") -> int:
    """The quantity in milli-units, rounded up. Raises QuantityError naming `field`."""
    if isinstance(value, bool):
        raise QuantityError(value, field, "not a number or string")
    if isinstance(value, int):
        if abs(value) >= 10**_MAX_DIGITS:
            raise QuantityOutOfRange(value, field, "too many digits")
        return value * MILLI
    if isinstance(value, float):
        # JSON numbers are allowed by the API's int-or-string decoding of quantities.
        if not math.isfinite(value):
            raise QuantityError(value, field, "not finite")
        value = repr(value)
    if not isinstance(value, str):
        raise QuantityError(value, field, "not a number or string")
    try:
        return _parse(value)
    except QuantityError as err:  # the field added, the reason and the kind of error kept
        raise type(err)(value, field, err.why) from None


@lru_cache(maxsize=4096)
def _parse(text: str) -> int:
    try:
        parts = scan(text)
    except GrammarError as err:
        raise QuantityError(text, why=str(err)) from None
    digits = (parts.num + parts.denom).lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:
        raise QuantityOutOfRange(text, why="too many digits")
    mantissa = int(digits)
    power10 = 3 - len(parts.denom)  # milli-units
    power2 = 1
    if parts.base == 2:
        power2 = 2**parts.exponent
    elif parts.exponent > _MAX_EXPONENT:  # a negative one only makes the value round up to 1m
        raise QuantityOutOfRange(text, why="exponent out of range")
    else:
        power10 += parts.exponent
    if -power10 > len(digits) + 19:  # below one milli-unit (2^60 < 10^19): no giant divisor
        return 1 if mantissa and not parts.negative else 0
    scaled = mantissa * power2
    if parts.base == 2 and scaled > _BINARY_CAP * 10 ** (3 - power10):
        scaled, power10 = _BINARY_CAP, 3
    if parts.negative:
        scaled = -scaled
    if power10 >= 0:
        factor: int = 10**power10
        return scaled * factor
    divisor: int = 10**-power10
    return -((-scaled) // divisor)  # ceiling division: rounds up, as the API server does


def milli_to_units(milli: int) -> int:
    """Quantity.Value(): whole units, rounded up (what the scheduler compares for all but cpu)."""
    return -((-milli) // MILLI)


_BINARY_STEPS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage", "hugepages-")


def is_byte_resource(resource: str) -> bool:
    return resource.startswith(_BYTE_RESOURCES)


def format_quantity(milli: int, resource: str = "", rounding: str = "nearest") -> str:
    """A short human form: `30Gi`, `17.9Gi`, `1930m`, `2`, `9` (not a round-trip canonical form).
    `rounding` of a byte quantity to its tenth: `nearest`; `down` for what a node offers, so it
    never reads as more than there is; `up` for what a pod asks, so a refused request never reads
    as what is offered (a node's 6.76Gi is 6.7Gi; a pod's 6.77Gi is 6.8Gi)."""
    if resource == "cpu":
        return f"{milli // MILLI}" if milli % MILLI == 0 else f"{milli}m"
    units = milli_to_units(milli)
    if is_byte_resource(resource):
        for suffix, size in _BINARY_STEPS:
            if abs(units) >= size:
                if rounding == "nearest":
                    text = f"{units / size:.1f}".removesuffix(".0")
                else:
                    tenths = units * 10 // size if rounding == "down" else -(-units * 10 // size)
                    text = f"{tenths // 10}.{tenths % 10}".removesuffix(".0")
                return f"{text}{suffix}"
    return str(units)


def format_capacity(milli: int, resource: str = "") -> str:
    """What a node offers, in the short human form, never rounded up."""
    return format_quantity(milli, resource, "down")


def format_request(milli: int, resource: str = "") -> str:
    """What a pod asks for, in the short human form, never rounded down."""
    return format_quantity(milli, resource, "up")


def canonical_quantity(milli: int, resource: str = "") -> str:
    """A string the API server accepts and parses back to the same milli-units."""
    if milli % MILLI:
        return f"{milli}m"
    units = milli // MILLI
    if is_byte_resource(resource):
        for suffix, size in _BINARY_STEPS:
            if units and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)
