"""Whether a state describes any capacity to judge a pod against.

A state with nothing to fit pods into (an empty file, an empty List, only malformed templates, the
export of a cluster whose controller has published nothing) would make every verdict "not checked"
and let CI pass on a broken input; `fitguard check` refuses such a state instead, and
`fitguard state export` warns when it writes one.

Each kind that describes capacity is one entry of CAPACITY_KINDS, with the projection the webhook
applies to it (a malformed object is one the webhook would skip). A state is usable when at least
one object of any of these kinds projects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from capacity.names import TEMPLATE_KIND
from capacity.template import NodeGroupTemplate

# (kind, its projection): what the webhook's stores do with such an object (webhook/cluster.py)
CAPACITY_KINDS: tuple[tuple[str, Callable[[Mapping[str, Any]], object]], ...] = (
    (TEMPLATE_KIND, NodeGroupTemplate.from_object),
)
# the errors kube/store.py Store counts as a malformed object
MALFORMED = (TypeError, ValueError, KeyError, AttributeError)


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def missing_capacity(objects: Iterable[Mapping[str, Any]]) -> str | None:
    """Why the state describes no capacity to judge against; None when it describes some."""
    kinds = dict(CAPACITY_KINDS)
    seen = 0
    first = ""
    for obj in objects:
        project = kinds.get(str(obj.get("kind")))
        if project is None:
            continue
        seen += 1
        try:
            project(obj)
        except MALFORMED as err:
            first = first or f"the first, {_name(obj)}: {err}"
            continue
        return None
    names = " or ".join(f"{kind}s" for kind, _ in CAPACITY_KINDS)
    if not seen:
        return f"no {names} in it: nothing to judge pods against"
    return f"all {seen} {names} in it are malformed ({first}): nothing to judge pods against"
