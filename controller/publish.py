"""Publishing NodeGroupTemplate objects: one per discovered group, written only when it changed,
deleted when its group is gone; objects marked manual (by a person) are never touched."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.discovery import GroupOutcome
from kube.client import NODE_GROUP_TEMPLATES, KubeClient, KubeError, as_kube_client
from kube.patch import apply_object, delete_object

log = logging.getLogger(__name__)
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "fitguard-controller"
MANUAL_MARK = "fitguard.io/manual"  # label or annotation "true": a person owns this object
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
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def desired_objects(outcomes: Iterable[GroupOutcome]) -> list[dict[str, Any]]:
    """The object of each group that has a template, labelled as ours, with the stale reason."""
    objects = []
    for outcome in outcomes:
        if outcome.template is None:
            continue
        obj = outcome.template.to_object()
        obj["metadata"]["labels"] = {MANAGED_BY_LABEL: MANAGED_BY}
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


def publish(api: KubeClient | Any, outcomes: Iterable[GroupOutcome]) -> PublishResult:
    """Lists the NodeGroupTemplates, then creates, replaces or deletes as planned. API errors on
    one object are reported and do not stop the others."""
    client = as_kube_client(api)
    existing = (client.get(NODE_GROUP_TEMPLATES.path()) or {}).get("items") or []
    desired = desired_objects(outcomes)
    plan = plan_publish(desired, existing)
    result = PublishResult(unchanged=len(desired) - len(plan.writes) - len(plan.manual))
    for name in plan.manual:
        log.info("NodeGroupTemplate %s is marked manual: not touched", name)
    for obj in plan.writes:
        name = obj["metadata"]["name"]
        try:
            action, _ = apply_object(client, NODE_GROUP_TEMPLATES, obj)
        except KubeError as err:
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
    return result
