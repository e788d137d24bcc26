"""Rescue and reclaim: the two deletions fitguard may make, both off by default.

- Rescue (`--rescue-waiting-pods`): a pod bound to a node, still without its branch ENI after the
  release window (it is not coming: an old VPC resource controller or a leak), owned by a controller
  that will replace it (not a DaemonSet: its replacement comes back to the same node), and that never
  started, is deleted so that its replacement is scheduled away from the exhausted node.
- Reclaim (`--reclaim-finished-pods-after=DURATION`): on a node with waiting pods, finished pods
  (owned by a Job, or by nothing) that still hold a branch ENI and finished at least DURATION ago
  are deleted, oldest first, no more than the waiting pods need; the event goes on the Job.

Never a pod that started (rescue), never one labelled `fitguard.io/keep=true`. Every deletion
carries the uid and resourceVersion seen, so a pod that changed since is left alone (409).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capacity.branch_eni import COOLDOWN
from capacity.records import PodRecord, project_pod
from kube.client import ApiLike, KubeError
from kube.events import EventRecorder, ObjectRef
from kube.patch import delete_pod

log = logging.getLogger(__name__)
# Owners that recreate a deleted pod elsewhere; a DaemonSet's replacement returns to the same node.
REPLACING_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "Job", "ReplicationController"})
RECLAIMABLE_OWNERS = frozenset({"Job", ""})


@dataclass(frozen=True)
class Deletion:
    """One pod fitguard decided to delete, and why."""

    action: str  # rescue | reclaim
    namespace: str
    name: str
    uid: str
    resource_version: str
    node: str
    why: str
    owner: ObjectRef | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _controller_owner(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return next((o for o in owners if isinstance(o, Mapping) and o.get("controller")), None)


def _owner_ref(pod: Mapping[str, Any], owner: Mapping[str, Any] | None) -> ObjectRef | None:
    if owner is None:
        return None
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    return ObjectRef(
        kind=str(owner.get("kind") or ""),
        name=str(owner.get("name") or ""),
        namespace=namespace,
        uid=str(owner.get("uid") or ""),
        api_version=str(owner.get("apiVersion") or "v1"),
    )


def _records(pods: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], PodRecord]]:
    result = []
    for pod in pods:
        try:
            result.append((pod, project_pod(pod)))
        except (TypeError, ValueError) as err:
            log.warning("pod %s unreadable, never deleted: %s", (pod.get("metadata") or {}).get("name"), err)
    return result


def _deletion(
    action: str, pod: Mapping[str, Any], record: PodRecord, why: str, owner: ObjectRef | None
) -> Deletion:
    meta = pod.get("metadata") or {}
    return Deletion(
        action,
        record.namespace,
        record.name,
        str(meta.get("uid") or ""),
        str(meta.get("resourceVersion") or ""),
        record.node,
        why,
        owner,
    )


def _waiting_since(record: PodRecord, now: float) -> float:
    return record.scheduled_at or record.created_at or now


def is_waiting(record: PodRecord) -> bool:
    """Bound, asking for a branch ENI, not finished, and none attached yet."""
    return bool(record.node and record.pod_eni and not record.eni_count and not record.terminal)


def rescue_candidates(pods: Iterable[Mapping[str, Any]], *, now: float, window: float) -> list[Deletion]:
    """Pods waiting longer than the release window that may be deleted for their owner to replace."""
    chosen = []
    for pod, record in _records(pods):
        if not is_waiting(record) or record.keep or record.started or record.deleted_at is not None:
            continue
        waited = now - _waiting_since(record, now)
        if waited <= window:
            continue
        owner = _controller_owner(pod)
        if owner is None or owner.get("kind") not in REPLACING_OWNERS:
            continue
        why = (
            f"bound to {record.node} {waited:.0f} s ago and still without a branch ENI, past the "
            f"{window:.0f} s release window: deleted so that {owner.get('kind')} {owner.get('name')} "
            "replaces it on a node with a free branch ENI"
        )
        chosen.append(_deletion("rescue", pod, record, why, _owner_ref(pod, owner)))
    return sorted(chosen, key=lambda d: (d.node, d.namespace, d.name))


def reclaim_candidates(
    pods: Iterable[Mapping[str, Any]],
    *,
    now: float,
    after: float,
    window: float,
    waiting_grace: float,
    release: str = COOLDOWN,
) -> list[Deletion]:
    """Finished pods still holding branch ENIs on nodes where pods wait, oldest first, only as many
    branch ENIs as the waiting pods need."""
    records = _records(pods)
    needed: dict[str, int] = {}
    for _, record in records:
        if is_waiting(record) and now - _waiting_since(record, now) >= waiting_grace:
            needed[record.node] = needed.get(record.node, 0) + record.pod_eni
    holders: dict[str, list[tuple[float, Mapping[str, Any], PodRecord]]] = {}
    for pod, record in records:
        if record.node not in needed or not record.terminal or not record.eni_count or record.keep:
            continue
        if record.deleted_at is not None or record.owner_kind not in RECLAIMABLE_OWNERS:
            continue
        owner = _controller_owner(pod)
        if record.owner_kind and (owner is None or owner.get("kind") != "Job"):
            continue  # owned, but not by a Job controller
        finished = record.finished_at if record.finished_at is not None else now
        still_held = release != COOLDOWN or now < finished + window
        if still_held and now - finished >= after:
            holders.setdefault(record.node, []).append((finished, pod, record))
    chosen = []
    for node, found in sorted(holders.items()):
        freed = 0
        for finished, pod, record in sorted(found, key=lambda f: (f[0], f[2].name)):
            if freed >= needed[node]:
                break
            freed += record.eni_count
            why = (
                f"finished {now - finished:.0f} s ago and still holds {record.eni_count} branch ENI(s) "
                f"on {node}, where {needed[node]} are awaited: deleted to release them"
            )
            chosen.append(_deletion("reclaim", pod, record, why, _owner_ref(pod, _controller_owner(pod))))
    return chosen


def carry_out(
    api: ApiLike,
    deletions: Iterable[Deletion],
    recorder: EventRecorder | None = None,
    *,
    dry_run: bool = False,
) -> list[dict[str, Any]]:
    """Deletes each pod with its uid and resourceVersion as preconditions; one result line each."""
    results = []
    for d in deletions:
        outcome = "planned"
        if not dry_run:
            try:
                outcome = (
                    "deleted"
                    if delete_pod(api, d.namespace, d.name, uid=d.uid, resource_version=d.resource_version)
                    else "gone"
                )
            except KubeError as err:
                outcome = "changed since seen: left alone" if err.conflict else f"failed: {err}"
        log.info("%s %s: %s (%s)", d.action, d.key, outcome, d.why)
        if recorder is not None and outcome in ("deleted", "planned"):
            _record(recorder, d, outcome)
        results.append({"action": d.action, "pod": d.key, "node": d.node, "outcome": outcome, "why": d.why})
    return results


def _record(recorder: EventRecorder, d: Deletion, outcome: str) -> None:
    prefix = "would delete" if outcome == "planned" else "deleted"
    if d.action == "rescue":
        pod = ObjectRef("Pod", d.name, d.namespace, d.uid)
        recorder.warning(pod, "RescuedWaitingPod", f"{prefix} pod: {d.why}", action="Delete")
    elif d.owner is not None:
        recorder.normal(d.owner, "ReclaimedBranchEni", f"{prefix} pod {d.name}: {d.why}", action="Delete")
    else:
        node = ObjectRef("Node", d.node)
        recorder.normal(node, "ReclaimedBranchEni", f"{prefix} pod {d.key}: {d.why}", action="Delete")


def pods_on_node(api: ApiLike, node: str) -> list[dict[str, Any]]:
    """The raw pods bound to one node, fresh (uid and resourceVersion for the preconditions)."""
    from kube.api import list_pods_on_node

    return list_pods_on_node(api, node)
