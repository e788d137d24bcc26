"""Minimal OpenAPI (JSON) schemas of the prometheus-operator kinds manifests/components/monitoring/
uses, for validating the rendered objects where no package ships the CRDs. Written from the upstream CRDs
(prometheus-operator/prometheus-operator, example/prometheus-operator-crd/
monitoring.coreos.com_prometheusrules.yaml and monitoring.coreos.com_servicemonitors.yaml, v0.76):
the fields fitguard sets, their types, patterns and required keys. Stricter than the CRDs in one
way: a field they do not define is an error here (the API server would prune it silently)."""

from __future__ import annotations

from typing import Any

# the CRDs' pattern for a Prometheus duration (interval, for)
DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA = {"type": "object", "required": ["name", "namespace"]}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_RULE = _object(
    {
        "alert": {"type": "string"},
        "record": {"type": "string"},
        "expr": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "for": {"type": "string", "pattern": DURATION},
        "keep_firing_for": {"type": "string", "pattern": DURATION, "minLength": 1},
        "labels": _STRINGS,
        "annotations": _STRINGS,
    },
    ["expr"],
)
PROMETHEUS_RULE = _object(
    {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": _object(
            {
                "groups": {
                    "type": "array",
                    "items": _object(
                        {
                            "name": {"type": "string", "minLength": 1},
                            "interval": {"type": "string", "pattern": DURATION},
                            "limit": {"type": "integer"},
                            "rules": {"type": "array", "items": _RULE},
                        },
                        ["name"],
                    ),
                }
            },
            [],
        ),
    },
    ["apiVersion", "kind", "metadata", "spec"],
)
SERVICE_MONITOR = _object(
    {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": _METADATA,
        "spec": _object(
            {
                "selector": _object(
                    {
                        "matchLabels": _STRINGS,
                        "matchExpressions": {"type": "array", "items": {"type": "object"}},
                    },
                    [],
                ),
                "namespaceSelector": {"type": "object"},
                "endpoints": {
                    "type": "array",
                    "items": _object(
                        {
                            "port": {"type": "string"},
                            "targetPort": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": DURATION},
                            "scrapeTimeout": {"type": "string", "pattern": DURATION},
                        },
                        [],
                    ),
                },
            },
            ["selector"],
        ),
    },
    ["apiVersion", "kind", "metadata", "spec"],
)
SCHEMAS = {
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
}
