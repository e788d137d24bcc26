"""The network-policy component, judged by what it lets through (NetworkPolicy semantics restated in
`allowed` below): the webhook's admission port from every source, since the API server's address
cannot be known; both pods' metrics port only from pods of the namespace labelled
kubernetes.io/metadata.name=monitoring; nothing else in; egress left open. The documented patch
moves the metrics rule of both policies to another namespace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.install_components import kustomization
from tests.kustomize import build, kubectl_available, object_id, render_with_kubectl

Obj = dict[str, Any]
# A source of traffic: the labels of the namespace of a pod, or None for an address outside the
# cluster's pods (the EKS control plane's ENIs, a host-network apiserver).
MONITORING = {"kubernetes.io/metadata.name": "monitoring"}
SOURCES: dict[str, dict[str, str] | None] = {
    "monitoring": MONITORING,
    "default": {"kubernetes.io/metadata.name": "default"},
    "kube-system": {"kubernetes.io/metadata.name": "kube-system"},
    "observability": {"kubernetes.io/metadata.name": "observability"},
    "outside": None,
}
MOVE_PATCH = {
    "target": {"group": "networking.k8s.io", "version": "v1", "kind": "NetworkPolicy"},
    "patch": (
        "- op: replace\n"
        "  path: /spec/ingress/0/from/0/namespaceSelector/matchLabels\n"
        "  value: {kubernetes.io/metadata.name: observability}\n"
    ),
}


def _matches(selector: Obj, labels: dict[str, str]) -> bool:
    if set(selector) - {"matchLabels"}:
        raise AssertionError(f"this restatement reads matchLabels only: {selector}")
    return all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())


def _peer_allows(peer: Obj, source: dict[str, str] | None, own_namespace: str) -> bool:
    if set(peer) - {"namespaceSelector", "podSelector"}:
        raise AssertionError(f"this restatement reads namespace and pod selectors only: {peer}")
    if source is None:  # not a pod: only an ipBlock peer could admit it
        return False
    if "namespaceSelector" in peer:
        return _matches(peer["namespaceSelector"], source) and _matches(peer.get("podSelector") or {}, {})
    return source.get("kubernetes.io/metadata.name") == own_namespace and _matches(peer["podSelector"], {})


def allowed(objects: list[Obj], deployment: str, port: str, source: dict[str, str] | None) -> bool:
    """Whether ingress to `port` (a container port name) of the Deployment's pods is let through, as
    the NetworkPolicy API defines it (k8s.io/api networking/v1 types.go, NetworkPolicySpec and
    NetworkPolicyIngressRule): pods no Ingress policy selects accept everything; a selected pod
    accepts what any rule of any selecting policy allows; a rule with no `from` allows every
    source, with no `ports` every port; a named port matches the container port of that name."""
    [workload] = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == deployment]
    namespace = workload["metadata"]["namespace"]
    labels = workload["spec"]["template"]["metadata"]["labels"]
    [container] = workload["spec"]["template"]["spec"]["containers"]
    number = {p["name"]: p["containerPort"] for p in container["ports"]}[port]
    selecting = [
        o
        for o in objects
        if o["kind"] == "NetworkPolicy"
        and o["metadata"]["namespace"] == namespace
        and "Ingress" in o["spec"].get("policyTypes", ["Ingress"])
        and _matches(o["spec"]["podSelector"], labels)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress") or []:
            ports = rule.get("ports")
            port_ok = not ports or any(p.get("port") in (port, number) for p in ports)
            peers = rule.get("from")
            source_ok = not peers or any(_peer_allows(peer, source, namespace) for peer in peers)
            if port_ok and source_ok:
                return True
    return False


def reachable(objects: list[Obj]) -> dict[tuple[str, str], set[str]]:
    """(deployment, port) -> the sources let through, for every port of both pods."""
    result = {}
    for deployment in ("fitguard-webhook", "fitguard-controller"):
        [workload] = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == deployment]
        for port in workload["spec"]["template"]["spec"]["containers"][0]["ports"]:
            result[(deployment, port["name"])] = {
                name for name, source in SOURCES.items() if allowed(objects, deployment, port["name"], source)
            }
    return result


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    return build(kustomization(tmp_path_factory.mktemp("netpol"), ("network-policy",)))


def test_admission_from_anywhere_metrics_only_from_monitoring(objects: list[Obj]) -> None:
    """Every port of both pods, whole: admission (https) from every source, the outside included;
    metrics from the monitoring namespace only."""
    assert reachable(objects) == {
        ("fitguard-webhook", "https"): set(SOURCES),
        ("fitguard-webhook", "metrics"): {"monitoring"},
        ("fitguard-controller", "metrics"): {"monitoring"},
    }


def test_without_the_component_everything_is_reachable(tmp_path: Path) -> None:
    """The restatement is not vacuous: with no policy, every source reaches every port."""
    everything = set(SOURCES)
    assert reachable(build(kustomization(tmp_path, ()))) == {
        ("fitguard-webhook", "https"): everything,
        ("fitguard-webhook", "metrics"): everything,
        ("fitguard-controller", "metrics"): everything,
    }


def test_each_pod_has_one_ingress_only_policy_so_egress_stays_open(objects: list[Obj]) -> None:
    """One policy per Deployment, selecting its pods and no other's; policyTypes Ingress only, so
    the controller still reaches AWS and the API server, and the webhook the API server."""
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}
    assert sorted(policies) == ["fitguard-controller", "fitguard-webhook"]
    for name, policy in policies.items():
        assert policy["spec"]["policyTypes"] == ["Ingress"] and "egress" not in policy["spec"]
        selected = [
            o["metadata"]["name"]
            for o in objects
            if o["kind"] == "Deployment"
            and _matches(policy["spec"]["podSelector"], o["spec"]["template"]["metadata"]["labels"])
        ]
        assert selected == [name]


def test_the_documented_patch_moves_both_metrics_rules_to_another_namespace(tmp_path: Path) -> None:
    """docs/install.md's patch (one JSON patch, every NetworkPolicy) lets the observability
    namespace scrape both pods instead of monitoring; kubectl renders it the same where present."""
    directory = kustomization(tmp_path, ("network-policy",), patches=[MOVE_PATCH])
    objects = build(directory)
    assert reachable(objects) == {
        ("fitguard-webhook", "https"): set(SOURCES),
        ("fitguard-webhook", "metrics"): {"observability"},
        ("fitguard-controller", "metrics"): {"observability"},
    }
    if kubectl_available():
        assert {object_id(o): o for o in render_with_kubectl(directory)} == {object_id(o): o for o in objects}
    assert (
        "/spec/ingress/0/from/0/namespaceSelector/matchLabels"
        in (Path(__file__).resolve().parents[2] / "docs" / "install.md").read_text()
    )
