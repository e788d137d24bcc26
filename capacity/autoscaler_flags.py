"""cluster-autoscaler's command line as it reads it, and the label selector its pods are found by.
Pure.

- Flags: pflag (`--name=value` or `--name value`, the last one wins) after component-base's
  `cli/flag.InitFlags`, whose `WordSepNormalizeFunc` reads `_` as `-`.
- Durations: Go's `time.ParseDuration` (signed, several `<number><unit>` parts, a bare `0`).
- Selectors: the API's string form of a label selector (apimachinery `labels.Parse`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

# Go's time.ParseDuration units, in nanoseconds
_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}
_UNITS["h"] = 60 * _UNITS["m"]
_PART = re.compile(r"(\d*)(?:\.(\d*))?([a-zµμ]+)")
_MAX_NS = 2**63 - 1


def parse_go_duration(text: str) -> float:
    """Seconds of a Go duration (`87600h`, `1h30m`, `1.5s`, `0`); ValueError as Go refuses it."""
    rest = text
    sign = 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"invalid duration {text!r}")
    total = 0
    while rest:
        match = _PART.match(rest)
        if match is None or not (match.group(1) or match.group(2)):
            raise ValueError(f"invalid duration {text!r}")
        whole, fraction, unit = match.groups()
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        scale = _UNITS[unit]
        total += int(whole or 0) * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        if total > _MAX_NS:
            raise ValueError(f"invalid duration {text!r}: out of range")
        rest = rest[match.end() :]
    return sign * total / 1e9


def flag_values(argv: Sequence[str], names: Collection[str]) -> dict[str, list[str]]:
    """Every value given to each named flag, in the order given, as pflag collects a string-array
    flag (spf13/pflag `string_array.go`: each occurrence appends its whole value, commas and all).
    Each named flag takes a value: `--name=v`, or `--name v`, where the next word is the value
    whatever it looks like (pflag `parseLongArg`); `_` in a name is read as `-`; parsing stops at
    `--`; a named flag that is the last word has no value and adds none (pflag refuses such a command
    line). A word that is no named flag is skipped, and so is no value of it (the words after an
    unnamed flag are read as flags: a boolean flag takes no value)."""
    wanted = set(names)
    found: dict[str, list[str]] = {name: [] for name in names}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        if not arg.startswith("--"):
            continue
        key, eq, given = arg[2:].partition("=")
        key = key.replace("_", "-")
        if key not in wanted:
            continue
        if eq:
            found[key].append(given)
        elif i < len(args):
            found[key].append(args[i])
            i += 1
    return found


def flag_value(argv: Sequence[str], name: str) -> str | None:
    """The value of a long flag as pflag parses a command line (`--name=v` or `--name v`, `_` read as
    `-`, the last one wins), or None when it is not given. Parsing stops at `--`."""
    values = flag_values(argv, (name,))[name]
    return values[-1] if values else None


_PARSE_BOOL = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def bool_flag(argv: Sequence[str], name: str) -> bool | None:
    """A pflag boolean (`--name` or `--name=v`, `_` read as `-`, the last wins, `--` ends the
    flags); None when not given or when `v` is no Go `strconv.ParseBool` value. A pflag boolean
    takes no next word as its value (its NoOptDefVal is "true"): `--name false` is true."""
    found: bool | None = None
    for arg in argv:
        if arg == "--":
            break
        key, eq, given = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if key.replace("_", "-") != name:
            continue
        found = True if not eq else _PARSE_BOOL.get(given)
    return found


_SET_TERM = re.compile(r"^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$")
_EQ_TERM = re.compile(r"^([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)$")
_EXISTS_TERM = re.compile(r"^(!?)\s*([^\s!=(),]+)$")


def pod_selector(text: str) -> Callable[[Mapping[str, str]], bool]:
    """A label selector in the API's string form (`a=b,c!=d,e,!f,g in (h,i)`), as a predicate over a
    pod's labels, for reading cluster-autoscaler's pods from a state file (the API server applies
    the same string itself). ValueError when the API would refuse it; an empty one selects all."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    checks = [_requirement(raw.strip(), text) for raw in terms if raw.strip() or text.strip()]
    return lambda labels: all(check(labels) for check in checks)


def _requirement(raw: str, text: str) -> Callable[[Mapping[str, str]], bool]:
    if match := _SET_TERM.match(raw):
        key, values = match.group(1), frozenset(v.strip() for v in match.group(3).split(","))
        inside = match.group(2) == "in"
        return lambda labels: (labels.get(key) in values) == inside
    if match := _EQ_TERM.match(raw):
        key, operator, value = match.groups()
        equal = operator != "!="
        return lambda labels: (labels.get(key) == value) == equal
    if match := _EXISTS_TERM.match(raw):
        absent, key = match.group(1) == "!", match.group(2)
        return lambda labels: (key in labels) != absent
    raise ValueError(f"label selector {text!r}: cannot read {raw!r}")
