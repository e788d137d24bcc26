"""What the API server does with a manifest's resource quantities before any webhook sees it, so
that `fitguard check` answers as `kubectl apply` would.

1. Decoding: each quantity is read by resource.Quantity.UnmarshalJSON (apimachinery
   pkg/api/resource/quantity.go), which trims blanks around it (strings.TrimSpace) and then calls
   ParseQuantity. A string ParseQuantity refuses fails the whole request: 400 BadRequest,
   `<Kind> in version "<v>" cannot be handled as a <Kind>: <ParseQuantity's error>`.
2. Validation: every request and limit of every container must not be negative (kubernetes
   pkg/apis/core/validation validation.go ValidateResourceRequirements → validateResourceQuantityValue
   → ValidateNonnegativeQuantity): 422 Invalid, which kubectl prints as `The <Kind> "<name>" is
   invalid: <field>: Invalid value: "<value>": must be greater than or equal to 0`.
3. The object a webhook then receives carries every quantity re-encoded, so the blanks are gone:
   `normalised` returns that object for the webhook's own code.

A quantity beyond what fitguard can count (capacity/quantity.py QuantityOutOfRange) is accepted
here, as the API server accepts it; the webhook's code then says it could not check it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from capacity.quantity import QuantityError, QuantityOutOfRange, parse_quantity
from capacity.quantity_grammar import json_trim
from webhook.validate import TEMPLATE_PATHS

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
BAD_REQUEST, INVALID = 400, 422


@dataclass(frozen=True, slots=True)
class Refusal:
    """The API server's answer to the object: its HTTP code and kubectl's message."""

    code: int
    message: str


def _spec(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str]:
    node: object = obj
    steps = TEMPLATE_PATHS.get(str(obj.get("kind")), ())
    for step in steps:
        node = node.get(step) if isinstance(node, Mapping) else None
    spec = node.get("spec") if isinstance(node, Mapping) else None
    return (spec if isinstance(spec, Mapping) else None), ".".join([*steps, "spec"])


def _quantity_maps(spec: Mapping[str, Any], base: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, the requests or limits map) of every container, in the API's field order."""
    for list_name in CONTAINER_LISTS:
        containers = spec.get(list_name)
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            resources = container.get("resources") if isinstance(container, Mapping) else None
            for kind in ("limits", "requests"):
                values = resources.get(kind) if isinstance(resources, Mapping) else None
                if isinstance(values, dict):
                    yield f"{base}.{list_name}[{i}].resources.{kind}", values


def _check(value: object, field: str, kind: str, version: str, name: str) -> Refusal | None:
    text = json_trim(value) if isinstance(value, str) else value
    try:
        milli = parse_quantity(text, field)
    except QuantityOutOfRange:
        return None
    except QuantityError as err:
        why = err.why or "not a quantity"
        return Refusal(BAD_REQUEST, f'{kind} in version "{version}" cannot be handled as a {kind}: {why}')
    if milli < 0:
        shown = text if isinstance(text, str) else str(value)
        reason = f'Invalid value: "{shown}": must be greater than or equal to 0'
        message = f'The {kind} "{name}" is invalid: {field}: {reason}'
        return Refusal(INVALID, message)
    return None


def normalised(obj: Mapping[str, Any], in_place: bool = False) -> tuple[dict[str, Any], Refusal | None]:
    """The object as a webhook would receive it (quantities trimmed as UnmarshalJSON trims them),
    or the API server's refusal of it: the first bad quantity in field order. A copy, or with
    `in_place` `obj` itself changed (for a caller that holds a copy already)."""
    doc: dict[str, Any] = obj if in_place and isinstance(obj, dict) else copy.deepcopy(dict(obj))
    spec, base = _spec(doc)
    if spec is None:
        return doc, None
    kind = str(doc.get("kind"))
    version = str(doc.get("apiVersion", "")).rpartition("/")[2]
    meta = doc.get("metadata")
    name = str((meta.get("name") or meta.get("generateName") or "") if isinstance(meta, Mapping) else "")
    for path, values in _quantity_maps(spec, base):
        for resource, value in values.items():
            refusal = _check(value, f"{path}[{resource}]", kind, version, name)
            if refusal is not None:
                return doc, refusal
            if isinstance(value, str):
                values[resource] = json_trim(value)
    return doc, None
