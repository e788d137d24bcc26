"""Quantities parse exactly as the API server reads them, and bad ones name their field."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.quantity import (
    QuantityError,
    canonical_quantity,
    format_quantity,
    milli_to_units,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("100m", 100),
        ("1.5Gi", 1536 * 2**20 * 1000),
        ("1e3", 1_000_000),
        ("1E3", 1_000_000),
        ("2E", 2 * 10**18 * 1000),  # E alone is the exa suffix, not an exponent
        ("0.1", 100),
        ("12345678901234567890", 12345678901234567890 * 1000),  # beyond int64, still exact
        ("0.1m", 1),  # sub-milli precision rounds up, as the API server does
        ("1n", 1),
        ("1Ki", 1024 * 1000),
        ("+1", 1000),
        ("1.", 1000),
        (".5", 500),
        ("1e-3", 1),
        ("0", 0),
        ("30Gi", 30 * 2**30 * 1000),
        ("17.5k", 17_500_000),
        ("1u", 1),
        ("3", 3000),
        ("Gi", 0),  # ParseQuantity's scanner reads a bare suffix as zero (int64 fast path)
    ],
)
def test_every_quantity_form_parses_exactly(text: str, milli: int) -> None:
    assert parse_quantity(text) == milli


def test_numbers_from_json_are_quantities_too() -> None:
    assert parse_quantity(2) == 2000
    assert parse_quantity(0.5) == 500


@pytest.mark.parametrize(
    "text",
    ["", "abc", "1.5e3m", "1e", "1Gb", "--1", "1 Gi", "Pi", "1..0", "1e1000", "9" * 100, None, True, []],
)
def test_invalid_quantity_names_field_and_value(text: object) -> None:
    with pytest.raises(QuantityError) as err:
        parse_quantity(text, "spec.containers[0].resources.requests.cpu")
    message = str(err.value)
    assert "spec.containers[0].resources.requests.cpu" in message
    assert repr(text) in message


def test_non_finite_float_is_rejected() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(float("nan"), "x")


def test_value_rounds_up_like_quantity_value() -> None:
    assert milli_to_units(1) == 1
    assert milli_to_units(1000) == 1
    assert milli_to_units(1001) == 2


def test_human_format_reads_like_kubectl() -> None:
    assert format_quantity(parse_quantity("30Gi"), "ephemeral-storage") == "30Gi"
    assert format_quantity(parse_quantity("19136439364"), "ephemeral-storage") == "17.8Gi"
    assert format_quantity(parse_quantity("1930m"), "cpu") == "1930m"
    assert format_quantity(parse_quantity("2"), "cpu") == "2"
    assert format_quantity(parse_quantity("9"), "vpc.amazonaws.com/pod-eni") == "9"


@given(st.integers(min_value=0, max_value=2**70), st.sampled_from(["cpu", "memory", "pods", "x/y"]))
def test_canonical_form_round_trips(milli: int, resource: str) -> None:
    assert parse_quantity(canonical_quantity(milli, resource)) == milli
