"""The status fitguard writes on each of its NodeGroupTemplates (through the status subresource):
what a person looks at first when a pod is denied or a group does not scale.

- `Discovered`: True when this cycle read the group completely from AWS; False with the AWS error
  when the template shown is the last known one.
- `AutoscalerViewMatches`: True when cluster-autoscaler's view offers what the actual view does;
  False with each missing resource and the tag that fixes it; Unknown without both views.
- `AutoscalerRemembers`: True while the running cluster-autoscaler keeps a live node of the group as
  its template (`spec.autoscalerMemory`, decided by capacity/autoscaler_memory.py), with what that
  node offers, when it was seen and until when; False with the reason it does not (none running, no
  live node seen, started too late, forgotten); Unknown while no memory record was made.
- `autoscalerScalesFromZero` (a printer column), `autoscalingGroup`, `observedGeneration` (the
  generation the status describes) and `lastDiscoveryTime` (the last complete read from AWS, to
  within `LAST_DISCOVERY_REFRESH`: a status that differs in nothing else is not written again
  until its time is that old, so an unchanged group costs no PATCH per cycle).

Conditions follow metav1.Condition as k8s.io/apimachinery pkg/api/meta/conditions.go
SetStatusCondition keeps them: lastTransitionTime changes only when the status does.
No I/O here: the caller passes the time and the object's current status.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Mapping
from typing import Any

from capacity.quantity import canonical_quantity
from capacity.template import NodeGroupTemplate
from capacity.view_match import COMPARED_RESOURCES, autoscaler_scales_from_zero, missing_resources
from controller.discovery import GroupOutcome

DISCOVERED = "Discovered"
LAST_DISCOVERY = "lastDiscoveryTime"
LAST_DISCOVERY_REFRESH = 600.0  # seconds: how stale lastDiscoveryTime may get while nothing else changes
VIEW_MATCHES = "AutoscalerViewMatches"
REMEMBERS = "AutoscalerRemembers"


def rfc3339(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def discovered_condition(outcome: GroupOutcome) -> dict[str, Any]:
    if outcome.stale:
        return _condition(DISCOVERED, "False", "DiscoveryFailed", outcome.reason)
    return _condition(DISCOVERED, "True", "Discovered", "node group read completely from AWS this cycle")


def view_condition(template: NodeGroupTemplate) -> dict[str, Any]:
    missing = missing_resources(template)
    if missing is None:
        return _condition(VIEW_MATCHES, "Unknown", "NoAutoscalerView", "no autoscaler view to compare with")
    if not missing:
        return _condition(
            VIEW_MATCHES, "True", "ViewsMatch", "cluster-autoscaler's template offers what a real node does"
        )
    parts = [
        f"{m.resource} (a real node offers {canonical_quantity(m.actual, m.resource)}, "
        f"cluster-autoscaler's template {canonical_quantity(m.autoscaler, m.resource)}): tag {m.tag} fixes it"
        for m in missing
    ]
    return _condition(
        VIEW_MATCHES,
        "False",
        "ResourcesMissing",
        "cluster-autoscaler's template lacks " + "; ".join(parts),
    )


def remembers_condition(template: NodeGroupTemplate) -> dict[str, Any]:
    memory = template.memory
    if memory is None:
        return _condition(
            REMEMBERS, "Unknown", "NotObserved", "cluster-autoscaler's memory of the group not observed yet"
        )
    if not memory.remembers:
        return _condition(
            REMEMBERS, "False", "NotRemembered", memory.reason or "cluster-autoscaler keeps no node"
        )
    offers = [
        f"{resource} {canonical_quantity(memory.view.allocatable[resource], resource)}"
        for resource in COMPARED_RESOURCES
        if memory.view is not None and resource in memory.view.allocatable
    ]
    remembered = f"; the remembered node offers {', '.join(offers)}" if offers else ""
    return _condition(REMEMBERS, "True", "Remembers", f"{memory.reason}{remembered}")


def merge_conditions(
    previous: Any, wanted: list[dict[str, Any]], now: float, generation: int
) -> list[dict[str, Any]]:
    """The wanted conditions with lastTransitionTime kept from the previous one of the same type
    and status, else now; conditions of other types (another writer's) are kept as they were."""
    before = {
        c["type"]: c for c in previous or [] if isinstance(c, Mapping) and isinstance(c.get("type"), str)
    }
    merged = []
    for condition in wanted:
        old = before.pop(condition["type"], None)
        kept = old is not None and old.get("status") == condition["status"] and old.get("lastTransitionTime")
        merged.append(
            {
                **condition,
                "observedGeneration": generation,
                "lastTransitionTime": old["lastTransitionTime"] if kept and old else rfc3339(now),
            }
        )
    merged += [dict(c) for c in before.values()]
    return sorted(merged, key=lambda c: str(c["type"]))


def desired_status(
    outcome: GroupOutcome,
    current: Mapping[str, Any],
    now: float,
    autoscaling_group: str = "",
) -> dict[str, Any] | None:
    """The status of the group's object given its stored form `current`; None without a template."""
    template = outcome.template
    if template is None:
        return None
    meta = current.get("metadata") or {}
    previous = current.get("status") if isinstance(current.get("status"), Mapping) else {}
    generation = int(meta.get("generation") or 0)
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": merge_conditions(
            previous.get("conditions"),
            [discovered_condition(outcome), view_condition(template), remembers_condition(template)],
            now,
            generation,
        ),
    }
    if template.karpenter is None:  # cluster-autoscaler never scales a Karpenter NodePool
        status["autoscalerScalesFromZero"] = autoscaler_scales_from_zero(template)
    group = autoscaling_group or str(previous.get("autoscalingGroup") or "")
    if group:
        status["autoscalingGroup"] = group
    last = rfc3339(now) if not outcome.stale else previous.get("lastDiscoveryTime")
    if last:
        status["lastDiscoveryTime"] = last
    return status


def _seconds(text: object) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _fresh_enough(have: object, want: object, refresh: float) -> bool:
    """Whether the stored lastDiscoveryTime `have` may stand for `want`: equal, or both readable
    and `have` less than `refresh` seconds older."""
    if have == want:
        return True
    before, after = _seconds(have), _seconds(want)
    return before is not None and after is not None and 0 <= after - before < refresh


def status_patch(
    current: Mapping[str, Any], desired: Mapping[str, Any], refresh: float = LAST_DISCOVERY_REFRESH
) -> dict[str, Any] | None:
    """A merge patch of `status` turning the current status into the desired one (null removes a
    field we no longer set); None when they are equal, or differ only by a lastDiscoveryTime less
    than `refresh` seconds newer than the stored one."""
    have = current.get("status") if isinstance(current.get("status"), Mapping) else {}
    others_equal = {k: v for k, v in have.items() if k != LAST_DISCOVERY} == {
        k: v for k, v in desired.items() if k != LAST_DISCOVERY
    }
    if others_equal and _fresh_enough(have.get(LAST_DISCOVERY), desired.get(LAST_DISCOVERY), refresh):
        return None
    return {"status": {**{key: None for key in have if key not in desired}, **desired}}
