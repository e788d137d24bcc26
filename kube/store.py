"""An in-memory store of one kind of object, filled by a list+watch reflector or a state file.

Objects are projected on the way in (`transform`): a webhook keeps compiled policies, the
controller keeps compact pod records, nobody keeps client model objects. Reads never block on the
API: they see the last state the store was given.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from kube.pages import gc_paused

T = TypeVar("T")
Listener = Callable[[str, Any, Any], None]  # (event type, old record or None, new record or None)
log = logging.getLogger(__name__)


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name); ("", "") parts for an object whose metadata is not a map (the store
    then counts it as malformed and goes on, rather than failing the whole list)."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return "", ""
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def project_page(
    project: Callable[[Any], Any], items: Iterable[Any], fresh: dict[str, dict[str, Any]]
) -> None:
    """Each object of a list page projected into `fresh` ({namespace: {name: record}}; None records
    are left out), with the cyclic GC paused as for the decode: the records are new, cycle-free
    objects, and collections triggered while thousands of them are made scan the growing heap for
    nothing (measured: a fifth of the projection's CPU)."""
    with gc_paused():
        for obj in items:
            record = project(obj)
            if record is not None:
                ns, name = object_key(obj)
                fresh.setdefault(ns, {})[name] = record


def identity(obj: Mapping[str, Any]) -> Any:
    return obj


class Store(Generic[T]):
    """Objects of one kind by namespace and name. Thread-safe; readers get consistent snapshots.

    `same`: whether two records of one object say the same to every reader. Where given, a watch
    event whose record is the same as the stored one keeps the stored record and tells the
    listeners `(event, old, old)`: the very object twice, so a listener can skip its work (a pod's
    status changed, but nothing its record reads). Without it, every event is told as it came."""

    def __init__(
        self,
        kind: str,
        transform: Callable[[Mapping[str, Any]], T] = identity,
        same: Callable[[T, T], bool] | None = None,
    ) -> None:
        self.kind = kind
        self._transform = transform
        self._same = same
        self._lock = threading.Lock()
        self._by_namespace: dict[str, dict[str, T]] = {}
        self._listeners: list[Listener] = []
        self.synced = False
        self.resource_version = ""
        self.rejected = 0  # objects the transform refused (malformed), counted, never fatal
        self.version = 0  # bumped on every change: what was derived from an older version is stale

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _project(self, obj: Mapping[str, Any]) -> T | None:
        try:
            return self._transform(obj)
        except (TypeError, ValueError, KeyError, AttributeError) as err:
            self.rejected += 1
            ns, name = object_key(obj)
            log.warning("skipping malformed %s %s/%s: %s", self.kind, ns, name, err)
            return None

    def project(self, obj: Mapping[str, Any]) -> T | None:
        """The record `obj` becomes in this store (None when malformed), without storing it."""
        return self._project(obj)

    def replace(self, objects: Iterable[Mapping[str, Any]], resource_version: str = "") -> None:
        """A full relist: the store becomes exactly `objects`; vanished ones are reported deleted."""
        fresh: dict[str, dict[str, T]] = {}
        project_page(self._project, objects, fresh)
        self.replace_records(fresh, resource_version)

    def replace_records(self, fresh: dict[str, dict[str, T]], resource_version: str = "") -> None:
        """`replace` for records already projected ({namespace: {name: record}}), so a paged list
        need not keep every raw object until its last page arrives."""
        with self._lock:
            old = self._by_namespace
            self._by_namespace = fresh
            self.resource_version = resource_version
            self.version += 1
        if self._listeners:
            # a list's notifications build the listeners' books (150,000 entries at once): with the
            # cyclic GC paused, as for the list's decoding, collections do not rescan them midway
            with gc_paused():
                for ns, names in old.items():
                    for name, record in names.items():
                        if name not in fresh.get(ns, {}):
                            self._notify("DELETED", record, None)
                for ns, names in fresh.items():
                    for name, record in names.items():
                        self._notify("MODIFIED", old.get(ns, {}).get(name), record)
        # synced once the listeners have seen the list too: what they keep (the controller's
        # books) is complete when a caller waiting for `synced` goes on
        self.synced = True

    def apply(self, event_type: str, obj: Mapping[str, Any], resource_version: str = "") -> None:
        """One watch event (ADDED, MODIFIED, DELETED)."""
        ns, name = object_key(obj)
        record = None if event_type == "DELETED" else self._project(obj)
        with self._lock:
            names = self._by_namespace.setdefault(ns, {})
            previous = names.get(name)
            if record is None:
                names.pop(name, None)
            elif previous is not None and self._same is not None and self._same(previous, record):
                record = previous  # unchanged: listeners are told (event, old, old)
            else:
                names[name] = record
            if resource_version:
                self.resource_version = resource_version
            self.version += 1
        if record is None:
            # A deletion, or an object that became malformed: either way it left the store.
            if previous is not None:
                self._notify("DELETED", previous, None)
            return
        self._notify(event_type, previous, record)

    def advance(self, resource_version: str) -> None:
        """A bookmark: the resourceVersion moves on with no object changing."""
        with self._lock:
            self.resource_version = resource_version

    def _notify(self, event_type: str, old: T | None, new: T | None) -> None:
        for listener in self._listeners:
            try:
                listener(event_type, old, new)
            except Exception:  # a listener's bug must not stop the store from updating
                log.exception("listener of %s failed", self.kind)

    def get(self, namespace: str, name: str) -> T | None:
        return self._by_namespace.get(namespace, {}).get(name)

    def items(self, namespace: str | None = None) -> list[T]:
        with self._lock:
            if namespace is not None:
                return list(self._by_namespace.get(namespace, {}).values())
            return [record for names in self._by_namespace.values() for record in names.values()]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(names) for names in self._by_namespace.values())


class Fanout(Store[tuple[Any, ...]]):
    """Several stores of the same kind fed by one reflector (one list, one watch), each with its
    own projection: the controller's books keep node records, discovery keeps a slim node. Reads
    go to the stores themselves; this one holds nothing."""

    def __init__(self, stores: Iterable[Store[Any]]) -> None:
        self.stores = tuple(stores)
        super().__init__(self.stores[0].kind)

    def project(self, obj: Mapping[str, Any]) -> tuple[Any, ...] | None:
        records = tuple(store.project(obj) for store in self.stores)
        return records if any(r is not None for r in records) else None

    def replace_records(
        self, fresh: dict[str, dict[str, tuple[Any, ...]]], resource_version: str = ""
    ) -> None:
        for i, store in enumerate(self.stores):
            store.replace_records(
                {
                    ns: {name: records[i] for name, records in names.items() if records[i] is not None}
                    for ns, names in fresh.items()
                },
                resource_version,
            )
        self.synced = True
        self.resource_version = self.stores[0].resource_version

    def replace(self, objects: Iterable[Mapping[str, Any]], resource_version: str = "") -> None:
        objects = list(objects)
        for store in self.stores:
            store.replace(objects, resource_version)
        self.synced = True
        self.resource_version = self.stores[0].resource_version

    def apply(self, event_type: str, obj: Mapping[str, Any], resource_version: str = "") -> None:
        for store in self.stores:
            store.apply(event_type, obj, resource_version)
        self.resource_version = self.stores[0].resource_version

    def advance(self, resource_version: str) -> None:
        for store in self.stores:
            store.advance(resource_version)
        self.resource_version = self.stores[0].resource_version
