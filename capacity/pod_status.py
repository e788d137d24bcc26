"""Reading a pod's status: when it was scheduled (or why not), whether a container ever started,
and when its branch ENIs are surely released once it is terminal. Pure; times are epoch seconds."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def parse_time(value: object) -> float | None:
    """An RFC 3339 timestamp as the API prints it (`2024-05-01T12:00:00Z`) to epoch seconds."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise TypeError(f"timestamp: expected a string, got {type(value).__name__}")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def map_field(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if type(value) is dict or value is None:  # the common cases, without the abstract class check
        return value or {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{key}: expected a map, got {type(value).__name__}")
    return value


def list_field(raw: Mapping[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{key}: expected a list, got {type(value).__name__}")
    return value


# Every container status list whose `terminated.finishedAt` can date a terminal pod.
_STATUS_LISTS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def released_at(status: Mapping[str, Any]) -> float | None:
    """When a terminal pod's branch ENIs are surely released: the latest time its status carries,
    any container's `finishedAt` or any condition's `lastTransitionTime`. The VPC resource
    controller stamps the release when it processes the terminal phase (trunk.go
    PushBranchENIsToCoolDownQueue: time.Now()), which is after the kubelet wrote that phase, and
    the kubelet writes it with Ready and ContainersReady turned False after the last container
    exited: the latest stamp is the closest the pod tells, and never before the finish."""
    latest: float | None = None
    for key in _STATUS_LISTS:
        for cs in list_field(status, key):
            terminated = map_field(map_field(cs, "state"), "terminated")
            finished = parse_time(terminated.get("finishedAt"))
            if finished is not None and (latest is None or finished > latest):
                latest = finished
    for condition in list_field(status, "conditions"):
        changed = parse_time(condition.get("lastTransitionTime"))
        if changed is not None and (latest is None or changed > latest):
            latest = changed
    return latest


def started(status: Mapping[str, Any]) -> bool:
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in list_field(status, key):
            state = map_field(cs, "state")
            if "running" in state or "terminated" in state or "terminated" in map_field(cs, "lastState"):
                return True
    return False


def scheduling(status: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """(when PodScheduled became True, the scheduler's message while it is Unschedulable)."""
    for condition in list_field(status, "conditions"):
        if condition.get("type") != "PodScheduled":
            continue
        if condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime")), None
        if condition.get("reason") == "Unschedulable":
            return None, str(condition.get("message") or "Unschedulable")
    return None, None
