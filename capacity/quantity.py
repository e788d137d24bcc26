"""Kubernetes resource quantities, parsed exactly into integer milli-units.

Why not `kubernetes.utils.parse_quantity`: it accepts strings the API server rejects (`1.5e3m`,
`1e`-less forms aside), returns Decimal (slow on the admission path), and importing it loads the
whole API client into a package that must stay free of I/O libraries. The grammar below is the
one in k8s.io/apimachinery/pkg/api/resource/quantity.go.

A quantity is held as an `int` count of thousandths ("milli-units"), rounded up, exactly as the
API server canonicalises it ("0.1m will be rounded up to 1m"). Python ints are unbounded, so
`12345678901234567890` is held exactly.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

MILLI = 1000

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# sign, number (digits, digits., digits.digits, .digits), then a binary or decimal suffix or an
# exponent. `2E` is exa, `2E3` is an exponent: the regex tries the suffix first and backtracks.
_SUFFIXES = "Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E"
_QUANTITY = re.compile(rf"([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:({_SUFFIXES})|[eE]([+-]?\d+))?")
# Far beyond any real resource (2^63 bytes is 8Ei) yet small enough that no input can make us
# build a giant integer.
_MAX_DIGITS = 64
_MAX_EXPONENT = 64


class QuantityError(ValueError):
    """A quantity that the API server would reject, with the field it came from."""

    def __init__(self, value: object, field: str = "", why: str = "") -> None:
        self.value = value
        self.field = field
        self.why = why
        where = f"{field}: " if field else ""
        because = f" ({why})" if why else ""
        super().__init__(f"{where}invalid quantity {value!r}{because}")


def parse_quantity(value: object, field: str = "") -> int:
    """The quantity in milli-units, rounded up. Raises QuantityError naming `field`."""
    if isinstance(value, bool):
        raise QuantityError(value, field, "not a number or string")
    if isinstance(value, int):
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
    except QuantityError as err:
        raise QuantityError(value, field, err.why) from None  # the field added, the reason kept once


@lru_cache(maxsize=4096)
def _parse(text: str) -> int:
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(text, why="not a Kubernetes quantity")
    sign, number, suffix, exponent = match.groups()
    whole, _, fraction = number.partition(".")
    digits = (whole + fraction).lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS:
        raise QuantityError(text, why="too many digits")
    mantissa = int(digits)
    power10 = 3 - len(fraction)  # milli-units
    power2 = 1
    if exponent is not None:
        e = int(exponent)
        if abs(e) > _MAX_EXPONENT:
            raise QuantityError(text, why="exponent out of range")
        power10 += e
    elif suffix in _BINARY:
        power2 = _BINARY[suffix]
    else:
        power10 += _DECIMAL[suffix or ""]
    scaled = mantissa * power2
    if sign == "-":
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


def format_quantity(milli: int, resource: str = "") -> str:
    """A short human form: `30Gi`, `17.9Gi`, `1930m`, `2`, `9` (not a round-trip canonical form)."""
    if resource == "cpu":
        return f"{milli // MILLI}" if milli % MILLI == 0 else f"{milli}m"
    units = milli_to_units(milli)
    if is_byte_resource(resource):
        for suffix, size in _BINARY_STEPS:
            if abs(units) >= size:
                scaled = units / size
                text = f"{scaled:.1f}".removesuffix(".0")
                return f"{text}{suffix}"
    return str(units)


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
