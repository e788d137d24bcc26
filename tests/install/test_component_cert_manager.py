"""The cert-manager component: a self-signed Issuer signs a CA Certificate, an Issuer of that CA signs
the webhook's serving Certificate, written into the very Secret the webhook mounts with the keys it
reads, for the Service name the API server calls; both webhook configurations ask cainjector for
that Certificate's CA; the controller no longer manages certificates. The Certificate and Issuer
schemas (compiled from cert-manager's CRDs) are not vacuous."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fitguard.cli import build_parser
from tests.cert_manager_schemas import SCHEMAS, SOURCE
from tests.install_components import BASE, kustomization
from tests.kustomize import build

Obj = dict[str, Any]
NS = "fitguard-system"
CERT_MANAGER_SECRET_KEYS = {"tls.crt", "tls.key", "ca.crt"}  # what cert-manager writes into a TLS Secret


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> list[Obj]:
    return build(kustomization(tmp_path_factory.mktemp("cert-manager"), ("cert-manager",)))


def one(objects: list[Obj], kind: str, name: str) -> Obj:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def flag(args: list[str], name: str) -> str:
    [value] = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"{name}=")]
    return value


def test_the_serving_certificate_lands_where_the_webhook_reads_it(objects: list[Obj]) -> None:
    """Certificate.spec.secretName is the Secret volume mounted at the directory of --tls-cert and
    --tls-key, whose file names are keys cert-manager writes."""
    certificate = one(objects, "Certificate", "fitguard-webhook")
    pod = one(objects, "Deployment", "fitguard-webhook")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    cert, key = Path(flag(container["args"], "--tls-cert")), Path(flag(container["args"], "--tls-key"))
    assert cert.parent == key.parent
    [mount] = [m for m in container["volumeMounts"] if Path(m["mountPath"]) == cert.parent]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"] == "fitguard-webhook-tls"
    assert "items" not in volume["secret"] and "subPath" not in mount  # renewals reach the files
    assert {cert.name, key.name} == {"tls.crt", "tls.key"} and {
        cert.name,
        key.name,
    } <= CERT_MANAGER_SECRET_KEYS


def test_the_certificate_names_the_service_the_api_server_calls(objects: list[Obj]) -> None:
    """The API server verifies the serving certificate for `<service>.<namespace>.svc` of each
    webhook's clientConfig (k8s.io/apiserver pkg/util/webhook/serviceresolver.go)."""
    certificate = one(objects, "Certificate", "fitguard-webhook")
    called = set()
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for webhook in one(objects, kind, "fitguard")["webhooks"]:
            service = webhook["clientConfig"]["service"]
            called.add(f"{service['name']}.{service['namespace']}.svc")
            one(objects, "Service", service["name"])  # the Service exists
    assert called == {f"fitguard-webhook.{NS}.svc"}
    assert certificate["spec"]["dnsNames"] == [
        f"fitguard-webhook.{NS}.svc",
        f"fitguard-webhook.{NS}.svc.cluster.local",
    ]
    assert certificate["spec"]["usages"] == ["server auth", "digital signature"]


def test_the_issuer_chain_resolves_from_self_signed_to_the_serving_certificate(objects: list[Obj]) -> None:
    """serving Certificate -> CA Issuer -> its Secret, written by the CA Certificate (isCA) -> the
    self-signed Issuer; every reference names an object of the component, in fitguard-system."""
    serving = one(objects, "Certificate", "fitguard-webhook")
    ca_issuer = one(objects, "Issuer", serving["spec"]["issuerRef"]["name"])
    [ca_certificate] = [
        o
        for o in objects
        if o["kind"] == "Certificate" and o["spec"]["secretName"] == ca_issuer["spec"]["ca"]["secretName"]
    ]
    root = one(objects, "Issuer", ca_certificate["spec"]["issuerRef"]["name"])
    assert ca_certificate["spec"]["isCA"] is True and "isCA" not in serving["spec"]
    assert root["spec"] == {"selfSigned": {}}
    for obj in (serving, ca_issuer, ca_certificate, root):
        assert obj["metadata"]["namespace"] == NS
    for certificate in (serving, ca_certificate):
        assert certificate["spec"]["issuerRef"]["kind"] == "Issuer"
        assert certificate["spec"]["issuerRef"]["group"] == "cert-manager.io"
    # the controller's own CA Secret is not taken over
    assert ca_certificate["spec"]["secretName"] not in ("fitguard-ca", "fitguard-webhook-tls")


def test_both_configurations_ask_cainjector_for_the_serving_certificates_ca(objects: list[Obj]) -> None:
    """cert-manager.io/inject-ca-from names namespace/name of the serving Certificate, whose Secret's
    ca.crt cainjector copies into each webhook's caBundle."""
    certificate = one(objects, "Certificate", "fitguard-webhook")
    wanted = f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        assert one(objects, kind, "fitguard")["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": wanted
        }


def test_the_controller_stops_managing_certificates(objects: list[Obj]) -> None:
    """Without --manage-certificates the controller neither writes the Secrets nor the caBundle, so
    it does not fight cert-manager and cainjector; its other arguments are the base's."""
    args = one(objects, "Deployment", "fitguard-controller")["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    assert args == ["controller", "--leader-elect", "--metrics-bind=0.0.0.0:8080"]
    assert build_parser("controller").parse_args(args).manage_certificates is False


def test_the_component_refuses_a_base_whose_fourth_argument_moved(tmp_path: Path) -> None:
    """The JSON patch tests the argument before removing it: were --manage-certificates elsewhere,
    the render fails rather than removing another argument."""
    from tests.kustomize import KustomizeError, json_patch

    controller = one(build(kustomization(tmp_path, ())), "Deployment", "fitguard-controller")
    moved = copy.deepcopy(controller)
    moved["spec"]["template"]["spec"]["containers"][0]["args"].insert(1, "--once")
    operations = [
        {"op": "test", "path": "/spec/template/spec/containers/0/args/3", "value": "--manage-certificates"},
        {"op": "remove", "path": "/spec/template/spec/containers/0/args/3"},
    ]
    assert json_patch(controller, operations)["spec"]["template"]["spec"]["containers"][0]["args"][-1] != (
        "--manage-certificates"
    )
    with pytest.raises(KustomizeError):
        json_patch(moved, operations)


def test_the_schemas_name_their_source_and_refuse_what_the_crds_refuse(objects: list[Obj]) -> None:
    """The compiled schemas say where they came from; an unknown field, a private key algorithm the
    CRD's enum lacks, and an issuerRef without a name are refused; the component's own objects pass."""
    assert SOURCE["from"].startswith("cert-manager/cert-manager@") and SOURCE["retrieved"]
    certificate = one(objects, "Certificate", "fitguard-webhook")
    issuer = one(objects, "Issuer", "fitguard-ca")
    schema, issuer_schema = (
        SCHEMAS[("cert-manager.io/v1", "Certificate")],
        SCHEMAS[("cert-manager.io/v1", "Issuer")],
    )
    jsonschema.validate(certificate, schema)
    jsonschema.validate(issuer, issuer_schema)
    unknown, algorithm, no_name = (copy.deepcopy(certificate) for _ in range(3))
    unknown["spec"]["dnsName"] = ["x"]
    algorithm["spec"]["privateKey"]["algorithm"] = "DSA"
    del no_name["spec"]["issuerRef"]["name"]
    for bad in (unknown, algorithm, no_name):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    bad_issuer = copy.deepcopy(issuer)
    del bad_issuer["spec"]["ca"]["secretName"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_issuer, issuer_schema)


def test_the_controller_loses_the_rights_only_certificate_management_used(objects: list[Obj]) -> None:
    """Whole rule lists: the controller's ClusterRole and Role are the base's without the rule on
    the webhook configurations (caBundle) and the two on Secrets; nothing else changes."""
    base = build(BASE)
    for kind, dropped in (
        ("ClusterRole", lambda rule: rule["apiGroups"] == ["admissionregistration.k8s.io"]),
        ("Role", lambda rule: rule["resources"] == ["secrets"]),
    ):
        before = one(base, kind, "fitguard-controller")["rules"]
        assert one(objects, kind, "fitguard-controller")["rules"] == [r for r in before if not dropped(r)]
        assert len(before) - len(one(objects, kind, "fitguard-controller")["rules"]) == (
            1 if kind == "ClusterRole" else 2
        )
