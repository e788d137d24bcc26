"""`fitguard controller --once -o table`: a cycle's report as a person reads it (the JSON contract is
controller/report.py's)."""

from __future__ import annotations

from typing import Any

from capacity.quantity import format_quantity, parse_quantity
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
        rows.append(
            (
                obj["metadata"]["name"],
                spec["provider"],
                ",".join(spec["instanceTypes"]),
                str(spec["nodes"]),
                sizes,
                f"{actual.get('source', '-')}: {_brief(actual)}",
                _brief(spec.get("autoscaler") or {}),
                _memory(spec.get("autoscalerMemory")),
                spec.get("staleReason", ""),
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
