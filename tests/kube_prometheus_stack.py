"""The selectors of the Prometheus that kube-prometheus-stack installs, as its chart renders them with
its default values, for a release of a given name. Read from prometheus-community/helm-charts at
cf408a290aec489277a94450bb3511432477a53a (chart 88.5.3, prometheus-operator v0.93.1):
charts/kube-prometheus-stack/templates/prometheus/prometheus.yaml renders
`serviceMonitorSelector` and `ruleSelector` as `matchLabels: {release: <.Release.Name>}` while
values.yaml leaves `serviceMonitorSelector`/`ruleSelector` empty and sets
`serviceMonitorSelectorNilUsesHelmValues`/`ruleSelectorNilUsesHelmValues` true (its defaults), and
renders both namespace selectors as `{}` (every namespace) while values.yaml leaves them empty.
How prometheus-operator applies them: a label selector over the object's labels (matchLabels
only, here), in the namespaces the namespace selector admits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Selector = Mapping[str, Any]


def prometheus_selectors(release: str) -> dict[str, Selector]:
    """The four selectors of the chart's Prometheus object for a Helm release named `release`."""
    return {
        "serviceMonitorSelector": {"matchLabels": {"release": release}},
        "serviceMonitorNamespaceSelector": {},
        "ruleSelector": {"matchLabels": {"release": release}},
        "ruleNamespaceSelector": {},
    }


def selects(selector: Selector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector with matchLabels alone (an empty selector selects everything); a selector
    with more than that is refused rather than judged wrong."""
    if set(selector) - {"matchLabels"}:
        raise ValueError(f"only matchLabels is modelled: {dict(selector)!r}")
    return all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())


# The kind a selector pair picks, and the pair: (selector over the object, over its namespace).
_PAIRS = {
    "ServiceMonitor": ("serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
    "PrometheusRule": ("ruleSelector", "ruleNamespaceSelector"),
}


def selected_by(release: str, objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(kind, name) of the ServiceMonitors and PrometheusRules the release's Prometheus picks up: the
    object's labels match its selector and its namespace (labelled with its name, as the API server
    labels every namespace) matches the namespace selector."""
    chosen = prometheus_selectors(release)
    picked = set()
    for obj in objects:
        if obj["kind"] not in _PAIRS:
            continue
        own, namespaces = (chosen[key] for key in _PAIRS[obj["kind"]])
        meta = obj["metadata"]
        namespace = {"kubernetes.io/metadata.name": meta.get("namespace", "")}
        if selects(namespaces, namespace) and selects(own, meta.get("labels") or {}):
            picked.add((obj["kind"], meta["name"]))
    return picked
