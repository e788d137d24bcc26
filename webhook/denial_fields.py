"""The parts of a refusal that point into the object: the field a person edits for each reason
(or, for a pod-eni request /mutate injects, the SecurityGroupPolicies that cause it), the warn
mode's warnings per field, and warnings the API server will not cut."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capacity.fit import Reason
from capacity.names import SGP_KIND
from capacity.resources import POD_ENI
from capacity.serve import MAX_GROUP_LINES, GroupVerdict

# The AdmissionResponse API asks for warnings of at most 120 characters where possible; the
# apiserver cuts each one at 256 runes once a response's warnings pass 4096 runes in all
# (k8s.io/apiserver/pkg/endpoints/filters/warning.go, recorder.AddWarning). So a warning is kept
# under 120 by splitting it per node group, and cut (at a word, never mid-word) only past 256.
MAX_WARNING = 120
WARNING_LIMIT = 256


def reason_path(spec: Mapping[str, Any], base: str, reason: Reason, policies: Sequence[str] = ()) -> str:
    """The field a person edits to act on a reason; for a pod-eni request the pods get from the
    SecurityGroupPolicies that match them (`policies`), those policies: a field fitguard injects is
    no field a person can edit."""
    if reason.resource == POD_ENI and policies:
        kind = SGP_KIND if len(policies) == 1 else f"{SGP_KIND.removesuffix('y')}ies"
        return f"{kind} {', '.join(policies)} (it injects {POD_ENI})"
    if reason.taint is not None:
        return f"{base}.tolerations"
    if not reason.resource:
        return f"{base}.nodeSelector" if spec.get("nodeSelector") else f"{base}.affinity.nodeAffinity"
    for key in ("containers", "initContainers"):
        for i, container in enumerate(spec.get(key) or []):
            resources = container.get("resources") or {} if isinstance(container, Mapping) else {}
            for kind in ("requests", "limits"):
                if reason.resource in (resources.get(kind) or {}):
                    return f"{base}.{key}[{i}].resources.{kind}.{reason.resource}"
    return f"{base}.overhead" if reason.resource in (spec.get("overhead") or {}) else base


def warnings_for(
    verdicts: list[GroupVerdict], spec: Mapping[str, Any], base: str, policies: Sequence[str] = ()
) -> list[str]:
    """One warning per field to edit, `path: fits no node group: group (why), ...`; a field whose
    groups do not fit in 120 characters gets one warning per group instead, each whole. At most
    MAX_GROUP_LINES groups are named per field; the rest are counted."""
    by_path: dict[str, list[str]] = {}
    # hundreds of groups refuse for a handful of kinds of reason: each kind's field is found once
    # (a reason's field depends on whether it is a taint and on its resource only: reason_path)
    paths: dict[tuple[bool, str], str] = {}
    for verdict in verdicts:
        if verdict.serves:
            continue
        if not verdict.reasons:
            by_path.setdefault(base, []).append(f"{verdict.group} (max size 0)")
        for reason in verdict.reasons:
            note = "tags" if verdict.trap else reason.message.removeprefix("Insufficient ")
            kind = (reason.taint is not None, reason.resource)
            path = paths.get(kind)
            if path is None:
                path = paths[kind] = reason_path(spec, base, reason, policies)
            by_path.setdefault(path, []).append(f"{verdict.group} ({note})")
    lines = []
    for path, groups in by_path.items():
        line = f"{path}: fits no node group: {', '.join(groups)}"
        if len(line) <= MAX_WARNING:
            lines.append(line)
            continue
        shown, rest = groups[:MAX_GROUP_LINES], groups[MAX_GROUP_LINES:]
        lines += [whole_warning(f"{path}: fits no node group: {group}") for group in shown]
        if rest:
            lines.append(f"{path}: and {len(rest)} more node groups do not fit")
    return lines


def whole_warning(text: str) -> str:
    """`text` as one warning the apiserver will not cut: as is up to 256 characters, else cut at
    the last word that fits, marked with an ellipsis."""
    if len(text) <= WARNING_LIMIT:
        return text
    cut = text[: WARNING_LIMIT - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > WARNING_LIMIT // 2 else cut).rstrip(" ,;:") + "\u2026"


def field_lines(
    verdicts: list[GroupVerdict], spec: Mapping[str, Any], base: str, policies: Sequence[str] = ()
) -> list[str]:
    """For a workload's denial: the line naming the pod template fields its reasons point at (in a
    Deployment they are not where a person looks first), or none."""
    # Hundreds of groups refuse for a handful of kinds of reason: find each kind's field once. A
    # reason's field depends on whether it is a taint and on its resource (see reason_path) only.
    kinds: dict[tuple[bool, str], Reason] = {}
    for verdict in verdicts:
        if not verdict.serves:
            for reason in verdict.reasons:
                kinds.setdefault((reason.taint is not None, reason.resource), reason)
    paths = dict.fromkeys(reason_path(spec, base, reason, policies) for reason in kinds.values())
    return [f"fields to edit: {', '.join(paths)}"] if paths else []
