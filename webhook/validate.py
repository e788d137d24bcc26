"""POST /validate: deny pods and workload pod templates that no node group can serve.

The verdict comes from capacity/serve.py; this module only finds the pod template in the request,
adds what mutation will add (pod-eni for a template that matches a SecurityGroupPolicy), and turns
the verdict into an answer for the configured mode.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capacity.fit import PodNeeds, Reason
from capacity.serve import GroupVerdict, denial_message, memory_warnings
from webhook import metrics
from webhook.cluster import ClusterView
from webhook.mutate import FARGATE_LABEL, PodError, apply_patch, mutate_pod
from webhook.review import Verdict, WebhookConfig, effective_mode, request_namespace, string_map

log = logging.getLogger(__name__)

# Where each workload kind keeps its pod template (apps/v1, batch/v1, core/v1).
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
MAX_WARNING = 120
MAX_MEMORY_WARNING = 250  # they name whole tags; the API server may truncate a warning past 256
COLD_START = "fitguard knows no node group templates yet: not checked"


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """The pod (or pod template) under review: its spec, labels and where it sits in the object."""

    spec: Mapping[str, Any]
    labels: Mapping[str, str]
    path: str  # field path of the pod spec, e.g. "spec.template.spec"
    subject: str  # "pod", "Deployment web"

    @property
    def is_pod(self) -> bool:
        return self.path == "spec"


def pod_template(kind: str, obj: object) -> PodTemplate | None:
    """The pod template of a supported kind, or None (unsupported kind or no template)."""
    steps = TEMPLATE_PATHS.get(kind)
    if steps is None or not isinstance(obj, Mapping):
        return None
    node: object = obj
    for step in steps:
        node = node.get(step) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return None
    meta = node.get("metadata") or {}
    spec = node.get("spec")
    if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
        return None
    path = ".".join([*steps, "spec"])
    top = obj.get("metadata")
    top = top if isinstance(top, Mapping) else {}
    name = str(top.get("name") or top.get("generateName") or "")
    subject = "pod" if kind == "Pod" else f"{kind} {name}".strip()
    return PodTemplate(spec, string_map(meta.get("labels")), path, subject)


def _template_changed(request: Mapping[str, Any], kind: str) -> bool:
    new = pod_template(kind, request.get("object"))
    old = pod_template(kind, request.get("oldObject"))
    return old is None or new is None or (old.spec, old.labels) != (new.spec, new.labels)


def _with_injected_eni(
    template: PodTemplate, namespace: str, cluster: ClusterView, config: WebhookConfig
) -> Mapping[str, Any]:
    """A workload's pods will be mutated at creation: judge its template as /mutate will leave
    them (the same code, without the guard affinity, which no new node's labels can fail)."""
    if template.is_pod:
        return template.spec  # a pod reaches /validate already mutated
    pod = {"metadata": {"labels": dict(template.labels)}, "spec": template.spec}
    try:
        patch = mutate_pod(pod, namespace, cluster, dataclasses.replace(config, eni_guard=False)).patch
    except (PodError, LookupError):
        # malformed: the fit check names the field; no ServiceAccount: /mutate denies its pods
        return template.spec
    return apply_patch(pod, patch)["spec"] if patch else template.spec


def reason_path(spec: Mapping[str, Any], base: str, reason: Reason) -> str:
    """The field a person edits to act on a reason."""
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


def warnings_for(verdicts: list[GroupVerdict], spec: Mapping[str, Any], base: str) -> list[str]:
    """Short `path: message` lines (at most 120 characters each), one per field to edit."""
    by_path: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.serves:
            continue
        if not verdict.reasons:
            by_path.setdefault(base, []).append(f"{verdict.group} (max size 0)")
        for reason in verdict.reasons:
            note = "tags" if verdict.trap else reason.message.removeprefix("Insufficient ")
            by_path.setdefault(reason_path(spec, base, reason), []).append(f"{verdict.group} ({note})")
    lines = []
    for path, groups in by_path.items():
        line = f"{path}: fits no node group: {', '.join(groups)}"
        lines.append(line if len(line) <= MAX_WARNING else line[: MAX_WARNING - 3] + "...")
    return lines


def field_lines(verdicts: list[GroupVerdict], spec: Mapping[str, Any], base: str) -> list[str]:
    """For a workload's denial: the line naming the pod template fields its reasons point at (in a
    Deployment they are not where a person looks first), or none."""
    paths = dict.fromkeys(
        reason_path(spec, base, reason) for v in verdicts if not v.serves for reason in v.reasons
    )
    return [f"fields to edit: {', '.join(paths)}"] if paths else []


def review(request: Mapping[str, Any], cluster: ClusterView, config: WebhookConfig) -> Verdict:
    kind_info = request.get("kind") or {}
    kind = str(kind_info.get("kind", "")) if isinstance(kind_info, Mapping) else ""
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE") or (kind == "Pod" and operation != "CREATE"):
        return Verdict()
    template = pod_template(kind, request.get("object"))
    if template is None or (operation == "UPDATE" and not _template_changed(request, kind)):
        return Verdict()
    if template.labels.get(FARGATE_LABEL):
        return Verdict()  # Fargate pods run on no node group
    generation = cluster.templates.version
    templates = cluster.templates.items()
    if not templates:
        metrics.UNCHECKED.labels("no templates").inc()
        return Verdict(warnings=[COLD_START])
    namespace = request_namespace(request)
    spec = _with_injected_eni(template, namespace, cluster, config)
    try:
        needs = PodNeeds.from_spec(spec, template.path)
    except (TypeError, ValueError) as err:
        # The API server's own validation rejects such an object; never deny out of confusion.
        metrics.UNCHECKED.labels("malformed").inc()
        return Verdict(warnings=[f"fitguard could not check this {template.subject}: {err}"[:MAX_WARNING]])
    verdicts = cluster.verdicts.refusals(needs, templates, generation)
    if verdicts is None:
        relied = cluster.verdicts.memory_reliance(needs, templates, generation)
        if relied:
            metrics.MEMORY_ADMISSIONS.inc()
            warnings = memory_warnings(relied, needs, template.subject)
            return Verdict(warnings=[line[:MAX_MEMORY_WARNING] for line in warnings])
        return Verdict()
    fields = [] if template.is_pod else field_lines(verdicts, spec, template.path)
    message = denial_message(verdicts, needs, template.subject, fields)
    mode = effective_mode(namespace, cluster, config)
    if mode == "enforce":
        return Verdict.deny(message)
    if mode == "warn":
        return Verdict(warnings=warnings_for(verdicts, spec, template.path))
    # audit: allowed; an allowed verdict that carries a message is an audit finding for the app to
    # log, count and record as an event.
    return Verdict(message=message)
