"""The VPC resource controller's pod webhook and SecurityGroupPolicy matching, from the case tables
in tests/upstream/ (written from the upstream source, each case citing it), through the real
POST /mutate. Patches are applied with `jsonpatch`, an RFC 6902 implementation independent of
fitguard's, and the whole pod after them is compared with the case's."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest
from flask.testing import FlaskClient

from tests import objects
from tests.upstream import sgp_matching, vpc_rc_pod_webhook
from tests.upstream.sgp_matching import MatchCase
from tests.upstream.vpc_rc_pod_webhook import FARGATE_LABEL, NAMESPACE, POD_ENI, POD_SG, WebhookCase
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import WebhookOptions


def client_for(objects: list[dict[str, Any]]) -> FlaskClient:
    """The webhook over exactly these objects, with fitguard's own guard off (upstream has none)."""
    return create_app(from_objects(objects), WebhookOptions(eni_guard=False)).test_client()


def review(pod: dict[str, Any], uid: str = "uid-1") -> dict[str, Any]:
    return objects.review(pod, uid, namespace=NAMESPACE, with_resource=True)


def mutate(client: FlaskClient, pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The response and the pod after its patch (None when there is no patch), the patch applied
    by jsonpatch."""
    answer = client.post("/mutate", json=review(pod))
    assert answer.status_code == 200, answer.data
    response = answer.get_json()["response"]
    assert response["uid"] == "uid-1"
    if "patch" not in response:
        assert "patchType" not in response
        return response, None
    assert response["patchType"] == "JSONPatch"
    operations = json.loads(base64.b64decode(response["patch"]))
    assert operations, "an empty patch is sent as no patch"
    return response, jsonpatch.apply_patch(pod, operations)


@pytest.mark.parametrize("case", vpc_rc_pod_webhook.CASES, ids=lambda c: c.id)
def test_pod_webhook_case(case: WebhookCase) -> None:
    """Same verdict as upstream's pod webhook and, after the patch, exactly the case's whole pod
    (or no patch at all); a second pass over the patched pod patches nothing (reinvocation)."""
    client = client_for(case.objects)
    response, after = mutate(client, case.pod)
    assert response["allowed"] is case.allowed
    if not case.allowed:
        assert response["status"]["code"] == 403
    assert after == case.after
    if after is not None:
        again, twice = mutate(client, after)
        assert (again["allowed"], twice) == (True, None)


def _pod(case: MatchCase, fargate: bool) -> dict[str, Any]:
    labels = {**case.pod_labels, FARGATE_LABEL: "fp"} if fargate else dict(case.pod_labels)
    meta = {"name": "p", "namespace": NAMESPACE, "labels": labels, "annotations": {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "app"}]}}


def _objects(case: MatchCase) -> list[dict[str, Any]]:
    account = {"metadata": {"namespace": NAMESPACE, "name": "default", "labels": case.sa_labels}}
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "ServiceAccount", **account}]
    for i, (spec, groups) in enumerate(case.policies):
        objects.append(
            {
                "apiVersion": "vpcresources.k8s.aws/v1beta1",
                "kind": "SecurityGroupPolicy",
                "metadata": {"namespace": NAMESPACE, "name": f"p{i}"},
                "spec": {**spec, "securityGroups": {"groupIds": groups}},
            }
        )
    return objects


@pytest.mark.parametrize("case", sgp_matching.CASES, ids=lambda c: c.id)
def test_security_group_policy_matching_case(case: MatchCase) -> None:
    """The groups the pod gets, whole and in order, read from a Fargate pod's pod-sg annotation;
    the same pod as a Linux pod gets pod-eni exactly when the list is not empty."""
    client = client_for(_objects(case))
    fargate = _pod(case, fargate=True)
    _, after = mutate(client, fargate)
    if case.groups:
        assert after == {
            **fargate,
            "metadata": {**fargate["metadata"], "annotations": {POD_SG: ",".join(case.groups)}},
        }
    else:
        assert after is None
    linux = _pod(case, fargate=False)
    _, after = mutate(client, linux)
    if case.groups:
        injected = {"limits": {POD_ENI: "1"}, "requests": {POD_ENI: "1"}}
        assert after == {**linux, "spec": {"containers": [{"name": "app", "resources": injected}]}}
    else:
        assert after is None
