"""The supported versions docs/install.md and README.md state agree with each other and with the
manifests: the oldest Kubernetes stated is at least the release in which every API field the
rendered components use is on by default (so adding such a field forces the statement up), and the
cluster-autoscaler and VPC resource controller rows name the commits docs/upstream.md says were read."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.install_components import FEATURES, kustomization
from tests.kustomize import build
from tests.supported_versions import DOCUMENTS, MINIMUM, minimum_kubernetes, stated_rows

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


def _webhooks(objects: list[Obj]) -> Iterator[Obj]:
    for obj in objects:
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            yield from obj["webhooks"]


def _selectors(objects: list[Obj]) -> Iterator[Obj]:
    for webhook in _webhooks(objects):
        yield webhook.get("namespaceSelector") or {}
    for obj in objects:
        if obj["kind"] == "NetworkPolicy":
            for rule in obj["spec"].get("ingress") or []:
                for peer in rule.get("from") or []:
                    yield peer.get("namespaceSelector") or {}


def _selects_namespace_name(selector: Obj) -> bool:
    keys = set(selector.get("matchLabels") or {}) | {e["key"] for e in selector.get("matchExpressions") or []}
    return "kubernetes.io/metadata.name" in keys


# (what, used by the rendered objects, the first release where it is on without a feature gate,
# where that is documented). Beta features on by default count: clusters run them.
FEATURES_BY_RELEASE: list[tuple[str, Callable[[list[Obj]], bool], tuple[int, int], str]] = [
    (
        "webhook matchConditions",
        lambda objects: any("matchConditions" in webhook for webhook in _webhooks(objects)),
        (1, 28),  # beta and on by default in 1.28 (AdmissionWebhookMatchConditions), GA in 1.30
        "Kubernetes documentation, Dynamic Admission Control, Matching requests: matchConditions",
    ),
    (
        "PodDisruptionBudget unhealthyPodEvictionPolicy",
        lambda objects: any(
            o["kind"] == "PodDisruptionBudget" and "unhealthyPodEvictionPolicy" in o["spec"] for o in objects
        ),
        (1, 27),  # beta and on by default in 1.27 (PDBUnhealthyPodEvictionPolicy), GA in 1.31
        "Kubernetes documentation, Specifying a Disruption Budget: Unhealthy Pod Eviction Policy",
    ),
    (
        "namespace selection by kubernetes.io/metadata.name",
        lambda objects: any(_selects_namespace_name(selector) for selector in _selectors(objects)),
        (1, 21),  # the label set on every namespace: beta in 1.21 (NamespaceDefaultLabelName), GA in 1.22
        "Kubernetes documentation, Well-Known Labels: kubernetes.io/metadata.name",
    ),
    (
        "policy/v1 PodDisruptionBudget",
        lambda objects: any(o["apiVersion"] == "policy/v1" for o in objects),
        (1, 21),
        "Kubernetes deprecation guide: policy/v1beta1 PodDisruptionBudget removed in 1.25, v1 since 1.21",
    ),
]


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    """The base with every component but a mode (modes add no field, only an argument)."""
    return build(kustomization(tmp_path_factory.mktemp("all"), FEATURES))


def test_install_md_and_readme_state_the_same_versions() -> None:
    """Both documents' tables give the same versions for the same components."""
    install, readme = (stated_rows(document) for document in DOCUMENTS)
    assert {what: install[what] for what in readme} == readme
    assert set(readme) >= {"Kubernetes", "cluster-autoscaler", "AWS VPC resource controller"}
    assert minimum_kubernetes(DOCUMENTS[0]) == minimum_kubernetes(DOCUMENTS[1]) == MINIMUM


def test_the_stated_minimum_kubernetes_covers_every_field_the_manifests_use(everything: list[Obj]) -> None:
    """The stated minimum is at least the release each used field needs; matchConditions is found
    (the detection is not vacuous)."""
    used = {what: release for what, uses, release, _ in FEATURES_BY_RELEASE if uses(everything)}
    assert "webhook matchConditions" in used
    too_new = {what: f"{r[0]}.{r[1]}" for what, r in used.items() if r > MINIMUM}
    assert too_new == {}


def test_removing_match_conditions_is_noticed(everything: list[Obj]) -> None:
    """The matchConditions detector sees their absence too (a detector that always answers True
    would let the minimum fall below what is used)."""
    stripped = [
        {**o, "webhooks": [{k: v for k, v in w.items() if k != "matchConditions"} for w in o["webhooks"]]}
        if o["kind"].endswith("WebhookConfiguration")
        else o
        for o in everything
    ]
    [detect] = [uses for what, uses, _, _ in FEATURES_BY_RELEASE if what == "webhook matchConditions"]
    assert detect(everything) and not detect(stripped)


@pytest.mark.parametrize(
    ("row", "repository"),
    [
        ("cluster-autoscaler", "kubernetes/autoscaler"),
        ("AWS VPC resource controller", "aws/amazon-vpc-resource-controller-k8s"),
    ],
)
def test_the_modelled_versions_name_the_commits_upstream_md_read(row: str, repository: str) -> None:
    """docs/upstream.md names the commit each behaviour was read at; install.md's row for that
    component names the same commit, so moving to newer upstream code forces the row to follow."""
    upstream = (ROOT / "docs" / "upstream.md").read_text()
    commits = set(re.findall(re.escape(repository) + r"`? at `?([0-9a-f]{8})", upstream))
    assert commits, f"docs/upstream.md names no commit of {repository}"
    install = (ROOT / "docs" / "install.md").read_text()
    [line] = [line for line in install.splitlines() if line.startswith(f"| {row} |")]
    assert {commit for commit in commits if commit not in line} == set()
