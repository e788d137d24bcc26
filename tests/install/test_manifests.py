"""The kustomize base and every overlay render, validate against the Kubernetes schemas, and install
fitguard safely: least-privilege RBAC without wildcards, webhook configurations that fail open (or
closed in one overlay) and exempt the system namespaces, and a hardened, highly available webhook."""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from fitguard.cli import build_parser
from tests.kustomize import (
    KustomizeError,
    build,
    json_patch,
    kubectl_available,
    object_id,
    render_with_kubectl,
    split_image,
    strategic_merge,
)
from tests.supported_versions import MINIMUM_VALIDATOR_VERSION

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
OVERLAYS = ("enforce", "warn", "audit", "fail-closed", "scaling-on", "reclaim")
VARIANTS = ("base", *OVERLAYS)
# The oldest Kubernetes the manifests promise to install on (docs/install.md, "Supported versions"),
# and the newest the validator knows.
K8S_VERSIONS = (MINIMUM_VALIDATOR_VERSION, kubernetes_validate.latest_version())
NAMESPACE = "fitguard-system"
IMAGE = "ghcr.io/fitguard/fitguard:0.1.0"
EXCLUDED_NAMESPACES = {"kube-system", "kube-node-lease", NAMESPACE}
WORKLOAD_RULES = {
    ("", "replicationcontrollers"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
}
Obj = dict[str, Any]


def directory(variant: str) -> Path:
    return MANIFESTS if variant == "base" else MANIFESTS / "overlays" / variant


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Obj]]:
    return {variant: build(directory(variant)) for variant in VARIANTS}


def one(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def container(objects: list[Obj], deployment: str) -> Obj:
    return one(objects, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0]


def last_flag(args: list[str], flag: str) -> str | None:
    """The value argparse would take: the last `--flag=value`."""
    values = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"{flag}=")]
    return values[-1] if values else None


# --- rendering --------------------------------------------------------------------------------


def test_every_overlay_directory_is_covered() -> None:
    assert {path.name for path in (MANIFESTS / "overlays").iterdir() if path.is_dir()} == set(OVERLAYS)


@pytest.mark.parametrize("variant", VARIANTS)
def test_loader_renders_what_kubectl_kustomize_renders(variant: str) -> None:
    """Our loader is only trusted as long as it agrees with kustomize wherever kubectl exists."""
    if not kubectl_available():
        pytest.skip("kubectl is not on PATH")
    ours = {object_id(obj): obj for obj in build(directory(variant))}
    theirs = {object_id(obj): obj for obj in render_with_kubectl(directory(variant))}
    assert ours.keys() == theirs.keys()
    assert [key for key in ours if ours[key] != theirs[key]] == []


def test_overlays_add_to_the_base_and_remove_nothing(rendered: dict[str, list[Obj]]) -> None:
    base = {object_id(obj) for obj in rendered["base"]}
    for overlay in OVERLAYS:
        assert base <= {object_id(obj) for obj in rendered[overlay]}, overlay


# --- schemas ----------------------------------------------------------------------------------


def _custom_kinds(objects: list[Obj]) -> dict[tuple[str, str], Obj]:
    """(apiVersion, kind) -> openAPIV3Schema of every custom resource version the render defines."""
    kinds = {}
    for crd in (obj for obj in objects if obj["kind"] == "CustomResourceDefinition"):
        spec = crd["spec"]
        for version in spec["versions"]:
            kinds[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    return kinds


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_object_validates_against_the_kubernetes_schemas(
    rendered: dict[str, list[Obj]], variant: str, version: str
) -> None:
    custom = _custom_kinds(rendered[variant])
    for obj in rendered[variant]:
        schema = custom.get((obj["apiVersion"], obj["kind"]))
        if schema is not None:
            jsonschema.validate(obj, schema)  # a custom kind has no upstream schema: its CRD's
        else:
            kubernetes_validate.validate(obj, version, strict=True)


def test_the_validator_rejects_what_the_apiserver_would_reject(rendered: dict[str, list[Obj]]) -> None:
    """Strict validation is not vacuous: a misspelt field of the webhook Deployment fails."""
    deployment = copy.deepcopy(one(rendered["base"], "Deployment", "fitguard-webhook"))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[0], strict=True)


def _structural_problems(schema: Obj, path: str) -> Iterator[str]:
    """Violations of Kubernetes' structural schema rules (apiextensions-apiserver, structural.go)."""
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
    if not schema.get("type") and not int_or_string and not preserve:
        yield f"{path}: no type"
    if "properties" in schema and "additionalProperties" in schema:
        yield f"{path}: both properties and additionalProperties"
    for keyword in ("anyOf", "allOf", "oneOf"):
        for branch in schema.get(keyword) or []:
            if not int_or_string and ({"properties", "items", "additionalProperties"} & set(branch)):
                yield f"{path}.{keyword}: structure inside a logical junctor"
    for name, child in (schema.get("properties") or {}).items():
        yield from _structural_problems(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from _structural_problems(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict) and "anyOf" not in schema["additionalProperties"]:
        yield from _structural_problems(schema["additionalProperties"], f"{path}{{}}")


def _schema_has_path(schema: Obj, json_path: str) -> bool:
    """Whether a printer column's .a.b\\.c path exists in the schema (metadata always does)."""
    parts = [part.replace("\\.", ".") for part in re.split(r"(?<!\\)\.", json_path.lstrip("."))]
    if parts[0] == "metadata":
        return True
    node = schema
    for part in parts:
        properties = node.get("properties") or {}
        if part in properties:
            node = properties[part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return False
    return True


def test_the_crd_is_structural_and_prints_the_columns_people_look_for(rendered: dict[str, list[Obj]]) -> None:
    crds = [obj for obj in rendered["base"] if obj["kind"] == "CustomResourceDefinition"]
    assert [crd["metadata"]["name"] for crd in crds] == ["nodegrouptemplates.fitguard.io"]
    spec = crds[0]["spec"]
    assert crds[0]["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert spec["scope"] == "Cluster" and "ngt" in spec["names"]["shortNames"]
    assert sum(1 for version in spec["versions"] if version["storage"]) == 1
    for version in spec["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        assert schema.get("type") == "object"
        assert list(_structural_problems(schema, version["name"])) == []
        columns = version.get("additionalPrinterColumns") or []
        assert all(_schema_has_path(schema, column["jsonPath"]) for column in columns)
        names = " ".join(column["name"].lower() for column in columns)
        for wanted in ("source", "instance", "ephemeral", "eni", "nodes", "age"):
            assert wanted in names, wanted


# --- namespace and image ----------------------------------------------------------------------


def test_everything_lives_in_fitguard_system_except_the_kube_system_config_readers(
    rendered: dict[str, list[Obj]],
) -> None:
    """Only the readers of the two ConfigMaps kept in kube-system (the VPC CNI's, and
    cluster-autoscaler's priority expander's) live there."""
    one(rendered["base"], "Namespace", NAMESPACE)
    for obj in rendered["reclaim"] + rendered["base"]:
        namespace = obj["metadata"].get("namespace")
        if namespace == "kube-system":
            assert obj["kind"] in ("Role", "RoleBinding") and obj["metadata"]["name"] in (
                "fitguard-vpc-cni-config-reader",
                "fitguard-controller-priority-expander-reader",
            )
        else:
            assert namespace in (None, NAMESPACE), object_id(obj)


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_container_runs_the_one_image(rendered: dict[str, list[Obj]], variant: str) -> None:
    images = {
        c["image"]
        for obj in rendered[variant]
        if obj["kind"] == "Deployment"
        for c in obj["spec"]["template"]["spec"]["containers"]
    }
    assert images == {IMAGE}


# --- RBAC -------------------------------------------------------------------------------------


def _rules_of(objects: list[Obj], service_account: str) -> list[Obj]:
    """Every rule granted to a ServiceAccount of fitguard-system through the bindings rendered."""
    roles = {(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]): obj for obj in objects}
    rules: list[Obj] = []
    for binding in (obj for obj in objects if obj["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        subjects = binding.get("subjects") or []
        if not any(
            s["kind"] == "ServiceAccount" and (s["name"], s["namespace"]) == (service_account, NAMESPACE)
            for s in subjects
        ):
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        role = roles[(ref["kind"], namespace, ref["name"])]
        rules.extend(role.get("rules") or [])
    return rules


def _verbs_on(rules: list[Obj], group: str, resource: str) -> set[str]:
    return {
        verb
        for rule in rules
        if group in rule.get("apiGroups", []) and resource in rule.get("resources", [])
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_rbac_has_no_wildcard(rendered: dict[str, list[Obj]], variant: str) -> None:
    for obj in rendered[variant]:
        if obj["kind"] in ("Role", "ClusterRole"):
            assert "aggregationRule" not in obj
            for rule in obj.get("rules") or []:
                for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                    assert not any("*" in value for value in rule.get(key) or []), (
                        obj["metadata"]["name"],
                        rule,
                    )


def test_the_webhook_reads_what_a_review_needs_and_writes_only_events(
    rendered: dict[str, list[Obj]],
) -> None:
    """The webhook reads namespaces, ServiceAccounts, the VPC CNI ConfigMap, policies, templates,
    nodes, Karpenter's NodePools (every place a pod could run) and their node classes (whether a
    published template is stale); its one write is events.k8s.io
    Events (its warn and audit findings): create, and patch for a series. tests/install/test_rbac.py
    checks these rules against every call a run makes."""
    rules = _rules_of(rendered["base"], "fitguard-webhook")
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    reads = {
        ("", "namespaces"),
        ("", "serviceaccounts"),
        ("", "configmaps"),  # amazon-vpc-cni only, by name
        ("vpcresources.k8s.aws", "securitygrouppolicies"),
        ("fitguard.io", "nodegrouptemplates"),
        ("", "nodes"),
        ("karpenter.sh", "nodepools"),
        # their node classes: a template built from another class is not judged (Part B, issue 27)
        ("karpenter.k8s.aws", "ec2nodeclasses"),
        ("eks.amazonaws.com", "nodeclasses"),
    }
    assert granted == {(g, r, v) for g, r in reads for v in ("get", "list", "watch")} | {
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
    }
    assert all(
        rule.get("resourceNames") == ["amazon-vpc-cni"] for rule in rules if "configmaps" in rule["resources"]
    )


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_controller_patches_only_its_own_webhook_configurations(
    rendered: dict[str, list[Obj]], variant: str
) -> None:
    objects = rendered[variant]
    rules = [
        rule
        for rule in _rules_of(objects, "fitguard-controller")
        if "admissionregistration.k8s.io" in rule["apiGroups"]
    ]
    own = {obj["metadata"]["name"] for obj in objects if obj["kind"].endswith("WebhookConfiguration")}
    assert rules and all(sorted(rule.get("resourceNames") or []) == sorted(own) for rule in rules)
    assert {verb for rule in rules for verb in rule["verbs"]} <= {"get", "patch", "update"}


def test_the_controller_keeps_its_lease_secrets_templates_nodes_and_events(
    rendered: dict[str, list[Obj]],
) -> None:
    rules = _rules_of(rendered["base"], "fitguard-controller")
    assert _verbs_on(rules, "", "pods") == {"get", "list", "watch"}
    assert _verbs_on(rules, "", "nodes") >= {"list", "watch", "patch"}
    assert _verbs_on(rules, "events.k8s.io", "events") >= {"create", "patch"}
    assert _verbs_on(rules, "coordination.k8s.io", "leases") >= {"create", "get", "update"}
    assert _verbs_on(rules, "", "secrets") >= {"create", "get", "update"}
    assert _verbs_on(rules, "fitguard.io", "nodegrouptemplates") >= {
        "create",
        "update",
        "patch",
        "list",
        "watch",
    }
    named_secrets = [rule for rule in rules if "secrets" in rule["resources"] and "get" in rule["verbs"]]
    assert all(rule.get("resourceNames") == ["fitguard-ca", "fitguard-webhook-tls"] for rule in named_secrets)


@pytest.mark.parametrize("variant", VARIANTS)
def test_only_the_reclaim_overlay_lets_the_controller_delete_pods(
    rendered: dict[str, list[Obj]], variant: str
) -> None:
    can_delete = "delete" in _verbs_on(_rules_of(rendered[variant], "fitguard-controller"), "", "pods")
    assert can_delete == (variant == "reclaim")
    for account in ("fitguard-webhook",):
        assert "delete" not in _verbs_on(_rules_of(rendered[variant], account), "", "pods")


# --- webhook configurations -------------------------------------------------------------------


def _selects(selector: Obj, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics for matchLabels and the In/NotIn/Exists/DoesNotExist operators."""
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        matched = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]
        if not matched:
            return False
    return True


def _webhooks(objects: list[Obj]) -> Iterator[tuple[str, Obj]]:
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for webhook in one(objects, kind, "fitguard")["webhooks"]:
            yield kind, webhook


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_configurations_are_safe_by_default_and_fail_closed_only_in_that_overlay(
    rendered: dict[str, list[Obj]], variant: str
) -> None:
    webhooks = list(_webhooks(rendered[variant]))
    assert {kind for kind, _ in webhooks} == {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
    for _, webhook in webhooks:
        assert webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["sideEffects"] == "None"
        assert webhook["matchPolicy"] == "Equivalent"
        assert 3 <= webhook["timeoutSeconds"] <= 5
        assert webhook["failurePolicy"] == ("Fail" if variant == "fail-closed" else "Ignore")
        assert "caBundle" not in webhook["clientConfig"]  # injected by the controller


def test_system_and_opted_out_namespaces_are_never_reviewed_but_labelled_objects_are(
    rendered: dict[str, list[Obj]],
) -> None:
    """System namespaces and namespaces labelled fitguard.io/ignore=true are left out by the
    namespaceSelector; an object's own fitguard.io/ignore label is not an opt-out (no objectSelector
    leaves it out: opting out is the cluster administrator's decision, as Gatekeeper has it)."""
    for _, webhook in _webhooks(rendered["base"]):
        namespaces, objects = webhook["namespaceSelector"], webhook.get("objectSelector", {})
        for name in EXCLUDED_NAMESPACES:
            assert not _selects(namespaces, {"kubernetes.io/metadata.name": name})
        assert not _selects(
            namespaces, {"kubernetes.io/metadata.name": "team-a", "fitguard.io/ignore": "true"}
        )
        assert _selects(namespaces, {"kubernetes.io/metadata.name": "team-a"})
        assert _selects(namespaces, {"kubernetes.io/metadata.name": "team-a", "fitguard.io/ignore": "false"})
        assert _selects(objects, {"app": "x", "fitguard.io/ignore": "true"})
        assert _selects(objects, {"app": "x"})
        expressions = [condition["expression"] for condition in webhook["matchConditions"]]
        assert any(
            "kubernetes.io/config.mirror" in e and "object.metadata.annotations" in e for e in expressions
        )


def _rule_set(webhook: Obj) -> set[tuple[str, str, str]]:
    return {
        (group, resource, operation)
        for rule in webhook["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for operation in rule["operations"]
    }


def test_the_mutating_webhook_sees_pod_creation_only_and_is_reinvoked(rendered: dict[str, list[Obj]]) -> None:
    (webhook,) = one(rendered["base"], "MutatingWebhookConfiguration", "fitguard")["webhooks"]
    assert _rule_set(webhook) == {("", "pods", "CREATE")}
    assert webhook["reinvocationPolicy"] == "IfNeeded"
    assert webhook["clientConfig"]["service"]["path"] == "/mutate"


def test_the_validating_webhook_sees_pods_and_every_pod_template_kind(rendered: dict[str, list[Obj]]) -> None:
    (webhook,) = one(rendered["base"], "ValidatingWebhookConfiguration", "fitguard")["webhooks"]
    expected = {("", "pods", "CREATE")}
    expected |= {(group, resource, op) for group, resource in WORKLOAD_RULES for op in ("CREATE", "UPDATE")}
    assert _rule_set(webhook) == expected
    assert webhook["clientConfig"]["service"]["path"] == "/validate"


def test_the_configurations_call_the_webhook_pods_through_the_service(rendered: dict[str, list[Obj]]) -> None:
    objects = rendered["base"]
    service = one(objects, "Service", "fitguard-webhook")
    deployment = one(objects, "Deployment", "fitguard-webhook")
    (port,) = service["spec"]["ports"]
    assert port["port"] == 443
    assert _selects(
        {"matchLabels": service["spec"]["selector"]}, deployment["spec"]["template"]["metadata"]["labels"]
    )
    (container_port,) = [
        p for p in container(objects, "fitguard-webhook")["ports"] if p["name"] == port["targetPort"]
    ]
    assert container_port["containerPort"] == 8443
    assert last_flag(container(objects, "fitguard-webhook")["args"], "--bind") == "0.0.0.0:8443"
    for _, webhook in _webhooks(objects):
        target = webhook["clientConfig"]["service"]
        assert (target["name"], target["namespace"], target["port"]) == ("fitguard-webhook", NAMESPACE, 443)


# --- the webhook and controller Deployments ---------------------------------------------------


def test_the_webhook_deployment_is_spread_and_protected(rendered: dict[str, list[Obj]]) -> None:
    objects = rendered["base"]
    deployment = one(objects, "Deployment", "fitguard-webhook")
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 3
    assert pod["priorityClassName"] == "system-cluster-critical"
    spread = {c["topologyKey"] for c in pod["topologySpreadConstraints"]}
    assert spread == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    pdb = one(objects, "PodDisruptionBudget", "fitguard-webhook")
    assert _selects(pdb["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"])
    assert pdb["spec"].get("maxUnavailable") == 1 or pdb["spec"].get("minAvailable", 0) >= 2


@pytest.mark.parametrize("deployment", ["fitguard-webhook", "fitguard-controller"])
def test_each_budget_covers_its_deployment_and_lets_unhealthy_pods_go(
    rendered: dict[str, list[Obj]], deployment: str
) -> None:
    """Both PodDisruptionBudgets select their Deployment's pods, allow one eviction at a time and
    evict a pod that is not ready at any time (`unhealthyPodEvictionPolicy: AlwaysAllow`), so a
    crash-looping fitguard pod never holds a node drain."""
    pdb = one(rendered["base"], "PodDisruptionBudget", deployment)
    labels = one(rendered["base"], "Deployment", deployment)["spec"]["template"]["metadata"]["labels"]
    assert _selects(pdb["spec"]["selector"], labels)
    assert {k: v for k, v in pdb["spec"].items() if k != "selector"} == {
        "maxUnavailable": 1,
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }


@pytest.mark.parametrize("deployment", ["fitguard-webhook", "fitguard-controller"])
def test_pods_run_unprivileged(rendered: dict[str, list[Obj]], deployment: str) -> None:
    pod = one(rendered["base"], "Deployment", deployment)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in pod["containers"]:
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_webhook_probes_use_the_plain_status_port_and_shutdown_outlasts_the_apiserver(
    rendered: dict[str, list[Obj]],
) -> None:
    """The kubelet probes /healthz and /readyz over plain HTTP on the port --metrics-bind opens (the
    admission port may demand a client certificate, which a probe does not carry); the Service
    exposes only the admission port."""
    from webhook.server import GRACEFUL_TIMEOUT_SECONDS

    deployment = one(rendered["base"], "Deployment", "fitguard-webhook")
    pod = deployment["spec"]["template"]["spec"]
    c = pod["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"https": 8443, "metrics": 8080}
    assert last_flag(c["args"], "--metrics-bind") == "0.0.0.0:8080"
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    service = one(rendered["base"], "Service", "fitguard-webhook")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["https"]
    command = c["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    delay = int(command[1])
    assert delay >= 10  # endpoint removal reaches kube-proxy and the apiserver in seconds
    assert pod["terminationGracePeriodSeconds"] > delay + GRACEFUL_TIMEOUT_SECONDS


def test_the_webhook_reads_its_certificate_from_the_secret_and_writes_only_to_tmp(
    rendered: dict[str, list[Obj]],
) -> None:
    deployment = one(rendered["base"], "Deployment", "fitguard-webhook")
    pod = deployment["spec"]["template"]["spec"]
    c = pod["containers"][0]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["mountPath"]: mount for mount in c["volumeMounts"]}
    tls_dir = str(Path(last_flag(c["args"], "--tls-cert") or "").parent)
    assert str(Path(last_flag(c["args"], "--tls-key") or "").parent) == tls_dir
    assert volumes[mounts[tls_dir]["name"]]["secret"]["secretName"] == "fitguard-webhook-tls"
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    assert (last_flag(c["args"], "--metrics-dir") or "").startswith("/tmp/")


def test_the_controller_runs_two_replicas_with_leader_election_metrics_and_irsa(
    rendered: dict[str, list[Obj]],
) -> None:
    objects = rendered["base"]
    deployment = one(objects, "Deployment", "fitguard-controller")
    c = container(objects, "fitguard-controller")
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in c["args"]
    assert any(port["name"] == "metrics" for port in c["ports"])
    account = one(objects, "ServiceAccount", deployment["spec"]["template"]["spec"]["serviceAccountName"])
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::")


# --- overlays ---------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_webhook_arguments_parse_and_the_mode_overlays_set_the_mode(
    rendered: dict[str, list[Obj]], variant: str
) -> None:
    args = container(rendered[variant], "fitguard-webhook")["args"]
    parsed = build_parser("webhook").parse_args(args)
    assert parsed.mode == (variant if variant in ("warn", "audit") else "enforce"), shlex.join(args)
    assert parsed.failure_policy == ("fail" if variant == "fail-closed" else "ignore")


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_controller_arguments_parse_with_the_controller_cli(
    rendered: dict[str, list[Obj]], variant: str
) -> None:
    args = container(rendered[variant], "fitguard-controller")["args"]
    build_parser("controller").parse_args(args)


def test_the_scaling_and_reclaim_overlays_switch_those_features_on(rendered: dict[str, list[Obj]]) -> None:
    base = container(rendered["base"], "fitguard-controller")["args"]
    assert last_flag(base, "--scaling") is None and last_flag(base, "--reclaim-finished-pods-after") is None
    assert last_flag(container(rendered["scaling-on"], "fitguard-controller")["args"], "--scaling") == "on"
    reclaim = container(rendered["reclaim"], "fitguard-controller")["args"]
    assert last_flag(reclaim, "--reclaim-finished-pods-after")


# --- the loader itself, for machines without kubectl ------------------------------------------


def test_loader_strategic_merge_merges_keyed_lists_and_replaces_the_rest() -> None:
    target = {
        "webhooks": [{"name": "a", "failurePolicy": "Ignore", "rules": [1]}, {"name": "b"}],
        "x": [1, 2],
    }
    patch = {"webhooks": [{"name": "a", "failurePolicy": "Fail", "rules": [2]}], "x": [3]}
    assert strategic_merge(target, patch) == {
        "webhooks": [{"name": "a", "failurePolicy": "Fail", "rules": [2]}, {"name": "b"}],
        "x": [3],
    }


def test_loader_json_patch_appends_replaces_and_refuses_missing_paths() -> None:
    document = {"args": ["a"], "spec": {"n": 1}}
    patched = json_patch(
        document,
        [{"op": "add", "path": "/args/-", "value": "b"}, {"op": "replace", "path": "/spec/n", "value": 2}],
    )
    assert patched == {"args": ["a", "b"], "spec": {"n": 2}} and document["args"] == ["a"]
    with pytest.raises(KustomizeError):
        json_patch(document, [{"op": "replace", "path": "/spec/missing", "value": 0}])


def test_loader_image_references_keep_registry_ports_apart_from_tags() -> None:
    assert split_image("registry:5000/team/app:1.2@sha256:abc") == (
        "registry:5000/team/app",
        "1.2",
        "sha256:abc",
    )
    assert split_image("registry:5000/team/app") == ("registry:5000/team/app", None, None)
