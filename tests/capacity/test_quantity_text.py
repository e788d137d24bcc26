"""Quantities as text: the exact error messages, the canonical form written back to the API, and the
short human form, each compared whole against values written out here."""

from __future__ import annotations

import pytest

from capacity.quantity import QuantityError, canonical_quantity, format_quantity, parse_quantity

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

GI = 2**30 * 1000  # one GiB in milli-units


@pytest.mark.parametrize(
    ("value", "field", "message"),
    [
        ("1x", "spec.cpu", f"spec.cpu: invalid quantity '1x' ({FORMAT_WRONG})"),
        ("1x", "", f"invalid quantity '1x' ({FORMAT_WRONG})"),
        ("1e", "", "invalid quantity '1e' (unable to parse quantity's suffix)"),
        ("Pi", "", "invalid quantity 'Pi' (unable to parse numeric part of quantity)"),
        (True, "limits.memory", "limits.memory: invalid quantity True (not a number or string)"),
        (float("inf"), "", "invalid quantity inf (not finite)"),
        ("1e65", "f", "f: invalid quantity '1e65' (exponent out of range)"),
        ("9" * 65, "", f"invalid quantity '{'9' * 65}' (too many digits)"),
    ],
)
def test_a_rejected_quantity_names_its_field_value_and_reason(
    value: object, field: str, message: str
) -> None:
    """The whole message: the field when known, the value as written, why it was refused."""
    with pytest.raises(QuantityError) as err:
        parse_quantity(value, field)
    assert str(err.value) == message
    assert (err.value.value, err.value.field) == (value, field)


def test_without_a_field_the_message_has_no_field_prefix() -> None:
    """parse_quantity's own default: no field, no prefix."""
    with pytest.raises(QuantityError) as err:
        parse_quantity([1])
    assert (str(err.value), err.value.field) == ("invalid quantity [1] (not a number or string)", "")


def test_an_error_made_without_a_field_or_reason_says_only_what_was_invalid() -> None:
    """QuantityError's own defaults: no field prefix, no reason in brackets."""
    assert str(QuantityError("7q")) == "invalid quantity '7q'"
    assert (QuantityError("7q").field, QuantityError("7q").value) == ("", "7q")


@pytest.mark.parametrize(
    ("milli", "resource", "text"),
    [
        (2000, "", "2"),
        (1500, "", "1500m"),
        (1, "cpu", "1m"),
        (0, "memory", "0"),
        (GI, "memory", "1Gi"),
        (1536 * 2**20 * 1000, "memory", "1536Mi"),
        (GI + 1000, "memory", "1073741825"),
        (2**60 * 1000, "ephemeral-storage", "1Ei"),
        (2**30 * 1000, "cpu", str(2**30)),  # not a byte resource: no binary suffix
        (-2 * GI, "memory", "-2Gi"),
    ],
)
def test_canonical_form(milli: int, resource: str, text: str) -> None:
    """The string written back to the API: whole units when whole, milli-units otherwise, the
    largest exact binary suffix for byte resources; it parses back to the same amount."""
    assert canonical_quantity(milli, resource) == text
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    ("milli", "resource", "text"),
    [
        (1024 * 1000, "memory", "1Ki"),
        (1023 * 1000, "memory", "1023"),
        (GI, "ephemeral-storage", "1Gi"),
        (GI + GI // 2, "memory", "1.5Gi"),
        (1500, "cpu", "1500m"),
        (3000, "cpu", "3"),
        (1500, "pods", "2"),  # rounded up to whole units
        (-1024 * 1000, "memory", "-1Ki"),
    ],
)
def test_short_human_form(milli: int, resource: str, text: str) -> None:
    """The short form in messages: a binary suffix from exactly one step up, one decimal at most."""
    assert format_quantity(milli, resource) == text
