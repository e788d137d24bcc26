"""The one reading of a Kubernetes string map (labels, annotations, ConfigMap data) from an object
that arrived as JSON: every module that needs `dict[str, str]` from such a field calls this."""

from __future__ import annotations

from collections.abc import Mapping


def string_map(raw: object, field: str | None = None) -> dict[str, str]:
    """`raw` as `dict[str, str]`; `None` is `{}`.

    With `field` named the field must be a map (anything else raises TypeError naming it) and its
    keys and values are made strings: for our own objects (templates) and the cached objects of the
    webhook's stores, where a wrong shape is an error to report. Without `field` the reading is
    lenient, as for labels of an object under admission: a non-map is `{}` and an entry that is not
    a string to a string is dropped, since the API server rejects such an object before it exists."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        if field is None:
            return {}
        raise TypeError(f"{field}: expected a map")
    if field is None:
        return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}
    return {str(k): str(v) for k, v in raw.items()}
