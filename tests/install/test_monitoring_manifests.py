"""manifests/components/monitoring/ (a kustomize Component) renders on top of the base (our loader and
`kubectl kustomize` agree), its Services validate
against the Kubernetes schemas and selects the controller's pods on a port they expose, and its
ServiceMonitor and PrometheusRule validate against their CRDs' schemas (tests/monitoring_schemas.py),
kube-prometheus-stack's default selectors pick them up (tests/kube_prometheus_stack.py), and the
webhook alerts watch the job prometheus-operator gives the webhook's targets."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from tests.kube_prometheus_stack import selected_by, selects
from tests.kustomize import (
    build,
    kubectl_available,
    object_id,
    render_with_kubectl,
    write_kustomization,
)
from tests.monitoring_schemas import SCHEMAS

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "manifests" / "base"
MONITORING = ROOT / "manifests" / "components" / "monitoring"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def with_monitoring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kustomization of the base plus the monitoring component."""
    return write_kustomization(tmp_path_factory.mktemp("monitoring"), [BASE], [MONITORING])


def added(directory: Path) -> list[Obj]:
    """What the monitoring component adds to the base."""
    base = {object_id(obj) for obj in build(BASE)}
    return [obj for obj in build(directory) if object_id(obj) not in base]


def test_monitoring_renders_the_same_with_kubectl(with_monitoring: Path) -> None:
    """Our loader is trusted as long as it agrees with kustomize where kubectl exists."""
    if not kubectl_available():
        pytest.skip("kubectl is not on PATH")
    ours = {object_id(obj): obj for obj in build(with_monitoring)}
    theirs = {object_id(obj): obj for obj in render_with_kubectl(with_monitoring)}
    assert ours == theirs


def test_every_object_validates(with_monitoring: Path) -> None:
    """Built-in kinds against the Kubernetes schemas, the operator's kinds against their CRDs'."""
    objects = added(with_monitoring)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("PrometheusRule", "fitguard"),
        ("Service", "fitguard-controller-metrics"),
        ("Service", "fitguard-webhook-metrics"),
        ("ServiceMonitor", "fitguard-controller"),
        ("ServiceMonitor", "fitguard-webhook"),
    ]
    for obj in objects:
        schema = SCHEMAS.get((obj["apiVersion"], obj["kind"]))
        if schema is not None:
            jsonschema.validate(obj, schema)
        else:
            kubernetes_validate.validate(obj, kubernetes_validate.latest_version(), strict=True)


def test_the_schemas_reject_what_the_crds_would(with_monitoring: Path) -> None:
    """A malformed duration and a rule without expr are refused: the schemas are not empty."""
    rule = next(o for o in added(with_monitoring) if o["kind"] == "PrometheusRule")
    bad_for: dict[str, Any] = copy.deepcopy(rule)
    bad_for["spec"]["groups"][0]["rules"][0]["for"] = "ten minutes"
    no_expr: dict[str, Any] = copy.deepcopy(rule)
    del no_expr["spec"]["groups"][0]["rules"][0]["expr"]
    for bad in (bad_for, no_expr):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMAS[("monitoring.coreos.com/v1", "PrometheusRule")])


@pytest.mark.parametrize("component", ["fitguard-controller", "fitguard-webhook"])
def test_each_service_monitor_reaches_its_components_metrics_port(
    with_monitoring: Path, component: str
) -> None:
    """ServiceMonitor -> Service (labels, port name) -> the component's pods (selector, the container
    port that serves /metrics over plain HTTP)."""
    objects = build(with_monitoring)
    monitor = next(o for o in objects if (o["kind"], o["metadata"]["name"]) == ("ServiceMonitor", component))
    service = next(
        o for o in objects if (o["kind"], o["metadata"]["name"]) == ("Service", f"{component}-metrics")
    )
    deployment = next(o for o in objects if (o["kind"], o["metadata"]["name"]) == ("Deployment", component))
    labels = service["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in service["spec"]["ports"]]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(pod_labels.get(k) == v for k, v in service["spec"]["selector"].items())
    ports = {
        p["name"]: p["containerPort"]
        for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    assert ports[service["spec"]["ports"][0]["targetPort"]] == 8080


MONITORING_OBJECTS = {
    ("ServiceMonitor", "fitguard-controller"),
    ("ServiceMonitor", "fitguard-webhook"),
    ("PrometheusRule", "fitguard"),
}


def test_kube_prometheus_stacks_default_selectors_pick_up_every_monitor_and_the_rules(
    with_monitoring: Path,
) -> None:
    """A kube-prometheus-stack release named kube-prometheus-stack, with the chart's default values,
    selects both ServiceMonitors and the PrometheusRule (their `release` label), and a release of
    another name none of them: the label is what selects them, nothing else."""
    objects = build(with_monitoring)
    assert selected_by("kube-prometheus-stack", objects) == MONITORING_OBJECTS
    assert selected_by("monitoring", objects) == set()


def test_the_webhook_alerts_watch_the_job_the_operator_names_after_the_webhooks_metrics_service(
    with_monitoring: Path,
) -> None:
    """prometheus-operator sets a ServiceMonitor target's job to the name of the Service it was found
    through (pkg/prometheus/promcfg.go, generateServiceMonitorConfig): the job both webhook alerts
    name is the Service the webhook's ServiceMonitor selects, and that Service selects the webhook's
    pods. A renamed Service would leave `absent()` firing for ever and `up == 0` never."""
    objects = build(with_monitoring)
    monitor = next(
        o for o in objects if (o["kind"], o["metadata"]["name"]) == ("ServiceMonitor", "fitguard-webhook")
    )
    [service] = [
        o
        for o in objects
        if o["kind"] == "Service" and selects(monitor["spec"]["selector"], o["metadata"].get("labels") or {})
    ]
    webhook = next(
        o for o in objects if (o["kind"], o["metadata"]["name"]) == ("Deployment", "fitguard-webhook")
    )
    assert selects(
        {"matchLabels": service["spec"]["selector"]}, webhook["spec"]["template"]["metadata"]["labels"]
    )
    rules = {
        r["alert"]: r
        for o in objects
        if o["kind"] == "PrometheusRule"
        for g in o["spec"]["groups"]
        for r in g["rules"]
    }
    job = service["metadata"]["name"]
    assert rules["FitguardWebhookDown"]["expr"] == f'up{{job="{job}"}} == 0'
    assert rules["FitguardWebhookNotScraped"]["expr"] == f'absent(up{{job="{job}"}})'
