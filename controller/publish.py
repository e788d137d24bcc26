"""Publishing NodeGroupTemplate objects: one per discovered group, written only when it changed,
deleted when its group is gone; objects marked manual (by a person) are never touched."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.names import MANAGED_BY_LABEL, MANUAL_MARK, TEMPLATE_MANAGER
from controller.discovery import GroupOutcome
from controller.status import desired_status, status_patch
from kube.api import list_node_group_templates
from kube.client import NODE_GROUP_TEMPLATES, ApiLike, KubeError, as_kube_client
from kube.patch import Preconditions, apply_object, delete_object, merge_patch

log = logging.getLogger(__name__)
STALE_REASON_FIELD = "staleReason"  # spec field: why the template is the last known one


def is_manual(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    if (obj.get("spec") or {}).get("provider") == "manual":
        return True
    return any(
        str((meta.get(part) or {}).get(MANUAL_MARK, "")).lower() == "true"
        for part in ("labels", "annotations")
    )


def is_ours(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == TEMPLATE_MANAGER


def desired_objects(outcomes: Iterable[GroupOutcome]) -> list[dict[str, Any]]:
    """The object of each group that has a template, labelled as ours, with the stale reason."""
    objects = []
    for outcome in outcomes:
        if outcome.template is None:
            continue
        obj = outcome.template.to_object()
        obj["metadata"]["labels"] = {MANAGED_BY_LABEL: TEMPLATE_MANAGER}
        if outcome.reason:
            obj["spec"][STALE_REASON_FIELD] = f"kept from an earlier discovery: {outcome.reason}"
        objects.append(obj)
    return objects


@dataclass
class PublishPlan:
    writes: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[Mapping[str, Any]] = field(default_factory=list)
    manual: list[str] = field(default_factory=list)  # desired names a person's object holds


def plan_publish(desired: Iterable[Mapping[str, Any]], existing: Iterable[Mapping[str, Any]]) -> PublishPlan:
    """What to write and delete. Unchanged objects are not written; only our objects are deleted."""
    current = {str(o["metadata"]["name"]): o for o in existing}
    plan = PublishPlan()
    wanted = set()
    for obj in desired:
        name = str(obj["metadata"]["name"])
        wanted.add(name)
        have = current.get(name)
        if have is not None and not is_ours(have) and is_manual(have):
            plan.manual.append(name)
            continue
        if have is None or _changed(have, obj):
            plan.writes.append(dict(obj))
    for name, have in sorted(current.items()):
        if name not in wanted and is_ours(have) and not is_manual(have):
            plan.deletes.append(have)
    return plan


def _changed(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    if have.get("spec") != want.get("spec"):
        return True
    labels = (have.get("metadata") or {}).get("labels") or {}
    return any(labels.get(k) != v for k, v in ((want.get("metadata") or {}).get("labels") or {}).items())


@dataclass
class PublishResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)  # names whose status was written


def publish(
    api: ApiLike,
    outcomes: Iterable[GroupOutcome],
    *,
    now: float | None = None,
    autoscaling_groups: Mapping[str, str] | None = None,
    existing: Iterable[Mapping[str, Any]] | None = None,
    desired: Iterable[Mapping[str, Any]] | None = None,
) -> PublishResult:
    """Compares with the NodeGroupTemplates that exist (`existing`: the cycle's reading of them,
    listed here when None), then creates, replaces or deletes as planned, then writes the status
    of each of ours (controller/status.py). Every write reads the object afresh or carries a uid
    precondition, so a reading a little behind costs a retry, never a lost change. API errors on
    one object are reported and do not stop the others. `desired`: the objects of `outcomes`, when
    the caller built them already."""
    client = as_kube_client(api)
    outcomes = list(outcomes)
    existing = list(existing) if existing is not None else list_node_group_templates(client)
    stored = {str(o["metadata"]["name"]): o for o in existing}
    desired = list(desired) if desired is not None else desired_objects(outcomes)
    plan = plan_publish(desired, existing)
    result = PublishResult(unchanged=len(desired) - len(plan.writes) - len(plan.manual))
    for name in plan.manual:
        log.info("NodeGroupTemplate %s is marked manual: not touched", name)
    for obj in plan.writes:
        name = obj["metadata"]["name"]
        try:
            action, stored[name] = apply_object(client, NODE_GROUP_TEMPLATES, obj)
        except KubeError as err:
            stored.pop(name, None)  # its status would describe a spec that was not written
            result.errors.append(f"{name}: {err}")
            log.warning("NodeGroupTemplate %s not written: %s", name, err)
            continue
        if action == "created":
            result.created.append(name)
        elif action == "updated":
            result.updated.append(name)
        else:
            result.unchanged += 1
    for obj in plan.deletes:
        meta = obj["metadata"]
        try:
            # uid precondition: never delete an object re-created meanwhile by someone else
            delete_object(client, NODE_GROUP_TEMPLATES, meta["name"], uid=str(meta.get("uid") or ""))
        except KubeError as err:
            result.errors.append(f"{meta['name']}: {err}")
            log.warning("NodeGroupTemplate %s not deleted: %s", meta["name"], err)
            continue
        log.info("NodeGroupTemplate %s deleted: its node group is gone", meta["name"])
        result.deleted.append(meta["name"])
    skip = set(plan.manual)
    mine = [o for o in outcomes if o.name not in skip and o.name in stored]
    write_statuses(client, mine, stored, now=now, autoscaling_groups=autoscaling_groups, result=result)
    return result


def write_statuses(
    api: ApiLike,
    outcomes: Iterable[GroupOutcome],
    stored: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    now: float | None = None,
    autoscaling_groups: Mapping[str, str] | None = None,
    result: PublishResult | None = None,
) -> PublishResult:
    """PATCHes the status subresource of each outcome's object (ours only) when it differs from
    what is stored. `stored` by name; listed when not given (the discovery-failed path)."""
    client = as_kube_client(api)
    result = result if result is not None else PublishResult()
    if stored is None:
        listed = list_node_group_templates(client)
        stored = {str(o["metadata"]["name"]): o for o in listed}
    now = time.time() if now is None else now
    for outcome in outcomes:
        current = stored.get(outcome.name)
        if current is None or not is_ours(current) or is_manual(current):
            continue
        desired = desired_status(outcome, current, now, (autoscaling_groups or {}).get(outcome.name, ""))
        patch = status_patch(current, desired) if desired is not None else None
        if patch is None:
            continue
        try:
            merge_patch(
                client,
                NODE_GROUP_TEMPLATES,
                outcome.name,
                patch,
                preconditions=Preconditions(uid=str(current["metadata"].get("uid") or "")),
                subresource="status",
            )
        except KubeError as err:
            result.errors.append(f"{outcome.name} status: {err}")
            log.warning("NodeGroupTemplate %s status not written: %s", outcome.name, err)
            continue
        result.statuses.append(outcome.name)
    return result
