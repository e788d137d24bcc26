"""The install components combine: every valid combination (at most one mode, plus any subset of the
other components; 256 in all) renders with the tests' loader and with `kubectl kustomize` to the
same objects, each object validates (built-in kinds against the Kubernetes schemas of the oldest
supported version and the newest known, the custom kinds against their CRDs' schemas), and each
combination is the base plus exactly what its components add. Two mode components are refused."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from fitguard.cli import build_parser
from tests.budget import deep
from tests.install_components import (
    BASE,
    COMPONENTS,
    FEATURES,
    MODES,
    Combination,
    combinations,
    custom_schemas,
    kubectl_sample,
    kustomization,
    name,
    validation_failures,
)
from tests.kustomize import (
    KustomizeError,
    build,
    kubectl_available,
    object_id,
    render_with_kubectl,
)

Obj = dict[str, Any]
Id = tuple[str, str, str, str]
NS = "fitguard-system"
# What each component adds to the base, whole.
ADDS: dict[str, set[Id]] = {
    "warn": set(),
    "enforce": set(),
    "audit": set(),
    "fail-closed": set(),
    "scaling-on": set(),
    "reclaim": {
        ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "fitguard-controller-reclaim"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "fitguard-controller-reclaim"),
    },
    "monitoring": {
        ("v1", "Service", NS, "fitguard-controller-metrics"),
        ("v1", "Service", NS, "fitguard-webhook-metrics"),
        ("monitoring.coreos.com/v1", "ServiceMonitor", NS, "fitguard-controller"),
        ("monitoring.coreos.com/v1", "ServiceMonitor", NS, "fitguard-webhook"),
        ("monitoring.coreos.com/v1", "PrometheusRule", NS, "fitguard"),
    },
    "cert-manager": {
        ("cert-manager.io/v1", "Issuer", NS, "fitguard-selfsigned"),
        ("cert-manager.io/v1", "Certificate", NS, "fitguard-cert-manager-ca"),
        ("cert-manager.io/v1", "Issuer", NS, "fitguard-ca"),
        ("cert-manager.io/v1", "Certificate", NS, "fitguard-webhook"),
    },
    "network-policy": {
        ("networking.k8s.io/v1", "NetworkPolicy", NS, "fitguard-webhook"),
        ("networking.k8s.io/v1", "NetworkPolicy", NS, "fitguard-controller"),
    },
}
WEBHOOK_ARGS: dict[str, list[str]] = {
    "warn": ["--mode=warn"],
    "enforce": ["--mode=enforce"],
    "audit": ["--mode=audit"],
    "fail-closed": ["--failure-policy=fail"],
}
CONTROLLER_ARGS: dict[str, list[str]] = {
    "reclaim": ["--reclaim-finished-pods-after=10m"],
    "scaling-on": ["--scaling=on"],
}
COMBINATIONS = list(combinations())


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[Combination, Path]:
    root = tmp_path_factory.mktemp("combinations")
    return {combination: kustomization(root / name(combination), combination) for combination in COMBINATIONS}


@pytest.fixture(scope="module")
def ours(workspace: dict[Combination, Path]) -> dict[Combination, list[Obj]]:
    """Each combination rendered once by the tests' loader."""
    return {combination: build(directory) for combination, directory in workspace.items()}


@pytest.fixture(scope="module")
def base() -> list[Obj]:
    return build(BASE)


def one(objects: list[Obj], kind: str, name_: str) -> Obj:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name_]
    return found


def args_of(objects: list[Obj], deployment: str) -> list[str]:
    return list(one(objects, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]["args"])


def test_the_components_directory_holds_exactly_the_enumerated_components() -> None:
    """Every directory of manifests/components is a `kind: Component` the combinations enumerate."""
    import yaml

    found = {}
    for directory in sorted(path for path in COMPONENTS.iterdir() if path.is_dir()):
        data = yaml.safe_load((directory / "kustomization.yaml").read_text())
        found[directory.name] = (data["apiVersion"], data["kind"])
    assert found == dict.fromkeys((*MODES, *FEATURES), ("kustomize.config.k8s.io/v1alpha1", "Component"))
    assert len(COMBINATIONS) == 4 * 2 ** len(FEATURES) == len(set(COMBINATIONS))


def test_kubectl_kustomize_renders_the_combinations_as_the_loader_does(
    workspace: dict[Combination, Path], ours: dict[Combination, list[Obj]]
) -> None:
    """The loader, which renders all 256 combinations here, is trusted only while it agrees with
    kustomize: whole objects, for the sample `kubectl_sample` names (every component alone and
    every pair of components together); `make test-deep` renders all 256 with kubectl (a minute
    of CPU, 0.2 to 0.8 s a render)."""
    if not kubectl_available():
        pytest.skip("kubectl is not on PATH")
    sample = list(workspace) if deep() else kubectl_sample()
    with ThreadPoolExecutor(max_workers=2) as pool:
        theirs = dict(zip(sample, pool.map(render_with_kubectl, (workspace[c] for c in sample)), strict=True))
    differing = []
    for combination in sample:
        objects = ours[combination]
        mine = {object_id(obj): obj for obj in objects}
        kustomized = {object_id(obj): obj for obj in theirs[combination]}
        if mine != kustomized:
            differing.append(name(combination))
    assert differing == []


def test_every_object_of_every_combination_validates(ours: dict[Combination, list[Obj]]) -> None:
    """Built-in kinds against the strict Kubernetes schemas of the oldest supported version and the
    newest known; ServiceMonitor, PrometheusRule, Certificate, Issuer and NodeGroupTemplate against
    their CRDs' schemas. Each distinct object is validated once (most recur in many combinations)."""
    distinct: dict[str, Obj] = {}
    for objects in ours.values():
        for obj in objects:
            distinct.setdefault(json.dumps(obj, sort_keys=True), obj)
    failures = validation_failures(list(distinct.values()), custom_schemas(ours[()]))
    kinds = {obj["kind"] for obj in distinct.values()}
    assert {"Certificate", "Issuer", "ServiceMonitor", "PrometheusRule", "NetworkPolicy"} <= kinds
    assert failures == []


def test_each_combination_is_the_base_plus_what_its_components_add(
    ours: dict[Combination, list[Obj]], base: list[Obj]
) -> None:
    """The whole set of object ids: nothing of the base lost, nothing added but the components'."""
    base_ids = {object_id(obj) for obj in base}
    wrong = []
    for combination, objects in ours.items():
        expected = base_ids.union(*(ADDS[component] for component in combination))
        if {object_id(obj) for obj in objects} != expected or len(objects) != len(expected):
            wrong.append(name(combination))
    assert wrong == []


def test_each_combination_passes_exactly_the_arguments_its_components_set(
    ours: dict[Combination, list[Obj]], base: list[Obj]
) -> None:
    """Whole argument lists of both containers, and both parse with their command line: the mode
    and failure policy the webhook runs with, the controller's scaling, reclaim, and certificate
    management (off exactly with cert-manager)."""
    webhook_cli, controller_cli = build_parser("webhook"), build_parser("controller")
    base_webhook, base_controller = args_of(base, "fitguard-webhook"), args_of(base, "fitguard-controller")
    for combination, objects in ours.items():
        webhook, controller = args_of(objects, "fitguard-webhook"), args_of(objects, "fitguard-controller")
        assert webhook == base_webhook + [a for c in combination for a in WEBHOOK_ARGS.get(c, [])], (
            combination
        )
        kept = [
            a for a in base_controller if not ("cert-manager" in combination and a == "--manage-certificates")
        ]
        assert controller == kept + [a for c in combination for a in CONTROLLER_ARGS.get(c, [])], combination
        mode = next((c for c in combination if c in MODES), None)
        parsed = webhook_cli.parse_args(webhook)
        assert (parsed.mode, parsed.failure_policy) == (
            mode or "enforce",
            "fail" if "fail-closed" in combination else "ignore",
        )
        assert controller_cli.parse_args(controller).manage_certificates is (
            "cert-manager" not in combination
        )
        assert "annotations" not in one(objects, "Deployment", "fitguard-webhook")["metadata"]


def test_the_webhook_configurations_follow_fail_closed_and_cert_manager(
    ours: dict[Combination, list[Obj]],
) -> None:
    """failurePolicy Fail exactly with fail-closed; cert-manager's CA injection annotation (and no
    other) exactly with cert-manager; never a caBundle in the manifests."""
    for combination, objects in ours.items():
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            configuration = one(objects, kind, "fitguard")
            expected = (
                {"cert-manager.io/inject-ca-from": f"{NS}/fitguard-webhook"}
                if "cert-manager" in combination
                else None
            )
            assert configuration["metadata"].get("annotations") == expected, (combination, kind)
            for webhook in configuration["webhooks"]:
                assert webhook["failurePolicy"] == ("Fail" if "fail-closed" in combination else "Ignore")
                assert "caBundle" not in webhook["clientConfig"]


def _refused(render: Callable[[Path], list[Obj]], directory: Path) -> str:
    with pytest.raises(KustomizeError) as raised:
        render(directory)
    return str(raised.value)


ONLY_ONE_MODE = "only one mode component"


@pytest.mark.parametrize(("first", "second"), list(itertools.permutations(MODES, 2)))
def test_two_mode_components_are_refused_in_either_order_saying_only_one_mode_component(
    tmp_path: Path, first: str, second: str
) -> None:
    """Modes exclude each other by construction: the second mode component's JSON patch tests the
    key of the base's local-only ConfigMap the first already claimed, so the render fails instead
    of one mode silently winning, and the message (kubectl's kustomize quotes the key it tested)
    says "only one mode component" and names the second component's directory."""
    directory = kustomization(tmp_path, (first, "monitoring", second))
    assert ONLY_ONE_MODE in _refused(build, directory)
    if kubectl_available():
        message = _refused(render_with_kubectl, directory)
        assert ONLY_ONE_MODE in message and f"components/{second}'" in message, message


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_component_over_an_overlay_with_a_mode_is_refused(tmp_path: Path, mode: str) -> None:
    """The claim survives a nesting level: a kustomization whose resource is manifests/overlays/warn
    (the base plus warn, rendered on its own) and that lists another mode component fails the same
    way. The local-only ConfigMap is dropped only from the final print, never between levels."""
    from tests.kustomize import write_kustomization

    overlay = BASE.parent / "overlays" / "warn"
    directory = write_kustomization(tmp_path, [overlay], [COMPONENTS / mode])
    assert ONLY_ONE_MODE in _refused(build, directory)
    if kubectl_available():
        assert ONLY_ONE_MODE in _refused(render_with_kubectl, directory)


def test_the_mode_claim_is_never_applied(ours: dict[Combination, list[Obj]]) -> None:
    """The ConfigMap the mode components meet at is local-only: no combination prints it (nor any
    other object kustomize would keep out of an apply)."""
    printed = {
        name(combination)
        for combination, objects in ours.items()
        for obj in objects
        if obj["kind"] == "ConfigMap" or "config.kubernetes.io/local-config" in str(obj["metadata"])
    }
    assert printed == set()


def test_a_component_listed_as_a_resource_is_refused_as_kustomize_refuses_it(tmp_path: Path) -> None:
    """kustomize wants components under `components:`; the loader refuses the same mistake, and a
    kustomization listed under `components:` too."""
    from tests.kustomize import write_kustomization

    as_resource = write_kustomization(tmp_path / "a", [BASE, COMPONENTS / "monitoring"])
    as_component = write_kustomization(tmp_path / "b", [BASE], [BASE.parent / "crds"])
    for directory in (as_resource, as_component):
        _refused(build, directory)
        if kubectl_available():
            _refused(render_with_kubectl, directory)


def test_a_component_adding_an_object_the_base_has_is_refused(tmp_path: Path) -> None:
    """A component's resources join the parent's: one that adds an object the base already has
    fails the render, with the loader as with kustomize (no silent override)."""
    import yaml

    from tests.kustomize import write_kustomization

    component = tmp_path / "again"
    component.mkdir()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fitguard-system"}}
    (component / "namespace.yaml").write_text(yaml.safe_dump(namespace))
    (component / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
                "resources": ["namespace.yaml"],
            }
        )
    )
    directory = write_kustomization(tmp_path / "top", [BASE], [component])
    assert "appears twice" in _refused(build, directory)
    if kubectl_available():
        _refused(render_with_kubectl, directory)


def test_every_object_of_every_combination_is_labelled_part_of_fitguard(
    ours: dict[Combination, list[Obj]],
) -> None:
    """`app.kubernetes.io/part-of: fitguard` on every object any combination installs, the base's
    (its labels transformer) and each component's (written in their files, since a component's
    labels transformer would also label whatever else the user's kustomization holds), so
    `kubectl get all,cm,secret -A -l app.kubernetes.io/part-of=fitguard` finds all of fitguard."""
    unlabelled = {
        object_id(obj)
        for objects in ours.values()
        for obj in objects
        if (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") != "fitguard"
    }
    assert unlabelled == set()
