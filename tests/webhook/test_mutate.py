"""POST /mutate through the Flask app: the VPC resource controller's pod webhook cases, the
exhausted-node guard, exemptions, modes, and every answer of the HTTP contract."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from flask.testing import FlaskClient

from capacity.names import EXHAUSTED_LABEL
from webhook import status
from webhook.app import create_app
from webhook.cluster import ClusterView, from_objects
from webhook.mutate import FARGATE as FARGATE_TYPE
from webhook.mutate import FARGATE_LABEL as FARGATE
from webhook.mutate import FARGATE_SG_ANNOTATION as POD_SG
from webhook.mutate import (
    HOST_NETWORK,
    LINUX,
    REQUIRED,
    WINDOWS,
    Injected,
    Injection,
    Mutation,
    PodError,
    check_pod,
    escape,
    plan,
)
from webhook.mutate import apply_patch as own_apply_patch
from webhook.mutate import review as mutate_review
from webhook.review import MAX_BODY_BYTES, Verdict, WebhookOptions


def apply_patch(document: Any, patch: list[dict[str, Any]]) -> Any:
    """The webhook's patch applied by an independent RFC 6902 implementation (jsonpatch), not by
    fitguard's own applier; a patch that does not apply cleanly to the pod fails the test."""
    return jsonpatch.apply_patch(document, patch, in_place=False)


CASES_FILE = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "conformance"
    / "vpc-resource-controller-pod-webhook.json"
)
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
GUARD = {"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}


def _cases(*groups: str) -> list[Any]:
    if not CASES_FILE.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{CASES_FILE} is absent"))]
    cases = [c for c in json.loads(CASES_FILE.read_text()) if c["group"] in groups]
    return [
        pytest.param(c, id=f"{c['id']}-{(c.get('source') or {}).get('case') or c['note'][:40]}")
        for c in cases
    ]


def client_for(objects: list[dict[str, Any]], **config: Any) -> FlaskClient:
    # /validate is the lead's handler, tested on its own: here only its HTTP envelope is checked
    app = create_app(from_objects(objects), WebhookOptions(**config))
    return app.test_client()


# Not tests.objects.review: this one names no namespace unless the test gives one, since what
# mutate does without a namespace is part of what these tests prove.
def admission_review(pod: dict[str, Any], uid: str = "uid-1", **request: Any) -> dict[str, Any]:
    req = {"uid": uid, "kind": POD_KIND, "resource": {"group": "", "version": "v1", "resource": "pods"},
           "operation": "CREATE", "object": pod, **request}  # fmt: skip
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def mutate(client: FlaskClient, review: dict[str, Any]) -> dict[str, Any]:
    answer = client.post("/mutate", json=review)
    assert answer.status_code == 200, answer.data
    body = answer.get_json()
    assert body["apiVersion"] == review["apiVersion"] and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == review["request"]["uid"]
    return body["response"]


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


def unordered(patch: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(op, sort_keys=True) for op in patch)


def service_account(
    namespace: str, name: str = "default", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"namespace": namespace, "name": name, "labels": labels or {}}}  # fmt: skip


def sg_policy(namespace: str, groups: list[str], spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "vpcresources.k8s.aws/v1beta1", "kind": "SecurityGroupPolicy",
            "metadata": {"namespace": namespace, "name": "sgp"},
            "spec": {"podSelector": {}, **(spec or {}), "securityGroups": {"groupIds": groups}}}  # fmt: skip


def vpc_cni(windows_ipam: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "kube-system", "name": "amazon-vpc-cni"},
        "data": {"enable-windows-ipam": "true" if windows_ipam else "false"},
    }


def mocked_cluster(case: dict[str, Any]) -> list[dict[str, Any]]:
    """Objects whose lookup gives exactly the case's mocked SGP API answer: the groups from one
    policy matching everything, an error from a missing ServiceAccount, and no objects at all when
    the case expects no lookup (a lookup would then fail and deny)."""
    namespace = case["admission_request"]["object"]["metadata"]["namespace"]
    objects: list[dict[str, Any]] = []
    mock = case["sgp_api_mock"]
    if mock is not None and mock["error"] is None:
        objects.append(service_account(namespace))
        if mock["returns"]:
            objects.append(sg_policy(namespace, mock["returns"]))
    if case["windows_ipam_enabled_mock"] is not None:
        objects.append(vpc_cni(case["windows_ipam_enabled_mock"]))
    return objects


@pytest.mark.parametrize("case", _cases("pod_mutating_webhook"))
def test_upstream_pod_webhook_case(case: dict[str, Any]) -> None:
    """Each TestPodMutationWebHook_Handle case: same allowed, same patches (order-insensitive),
    same patch type, through the real endpoint with the guard off (upstream has no guard)."""
    request = case["admission_request"]
    client = client_for(mocked_cluster(case), eni_guard=False)
    response = mutate(client, admission_review(request["object"], operation=request["operation"]))
    expected = case["expected"]
    assert response["allowed"] is expected["allowed"]
    assert unordered(patch_of(response)) == unordered(expected["patches"])
    assert response.get("patchType") == expected["patch_type"]


def _injected_cases() -> list[Any]:
    params = []
    for param in _cases("derived_from_code"):
        case = param.values[0]
        if case is not None and isinstance(case["expected"]["injected"], str):
            for ipam in (True, False):
                params.append(pytest.param(case, ipam, id=f"{param.id}-windows-ipam-{ipam}"))
        else:
            params.append(pytest.param(case, False, id=param.id, marks=param.marks))
    return params


@pytest.mark.parametrize(("case", "windows_ipam"), _injected_cases())
def test_derived_from_code_case(case: dict[str, Any], windows_ipam: bool) -> None:
    """Rules read from upstream code: after the patch, containers[0] carries exactly the expected
    limits and requests, other containers are untouched, and no patch means nothing injected."""
    pod = case["pod"]
    objects = [*case["security_group_policies"], case["service_account"], vpc_cni(windows_ipam)]
    response = mutate(client_for(objects, eni_guard=False), admission_review(pod))
    assert response["allowed"] is case["expected"]["allowed"]
    injected = case["expected"]["injected"]
    if isinstance(injected, str):  # Windows: PrivateIPv4Address only when Windows IPAM is on
        name = "vpc.amazonaws.com/PrivateIPv4Address"
        injected = (
            {"container_index": 0, "limits": {name: "1"}, "requests": {name: "1"}} if windows_ipam else None
        )
    patch = patch_of(response)
    if injected is None:
        assert patch == []
        return
    after = apply_patch(pod, patch)
    index = injected["container_index"]
    assert after["spec"]["containers"][index]["resources"] == {
        "limits": injected["limits"],
        "requests": injected["requests"],
    }
    others = [c for i, c in enumerate(after["spec"]["containers"]) if i != index]
    assert others == [c for i, c in enumerate(pod["spec"]["containers"]) if i != index]
    assert {k: v for k, v in after.items() if k != "spec"} == {k: v for k, v in pod.items() if k != "spec"}


# -- the exhausted-node guard -----------------------------------------------------------------------


def linux_pod(namespace: str = "shop", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": namespace, "labels": labels or {"app": "web"}},
            "spec": {"containers": [{"name": "app", "resources": {}}], **spec}}  # fmt: skip


def guarded_client(**config: Any) -> FlaskClient:
    objects = [
        service_account("shop"),
        sg_policy("shop", ["sg-1"], {"podSelector": {"matchLabels": {"app": "web"}}}),
    ]
    return client_for(objects, **config)


def test_guard_adds_a_required_term_when_the_pod_has_no_affinity() -> None:
    """A matched pod gets pod-eni and a new required term holding only the guard expression."""
    pod = linux_pod()
    after = apply_patch(pod, patch_of(mutate(guarded_client(), admission_review(pod))))
    eni = {"vpc.amazonaws.com/pod-eni": "1"}
    required = {"nodeSelectorTerms": [{"matchExpressions": [GUARD]}]}
    assert after == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "resources": {"limits": eni, "requests": eni}}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
        },
    }


def test_guard_is_anded_into_every_existing_term_and_reinvocation_adds_nothing() -> None:
    """Terms are ORed, so each non-empty term gets the guard (matchFields-only terms included);
    an empty term, which matches no node, is left alone; preferred terms are untouched; a second
    pass over the patched pod returns no patch."""
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    name = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    preferred = [{"weight": 1, "preference": {"matchExpressions": [zone]}}]
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchFields": [name]}, {}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}}  # fmt: skip
    pod = linux_pod(affinity=affinity)
    client = guarded_client()
    after = apply_patch(pod, patch_of(mutate(client, admission_review(pod))))
    node_affinity = after["spec"]["affinity"]["nodeAffinity"]
    terms = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [zone, GUARD]},
        {"matchFields": [name], "matchExpressions": [GUARD]},
        {},
    ]
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
    assert patch_of(mutate(client, admission_review(after, uid="uid-2"))) == []


def test_guard_fills_in_missing_levels_of_an_existing_affinity() -> None:
    """Pod anti-affinity only, or node affinity with preferred terms only: the required node
    selector is added beside what is there, which is kept."""
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    for affinity, path in (
        (anti, "/spec/affinity/nodeAffinity"),
        ({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
         "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"),
    ):  # fmt: skip
        patch = patch_of(mutate(guarded_client(), admission_review(linux_pod(affinity=affinity))))
        assert [op["path"] for op in patch if "affinity" in op["path"]] == [path]
        after = apply_patch(linux_pod(affinity=affinity), patch)
        required = {"nodeSelectorTerms": [{"matchExpressions": [GUARD]}]}
        node = {
            **affinity.get("nodeAffinity", {}),
            "requiredDuringSchedulingIgnoredDuringExecution": required,
        }
        assert after["spec"]["affinity"] == {**affinity, "nodeAffinity": node}


def test_guard_covers_pods_requesting_pod_eni_themselves_and_can_be_switched_off() -> None:
    """An unmatched pod that asks for pod-eni itself still gets the guard (and nothing else); with
    the guard off it gets no patch at all."""
    pod = linux_pod(labels={"app": "other"})
    pod["spec"]["containers"][0]["resources"] = {"requests": {"vpc.amazonaws.com/pod-eni": "1"}}
    patch = patch_of(mutate(guarded_client(), admission_review(pod)))
    assert [op["path"] for op in patch] == ["/spec/affinity"]
    assert patch_of(mutate(guarded_client(eni_guard=False), admission_review(pod))) == []


def test_guard_is_not_added_to_pods_without_pod_eni() -> None:
    """Unmatched Linux pods, host-network pods and Windows pods get no guard."""
    client = guarded_client()
    assert patch_of(mutate(client, admission_review(linux_pod(labels={"app": "other"})))) == []
    assert patch_of(mutate(client, admission_review(linux_pod(hostNetwork=True)))) == []
    windows = linux_pod(nodeSelector={"kubernetes.io/os": "windows"})
    assert patch_of(mutate(client, admission_review(windows))) == []


# -- exemptions, modes, failure policy ------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "pod_labels", "namespace_labels", "config"),
    [
        ("kube-system", None, {}, {}),
        ("fitguard-system", None, {}, {}),
        ("shop", {"app": "web", "fitguard.io/ignore": "true"}, {}, {"allow_object_ignore": True}),
        ("shop", None, {"fitguard.io/ignore": "true"}, {}),
    ],
    ids=["kube-system", "own-namespace", "pod-label-when-allowed", "namespace-label"],
)
def test_exempt_pods_are_allowed_untouched(
    namespace: str,
    pod_labels: dict[str, str] | None,
    namespace_labels: dict[str, str],
    config: dict[str, Any],
) -> None:
    """Exempt pods are admitted without a patch, even though a policy matches them and (in the
    exempt namespaces) no ServiceAccount exists that would otherwise deny them. A pod's own ignore
    label counts only when the webhook runs with --allow-object-ignore."""
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": namespace_labels}},
        service_account("shop"),
        sg_policy(namespace, ["sg-1"]),
    ]
    response = mutate(client_for(objects, **config), admission_review(linux_pod(namespace, pod_labels)))
    assert response["allowed"] is True
    assert "patch" not in response
    assert "exempt" in response["status"]["message"] or "ignore" in response["status"]["message"]


def test_missing_service_account_denies_in_enforce_and_only_warns_otherwise() -> None:
    """Upstream denies a pod whose ServiceAccount cannot be found; warn mode admits it with the
    message as a warning, audit mode admits it silently."""
    pod = linux_pod(serviceAccountName="ghost")
    denied = mutate(client_for([]), admission_review(pod))
    assert denied["allowed"] is False
    assert denied["status"]["code"] == 403 and '"ghost" not found' in denied["status"]["message"]
    warned = mutate(client_for([], mode="warn"), admission_review(pod))
    assert warned["allowed"] is True and '"ghost" not found' in warned["warnings"][0]
    audited = mutate(client_for([], mode="audit"), admission_review(pod))
    assert audited["allowed"] is True and "warnings" not in audited


@pytest.mark.parametrize(("policy", "allowed"), [("ignore", True), ("fail", False)])
def test_internal_error_is_answered_by_the_failure_policy_without_a_trace(
    policy: str, allowed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a handler becomes a 200 answer per the failure policy; no traceback leaks."""

    def broken(self: ClusterView, namespace: str, pod: Any) -> list[str]:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(ClusterView, "security_groups", broken)
    answer = client_for([], failure_policy=policy).post("/mutate", json=admission_review(linux_pod()))
    assert answer.status_code == 200
    assert answer.get_json()["response"]["allowed"] is allowed
    assert b"secret internals" not in answer.data and b"Traceback" not in answer.data


def test_dry_run_gets_the_same_answer() -> None:
    """dryRun changes nothing in the verdict or the patch."""
    client = guarded_client()
    wet = mutate(client, admission_review(linux_pod()))
    dry = mutate(client, admission_review(linux_pod(), dryRun=True))
    assert dry == wet


def test_malformed_pod_in_a_valid_review_is_refused_as_upstream_does() -> None:
    """A pod that could not be decoded: HTTP 200, not allowed, status code 400."""
    pod = linux_pod()
    pod["spec"]["containers"] = "not a list"
    response = mutate(client_for([]), admission_review(pod))
    assert response["allowed"] is False and response["status"]["code"] == 400


@pytest.mark.parametrize(
    "change",
    [
        {"operation": "UPDATE"},
        {"operation": "DELETE", "object": None},
        {"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}},
        {"subResource": "status"},
    ],
    ids=["update", "delete", "deployment", "subresource"],
)
def test_other_kinds_and_operations_are_allowed_without_patch(change: dict[str, Any]) -> None:
    """Only pod CREATE is mutated; anything else is admitted as it is, uid echoed."""
    review = admission_review(linux_pod())
    review["request"].update(change)
    response = mutate(guarded_client(), review)
    assert response["allowed"] is True and "patch" not in response


# -- the HTTP contract --------------------------------------------------------------------------


def test_v1beta1_reviews_are_echoed_in_their_own_version() -> None:
    review = admission_review(linux_pod())
    review["apiVersion"] = "admission.k8s.io/v1beta1"
    assert mutate(guarded_client(), review)["allowed"] is True


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"\xff\xfe\x00garbage",
        b"[" * 100_000,
        b'{"kind": "Pod"}',
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
        b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"kind": {}}}',
        b'{"apiVersion": "admission.k8s.io/v9", "kind": "AdmissionReview", "request": {"uid": "u"}}',
        b"[]",
    ],
    ids=["text", "binary", "deeply-nested", "not-a-review", "no-request", "no-uid", "bad-version", "list"],
)
@pytest.mark.parametrize("endpoint", ["/mutate", "/validate"])
def test_bad_bodies_get_400_with_a_message(body: bytes, endpoint: str) -> None:
    answer = guarded_client().post(endpoint, data=body, content_type="application/json")
    assert answer.status_code == 400
    assert answer.get_json()["message"]


def test_wrong_content_type_gets_415() -> None:
    body = json.dumps(admission_review(linux_pod()))
    answer = guarded_client().post("/mutate", data=body, content_type="text/plain")
    assert answer.status_code == 415 and answer.get_json()["message"]


def test_body_over_7_mib_gets_413() -> None:
    review = admission_review(linux_pod())
    review["request"]["object"]["metadata"]["annotations"] = {"big": "x" * MAX_BODY_BYTES}
    answer = guarded_client().post("/mutate", data=json.dumps(review), content_type="application/json")
    assert answer.status_code == 413 and answer.get_json()["message"]


def test_a_review_just_under_the_limit_is_answered() -> None:
    review = admission_review(linux_pod())
    review["request"]["object"]["metadata"]["annotations"] = {"big": "x" * (MAX_BODY_BYTES - 1024)}
    assert guarded_client().post("/mutate", json=review).status_code == 200


def test_validate_echoes_uid_and_version() -> None:
    body = guarded_client().post("/validate", json=admission_review(linux_pod(), uid="v-1")).get_json()
    assert body["response"]["uid"] == "v-1" and body["apiVersion"] == "admission.k8s.io/v1"
    assert "patch" not in body["response"]


def test_health_readiness_snapshot_and_metrics() -> None:
    """On the status port: /healthz always; /readyz only once every store synced and a certificate
    is loaded; /snapshotz shows the policies held; /metrics counts answered reviews by webhook,
    operation, verdict and dry run. The admission app itself answers none of these paths."""
    client = guarded_client()
    view = from_objects([service_account("shop"), sg_policy("shop", ["sg-1"], {"podSelector": {}})])

    def get(path: str, cluster: ClusterView = view, tls: bool = True) -> tuple[int, bytes]:
        code, body, _ = status.answer("GET", path, cluster, WebhookOptions(snapshotz=True), lambda: tls)
        return code, body

    assert get("/healthz") == (200, b"ok\n")
    assert get("/readyz") == (200, b"ok\n")
    assert get("/readyz", ClusterView()) == (
        503,
        b"waiting for: Namespace, ServiceAccount, SecurityGroupPolicy, ConfigMap, NodeGroupTemplate, Node,"
        b" NodePool, EC2NodeClass, NodeClass\n",
    )
    assert get("/readyz", tls=False) == (503, b"waiting for: certificate\n")
    assert [p["groupIds"] for p in json.loads(get("/snapshotz")[1])["securityGroupPolicies"]] == [["sg-1"]]
    for path in ("/healthz", "/readyz", "/metrics", "/snapshotz"):
        assert client.get(path).status_code == 404, path
    mutate(client, admission_review(linux_pod(), dryRun=True))
    text = get("/metrics")[1].decode()
    line = (
        'fitguard_admission_requests_total{allowed="true",dry_run="true",operation="CREATE",webhook="mutate"}'
    )
    assert line in text
    assert "fitguard_admission_duration_seconds_bucket" in text
    assert "fitguard_admission_requests_in_flight" in text


# -- the handler's whole verdicts, as tables (written against mutation survivors) -----------------

PAYMENTS = [
    service_account("payments"),
    sg_policy("payments", ["sg-a", "sg-b"], {"podSelector": {"matchLabels": {"app": "api"}}}),
]
ENI = "vpc.amazonaws.com/pod-eni"
IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"
TERMS = f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms"
RESOURCES = "/spec/containers/0/resources"
GUARD_TEXT = f"{EXHAUSTED_LABEL} DoesNotExist"
ENI_ONE = {"limits": {ENI: "1"}, "requests": {ENI: "1"}}
GUARD_TERM_AFFINITY = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [GUARD]}]}}}


def payments_pod(labels: dict[str, str], *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "payments", "labels": labels},
        "spec": {"containers": list(containers or [{"name": "c"}]), **spec},
    }


@pytest.mark.parametrize(
    ("pod", "objects", "verdict"),
    [
        pytest.param(
            payments_pod({"app": "api"}, hostNetwork=True),
            PAYMENTS,
            Verdict(message="SGP not supported on Pod running on HostNetwork"),
            id="host-network",
        ),
        pytest.param(
            payments_pod({"app": "api", FARGATE: "fp"}),
            PAYMENTS,
            Verdict(
                patch=[{"op": "add", "path": "/metadata/annotations", "value": {POD_SG: "sg-a,sg-b"}}],
                message="annotated Fargate pod with its security groups",
            ),
            id="fargate-matched",
        ),
        pytest.param(
            {
                **payments_pod({"app": "api", FARGATE: "fp"}),
                "metadata": {
                    "name": "p",
                    "namespace": "payments",
                    "labels": {"app": "api", FARGATE: "fp"},
                    "annotations": {POD_SG: "sg-a,sg-b"},
                },
            },
            PAYMENTS,
            Verdict(message="annotated Fargate pod with its security groups"),
            id="fargate-already-annotated",
        ),
        pytest.param(
            {
                **payments_pod({FARGATE: "fp"}),
                "metadata": {
                    "name": "p",
                    "namespace": "payments",
                    "labels": {FARGATE: "fp"},
                    "annotations": {POD_SG: "sg-x", "keep": "me"},
                },
            },
            PAYMENTS,
            Verdict(
                patch=[{"op": "remove", "path": "/metadata/annotations/fargate.amazonaws.com~1pod-sg"}],
                message="removed a pod-sg annotation not set by the webhook",
            ),
            id="fargate-user-annotation-removed",
        ),
        pytest.param(
            payments_pod({FARGATE: "fp"}),
            PAYMENTS,
            Verdict(message="Fargate pod not matching any SGP"),
            id="fargate-unmatched",
        ),
        pytest.param(
            {**payments_pod({"app": "api"}), "spec": {"containers": []}},
            PAYMENTS,
            Verdict(message="pod has no containers"),
            id="no-containers",
        ),
        pytest.param(
            payments_pod({"app": "api"}, nodeSelector={"kubernetes.io/os": "windows"}),
            PAYMENTS,
            Verdict(message="Windows IPAM is not enabled"),
            id="windows-ipam-off",
        ),
        pytest.param(
            payments_pod({"app": "api"}, nodeSelector={"beta.kubernetes.io/os": "windows"}),
            [*PAYMENTS, vpc_cni(True)],
            Verdict(
                patch=[
                    {
                        "op": "add",
                        "path": "/spec/containers/0/resources",
                        "value": {"limits": {IPV4: "1"}, "requests": {IPV4: "1"}},
                    }
                ],
                message=f"injected {IPV4}",
            ),
            id="windows-ipam-on",
        ),
        pytest.param(
            payments_pod({"app": "api"}, hostNetwork=True, serviceAccountName="ghost"),
            PAYMENTS,
            Verdict(message="SGP not supported on Pod running on HostNetwork"),
            id="host-network-never-looks-up-its-service-account",
        ),
        pytest.param(
            payments_pod(
                {"app": "api"}, nodeSelector={"kubernetes.io/os": "windows"}, serviceAccountName="ghost"
            ),
            [*PAYMENTS, vpc_cni(True)],
            Verdict(
                patch=[
                    {
                        "op": "add",
                        "path": "/spec/containers/0/resources",
                        "value": {"limits": {IPV4: "1"}, "requests": {IPV4: "1"}},
                    }
                ],
                message=f"injected {IPV4}",
            ),
            id="windows-never-looks-up-its-service-account",
        ),
        pytest.param(
            payments_pod({"app": "api"}, hostNetwork=False, nodeSelector={"kubernetes.io/os": "linux"}),
            [*PAYMENTS, vpc_cni(True)],
            Verdict(
                patch=[
                    {
                        "op": "add",
                        "path": "/spec/containers/0/resources",
                        "value": {"limits": {ENI: "1"}, "requests": {ENI: "1"}},
                    },
                    {"op": "add", "path": "/spec/affinity", "value": GUARD_TERM_AFFINITY},
                ],
                message=f"matched security groups sg-a,sg-b: injected {ENI}",
            ),
            id="linux-with-windows-ipam-on-gets-pod-eni",
        ),
        pytest.param(
            payments_pod({"app": "other"}),
            PAYMENTS,
            Verdict(message="Pod didn't match any SGP"),
            id="linux-unmatched",
        ),
        pytest.param(
            payments_pod({"app": "api"}, {"name": "c", "resources": {"limits": {ENI: "2"}, "requests": {}}}),
            PAYMENTS,
            Verdict(
                patch=[
                    {
                        "op": "replace",
                        "path": f"{RESOURCES}/limits/vpc.amazonaws.com~1pod-eni",
                        "value": "1",
                    },
                    {
                        "op": "add",
                        "path": f"{RESOURCES}/requests/vpc.amazonaws.com~1pod-eni",
                        "value": "1",
                    },
                    {"op": "add", "path": "/spec/affinity", "value": GUARD_TERM_AFFINITY},
                ],
                message=f"matched security groups sg-a,sg-b: injected {ENI}",
            ),
            id="linux-matched-replaces-another-count",
        ),
        pytest.param(
            payments_pod({"app": "api"}, {"name": "c", "resources": {"requests": {"cpu": "1"}}}),
            PAYMENTS,
            Verdict(
                patch=[
                    {"op": "add", "path": "/spec/containers/0/resources/limits", "value": {ENI: "1"}},
                    {
                        "op": "add",
                        "path": f"{RESOURCES}/requests/vpc.amazonaws.com~1pod-eni",
                        "value": "1",
                    },
                    {"op": "add", "path": "/spec/affinity", "value": GUARD_TERM_AFFINITY},
                ],
                message=f"matched security groups sg-a,sg-b: injected {ENI}",
            ),
            id="linux-matched-adds-missing-limits",
        ),
        pytest.param(
            payments_pod(
                {"app": "api"}, {"name": "mesh"}, {"name": "c", "resources": {"requests": {ENI: "1"}}}
            ),
            PAYMENTS,
            Verdict(
                patch=[{"op": "add", "path": "/spec/affinity", "value": GUARD_TERM_AFFINITY}],
                message=f"matched security groups sg-a,sg-b: {ENI} already requested, not added",
            ),
            id="linux-matched-requested-elsewhere",
        ),
        pytest.param(
            payments_pod({"app": "api"}, serviceAccountName="ghost"),
            PAYMENTS,
            Verdict(
                allowed=False,
                message='fitguard could not match the pod to SecurityGroupPolicies: serviceaccount "ghost"'
                ' not found in namespace "payments"',
                code=403,
                reason="Forbidden",
            ),
            id="no-service-account",
        ),
        pytest.param(
            {
                **payments_pod({"app": "api"}),
                "spec": {"containers": [{"name": "c", "resources": {"limits": 1}}]},
            },
            PAYMENTS,
            Verdict(
                allowed=False,
                message="cannot decode the pod: spec.containers[0].resources.limits: expected a map, got int",
                code=400,
                reason="BadRequest",
            ),
            id="malformed",
        ),
    ],
)
def test_the_mutating_handler_gives_each_kind_of_pod_its_whole_verdict(
    pod: dict[str, Any], objects: list[dict[str, Any]], verdict: Verdict
) -> None:
    """Host-network, Fargate, Windows and Linux pods, matched or not: the whole verdict (allowed,
    patch in order, message, code, reason) of the mutating handler, and each patch applies cleanly
    with jsonpatch."""
    got = mutate_review(
        {"uid": "u", "namespace": "payments", "object": pod}, from_objects(objects), WebhookOptions()
    )
    assert got == verdict
    if got.patch:
        apply_patch(pod, got.patch)


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (1, "object: expected a Pod"),
        ({"spec": {"containers": []}}, "metadata: required"),
        ({"metadata": 1, "spec": {}}, "object.metadata: expected a map, got int"),
        ({"metadata": {}}, "spec: required"),
        ({"metadata": {"labels": 1}, "spec": {}}, "metadata.labels: expected a map, got int"),
        ({"metadata": {"annotations": []}, "spec": {}}, "metadata.annotations: expected a map, got list"),
        ({"metadata": {}, "spec": 1}, "object.spec: expected a map, got int"),
        ({"metadata": {}, "spec": {}}, "spec.containers: expected a list of containers"),
        ({"metadata": {}, "spec": {"containers": [{}, 1]}}, "spec.containers: expected a list of containers"),
        (
            {"metadata": {}, "spec": {"nodeSelector": 1, "containers": []}},
            "spec.nodeSelector: expected a map, got int",
        ),
        (
            {"metadata": {}, "spec": {"affinity": "x", "containers": []}},
            "spec.affinity: expected a map, got str",
        ),
        (
            {"metadata": {}, "spec": {"containers": [{"resources": 1}]}},
            "spec.containers[0].resources: expected a map, got int",
        ),
        (
            {"metadata": {}, "spec": {"containers": [{"resources": {"requests": "x"}}]}},
            "spec.containers[0].resources.requests: expected a map, got str",
        ),
    ],
)
def test_a_malformed_pod_is_named_by_its_first_wrong_field(pod: Any, message: str) -> None:
    """Each field the webhook reads, given the wrong type, is refused with its own path and type."""
    with pytest.raises(PodError) as raised:
        check_pod(pod)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("affinity", "patch"),
    [
        pytest.param(
            {"podAntiAffinity": {}},
            [
                {
                    "op": "add",
                    "path": "/spec/affinity/nodeAffinity",
                    "value": GUARD_TERM_AFFINITY["nodeAffinity"],
                }
            ],
            id="no-node-affinity",
        ),
        pytest.param(
            {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
            [
                {
                    "op": "add",
                    "path": f"/spec/affinity/nodeAffinity/{REQUIRED}",
                    "value": {"nodeSelectorTerms": [{"matchExpressions": [GUARD]}]},
                }
            ],
            id="no-required",
        ),
        pytest.param(
            {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": []}}},
            [
                {
                    "op": "add",
                    "path": f"/spec/affinity/nodeAffinity/{REQUIRED}/nodeSelectorTerms",
                    "value": [{"matchExpressions": [GUARD]}],
                }
            ],
            id="no-terms",
        ),
        pytest.param(
            {
                "nodeAffinity": {
                    REQUIRED: {
                        "nodeSelectorTerms": [
                            "junk",
                            {},
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]},
                            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                            {"matchExpressions": [{"key": "a", "operator": "Exists"}, dict(GUARD)]},
                            {"matchExpressions": [{"key": EXHAUSTED_LABEL, "operator": "Exists"}]},
                            {"matchExpressions": [{"key": "other", "operator": "DoesNotExist"}]},
                            {
                                "matchExpressions": [],
                                "matchFields": [{"key": "metadata.name", "operator": "Exists"}],
                            },
                        ]
                    }
                }
            },
            [
                {
                    "op": "add",
                    "path": f"{TERMS}/2/matchExpressions",
                    "value": [GUARD],
                },
                {
                    "op": "add",
                    "path": f"{TERMS}/3/matchExpressions/-",
                    "value": GUARD,
                },
                {
                    "op": "add",
                    "path": f"{TERMS}/5/matchExpressions/-",
                    "value": GUARD,
                },
                {
                    "op": "add",
                    "path": f"{TERMS}/6/matchExpressions/-",
                    "value": GUARD,
                },
                {"op": "add", "path": f"{TERMS}/7/matchExpressions", "value": [GUARD]},
            ],
            id="terms-of-every-shape",
        ),
    ],
)
def test_the_guard_patch_for_every_shape_of_affinity(affinity: dict[str, Any], patch: list[Any]) -> None:
    """The guard fills in the first missing level of the affinity, or ANDs itself into each term
    that selects something (matchExpressions or matchFields) and lacks it exactly (same key and
    DoesNotExist); an empty term and a non-map are left alone."""
    pod = linux_pod(affinity=affinity)
    got = mutate_review(
        {"uid": "u", "namespace": "shop", "object": pod},
        from_objects([service_account("shop")]),
        WebhookOptions(),
    )
    assert got == Verdict(message="Pod didn't match any SGP")  # no pod-eni: no guard
    pod["spec"]["containers"][0]["resources"] = {"requests": {ENI: "1"}}
    got = mutate_review(
        {"uid": "u", "namespace": "shop", "object": pod},
        from_objects([service_account("shop")]),
        WebhookOptions(),
    )
    assert got == Verdict(patch=patch, message="Pod didn't match any SGP")
    apply_patch(pod, patch)


@pytest.mark.parametrize(
    ("document", "patch"),
    [
        ({"a": {"b": 1}}, [{"op": "add", "path": "/a/c", "value": {"d": [1]}}]),
        ({"a": {"b": 1}}, [{"op": "replace", "path": "/a/b", "value": 2}]),
        ({"a": {"b": 1, "c": 2}}, [{"op": "remove", "path": "/a/b"}]),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 3}]),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/0", "value": 0}]),
        ({"a": [1, 2]}, [{"op": "replace", "path": "/a/1", "value": 5}]),
        ({"a": [1, 2]}, [{"op": "remove", "path": "/a/0"}]),
        ({"a/b": {"~c": 1}}, [{"op": "replace", "path": "/a~1b/~0c", "value": 2}]),
        ({"l": [{"x": 1}, {"x": 2}]}, [{"op": "add", "path": "/l/1/y", "value": 3}]),
    ],
)
def test_fitguards_own_patch_applier_agrees_with_jsonpatch(document: Any, patch: list[Any]) -> None:
    """`webhook.mutate.apply_patch` (used by /validate to judge a template as /mutate leaves it)
    gives the same document as jsonpatch, and leaves its input unchanged."""
    before = copy.deepcopy(document)
    assert own_apply_patch(document, patch) == apply_patch(document, patch)
    assert document == before


@pytest.mark.parametrize(
    ("patch", "error", "message"),
    [
        (
            [{"op": "replace", "path": "/a/missing", "value": 1}],
            KeyError,
            "'replace of a missing member: /a/missing'",
        ),
        ([{"op": "add", "path": "a", "value": 1}], ValueError, "JSON pointer must start with /: 'a'"),
    ],
)
def test_fitguards_own_patch_applier_refuses_what_rfc_6902_refuses(
    patch: list[Any], error: type, message: str
) -> None:
    """A replace of a missing member and a pointer without its leading slash are errors that say so."""
    with pytest.raises(error) as raised:
        own_apply_patch({"a": {}}, patch)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("token", "escaped"),
    [
        ("plain", "plain"),
        ("vpc.amazonaws.com/pod-eni", "vpc.amazonaws.com~1pod-eni"),
        ("a~b/c~/", "a~0b~1c~0~1"),
    ],
)
def test_a_path_segment_is_escaped_as_rfc_6901_says(token: str, escaped: str) -> None:
    """`~` becomes `~0` before `/` becomes `~1`, so an escaped `/` is never read back as `~`."""
    assert escape(token) == escaped


@pytest.mark.parametrize(
    ("document", "op"),
    [
        ({"a": [1]}, {"op": "add", "path": "/a/0", "value": {"b": [1]}}),
        ({"a": [1]}, {"op": "replace", "path": "/a/0", "value": {"b": [1]}}),
        ({"a": {}}, {"op": "add", "path": "/a/x", "value": {"b": [1]}}),
        ({"a": {"x": 0}}, {"op": "replace", "path": "/a/x", "value": {"b": [1]}}),
    ],
)
def test_the_own_patch_applier_shares_nothing_with_the_patch(document: Any, op: dict[str, Any]) -> None:
    """Changing the patched document afterwards leaves the patch's values as they were."""
    result = own_apply_patch(document, [op])
    target = result["a"][0] if isinstance(result["a"], list) else result["a"]["x"]
    target["b"].append(2)
    assert op["value"] == {"b": [1]}


@pytest.mark.parametrize(
    ("pod", "groups", "mutation"),
    [
        (
            payments_pod({}, hostNetwork=True),
            ["sg-a"],
            Mutation(HOST_NETWORK, [], "SGP not supported on Pod running on HostNetwork"),
        ),
        (
            payments_pod({FARGATE: "fp"}),
            ["sg-a", "sg-b"],
            Mutation(
                FARGATE_TYPE,
                [{"op": "add", "path": "/metadata/annotations", "value": {POD_SG: "sg-a,sg-b"}}],
                "annotated Fargate pod with its security groups",
                ("sg-a", "sg-b"),
                (Injected(Injection.SECURITY_GROUPS, "metadata.annotations", f"{POD_SG}: sg-a,sg-b"),),
            ),
        ),
        (
            {
                "metadata": {"labels": {FARGATE: "fp"}, "annotations": {POD_SG: "sg-x"}},
                "spec": {"containers": []},
            },
            [],
            Mutation(
                FARGATE_TYPE,
                [{"op": "remove", "path": "/metadata/annotations/fargate.amazonaws.com~1pod-sg"}],
                "removed a pod-sg annotation not set by the webhook",
                injected=(Injected(Injection.ANNOTATION_REMOVED, "metadata.annotations", POD_SG),),
            ),
        ),
        (payments_pod({FARGATE: "fp"}), [], Mutation(FARGATE_TYPE, [], "Fargate pod not matching any SGP")),
        (
            {"metadata": {}, "spec": {"containers": []}},
            ["sg-a"],
            Mutation(LINUX, [], "pod has no containers"),
        ),
        (
            payments_pod({}, nodeSelector={"kubernetes.io/os": "windows"}),
            ["sg-a"],
            Mutation(WINDOWS, [], "Windows IPAM is not enabled"),
        ),
        (payments_pod({}), [], Mutation(LINUX, [], "Pod didn't match any SGP")),
        (
            payments_pod({}),
            ["sg-a"],
            Mutation(
                LINUX,
                [
                    {"op": "add", "path": RESOURCES, "value": {"limits": {ENI: "1"}, "requests": {ENI: "1"}}},
                    {"op": "add", "path": "/spec/affinity", "value": GUARD_TERM_AFFINITY},
                ],
                f"matched security groups sg-a: injected {ENI}",
                ("sg-a",),
                (
                    Injected(Injection.RESOURCE, "spec.containers[0].resources (limits and requests)", ENI),
                    Injected(Injection.GUARD, f"spec.affinity.nodeAffinity.{REQUIRED}", GUARD_TEXT),
                ),
            ),
        ),
        (
            payments_pod({}, {"name": "c", "resources": ENI_ONE}, affinity=GUARD_TERM_AFFINITY),
            ["sg-a"],
            Mutation(LINUX, [], f"matched security groups sg-a: injected {ENI}", ("sg-a",)),
        ),
    ],
)
def test_the_plan_of_each_kind_of_pod_is_a_whole_mutation(
    pod: dict[str, Any], groups: list[str], mutation: Mutation
) -> None:
    """The pod's type, patch, message, the groups it matched and what it injects, as `plan` gives
    them: a pod already injected and guarded gets neither again, and nothing is said injected."""
    assert plan(pod, groups, windows_ipam=False, eni_guard=True) == mutation


def test_a_missing_service_account_is_softened_by_the_namespaces_mode() -> None:
    """The namespace label fitguard.io/mode=warn turns the denial into a warning even when the
    webhook enforces."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "payments", "labels": {"fitguard.io/mode": "warn"}},
    }
    pod = payments_pod({"app": "api"}, serviceAccountName="ghost")
    verdict = mutate_review(
        {"uid": "u", "namespace": "payments", "object": pod}, from_objects([namespace]), WebhookOptions()
    )
    assert verdict == Verdict(
        warnings=[
            'fitguard could not match the pod to SecurityGroupPolicies: serviceaccount "ghost" not found'
            ' in namespace "payments"'
        ]
    )


def test_the_plan_of_a_windows_pod_with_windows_ipam_on() -> None:
    """PrivateIPv4Address injected (and said so), the type windows, no groups looked at."""
    pod = payments_pod({}, nodeSelector={"kubernetes.io/os": "windows"})
    assert plan(pod, [], windows_ipam=True, eni_guard=True) == Mutation(
        WINDOWS,
        [{"op": "add", "path": RESOURCES, "value": {"limits": {IPV4: "1"}, "requests": {IPV4: "1"}}}],
        f"injected {IPV4}",
        injected=(Injected(Injection.RESOURCE, "spec.containers[0].resources (limits and requests)", IPV4),),
    )


def test_in_an_auto_mode_cluster_a_matched_pod_gets_its_branch_eni_request_as_upstream() -> None:
    """The VPC resource controller's pod webhook has no EKS Auto Mode branch (webhooks/core/
    pod_webhook.go `Handle`/`HandleLinuxPod` at b8d4251: it reads the pod and the policies only),
    so neither does /mutate: beside an Auto Mode node and NodePool, a pod a SecurityGroupPolicy
    matches is given the same pod-eni request (and guard) as in any cluster; /validate is what
    then says no Auto Mode node can run it (docs/upstream.md)."""
    auto_node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "i-0auto",
            "labels": {"eks.amazonaws.com/compute-type": "auto", "karpenter.sh/nodepool": "general-purpose"},
        },
        "status": {"allocatable": {"cpu": "1930m", "pods": "29"}},
    }
    auto_pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general-purpose"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}
                }
            }
        },
    }
    auto_class = {
        "apiVersion": "eks.amazonaws.com/v1",
        "kind": "NodeClass",
        "metadata": {"name": "default"},
        "spec": {},
    }
    pod = payments_pod({"app": "api"}, {"name": "c", "resources": {"requests": {"cpu": "1"}}})
    request = {"uid": "u", "namespace": "payments", "object": pod}
    got = mutate_review(
        request, from_objects([*PAYMENTS, auto_node, auto_pool, auto_class]), WebhookOptions()
    )
    assert got == Verdict(
        patch=[
            {"op": "add", "path": "/spec/containers/0/resources/limits", "value": {ENI: "1"}},
            {"op": "add", "path": f"{RESOURCES}/requests/vpc.amazonaws.com~1pod-eni", "value": "1"},
            {"op": "add", "path": "/spec/affinity", "value": GUARD_TERM_AFFINITY},
        ],
        message=f"matched security groups sg-a,sg-b: injected {ENI}",
    )
