"""A pod's requests and timestamps, memoised for the projection (capacity/records.py project_pod).

Both are read again and again from the same strings: replicas share their containers' requests,
pods created or scheduled in the same second their timestamps (150,000 pods: a few dozen distinct
requests, measured 10.7 to 4.5 us a pod). Each memo maps exactly what its function reads to what
it returned, so a hit is the value the function would give; a key holds strings only (1, 1.0 and
True are equal keys but not equal quantities), and any other shape is computed, and refused, as
before. Pure: no I/O, no clock; bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from capacity.kept import kept
from capacity.pod_status import parse_time
from capacity.requests import pod_requests
from capacity.resources import Resources

_times: dict[str, float] = {}
_requests: dict[tuple[Any, ...], Resources] = {}
MEMO_MAX = 4096  # distinct keys per memo; past that it starts again


def time_of(value: object) -> float | None:
    """`parse_time(value)`, memoised by the timestamp string."""
    if type(value) is not str or not value:
        return parse_time(value)
    found = _times.get(value)
    if found is None:
        # a non-empty string reads as a float or raises: never None
        found = kept(_times, value, cast(float, parse_time(value)), MEMO_MAX)
    return found


def _string_items(raw: object) -> tuple[tuple[str, str], ...] | None:
    """A map of strings as a key (its order kept: another order is another key, only a miss); None
    when it is not a plain map of strings."""
    if raw is None:
        return ()
    if type(raw) is not dict:
        return None
    items = tuple(raw.items())
    for key, value in items:
        if type(key) is not str or type(value) is not str:
            return None
    return items


def _containers_key(containers: object) -> tuple[Any, ...] | None:
    """What `pod_requests` reads of a list of containers: each one's requests, limits and
    restartPolicy (None: not the plain shape, computed without the memo)."""
    if containers is None:
        return ()
    if type(containers) is not list:
        return None
    key = []
    for container in containers:
        if type(container) is not dict:
            return None
        resources = container.get("resources")
        if resources is None:
            resources = {}
        elif type(resources) is not dict:
            return None
        requests, limits = _string_items(resources.get("requests")), _string_items(resources.get("limits"))
        policy = container.get("restartPolicy")
        if requests is None or limits is None or (policy is not None and type(policy) is not str):
            return None
        key.append((requests, limits, policy))
    return tuple(key)


def _requests_key(spec: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """Every field `capacity/requests.py` `pod_requests` reads, as a key; None when one of them is
    not the plain shape (then it is computed, and raises as it would)."""
    containers, init = _containers_key(spec.get("containers")), _containers_key(spec.get("initContainers"))
    pod_level = spec.get("resources")
    level = _string_items(pod_level.get("requests")) if type(pod_level) is dict else ()
    if pod_level is not None and type(pod_level) is not dict:
        level = None  # pod_requests ignores a pod-level value that is not a map: not keyed, computed
    overhead = _string_items(spec.get("overhead"))
    if containers is None or init is None or level is None or overhead is None:
        return None
    return (containers, init, level, overhead)


def requests_of(spec: Mapping[str, Any]) -> Resources:
    """`pod_requests(spec)`, memoised by `_requests_key` (the result is read, never changed)."""
    key = _requests_key(spec)
    if key is None:
        return pod_requests(spec)
    found = _requests.get(key)
    if found is None:
        found = kept(_requests, key, pod_requests(spec), MEMO_MAX)
    return found
