"""The fake API server's admission chain against scripted HTTPS webhooks: the upstream behaviours
the kubectl end-to-end tests do not reach (reinvocation, timeouts, denials without a message, CEL
errors, dry run and sideEffects, warnings' quoting, rule matching)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3

from tests.fakekube import FakeKubeServer
from tests.fakekube.registry import by_kind
from tests.fakekube.webhooks import Attributes, rule_matches
from tests.tlsfixtures import TlsFiles, server_ssl_context

Answer = Callable[[dict[str, Any]], dict[str, Any]]


class _Webhooks(ThreadingHTTPServer):
    daemon_threads = True
    answers: dict[str, Answer]


class _Handler(BaseHTTPRequestHandler):
    server: _Webhooks

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the fake's admission log records the calls

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["request"]
        response = {"uid": request["uid"], **self.server.answers[self.path.split("?")[0]](request)}
        data = json.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data.encode())
        except (ConnectionError, ssl.SSLEOFError):
            # the fake API server stopped waiting (the timeout test's slow hook): as a real webhook
            # server's, the late answer has no one to go to, and is not an error of the test
            return


@pytest.fixture(scope="module")
def webhooks(tls_files: TlsFiles) -> Iterator[_Webhooks]:
    server = _Webhooks(("127.0.0.1", 0), _Handler)
    server.answers = {}
    context = server_ssl_context(tls_files)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def hook(webhooks: _Webhooks, tls: TlsFiles, name: str, path: str, **fields: Any) -> dict[str, Any]:
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    return {
        "name": name,
        "clientConfig": {
            "url": f"https://localhost:{webhooks.server_address[1]}{path}",
            "caBundle": base64.b64encode(tls.ca_pem.encode()).decode(),
        },
        "rules": [rule],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **fields,
    }


def configure(fake: FakeKubeServer, kind: str, name: str, *hooks: dict[str, Any]) -> None:
    fake.apply(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": list(hooks),
        }
    )


def add_label(key: str) -> Answer:
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if key in (request["object"]["metadata"].get("labels") or {}):
            return {"allowed": True}
        patch = [{"op": "add", "path": f"/metadata/labels/{key}", "value": "yes"}]
        if not request["object"]["metadata"].get("labels"):
            patch = [{"op": "add", "path": "/metadata/labels", "value": {key: "yes"}}]
        return {
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }

    return answer


def create_pod(fake: FakeKubeServer, name: str = "p", query: str = "") -> tuple[int, dict[str, Any], Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    answer = urllib3.PoolManager().request(
        "POST",
        f"{fake.url}/api/v1/namespaces/default/pods{query}",
        body=json.dumps(body),
        headers={"Content-Type": "application/json"},
        retries=False,
    )
    return answer.status, json.loads(answer.data), answer.headers


def test_if_needed_webhook_is_reinvoked_once_after_a_later_webhook_changes_the_object(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """Configurations in name order; the IfNeeded webhook runs again (once) because a later one
    changed the object; the Never one does not; the stored pod carries both patches."""
    webhooks.answers.update({"/a": add_label("a"), "/b": add_label("b")})
    configure(
        fake_kube,
        "MutatingWebhookConfiguration",
        "2-b",
        hook(webhooks, tls_files, "b.test", "/b", reinvocationPolicy="Never"),
    )
    configure(
        fake_kube,
        "MutatingWebhookConfiguration",
        "1-a",
        hook(webhooks, tls_files, "a.test", "/a", reinvocationPolicy="IfNeeded"),
    )
    status, pod, _ = create_pod(fake_kube)
    assert status == 201
    assert pod["metadata"]["labels"] == {"a": "yes", "b": "yes"}
    assert [call.webhook for call in fake_kube.admission.calls()] == ["a.test", "b.test", "a.test"]


def test_a_webhook_is_not_reinvoked_when_nothing_after_it_changed_the_object(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """IfNeeded alone, changing the object itself: no second call (only later changes count)."""
    webhooks.answers["/a"] = add_label("a")
    configure(
        fake_kube,
        "MutatingWebhookConfiguration",
        "a",
        hook(webhooks, tls_files, "a.test", "/a", reinvocationPolicy="IfNeeded"),
    )
    assert create_pod(fake_kube)[0] == 201
    assert [call.webhook for call in fake_kube.admission.calls()] == ["a.test"]


def test_a_denial_without_message_and_a_low_code_is_a_400_without_explanation(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """ToStatusErr: codes under 400 become 400; no message or reason says 'without explanation'."""
    webhooks.answers["/deny"] = lambda request: {"allowed": False, "status": {"code": 200}}
    configure(
        fake_kube, "ValidatingWebhookConfiguration", "v", hook(webhooks, tls_files, "deny.test", "/deny")
    )
    status, body, _ = create_pod(fake_kube)
    assert (status, body) == (
        400,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": 'admission webhook "deny.test" denied the request without explanation',
            "reason": "",
            "code": 400,
        },
    )
    assert fake_kube.objects("Pod", "default") == []


def test_every_validating_webhook_is_asked_and_warnings_are_quoted_headers(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """The first denial answers, but the later webhook is still called; its warnings (quotes
    escaped) reach the client as Warning headers beside the error."""
    webhooks.answers["/deny"] = lambda request: {"allowed": False, "status": {"code": 403, "message": "no"}}
    webhooks.answers["/warn"] = lambda request: {
        "allowed": True,
        "warnings": ['say "hi"', 'say "hi"', "back\\slash"],
    }
    configure(
        fake_kube,
        "ValidatingWebhookConfiguration",
        "v",
        hook(webhooks, tls_files, "deny.test", "/deny"),
        hook(webhooks, tls_files, "warn.test", "/warn"),
    )
    status, body, headers = create_pod(fake_kube)
    assert (status, body["message"]) == (403, 'admission webhook "deny.test" denied the request: no')
    assert headers.getlist("Warning") == ['299 - "say \\"hi\\""', '299 - "back\\\\slash"']
    assert [call.webhook for call in fake_kube.admission.calls()] == ["deny.test", "warn.test"]


@pytest.mark.parametrize(("policy", "expected"), [("Ignore", 201), ("Fail", 500)])
def test_a_webhook_slower_than_its_timeout_follows_the_failure_policy(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles, policy: str, expected: int
) -> None:
    """timeoutSeconds bounds the call; Ignore admits, Fail answers 500 naming the webhook."""

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(2.5)
        return {"allowed": True}

    webhooks.answers["/slow"] = slow
    configure(
        fake_kube,
        "ValidatingWebhookConfiguration",
        "v",
        hook(webhooks, tls_files, "slow.test", "/slow", timeoutSeconds=1, failurePolicy=policy),
    )
    status, body, _ = create_pod(fake_kube)
    assert status == expected
    if expected == 500:
        url = f"https://localhost:{webhooks.server_address[1]}/slow?timeout=1s"
        assert body["message"] == (
            'Internal error occurred: failed calling webhook "slow.test": failed to call webhook: '
            f'Post "{url}": context deadline exceeded'
        )


def test_a_match_condition_that_errors_fails_closed_under_fail(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """A CEL error with failurePolicy Fail is a 403 without calling the webhook; a false condition
    skips the webhook."""
    webhooks.answers["/ok"] = lambda request: {"allowed": True}
    broken = [{"name": "broken", "expression": "object.spec.nothing == 1"}]
    configure(
        fake_kube,
        "ValidatingWebhookConfiguration",
        "v",
        hook(webhooks, tls_files, "ok.test", "/ok", failurePolicy="Fail", matchConditions=broken),
    )
    status, body, _ = create_pod(fake_kube)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"].startswith('pods "p" is forbidden: broken: evaluation failed')
    assert fake_kube.admission.calls() == []
    skip = [{"name": "never", "expression": "false"}]
    configure(
        fake_kube,
        "ValidatingWebhookConfiguration",
        "v",
        hook(webhooks, tls_files, "ok.test", "/ok", failurePolicy="Fail", matchConditions=skip),
    )
    assert create_pod(fake_kube)[0] == 201
    assert fake_kube.admission.calls() == []


def test_dry_run_reaches_only_webhooks_without_side_effects(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """dryRun=All: sideEffects None is called with dryRun true; sideEffects Some is a 400."""
    webhooks.answers["/ok"] = lambda request: {"allowed": True}
    configure(fake_kube, "ValidatingWebhookConfiguration", "v", hook(webhooks, tls_files, "ok.test", "/ok"))
    assert create_pod(fake_kube, query="?dryRun=All")[0] == 201
    assert [(c.webhook, c.request["dryRun"], c.request["options"]) for c in fake_kube.admission.calls()] == [
        ("ok.test", True, {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]})
    ]
    assert fake_kube.objects("Pod", "default") == []
    configure(
        fake_kube,
        "ValidatingWebhookConfiguration",
        "v",
        hook(webhooks, tls_files, "some.test", "/ok", sideEffects="Some"),
    )
    status, body, _ = create_pod(fake_kube, query="?dryRun=All")
    assert (status, body["message"]) == (400, 'admission webhook "some.test" does not support dry run')


def _attrs(kind: str, namespace: str, subresource: str = "", operation: str = "CREATE") -> Attributes:
    return Attributes(operation, by_kind(kind), subresource, namespace, "x", {}, None, False, {})


@pytest.mark.parametrize(
    ("rule", "attrs", "matches"),
    [
        ({"scope": "Namespaced"}, _attrs("Pod", "default"), True),
        (
            {"scope": "Namespaced", "resources": ["namespaces"]},
            _attrs("Namespace", "x"),
            False,
        ),  # a namespace is cluster-scoped
        ({"scope": "Cluster", "resources": ["namespaces"]}, _attrs("Namespace", "x"), True),
        ({"scope": "Cluster"}, _attrs("Pod", "default"), False),
        ({}, _attrs("Pod", "default", "status"), False),  # pods does not cover pods/status
        ({"resources": ["pods/*"]}, _attrs("Pod", "default", "status"), True),
        ({"resources": ["*"]}, _attrs("Pod", "default"), True),
        ({"operations": ["UPDATE"]}, _attrs("Pod", "default"), False),
        ({"operations": ["*"]}, _attrs("Pod", "default", operation="DELETE"), True),
        ({"apiGroups": ["apps"]}, _attrs("Pod", "default"), False),
        ({"apiVersions": ["v2"]}, _attrs("Pod", "default"), False),
    ],
)
def test_rules_match_as_upstream(rule: dict[str, Any], attrs: Attributes, matches: bool) -> None:
    """rules.go Matcher: scope (namespaces are cluster-scoped), operation, group, version,
    resource/subresource with wildcards."""
    base = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
    assert rule_matches({**base, **rule}, attrs) is matches


def test_no_configuration_no_admission(fake_kube: FakeKubeServer) -> None:
    """Without webhook configurations writes are stored as sent and nothing is reviewed."""
    assert create_pod(fake_kube)[0] == 201
    assert fake_kube.admission.calls() == []


def test_a_namespace_is_judged_by_its_own_new_labels_and_named_as_the_requests_namespace(
    fake_kube: FakeKubeServer, webhooks: _Webhooks, tls_files: TlsFiles
) -> None:
    """Creating a Namespace: the namespaceSelector sees the new labels (and the
    kubernetes.io/metadata.name label every namespace carries); the review names it as namespace."""
    webhooks.answers["/ok"] = lambda request: {"allowed": True}
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["namespaces"]}
    selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["quiet"]},
            {"key": "team", "operator": "In", "values": ["a"]},
        ]
    }
    configure(
        fake_kube,
        "ValidatingWebhookConfiguration",
        "v",
        hook(webhooks, tls_files, "ns.test", "/ok", rules=[rule], namespaceSelector=selector),
    )
    pool = urllib3.PoolManager()
    for name, labels in (("loud", {"team": "a"}), ("quiet", {"team": "a"}), ("other", {"team": "b"})):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        answer = pool.request(
            "POST",
            f"{fake_kube.url}/api/v1/namespaces",
            body=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        assert answer.status == 201
    assert [(c.webhook, c.request["name"], c.request["namespace"]) for c in fake_kube.admission.calls()] == [
        ("ns.test", "loud", "loud")
    ]
