"""One copy of each equal value among many records, in a bounded memo.

150,000 pods repeat a few thousand distinct values (requests, times, the scheduler's words, the
placement of a workload's replicas); keeping each once is most of what the controller's memory
rounds saved (docs/benchmarks.md). Pure: no I/O.
"""

from __future__ import annotations

from typing import TypeVar

_K = TypeVar("_K")
_V = TypeVar("_V")


def kept(memo: dict[_K, _V], key: _K, value: _V, limit: int) -> _V:
    """The value already kept under `key`, else `value`, kept from now on. A memo at `limit` keys
    starts again: a cluster whose values keep changing costs a bounded memo, never a growing one."""
    found = memo.get(key)
    if found is not None:
        return found
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value
