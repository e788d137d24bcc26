"""kube/api.py, the typed functions through which the code outside kube/ reads and writes the API,
against the fake API server with the real client; and the `make lint` check that nothing outside
kube/ builds an API path, calls the client's verbs itself or takes `api: Any`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from kube import api as kube_api
from kube.client import KubeError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from check_kube_boundary import check, findings  # noqa: E402

NS = "fitguard-system"


def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS},
        "type": "kubernetes.io/tls",
        "data": data,
    }


def test_a_secret_is_none_until_created_then_replaced_whole(fake_kube: Any) -> None:
    """get_secret answers None for an absent Secret; create_secret POSTs, replace_secret PUTs the
    whole object to its own path, and a stale resourceVersion is refused with 409."""
    client = fake_kube.api_client()
    assert kube_api.get_secret(client, NS, "tls") is None
    kube_api.create_secret(client, NS, secret("tls", {"a": "QQ=="}))
    stored = kube_api.get_secret(client, NS, "tls")
    assert stored is not None and stored["data"] == {"a": "QQ=="}
    kube_api.replace_secret(client, NS, "tls", {**stored, "data": {"b": "Qg=="}})
    assert (kube_api.get_secret(client, NS, "tls") or {})["data"] == {"b": "Qg=="}
    with pytest.raises(KubeError) as raised:
        kube_api.replace_secret(client, NS, "tls", {**stored, "data": {"c": "Qw=="}})  # stale version
    assert raised.value.conflict
    writes = [(r.method, r.path) for r in fake_kube.requests.find() if r.method != "GET"]
    assert writes == [
        ("POST", f"/api/v1/namespaces/{NS}/secrets"),
        ("PUT", f"/api/v1/namespaces/{NS}/secrets/tls"),
        ("PUT", f"/api/v1/namespaces/{NS}/secrets/tls"),
    ]


def test_a_webhook_configuration_is_none_when_absent_and_json_patched_when_present(fake_kube: Any) -> None:
    """get_webhook_configuration answers None for an absent configuration; the JSON patch goes to
    the configuration of the kind named, with the JSON-patch content type."""
    client = fake_kube.api_client()
    assert kube_api.get_webhook_configuration(client, "MutatingWebhookConfiguration", "fitguard") is None
    webhook = {
        "name": "validate.fitguard.io",
        "clientConfig": {"service": {"name": "fitguard-webhook", "namespace": NS, "path": "/validate"}},
        "rules": [],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    fake_kube.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "fitguard"},
            "webhooks": [webhook],
        }
    )
    operations = [
        {"op": "test", "path": "/webhooks/0/name", "value": "validate.fitguard.io"},
        {"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "Q0E="},
    ]
    kind = "ValidatingWebhookConfiguration"
    kube_api.json_patch_webhook_configuration(client, kind, "fitguard", operations)
    found = kube_api.get_webhook_configuration(client, "ValidatingWebhookConfiguration", "fitguard")
    assert found is not None
    assert found["webhooks"][0]["clientConfig"] == {**webhook["clientConfig"], "caBundle": "Q0E="}
    [patch] = fake_kube.requests.find("PATCH")
    assert (patch.path, patch.content_type, patch.body) == (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/fitguard",
        "application/json-patch+json",
        operations,
    )


def test_the_boundary_check_names_each_way_of_talking_to_the_api_itself() -> None:
    """A path literal, an f-string path, `.request(`, `.path(` and `api: Any` are each found, on
    their lines; the typed call is not."""
    source = "\n".join(
        [
            "from typing import Any",
            "def f(api: Any, other: Any) -> None:",
            "    api.request('GET', '/api/v1/nodes')",
            "    api.get(PODS.path())",
            "    api.get(f'/apis/{group}/v1')",
            "    list_nodes(api)",
        ]
    )
    assert sorted(findings(source, "x.py")) == [
        (2, "parameter `api: Any`: annotate it ApiLike or KubeClient (kube/client.py)"),
        (3, "'/api/v1/nodes' is an API path: use a function of kube/api.py"),
        (3, ".request(...) on the API: use a function of kube/api.py"),
        (4, ".path(...) on the API: use a function of kube/api.py"),
        (5, "'/apis/' is an API path: use a function of kube/api.py"),
    ]


def test_nothing_outside_kube_talks_to_the_api_itself() -> None:
    """The tree as it is passes the check `make lint` runs."""
    assert check(ROOT) == []
