"""Durations in flags (`--scale-up-cooldown 5m`, `--reclaim-finished-pods-after 1h30m`)."""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def parse_duration(text: str) -> float:
    """Seconds from a Go-style duration (`90s`, `5m`, `1h30m`) or a bare number of seconds."""
    text = text.strip()
    if _SECONDS.fullmatch(text):
        return float(text)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text!r} (e.g. 90s, 5m, 1h30m)")
    return sum(float(n) * _UNITS[u] for n, u in parts)
