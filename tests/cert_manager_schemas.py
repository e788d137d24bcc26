"""JSON schemas of cert-manager's Certificate and Issuer (cert-manager.io/v1), for validating the
cert-manager component where no package ships the CRDs. The data is the CRDs' openAPIV3Schema as
compiled by scripts/compile_cert_manager_schemas.py into tests/data/cert_manager_schemas.json (its
`_source`: cert-manager/cert-manager, the commit, `deploy/crds/`, the date read), turned here into
JSON Schema the way tests/monitoring_schemas.py writes the prometheus-operator kinds:

- stricter than the API server in one way: a field an object's schema does not define is an error
  here (the API server would prune it silently, and cert-manager would never see it);
- `x-kubernetes-int-or-string` becomes "an integer or a string";
- the CEL rules (`x-kubernetes-validations`, one in Issuer's ACME solver) are not evaluated: the
  component uses no ACME issuer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "cert_manager_schemas.json"
_METADATA = {"type": "object", "required": ["name", "namespace"]}


def to_json_schema(schema: Any) -> Any:
    """A structural openAPIV3Schema as a JSON Schema that refuses undefined fields."""
    if isinstance(schema, list):
        return [to_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    # `properties` maps field names to schemas: converted once, below, not as if it were a schema
    # itself (which, at every level, doubled the work: 4.4 million calls and 4 s at import)
    result = {
        key: to_json_schema(value)
        for key, value in schema.items()
        if key != "properties" and not key.startswith("x-kubernetes-")
    }
    if "properties" in schema:
        result["properties"] = {name: to_json_schema(child) for name, child in schema["properties"].items()}
    if schema.get("x-kubernetes-int-or-string"):
        result.pop("type", None)
        result["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    closed = (
        schema.get("type") == "object"
        and "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    )
    if closed:
        result["additionalProperties"] = False
    return result


def load() -> tuple[dict[str, Any], dict[tuple[str, str], Any]]:
    """(the data file's _source, (apiVersion, kind) -> JSON Schema)."""
    document = json.loads(DATA.read_text())
    schemas = {}
    for key, schema in document["schemas"].items():
        group, version, kind = key.split("/")
        converted = to_json_schema(schema)
        converted["properties"]["apiVersion"] = {"const": f"{group}/{version}"}
        converted["properties"]["kind"] = {"const": kind}
        converted["properties"]["metadata"] = _METADATA
        converted["required"] = sorted(
            {*converted.get("required", []), "apiVersion", "kind", "metadata", "spec"}
        )
        schemas[(f"{group}/{version}", kind)] = converted
    return document["_source"], schemas


SOURCE, SCHEMAS = load()
