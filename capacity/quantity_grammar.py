"""Which strings the API server reads as a quantity, and what each one says, restated from
k8s.io/apimachinery pkg/api/resource/quantity.go `parseQuantityString` and `ParseQuantity`, and
suffix.go `suffixHandler.interpret`.

The scanner accepts more than the documented grammar, and this module accepts exactly that: a
lone sign, `.`, or a bare suffix (`Gi`, `m`) reads as zero; `1.G` and `1.` are numbers. Only ASCII
digits count (Python's `int()` and `\\d` would take fullwidth and other scripts' digits too), and
nothing around the text is ignored here (a JSON body's surrounding blanks are trimmed before: see
`json_trim`). An exponent is read as a 64-bit integer and then kept in 32 bits, as upstream does:
`1e4294967296` is 1.
"""

from __future__ import annotations

from dataclasses import dataclass

# quantity.go's three errors, worded as the API server words them
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

_DIGITS = "0123456789"
_SUFFIX_CHARS = "eEinumkKMGTP"
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_INT64 = 2**63
# Go's unicode.IsSpace, which strings.TrimSpace trims (Python's str.strip also trims \x1c-\x1f)
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))  # U+2000..U+200A
    + "\u2028\u2029\u202f\u205f\u3000"
)


class GrammarError(ValueError):
    """A string ParseQuantity refuses; the message is its error's."""


@dataclass(frozen=True, slots=True)
class Scanned:
    """A quantity's parts: value = sign · (num.denom) · base^exponent."""

    negative: bool
    num: str  # integer digits, leading zeros removed ("0" when none)
    denom: str  # fraction digits, as written
    base: int  # 10 or 2
    exponent: int
    has_digits: bool  # whether the number part holds any digit at all (see `needs_digits`)

    def needs_digits(self) -> bool:
        """Whether ParseQuantity takes its slow path (inf.Dec), which refuses a number part without
        digits with NUMERIC, where its int64 fast path reads it as zero."""
        if self.base == 10:
            precise = 18 - len(self.num) - len(self.denom) >= 0  # maxInt64Factors
            return not (precise and self.exponent - len(self.denom) >= -9)
        if self.denom:
            return True
        return 15 - len(self.num) - int(self.exponent * 3 / 10) - 1 < 0


def json_trim(text: str) -> str:
    """Quantity.UnmarshalJSON's strings.TrimSpace: what a JSON (or YAML, sent as JSON) body may
    carry around a quantity and still be read."""
    return text.strip(GO_SPACE)


def _run(text: str, start: int, chars: str) -> int:
    end = start
    while end < len(text) and text[end] in chars:
        end += 1
    return end


def _scan(text: str) -> tuple[bool, str, str, str, bool]:
    """parseQuantityString: (negative, num, denom, suffix, whether any digit was read)."""
    pos = 1 if text[:1] in ("+", "-") else 0
    negative = text[:1] == "-"
    after_zeros = _run(text, pos, "0")
    if after_zeros == len(text):
        return negative, "0", "", "", after_zeros > pos
    end = _run(text, after_zeros, _DIGITS)
    num = text[after_zeros:end] or "0"
    seen = end > pos
    denom = ""
    if end < len(text) and text[end] == ".":
        stop = _run(text, end + 1, _DIGITS)
        denom = text[end + 1 : stop]
        seen = seen or bool(denom)
        end = stop
        if end == len(text):
            return negative, num, denom, "", seen
    suffix_end = _run(text, end, _SUFFIX_CHARS)
    if suffix_end < len(text) and text[suffix_end] in "+-":
        suffix_end += 1
    if _run(text, suffix_end, _DIGITS) != len(text):
        raise GrammarError(FORMAT_WRONG)
    return negative, num, denom, text[end:], seen


def _interpret(suffix: str) -> tuple[int, int]:
    """suffix.go interpret: (base, exponent); an exponent beyond int64 is refused, else kept in
    32 bits as Go's int32() conversion keeps it."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[:1] in ("+", "-") else digits
        if not body or body.strip(_DIGITS):
            raise GrammarError(SUFFIX)
        exponent = int(digits)
        if not -_INT64 <= exponent < _INT64:
            raise GrammarError(SUFFIX)
        return 10, (exponent + 2**31) % 2**32 - 2**31
    raise GrammarError(SUFFIX)


def scan(text: str) -> Scanned:
    """The parts of `text` as ParseQuantity reads them; GrammarError with its message otherwise."""
    if not text:
        raise GrammarError(FORMAT_WRONG)
    negative, num, denom, suffix, seen = _scan(text)
    base, exponent = _interpret(suffix)
    scanned = Scanned(negative, num, denom, base, exponent, seen)
    if not seen and scanned.needs_digits():
        raise GrammarError(NUMERIC)
    return scanned
