"""Quantities parse exactly as the API server reads them, and bad ones name their field."""

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capacity.quantity import (
    QuantityError,
    QuantityOutOfRange,
    canonical_quantity,
    format_capacity,
    format_quantity,
    format_request,
    milli_to_units,
    parse_quantity,
)
from capacity.quantity_grammar import FORMAT_WRONG, NUMERIC, SUFFIX
from tests.upstream import quantity_cases


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


@pytest.mark.parametrize(
    ("text", "nearest", "down", "up"),
    [
        ("19136439364", "17.8Gi", "17.8Gi", "17.9Gi"),
        ("6920Mi", "6.8Gi", "6.7Gi", "6.8Gi"),
        ("6921Mi", "6.8Gi", "6.7Gi", "6.8Gi"),
        ("44Gi", "44Gi", "44Gi", "44Gi"),
        ("1025Mi", "1Gi", "1Gi", "1.1Gi"),
        ("2047Mi", "2Gi", "1.9Gi", "2Gi"),
    ],
)
def test_a_capacity_is_cut_and_a_request_raised_to_its_tenth(
    text: str, nearest: str, down: str, up: str
) -> None:
    """What a node offers never reads as more than it has, what a pod asks never as less: a
    refused request and the offer that refused it are never shown as the same figure."""
    milli = parse_quantity(text)
    assert format_quantity(milli, "memory") == nearest
    assert (format_capacity(milli, "memory"), format_request(milli, "memory")) == (down, up)


@given(st.integers(min_value=0, max_value=2**70), st.sampled_from(["cpu", "memory", "pods", "x/y"]))
def test_canonical_form_round_trips(milli: int, resource: str) -> None:
    assert parse_quantity(canonical_quantity(milli, resource)) == milli


def _milli(value: tuple[int, int], negative: bool = False) -> int:
    """m · 10^e units in milli-units, rounded up as Quantity.MilliValue rounds."""
    mantissa, exponent = value
    amount = Fraction(-mantissa if negative else mantissa) * Fraction(10) ** (exponent + 3)
    return math.ceil(amount)


@pytest.mark.parametrize("text", sorted(quantity_cases.PARSED))
def test_quantity_test_go_table_parses_to_the_same_value_signed_and_unsigned(text: str) -> None:
    """apimachinery's TestQuantityParse table (tests/upstream/quantity_cases.py): each string, its
    `-` form and its `+` form parse to the value the Go test expects, in milli-units rounded up."""
    value = quantity_cases.PARSED[text]
    assert parse_quantity(text) == _milli(value)
    assert parse_quantity("+" + text) == _milli(value)
    assert parse_quantity("-" + text) == _milli(value, negative=True)


@pytest.mark.parametrize("text", sorted(quantity_cases.READ_PARSED))
def test_forms_the_scanner_accepts_beyond_its_grammar_parse(text: str) -> None:
    """What reading parseQuantityString shows it accepts: a bare suffix or sign is zero, the
    exponent wraps at 32 bits."""
    assert parse_quantity(text) == _milli(quantity_cases.READ_PARSED[text])


@pytest.mark.parametrize("text", quantity_cases.INVALID)
def test_quantity_test_go_invalid_strings_are_refused(text: str) -> None:
    """TestQuantityParse's invalid strings (surrounding blanks included) are refused."""
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(("text", "error"), sorted(quantity_cases.READ_INVALID.items()))
def test_refusals_carry_parse_quantitys_own_error(text: str, error: str) -> None:
    """Each refusal is ParseQuantity's error for it (format, suffix, numeric), and never a
    QuantityOutOfRange (which means: accepted by the API server, beyond what fitguard counts)."""
    with pytest.raises(QuantityError) as refused:
        parse_quantity(text)
    assert not isinstance(refused.value, QuantityOutOfRange)
    assert refused.value.why == {"format": FORMAT_WRONG, "suffix": SUFFIX, "numeric": NUMERIC}[error]


@pytest.mark.parametrize("text", ["1e400", "9" * 70, "1e65"])
def test_quantities_the_api_server_accepts_but_fitguard_cannot_count_say_so(text: str) -> None:
    """ParseQuantity accepts these (inf.Dec); beyond int64 milli-units they are QuantityOutOfRange,
    which the webhook reports as not checked rather than reading a wrong number."""
    with pytest.raises(QuantityOutOfRange):
        parse_quantity(text)


def test_a_tiny_quantity_rounds_up_to_one_milli_unit_without_a_giant_divisor() -> None:
    """ParseQuantity rounds any positive amount up to at least 1n; in milli-units that is 1m, even
    for an exponent of -400 or a fraction of 10,000 zeros."""
    assert parse_quantity("1e-400") == 1
    assert parse_quantity("0." + "0" * 10_000 + "1") == 1
    assert parse_quantity("-1e-400") == 0
