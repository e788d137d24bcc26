"""The manifests' RBAC against what the code calls: a full run of the webhook and of the controller,
each started as the manifests start it (the console script, their args), against the fake API
server, whose request log is then walked call by call. Every call (verb, API group, resource,
subresource, namespace, name) must be allowed to the component's ServiceAccount by the rendered
ClusterRoles and Roles it is bound to, as the apiserver's RBAC authorizer decides it.

How a URL becomes request attributes follows k8s.io/apiserver/pkg/endpoints/request/requestinfo.go
(NewRequestInfo: the verb from the method, list or watch without a name, a name taken from a
`metadata.name=` field selector for list and watch); how rules allow them follows
plugin/pkg/auth/authorizer/rbac/rbac.go (RuleAllows: verb, API group, resource or
resource/subresource with `*` forms, resource names only when the request has a name)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fitguard.demo_seed import seed_moto
from kube.statefile import load_state
from tests.awsfixtures import AwsEnvironment
from tests.fakekube.faults import RequestRecord
from tests.fakekube.routing import Route, resolve
from tests.fakekube.server import FakeKubeServer
from tests.kustomize import render
from tests.tlsfixtures import TlsFiles
from tests.waiting import eventually
from tests.webhook_server import admission_review, post, running

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FITGUARD = str(Path(sys.executable).with_name("fitguard"))
NAMESPACE = "fitguard-system"
EVENTS = "/apis/events.k8s.io/v1/namespaces/"
Obj = dict[str, Any]


@dataclass(frozen=True)
class Attributes:
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        sub = f"/{self.subresource}" if self.subresource else ""
        name = f" {self.name!r}" if self.name else ""
        return f"{self.verb} {self.group or 'core'}/{self.resource}{sub}{name}{where}"


def attributes(record: RequestRecord) -> Attributes:
    """A recorded request as the authorizer sees it."""
    route = resolve(record.path)
    assert isinstance(route, Route), f"not a resource request: {record.method} {record.path}"
    name = route.name or ""
    if route.name is None:
        verb = {"GET": "watch" if record.watch else "list", "POST": "create", "DELETE": "deletecollection"}[
            record.method
        ]
        selector = record.query.get("fieldSelector", "")
        if verb in ("list", "watch") and selector.startswith("metadata.name=") and "," not in selector:
            name = selector.removeprefix("metadata.name=")
    else:
        verb = {
            "GET": "watch" if record.watch else "get",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }[record.method]
    return Attributes(
        verb, route.rt.group, route.rt.plural, route.subresource or "", route.namespace or "", name
    )


def rule_allows(rule: Obj, request: Attributes) -> bool:
    verbs, groups = rule.get("verbs") or [], rule.get("apiGroups") or []
    resources, names = rule.get("resources") or [], rule.get("resourceNames") or []
    combined = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    resource_ok = any(
        r in ("*", combined)
        or (request.subresource and r == f"*/{request.subresource}")
        or (request.subresource and r == f"{request.resource}/*")
        for r in resources
    )
    return (
        ("*" in verbs or request.verb in verbs)
        and ("*" in groups or request.group in groups)
        and resource_ok
        and (not names or request.name in names)
    )


def rules_for(objects: list[Obj], account: str, namespace: str) -> Iterator[tuple[str | None, Obj]]:
    """(namespace the rule holds in or None for everywhere, rule) for one ServiceAccount."""
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
    for binding in objects:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        subjects = binding.get("subjects") or []
        if not any(
            s.get("kind") == "ServiceAccount" and s.get("name") == account and s.get("namespace") == namespace
            for s in subjects
        ):
            continue
        ref = binding["roleRef"]
        bound_in = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        role_namespace = "" if ref["kind"] == "ClusterRole" else binding["metadata"]["namespace"]
        role = roles[(ref["kind"], role_namespace, ref["name"])]
        for rule in role.get("rules") or []:
            yield bound_in, rule


def denied(objects: list[Obj], account: str, calls: Iterable[Attributes]) -> list[str]:
    rules = list(rules_for(objects, account, NAMESPACE))
    return sorted(
        {
            str(call)
            for call in calls
            if not any(
                (where is None or where == call.namespace) and rule_allows(rule, call)
                for where, rule in rules
            )
        }
    )


def test_the_rule_matcher_refuses_what_rbac_refuses() -> None:
    """The walk's own judge: a read-only rule does not allow a create, a rule for one name does not
    allow a create (no name yet) or another name, a namespaced Role holds in its namespace only."""
    role = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]}
    assert rule_allows(role, Attributes("get", "", "secrets", "", "ns", "a"))
    assert not rule_allows(role, Attributes("get", "", "secrets", "", "ns", "b"))
    assert not rule_allows(role, Attributes("create", "", "secrets", "", "ns", ""))
    reader = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}
    assert not rule_allows(reader, Attributes("create", "events.k8s.io", "events", "", "default", ""))
    objects = [
        {"kind": "Role", "metadata": {"name": "r", "namespace": "ns"}, "rules": [reader]},
        {"kind": "RoleBinding", "metadata": {"name": "r", "namespace": "ns"},
         "roleRef": {"kind": "Role", "name": "r"},
         "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": NAMESPACE}]},
    ]  # fmt: skip
    assert denied(objects, "sa", [Attributes("list", "", "namespaces", "", "ns", "")]) == []
    assert denied(objects, "sa", [Attributes("list", "", "namespaces", "", "other", "")]) == [
        "list core/namespaces in other"
    ]


# API discovery (`/api`, `/apis`, `/apis/<group>/<version>`): non-resource URLs every authenticated
# user may GET through the default ClusterRole system:discovery, so no manifest needs to grant them.
DISCOVERY = re.compile(r"/apis?(/[^/]+){0,2}")


def calls(fake_kube: FakeKubeServer) -> list[Attributes]:
    records = fake_kube.requests.find()
    assert all(r.method == "GET" for r in records if DISCOVERY.fullmatch(r.path))
    return [attributes(record) for record in records if not DISCOVERY.fullmatch(record.path)]


def seed(fake_kube: FakeKubeServer, manifests: list[Obj]) -> None:
    """The demo cluster, fitguard's namespace, and the manifests' webhook configurations."""
    fake_kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for obj in load_state(EXAMPLES / "cluster.yaml"):
        fake_kube.apply(obj)
    for obj in manifests:
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            fake_kube.apply(obj)


def container_args(manifests: list[Obj], deployment: str) -> list[str]:
    [obj] = [o for o in manifests if o["kind"] == "Deployment" and o["metadata"]["name"] == deployment]
    [container] = obj["spec"]["template"]["spec"]["containers"]
    return [str(a) for a in container["args"]]


def test_every_call_of_a_full_run_is_allowed_by_the_manifests_rbac(
    fake_kube: FakeKubeServer, aws: AwsEnvironment, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """The webhook in audit mode (its caches, an audit finding written as an Event and then patched
    as a series) and the controller as the base manifests run it plus the priority expander
    (templates, Lease, certificate Secrets and caBundles, scaling plan events): every call allowed."""
    manifests = render(ROOT / "manifests")
    seed(fake_kube, manifests)  # NodeGroupTemplates included: the webhook has something to judge by
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    fake_kube.requests.clear()

    with running(tls_files, ["--kubeconfig", str(kubeconfig), "--mode", "audit"], workers=1) as webhook:
        pod = next(
            o for o in load_state(EXAMPLES / "workloads.yaml") if o["metadata"]["name"] == "scratch-build"
        )
        for uid in ("rbac-1", "rbac-2"):
            conn = webhook.connect()
            assert post(conn, admission_review(pod, uid), "/validate")[1]["response"]["allowed"] is True
            conn.close()
        eventually(lambda: fake_kube.requests.find("PATCH", EVENTS), "the audit event's series patch")
    webhook_calls = calls(fake_kube)

    seed_moto(EXAMPLES / "aws-seed.yaml")
    for template in fake_kube.objects("NodeGroupTemplate"):  # the controller publishes its own
        fake_kube.delete("NodeGroupTemplate", template["metadata"]["name"])
    fake_kube.requests.clear()
    args = [a for a in container_args(manifests, "fitguard-controller") if not a.startswith("--metrics-bind")]
    command = [FITGUARD, *args, "--metrics-bind", "127.0.0.1:0", "--kubeconfig", str(kubeconfig),
               "--cluster-name", "demo", "--interval", "1", "--expander", "priority,least-waste"]  # fmt: skip
    env = {
        **os.environ,
        "POD_NAMESPACE": NAMESPACE,
        "POD_NAME": "controller-0",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    log = (tmp_path / "controller.log").open("w")
    controller = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        eventually(lambda: len(fake_kube.objects("NodeGroupTemplate")) == 3, "templates published", 60)
        eventually(lambda: fake_kube.objects("Secret", NAMESPACE), "certificate Secrets written", 60)
        eventually(
            lambda: all(
                "caBundle" in w["clientConfig"]
                for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                for w in fake_kube.get(kind, "fitguard")["webhooks"]
            ),
            "caBundles injected",
            60,
        )
        eventually(lambda: fake_kube.requests.find("PATCH", EVENTS), "a scaling event's series patch", 60)
    finally:
        controller.send_signal(signal.SIGTERM)
        try:
            controller.wait(timeout=30)
        except subprocess.TimeoutExpired:
            controller.kill()
            controller.wait()
        log.close()
    controller_calls = calls(fake_kube)

    # the walk covered the writes this test is about, so it cannot pass by seeing none of them
    assert {(c.verb, c.resource) for c in webhook_calls} >= {("create", "events"), ("patch", "events")}
    assert {(c.verb, c.resource) for c in controller_calls} >= {
        ("create", "events"), ("patch", "events"), ("create", "nodegrouptemplates"), ("create", "leases"),
        ("create", "secrets"), ("patch", "validatingwebhookconfigurations"), ("get", "configmaps"),
    }  # fmt: skip
    assert denied(manifests, "fitguard-webhook", webhook_calls) == []
    assert denied(manifests, "fitguard-controller", controller_calls) == []
