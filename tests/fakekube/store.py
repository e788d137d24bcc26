"""The object store: etcd's part of the apiserver, with one global resourceVersion and a watch history."""

from __future__ import annotations

import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import errors
from .registry import REGISTRY, ResourceType

Key = tuple[str, str]  # (namespace or "", name): etcd's key order, which is the list order


@dataclass(frozen=True)
class StoredEvent:
    """One change of one object, as retained for watches."""

    type: str  # ADDED | MODIFIED | DELETED
    rv: int
    obj: dict[str, Any]  # the state after the change; for DELETED, the last state
    prev: dict[str, Any] | None  # the state before the change; None for ADDED


def now_timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata", {})
    return (meta.get("namespace") or "", meta["name"])


def _without_system_parts(obj: dict[str, Any]) -> dict[str, Any]:
    # What bumps metadata.generation: any change outside metadata and status.
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


class Store:
    """Thread-safe objects by resource type, a single resourceVersion counter and bounded histories.

    A watch or list from a resourceVersion older than the retained history of its resource type
    is answered 410 Expired, like etcd after compaction.
    """

    def __init__(self, history_size: int = 1000) -> None:
        self.history_size = history_size
        self._changed = threading.Condition(threading.RLock())
        self._rv = 1
        self._objects: dict[ResourceType, dict[Key, dict[str, Any]]] = {rt: {} for rt in REGISTRY}
        self._history: dict[ResourceType, deque[StoredEvent]] = {rt: deque() for rt in REGISTRY}
        # A watch from an RV below the floor has lost events to trimming or compaction.
        self._floor: dict[ResourceType, int] = dict.fromkeys(REGISTRY, 0)

    @property
    def resource_version(self) -> int:
        with self._changed:
            return self._rv

    # --- reads -------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        with self._changed:
            obj = self._objects[rt].get((namespace or "", name))
            if obj is None:
                raise errors.not_found(rt, name)
            return copy.deepcopy(obj)

    def exists(self, rt: ResourceType, namespace: str | None, name: str) -> bool:
        with self._changed:
            return (namespace or "", name) in self._objects[rt]

    def list(self, rt: ResourceType, at: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """Every object of a type in key order, now or as of resourceVersion `at`, and that RV."""
        with self._changed:
            objects = dict(self._objects[rt])
            if at is None or at >= self._rv:
                rv = self._rv
            else:
                self._check_retained(rt, at, f"The resourceVersion {at} is too old for a consistent list")
                rv = at
                # Undo the retained changes newer than `at`, newest first.
                for event in reversed(self._history[rt]):
                    if event.rv <= at:
                        break
                    if event.prev is None:
                        objects.pop(key_of(event.obj), None)
                    else:
                        objects[key_of(event.prev)] = event.prev
            return [copy.deepcopy(objects[key]) for key in sorted(objects)], rv

    def snapshot(self, rt: ResourceType) -> tuple[list[dict[str, Any]], int]:
        """The current objects of a type in key order, uncopied, and the RV they are at.

        Stored objects are never changed in place (every write stores a new dict), so these
        references stay a consistent snapshot while a watch streams them one at a time: the
        server holds a list of references, not a copy of every object (what list() makes).
        Callers must not modify them."""
        with self._changed:
            objects = self._objects[rt]
            return [objects[key] for key in sorted(objects)], self._rv

    # --- writes ------------------------------------------------------------------------------

    def create(self, rt: ResourceType, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """Store a new object (metadata.name set); fills uid, creationTimestamp, generation, RV."""
        with self._changed:
            key = key_of(obj)
            if key in self._objects[rt]:
                raise errors.already_exists(rt, key[1])
            new = copy.deepcopy(obj)
            meta = new.setdefault("metadata", {})
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_timestamp())
            meta["generation"] = meta.get("generation") or 1
            if dry_run:
                meta.pop("resourceVersion", None)
                return new
            self._commit(rt, "ADDED", new, None)
            return copy.deepcopy(new)

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Replace an object by change(copy of current), atomically; a no-op change writes nothing.

        An object marked for deletion whose last finalizer this removes is deleted, as upstream.
        """
        with self._changed:
            current = self._objects[rt].get((namespace or "", name))
            if current is None:
                raise errors.not_found(rt, name)
            new = change(copy.deepcopy(current))
            meta, old_meta = new.setdefault("metadata", {}), current["metadata"]
            for immutable in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
                if immutable in old_meta:
                    meta[immutable] = old_meta[immutable]
            meta["resourceVersion"] = old_meta["resourceVersion"]
            generation = old_meta.get("generation", 1)
            meta["generation"] = generation + (_without_system_parts(new) != _without_system_parts(current))
            if new == current or dry_run:
                return copy.deepcopy(new)
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                self._commit(rt, "DELETED", new, current, remove=True)
            else:
                self._commit(rt, "MODIFIED", new, current)
            return copy.deepcopy(new)

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        check: Callable[[dict[str, Any]], None] | None = None,
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Delete an object, or only mark it if finalizers remain; answers (last state, gone?)."""
        with self._changed:
            current = self._objects[rt].get((namespace or "", name))
            if current is None:
                raise errors.not_found(rt, name)
            if check is not None:
                check(copy.deepcopy(current))
            gone = not current["metadata"].get("finalizers")
            if dry_run:
                return copy.deepcopy(current), gone
            new = copy.deepcopy(current)
            if gone:
                self._commit(rt, "DELETED", new, current, remove=True)
            elif not current["metadata"].get("deletionTimestamp"):
                new["metadata"]["deletionTimestamp"] = now_timestamp()
                self._commit(rt, "MODIFIED", new, current)
            return copy.deepcopy(new), gone

    def _commit(
        self,
        rt: ResourceType,
        event_type: str,
        new: dict[str, Any],
        prev: dict[str, Any] | None,
        *,
        remove: bool = False,
    ) -> None:
        # Called with the lock held: one RV per change, as every etcd write is one revision.
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        if remove:
            del self._objects[rt][key_of(new)]
        else:
            self._objects[rt][key_of(new)] = new
        history = self._history[rt]
        history.append(StoredEvent(event_type, self._rv, copy.deepcopy(new), prev))
        while len(history) > self.history_size:
            self._floor[rt] = history.popleft().rv
        self._changed.notify_all()

    # --- watch history -----------------------------------------------------------------------

    def _check_retained(self, rt: ResourceType, rv: int, message: str) -> None:
        if rv < self._floor[rt]:
            raise errors.expired(f"{message}: {rv} ({self._floor[rt]})")

    def events_after(self, rt: ResourceType, rv: int, wait: float = 0.0) -> tuple[list[StoredEvent], int]:
        """The retained changes newer than rv (waiting up to `wait` s for one) and the RV now.

        Every change of the type up to the returned RV is in the answer or older than rv, so a
        watcher may resume, or bookmark, from it. 410 Expired when rv is older than the history.
        """
        with self._changed:
            self._check_retained(rt, rv, "too old resource version")
            if wait > 0 and not self._newer(rt, rv):
                self._changed.wait_for(lambda: self._newer(rt, rv), timeout=wait)
                self._check_retained(rt, rv, "too old resource version")
            return [event for event in self._history[rt] if event.rv > rv], self._rv

    def _newer(self, rt: ResourceType, rv: int) -> bool:
        history = self._history[rt]
        return bool(history) and history[-1].rv > rv

    def compact(self, rt: ResourceType | None = None) -> None:
        """Forget the history (of one type, or all): watches from any earlier RV now get 410."""
        with self._changed:
            for each in [rt] if rt else REGISTRY:
                self._history[each].clear()
                self._floor[each] = self._rv
            self._changed.notify_all()
