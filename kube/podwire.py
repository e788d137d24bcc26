"""Decoding pod list pages and pod watch lines into only what `capacity.records.project_pod` reads.

A pod as the API lists it is about 5 KB of JSON (env, probes, image digests, managedFields); the
books read a few dozen bytes of it. `json.loads` builds every one of those objects and then drops
them. Here msgspec decodes against a schema of nested TypedDicts that names only the fields the
projection reads: everything else is skipped while parsing, and what is kept is a plain dict with
the same keys and values `json.loads` would give, so `project_pod` runs unchanged on it.

Correctness rests on one rule: the schema decode is trusted only where it gives exactly what the
tolerant path would. Whenever it refuses a pod (a field of an odd type, null where a map is
expected, a string msgspec does not accept), that pod alone is decoded with `json.loads`, and the
projection then gives the same record or the same rejection as before; the other pods of the page
keep the fast path. tests/kube/test_podwire.py compares both paths record for record.

The schema is an edge concern (kube/), not a domain one: capacity/ stays free of the library.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

import msgspec

from capacity.names import IGNORE_LABEL, KEEP_LABEL
from capacity.records import POD_ENI_ANNOTATION
from kube.options import Decoders
from kube.pages import gc_paused

# -- the schema: only what capacity/records.py project_pod, kube/store.py object_key and the
# planner's capacity/demand.py pending_shapes (the cycle's unschedulable pods) read ----------------
# (total=False: an absent key stays absent, so `.get()` answers as it does on the full object)


class _Container(TypedDict, total=False):
    resources: Any  # requests and limits: capacity/requests.py container_requests
    restartPolicy: Any  # a sidecar init container counts differently (pod_requests)


class _Spec(TypedDict, total=False):
    containers: list[_Container] | None
    initContainers: list[_Container] | None
    resources: Any  # pod-level requests
    overhead: Any
    nodeName: Any
    # where an unschedulable pod fits (records._placement keeps them for the guard): small
    nodeSelector: Any
    affinity: Any
    tolerations: Any


class _ContainerStatus(TypedDict, total=False):
    state: Any  # running / terminated.finishedAt (capacity/pod_status.py started, released_at)
    lastState: Any


class _Status(TypedDict, total=False):
    phase: Any
    conditions: Any  # PodScheduled, and every lastTransitionTime (released_at): small, kept whole
    containerStatuses: list[_ContainerStatus] | None
    initContainerStatuses: list[_ContainerStatus] | None
    ephemeralContainerStatuses: list[_ContainerStatus] | None  # their finishedAt too (released_at)


# keys from capacity/ (mypy wants literals in a TypedDict; one definition of each name matters more)
_Labels = TypedDict("_Labels", {KEEP_LABEL: Any, IGNORE_LABEL: Any}, total=False)  # type: ignore[misc]
_Annotations = TypedDict("_Annotations", {POD_ENI_ANNOTATION: Any}, total=False)  # type: ignore[misc]


class _Meta(TypedDict, total=False):
    name: Any
    namespace: Any
    uid: Any
    resourceVersion: Any  # a watch event's resourceVersion (kube/reflector.py)
    creationTimestamp: Any
    deletionTimestamp: Any
    ownerReferences: Any  # small, kept whole
    labels: _Labels | None
    annotations: _Annotations | None


class _Pod(TypedDict, total=False):
    metadata: _Meta | None
    spec: _Spec | None
    status: _Status | None


# `continue` is a Python keyword: the functional form declares it
_ListMeta = TypedDict("_ListMeta", {"resourceVersion": Any, "continue": Any}, total=False)


class _Page(TypedDict, total=False):
    metadata: _ListMeta | None
    items: list[_Pod] | None


class _PageOfRaw(TypedDict, total=False):
    metadata: _ListMeta | None
    items: list[msgspec.Raw] | None


class _Event(TypedDict, total=False):
    type: Any
    object: _Pod | None


_POD = msgspec.json.Decoder(_Pod)
_PODS = msgspec.json.Decoder(list[_Pod])
_RAW_PODS = msgspec.json.Decoder(list[msgspec.Raw])
_PAGE = msgspec.json.Decoder(_Page)
_PAGE_OF_RAW = msgspec.json.Decoder(_PageOfRaw)
_EVENT = msgspec.json.Decoder(_Event)
_REFUSED = (msgspec.DecodeError, msgspec.ValidationError)
_OBJECT_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


def decode_pod(raw: bytes | msgspec.Raw) -> Any:
    """One pod object: the slim dict, or the whole `json.loads` value when the schema refuses it.
    Raises ValueError on JSON that is not valid."""
    try:
        return _POD.decode(raw)
    except _REFUSED:
        return json.loads(bytes(raw))


def decode_items(data: bytes) -> list[Any]:
    """A list body's whole `items` array (kube/liststream.py): the list `decode_pod` gives item by
    item, in one pass unless some pod is odd (then each pod on its own). Raises ValueError when it
    is not a valid JSON array."""
    try:
        return _PODS.decode(data)
    except _REFUSED:
        return [decode_pod(item) for item in _RAW_PODS.decode(data)]


def decode_page(data: bytes) -> Any:
    """A pod list page: {"metadata": {resourceVersion, continue}, "items": [slim pods]}; the whole
    `json.loads` value when the page's own frame is odd. GC paused as kube/reflector.py explains."""
    with gc_paused():
        try:
            return _PAGE.decode(data)  # one pass, nothing kept but the schema's fields
        except _REFUSED:
            return _decode_pod_by_pod(data)


def _decode_pod_by_pod(data: bytes) -> Any:
    """Some pod of the page is odd: each pod on its own, so only that one takes the tolerant path."""
    try:
        page = _PAGE_OF_RAW.decode(data)
    except _REFUSED:
        return json.loads(data)  # the frame itself is odd (or not JSON: ValueError)
    items = page.get("items")
    if items is not None:
        page["items"] = [decode_pod(item) for item in items]
    return page


def decode_event(line: bytes) -> Any:
    """A pod watch line: {"type", "object"}, the object slim for ADDED, MODIFIED and DELETED; the
    whole `json.loads` value for anything else (BOOKMARK, ERROR: small, and read for other fields
    than a pod's) and for a line the schema refuses."""
    try:
        event = _EVENT.decode(line)
    except _REFUSED:
        return json.loads(line)
    kind = event.get("type")
    if isinstance(kind, str) and kind in _OBJECT_EVENTS:
        return event
    return json.loads(line)


# a pod reflector's list item and watch line decoders (ReflectorOptions.decoders)
DECODERS = Decoders(item=decode_pod, line=decode_event, items=decode_items)
