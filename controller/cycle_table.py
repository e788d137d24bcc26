"""`fitguard controller --once -o table`: a cycle's report as a person reads it (the JSON contract is
controller/report.py's)."""

from __future__ import annotations

from typing import Any

from capacity.quantity import format_quantity, parse_quantity
from capacity.resources import EPHEMERAL_STORAGE
from cmdline.table import render_table


def cycle_table(report: dict[str, Any]) -> str:
    """Each group with both views of the resources CA gets wrong, then the tag plan."""
    header = (
        "NODE GROUP",
        "PROVIDER",
        "TYPES",
        "NODES",
        "MIN/DES/MAX",
        "ACTUAL",
        "AUTOSCALER",
        "CA MEMORY",
        "NOTE",
    )
    rows = [header]
    for obj in report["nodeGroups"]:
        spec = obj["spec"]
        sizes = f"{spec['minSize']}/{spec['desiredSize']}/{spec['maxSize']}"
        actual = spec.get("actual") or {}
        shown = f"{actual.get('source', '-')}: {_brief(actual)}"
        if spec.get("karpenter") is not None:
            # a NodePool has no sizes of its own; what it offers is the most of any allowed type
            sizes, shown = "-", f"nodepool, most of any type: {_brief({'allocatable': spec.get('display')})}"
        rows.append(
            (
                obj["metadata"]["name"],
                spec["provider"],
                ",".join(spec["instanceTypes"]),
                str(spec["nodes"]),
                sizes,
                shown,
                _brief(spec.get("autoscaler") or {}),
                _memory(spec.get("autoscalerMemory")),
                "; ".join(filter(None, (spec.get("staleReason", ""), _live_note(spec)))),
            )
        )
    lines = [render_table(rows)]
    for change in report["tagSync"]:
        verb = "applied" if change.get("applied") else "failed" if change.get("error") else "plan"
        why = f" ({change['error']})" if change.get("error") else ""
        lines.append(f"tag {verb}: {change['nodeGroup']}: {change['key']}={change['value']}{why}")
    for name, reason in report["errors"].items():
        if name == "":
            lines.append(f"discovery failed: {reason}")
    return "\n".join(lines)


def _live_note(spec: dict[str, Any]) -> str:
    """A NodePool's types whose live nodes offer less ephemeral-storage than Karpenter plans with:
    both numbers (capacity/karpenter/live.py)."""
    notes = []
    for entry in (spec.get("karpenter") or {}).get("instanceTypes") or []:
        live = entry.get("live")
        if not live:
            continue
        planned = (entry.get("allocatable") or {}).get(EPHEMERAL_STORAGE)
        offered = (live.get("allocatable") or {}).get(EPHEMERAL_STORAGE)
        if planned is None or offered is None:
            continue
        earlier = "" if live.get("sameNodeClass") else " (an earlier EC2NodeClass)"
        notes.append(
            f"{entry.get('name')}: ephemeral-storage Karpenter plans {_bytes(planned)}, "
            f"live nodes{earlier} offer {_bytes(offered)}"
        )
    return "; ".join(notes)


def _bytes(quantity: str) -> str:
    return format_quantity(parse_quantity(quantity), EPHEMERAL_STORAGE, "down")


def _memory(memory: dict[str, Any] | None) -> str:
    """Whether cluster-autoscaler remembers a live node of the group: yes (until when), no, no
    cluster-autoscaler seen (judged by tags, though one may run unseen), or - (no record)."""
    if not memory:
        return "-"
    if memory.get("remembers"):
        return f"yes, until restart or {memory.get('expires', '?')}"
    return "no" if memory.get("autoscaler") else "no CA seen"


def _brief(view: dict[str, Any]) -> str:
    allocatable = view.get("allocatable") or {}
    parts = []
    for resource in ("cpu", "memory", "ephemeral-storage", "vpc.amazonaws.com/pod-eni"):
        value = allocatable.get(resource)
        shown = format_quantity(parse_quantity(value), resource) if value is not None else "none"
        parts.append(f"{resource.rsplit('/', 1)[-1]}={shown}")
    return " ".join(parts) if allocatable else "-"
