"""A pod's needs remembered per spec shape: the replicas of a workload, and pods created again and
again, are compiled once (`capacity.fit.PodNeeds.from_spec` parses every quantity, selector and
toleration). The needs depend on the spec alone, so the memo holds for every generation of the
cluster; it is bounded (the least recently used shape goes first)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from capacity.fit import PodNeeds, needs_parts
from webhook.memo import RefusalMemo

SHAPES = RefusalMemo()


def pod_needs(spec: Mapping[str, Any], field: str) -> PodNeeds:
    """`PodNeeds.from_spec(spec, field)`, remembered per shape (a malformed spec raises each time)."""
    key = needs_key(spec)
    if key is None:
        return PodNeeds.from_spec(spec, field)
    return SHAPES.remember((key,), None, lambda: PodNeeds.from_spec(spec, field))


def needs_key(spec: Mapping[str, Any]) -> bytes | str | None:
    """The parts of `spec` its needs are built from (capacity.fit.needs_parts), written out: by
    orjson unless the text holds a null, which orjson also writes for NaN and the infinities (a
    null there is rare: the parts' own nulls are left out), else by json.dumps, which writes every
    value apart. None when neither can (nesting too deep)."""
    parts = needs_parts(spec)
    try:
        key = orjson.dumps(parts)
    except (TypeError, orjson.JSONEncodeError):  # an integer beyond 64 bits, a lone surrogate
        key = b"null"
    if b"null" not in key:
        return key
    try:
        return json.dumps(parts)
    except (TypeError, ValueError, RecursionError):
        return None
