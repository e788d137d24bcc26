"""Quantity strings and what ParseQuantity makes of them, restated from k8s.io/apimachinery
pkg/api/resource/quantity_test.go `TestQuantityParse` (its table, its negated and `+`-prefixed
forms, and its list of invalid strings) at commit eed236ceee2c19c2753a3d93ac0631dc20750454 (read
2026-12-02), plus the forms found by reading `parseQuantityString` and `ParseQuantity` there
(marked `read`).

Each value is (mantissa, power of ten) as the test writes `decQuantity(m, e)`: m · 10^e units.
BINARY_CAP marks the values ParseQuantity caps at 2^63 - 1 units (`maxAllowed`).
"""

from __future__ import annotations

BINARY_CAP = (2**63 - 1, 0)

PARSED: dict[str, tuple[int, int]] = {
    **dict.fromkeys(["0", "0n", "0u", "0m", "0Ki", "0k", "0Mi", "0M", "0Gi", "0G", "0Ti", "0T"], (0, 0)),
    "1": (1, 0),
    # binary suffixes
    "1Ki": (1024, 0),
    "8Ki": (8 * 1024, 0),
    "7Mi": (7 * 2**20, 0),
    "6Gi": (6 * 2**30, 0),
    "5Ti": (5 * 2**40, 0),
    "4Pi": (4 * 2**50, 0),
    "3Ei": (3 * 2**60, 0),
    "10Ti": (10 * 2**40, 0),
    "100Ti": (100 * 2**40, 0),
    # decimal suffixes
    "5n": (5, -9),
    "4u": (4, -6),
    "3m": (3, -3),
    "9": (9, 0),
    "8k": (8, 3),
    "50k": (5, 4),
    "7M": (7, 6),
    "6G": (6, 9),
    "5T": (5, 12),
    "40T": (4, 13),
    "300T": (3, 14),
    "2P": (2, 15),
    "1E": (1, 18),
    # decimal exponents
    "1E-3": (1, -3),
    "1e3": (1, 3),
    "1E6": (1, 6),
    "1e9": (1, 9),
    "1E12": (1, 12),
    "1e15": (1, 15),
    "1E18": (1, 18),
    "1e14": (1, 14),
    "1e13": (1, 13),
    "100.035k": (100035, 0),
    # things that look like floating point
    "0.001": (1, -3),
    "0.0005k": (5, -1),
    "0.005": (5, -3),
    "0.05": (5, -2),
    "0.5": (5, -1),
    "0.00050k": (5, -1),
    "0.00500": (5, -3),
    "0.05000": (5, -2),
    "0.50000": (5, -1),
    "0.5e0": (5, -1),
    "0.5e-1": (5, -2),
    "0.5e-2": (5, -3),
    "10.035M": (10035, 3),
    "1.2e3": (12, 2),
    "1.3E+6": (13, 5),
    "1.40e9": (14, 8),
    "1.53E12": (153, 10),
    "1.6e15": (16, 14),
    "1.7E18": (17, 17),
    "9.01": (901, -2),
    "8.1k": (81, 2),
    "7.123456M": (7123456, 0),
    "6.987654321G": (6987654321, 0),
    "5.444T": (5444, 9),
    "40.1T": (401, 11),
    "300.2T": (3002, 11),
    "2.5P": (25, 14),
    "1.01E": (101, 16),
    # things that saturate or round (up, to the nano)
    "3.001n": (4, -9),
    "1.1E-9": (2, -9),
    "0.0000000001": (1, -9),
    "0.0000000005": (1, -9),
    "0.00000000050": (1, -9),
    "0.5e-9": (1, -9),
    "0.9n": (1, -9),
    "0.00000012345": (124, -9),
    "0.00000012354": (124, -9),
    "9Ei": BINARY_CAP,
    "9223372036854775807Ki": BINARY_CAP,
    "12E": (12, 18),
    # fractional binary
    "100.035Ki": (10243584, -2),
    "0.5Mi": (2**19, 0),
    "0.05Gi": (536870912, -1),
    "0.025Ti": (274877906944, -1),
    # "things written by trolls"
    "0.000000000001Ki": (2, -9),
    ".001": (1, -3),
    ".0001k": (100, -3),
    "1.": (1, 0),
    "1.G": (1, 9),
}

# read: forms the scanner accepts that the documented grammar does not show
READ_PARSED: dict[str, tuple[int, int]] = {
    "Gi": (0, 0),  # no digits: the int64 fast path reads the number part as 0
    "m": (0, 0),
    "+": (0, 0),
    ".": (0, 0),
    "Ti": (0, 0),
    "1e4294967296": (1, 0),  # the exponent kept in 32 bits: 2^32 becomes 0
    "1e2147483648": (1, -9),  # and 2^31 becomes -2^31: 10^-2147483648 rounds up to 1n
}

# the invalid strings of TestQuantityParse, and the empty string (its own check)
INVALID: tuple[str, ...] = (
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    " 1",
    "1 ",
)

# read: refused with each of ParseQuantity's three errors
READ_INVALID: dict[str, str] = {
    "10gi": "format",  # a suffix letter outside eEinumkKMGTP
    "\uff15\uff10\uff10Gi": "format",  # fullwidth digits: not ASCII 0-9
    "1_000": "format",
    "NaN": "format",
    "1e": "suffix",  # e with no exponent
    "1Ki2": "suffix",
    "1e99999999999999999999": "suffix",  # an exponent beyond int64
    "Pi": "numeric",  # no digits on the slow (inf.Dec) path
    "Ei": "numeric",
    "e-10": "numeric",
}
