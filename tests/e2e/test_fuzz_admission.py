"""Hostile AdmissionReviews never break the webhook: random JSON, a realistic review with a wrong
value at every field, deep nesting, huge strings, invalid UTF-8, out-of-range quantities and odd
content types, through the Flask app for both endpoints and every mode. Each answer is 400, 413,
415 or a 200 carrying a valid AdmissionReview response with the request's uid; never a 5xx, and
never an answer made by the failure policy: every request leaves the internal-error counter and
the error log unchanged (the failure-policy path is tested on its own, by an injected fault). A
few of them also go through real gunicorn over TLS, whose workers must survive them.

`make test` runs about 3,200 cases here (the default profile's per-property `max_examples`);
`make fuzz` runs FUZZ_EXAMPLES per property.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import io
import json
import logging
import socket
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.test_webhook import _worker_pids
from tests.tlsfixtures import TlsFiles, client_ssl_context
from tests.webhook_server import Server, admission_review, post, running
from webhook import metrics
from webhook.app import API_VERSIONS, create_app
from webhook.cluster import ClusterView, from_objects
from webhook.memo import RefusalMemo
from webhook.review import MAX_BODY_BYTES, MODES, WebhookOptions


def examples(default: int) -> settings:
    """`default` examples under `make test`; the fuzz profile's count (FUZZ_EXAMPLES) under `make fuzz`."""
    fuzzing = settings.get_current_profile_name() == "fuzz"
    count = settings.default.max_examples if fuzzing else default
    return settings(max_examples=count, suppress_health_check=list(HealthCheck))


CLUSTER = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "a"}}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": "shop", "name": "default"}},
    {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"namespace": "shop", "name": "web"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "securityGroups": {"groupIds": ["sg-1"]}},
    },
    {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-general"},
        "spec": {
            "provider": "aws-asg",
            "instanceTypes": ["m5.large"],
            "maxSize": 10,
            "nodes": 1,
            "actual": {
                "allocatable": {
                    "cpu": "1930m",
                    "memory": "7220Mi",
                    "ephemeral-storage": "19136439364",
                    "pods": "29",
                    "vpc.amazonaws.com/pod-eni": "9",
                },
                "labels": {"node.kubernetes.io/instance-type": "m5.large"},
            },
            "autoscaler": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
        },
    },
]
VIEW = from_objects(CLUSTER)
# Every mode under both failure policies: `fail` turns a handler's bug into a denial, not a 5xx.
APPS = {
    (mode, policy): create_app(VIEW, WebhookOptions(mode=mode, failure_policy=policy)).test_client()
    for mode in MODES
    for policy in ("ignore", "fail")
}
ENDPOINTS = ("/mutate", "/validate")
OK_CODES = {200, 400, 413, 415}


class _InternalErrors(logging.Handler):
    """Counts the handler bugs the app logs (and answers by the failure policy)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


INTERNAL_ERRORS = _InternalErrors()
logging.getLogger("webhook").addHandler(INTERNAL_ERRORS)


# Not tests.objects.pod/review: the fuzzer replaces each field of a whole realistic pod and review,
# so every field a real one carries is written out here.
def pod(name: str = "web-1") -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "nginx",
        "ports": [{"containerPort": 80}],
        "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
            "limits": {"memory": "1Gi"},
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}, "annotations": {"a": "b"}},
        "spec": {
            "serviceAccountName": "default",
            "containers": [container],
            "initContainers": [{"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            },
            "overhead": {"cpu": "10m"},
        },
    }


def deployment() -> dict[str, Any]:
    template = pod()
    del template["apiVersion"], template["kind"]
    template["metadata"] = {"labels": {"app": "web"}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }


def review(
    obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None
) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    req: dict[str, Any] = {
        "uid": "fuzz-uid",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
        "requestKind": {"group": group, "version": version, "kind": obj["kind"]},
        "name": obj["metadata"]["name"],
        "namespace": "shop",
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["dev"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


BASES = [review(pod()), review(deployment()), review(deployment(), "UPDATE", deployment())]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside `value` (dict keys and list indexes)."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths(child, (*prefix, index))


BASE_PATHS = [(i, path) for i, base in enumerate(BASES) for path in paths(base) if path]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
QUANTITIES = ["1e999", "-1", "0", "1.5.3", "99999999999999999999999999Ei", "1Ki1", "NaN", "", " 1",
              "0.0000000001m", "9" * 400, "1E", "+5", "Infinity", "1e-99", "1" * 30]  # fmt: skip
quantities = st.one_of(
    st.sampled_from(QUANTITIES),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.from_regex(r"[+-]?[0-9]{0,25}(\.[0-9]{0,12})?(e[+-]?[0-9]{1,4}|[KMGTPE]i?|[munk])?", fullmatch=True),
)
content_types = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "text/plain",
        "",
        "application/json-patch+json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/yaml",
    ]
)


def well_formed(document: Any) -> bool:
    """Whether the envelope is one the contract must answer 200 (apiVersion, kind, request, uid)."""
    if not isinstance(document, dict) or document.get("kind") != "AdmissionReview":
        return False
    request = document.get("request")
    return (
        document.get("apiVersion") in API_VERSIONS
        and isinstance(request, dict)
        and isinstance(request.get("uid"), str)
        and bool(request["uid"])
    )


def internal_errors() -> tuple[float, int]:
    """The app's internal-error counter (both endpoints) and the error records it logged. The tally
    is flushed and the one counter collected, as a scrape would (the whole registry, collected
    twice a case, was most of this file's time)."""
    metrics.TALLY.flush()
    counted = [
        sample.value
        for family in metrics.ERRORS.collect()
        for sample in family.samples
        if sample.name == "fitguard_admission_errors_total"
    ]
    return sum(counted), INTERNAL_ERRORS.count


def send(
    client: FlaskClient, endpoint: str, body: bytes, content_type: str = "application/json"
) -> tuple[int, Any]:
    """One POST; every generated input must get an ordinary answer, never one made by the failure
    policy: the internal-error counter and the error log are unchanged by it."""
    before = internal_errors()
    answer = client.post(endpoint, data=body, headers={"Content-Type": content_type} if content_type else {})
    assert internal_errors() == before, ("internal error on", body[:300], answer.get_data()[:300])
    return answer.status_code, answer.get_data()


def check(status: int, data: bytes, document: Any, content_type: str = "application/json") -> None:
    """The contract for one answer to `document` (None: the body was not valid JSON)."""
    assert status in OK_CODES, (status, data[:300])
    if status != 200:
        assert isinstance(json.loads(data).get("message"), str)
        return
    json_type = content_type.split(";", maxsplit=1)[0].strip().lower() == "application/json"
    assert json_type and well_formed(document), "200 only for a well-formed review with a JSON type"
    answer = json.loads(data)
    assert answer["apiVersion"] == document["apiVersion"] and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == document["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
        assert isinstance(json.loads(base64.b64decode(response["patch"])), list)
    if "status" in response:
        assert isinstance(response["status"]["code"], int)
    for warning in response.get("warnings", []):
        assert isinstance(warning, str)


def roundtrip(
    client: FlaskClient, endpoint: str, document: Any, content_type: str = "application/json"
) -> None:
    body = json.dumps(document).encode()  # allow_nan: Python's json reads NaN back, so can a client
    status, data = send(client, endpoint, body, content_type)
    check(status, data, document, content_type)
    if content_type == "application/json" and well_formed(document) and len(body) <= MAX_BODY_BYTES:
        assert status == 200, data[:300]


app_keys = st.sampled_from(sorted(APPS))
endpoints = st.sampled_from(ENDPOINTS)


def set_at(document: Any, path: tuple[Any, ...], value: Any, delete: bool) -> None:
    *parents, last = path
    node = document
    for step in parents:
        node = node[step]
    if delete and isinstance(node, dict):
        del node[last]
    else:
        node[last] = value


@examples(1500)
@given(app_keys, endpoints, st.sampled_from(BASE_PATHS), json_values, st.booleans())
def test_a_wrong_value_at_any_field_of_a_realistic_review_is_answered(
    key: tuple[str, str], endpoint: str, where: tuple[int, tuple[Any, ...]], value: Any, delete: bool
) -> None:
    """Each field of a pod, Deployment and Deployment-update review replaced by a random JSON value
    (or removed): the review is still answered 200 with its uid while its envelope holds, else 400."""
    document = copy.deepcopy(BASES[where[0]])
    set_at(document, where[1], value, delete)
    roundtrip(APPS[key], endpoint, document)


@examples(600)
@given(app_keys, endpoints, st.sampled_from(range(len(BASES))), quantities, st.sampled_from(
    [("containers", "requests", "cpu"), ("containers", "requests", "memory"),
     ("containers", "limits", "vpc.amazonaws.com/pod-eni"), ("containers", "requests", "ephemeral-storage"),
     ("initContainers", "requests", "cpu"), ("overhead", None, "memory")]))  # fmt: skip
def test_quantities_out_of_range_are_answered(
    key: tuple[str, str], endpoint: str, base: int, quantity: Any, where: tuple[str, str | None, str]
) -> None:
    """Requests, limits and overhead of any size, sign, precision or type: answered 200."""
    document = copy.deepcopy(BASES[base])
    obj = document["request"]["object"]
    spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
    field, kind, resource = where
    if kind is None:
        spec[field][resource] = quantity
    else:
        spec[field][0]["resources"].setdefault(kind, {})[resource] = quantity
    roundtrip(APPS[key], endpoint, document)


@examples(500)
@given(app_keys, endpoints, json_values, content_types)
def test_random_json_with_any_content_type_is_answered(
    key: tuple[str, str], endpoint: str, value: Any, content_type: str
) -> None:
    """Any JSON document, bare or inside a review envelope, with any content type: 400, 415 or 200."""
    roundtrip(APPS[key], endpoint, value, content_type)
    envelope = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": value}
    roundtrip(APPS[key], endpoint, envelope, content_type)


@examples(400)
@given(app_keys, endpoints, st.binary(max_size=200), st.integers(min_value=0, max_value=2000))
def test_bytes_that_are_not_json_or_not_utf8_get_400(
    key: tuple[str, str], endpoint: str, noise: bytes, at: int
) -> None:
    """Random bytes, and a valid review with random (often invalid UTF-8) bytes spliced in: 400
    unless the result still parses as a review, never a 5xx."""
    status, data = send(APPS[key], endpoint, noise)
    check(status, data, _parsed(noise))
    body = json.dumps(BASES[0]).encode()
    spliced = body[:at] + noise + body[at:]
    status, data = send(APPS[key], endpoint, spliced)
    check(status, data, _parsed(spliced))


def _parsed(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


@examples(200)
@given(
    app_keys,
    endpoints,
    st.integers(min_value=1, max_value=200_000),
    st.sampled_from(["[", '{"a":', '{"kind":"AdmissionReview","request":{"uid":"x","object":']),
    st.sampled_from(["request.object", "label", "body"]),
)
def test_deep_nesting_is_answered(
    key: tuple[str, str], endpoint: str, depth: int, opener: str, place: str
) -> None:
    """Nesting up to 200,000 deep, as the whole body or inside a review's object: 400 or 200."""
    closer = {"[": "]", '{"a":': "}"}.get(opener, "}}}")
    nested = opener * depth + "1" + closer * depth if opener in ("[", '{"a":') else None
    if place == "body" or nested is None:
        text = (nested or (opener + "[" * depth + "1" + "]" * depth + "}}}")).encode()
    else:
        document = copy.deepcopy(BASES[0])
        marker = "__nested__"
        if place == "label":
            document["request"]["object"]["metadata"]["labels"]["app"] = marker
        else:
            document["request"]["object"]["spec"]["extra"] = marker
        text = json.dumps(document).replace(f'"{marker}"', nested).encode()
    status, data = send(APPS[key], endpoint, text)
    check(status, data, _parsed(text))


@examples(40)
@given(
    app_keys,
    endpoints,
    st.integers(min_value=MAX_BODY_BYTES - 4096, max_value=MAX_BODY_BYTES + 4096),
    st.sampled_from(["label", "annotation", "uid", "image"]),
)
def test_huge_strings_near_the_body_limit(key: tuple[str, str], endpoint: str, size: int, where: str) -> None:
    """A body around the 7 MiB limit made of one huge string: 200 below it, 413 above it."""
    document = copy.deepcopy(BASES[0])
    obj = document["request"]["object"]
    body_without = len(json.dumps(document).encode())
    filler = "x" * max(0, size - body_without)
    if where == "label":
        obj["metadata"]["labels"]["app"] = filler
    elif where == "annotation":
        obj["metadata"]["annotations"]["a"] = filler
    elif where == "uid":
        document["request"]["uid"] = filler or "u"
    else:
        obj["spec"]["containers"][0]["image"] = filler
    body = json.dumps(document).encode()
    status, data = send(APPS[key], endpoint, body)
    check(status, data, document)
    assert status == (200 if len(body) <= MAX_BODY_BYTES else 413)


def _chunked(client: FlaskClient, body: bytes) -> tuple[int, bytes]:
    """POST with no Content-Length, as a chunked body reaches the app from gunicorn."""
    answer = client.post(
        "/mutate",
        input_stream=io.BytesIO(body),
        headers={"Content-Type": "application/json"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    return answer.status_code, answer.get_data()


def test_a_chunked_body_over_the_limit_gets_413_even_when_its_head_is_a_review() -> None:
    """A chunked body is judged by what arrives: a review followed by 8 MiB of blanks is 413 (not
    answered from its first 7 MiB, which alone would parse), a chunked review under it is 200."""
    client = APPS[("enforce", "ignore")]
    head = json.dumps(BASES[0]).encode()
    assert _chunked(client, head + b" " * (8 * 1024 * 1024))[0] == 413
    assert _chunked(client, head + b" " * (MAX_BODY_BYTES - len(head)))[0] == 200
    assert _chunked(client, head + b" " * (MAX_BODY_BYTES - len(head) + 1))[0] == 413


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("base", range(len(BASES)))
@pytest.mark.parametrize("value", [5, 1.5, True, "app=web", ["app"], {"app": 5}], ids=repr)
@pytest.mark.parametrize("field", ["labels", "annotations"])
def test_malformed_metadata_maps_get_an_ordinary_answer(
    endpoint: str, base: int, value: Any, field: str
) -> None:
    """metadata.labels or annotations that are not a map of strings (a number, a list, a string,
    a number as a value), on the pod or on a workload's pod template: answered 200 by the
    handlers themselves, never by the failure policy (`send` checks the internal-error counter),
    whatever hypothesis happens to draw."""
    document = copy.deepcopy(BASES[base])
    obj = document["request"]["object"]
    meta = obj["metadata"] if obj["kind"] == "Pod" else obj["spec"]["template"]["metadata"]
    meta[field] = value
    for key in sorted(APPS):
        status, data = send(APPS[key], endpoint, json.dumps(document).encode())
        check(status, data, document)
        assert status == 200
        assert json.loads(data)["response"].get("status", {}).get("code") != 500


def test_realistic_reviews_are_answered_without_an_internal_error() -> None:
    """The three realistic reviews, both endpoints: a verdict of the handlers' own (the counter
    and the error log unchanged, checked by `send`), not one made by the failure policy."""
    client = APPS[("enforce", "fail")]
    for base in BASES:
        for endpoint in ENDPOINTS:
            status, data = send(client, endpoint, json.dumps(base).encode())
            assert status == 200 and json.loads(data)["response"].get("status", {}).get("code") != 500


FAILURE_ANSWERS = {
    "ignore": {"allowed": True, "warnings": ["fitguard could not review this object (internal error)"]},
    "fail": {
        "allowed": False,
        "status": {
            "code": 500,
            "message": "fitguard hit an internal error (see its logs)",
            "reason": "InternalError",
        },
    },
}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("policy", sorted(FAILURE_ANSWERS))
def test_an_injected_fault_is_answered_by_the_failure_policy(
    endpoint: str, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure-policy path on its own: a fault injected into what the endpoint reads from the
    cluster view (/mutate: the pod's security group lookup; /validate: the fit verdicts) is counted
    once, logged once, and answered 200 with exactly the policy's answer and the request's uid;
    nothing of the fault leaks into the answer."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    if endpoint == "/mutate":
        monkeypatch.setattr(ClusterView, "security_groups", broken)
    else:
        monkeypatch.setattr(RefusalMemo, "refusals", broken)
    client = create_app(VIEW, WebhookOptions(mode="enforce", failure_policy=policy)).test_client()
    counted, logged = internal_errors()
    answer = client.post(endpoint, data=json.dumps(BASES[0]), headers={"Content-Type": "application/json"})
    assert internal_errors() == (counted + 1, logged + 1)
    assert answer.status_code == 200
    assert json.loads(answer.get_data()) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "fuzz-uid", **FAILURE_ANSWERS[policy]},
    }


# -- through gunicorn over TLS -------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tls_files: TlsFiles, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("fuzz-webhook")
    state = work / "state.yaml"
    state.write_text(yaml.safe_dump_all(CLUSTER))
    with running(tls_files, ["--state", str(state)], workers=2, threads=4) as started:
        yield started


def _tls_socket(server: Server) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    return client_ssl_context(server.tls.ca_path).wrap_socket(raw, server_hostname="localhost")


def _read_status(sock: ssl.SSLSocket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]) if data else 0


def _request_head(length: int | None, chunked: bool = False) -> bytes:
    lines = ["POST /mutate HTTP/1.1", "Host: localhost", "Content-Type: application/json"]
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _healthy(server: Server, uid: str) -> None:
    conn = server.connect()
    status, body = post(conn, admission_review(pod(), uid))
    conn.close()
    assert status == 200 and body["response"]["uid"] == uid


@pytest.mark.slow
def test_hostile_bodies_over_tls_leave_the_workers_alive(server: Server) -> None:
    """Over real TLS: an 8 MiB body sent whole and an 8 MiB chunked body get 413, invalid UTF-8 and
    malformed JSON get 400, a client dribbling its body one byte at a time is answered 200 while
    others are served meanwhile; afterwards the same worker processes answer."""
    workers = sorted(_worker_pids(server.process.pid))
    assert len(workers) == 2
    big = b'{"kind":"AdmissionReview","x":"' + b"a" * (8 * 1024 * 1024) + b'"}'
    # a valid review padded past the limit: answered 200 if the server judged its first 7 MiB only
    padded = admission_review(pod(), "padded") + b" " * (8 * 1024 * 1024)
    with _tls_socket(server) as sock:
        sock.sendall(_request_head(len(big)))
        with contextlib.suppress(OSError):  # the server may answer and close before reading it all
            sock.sendall(big)
        assert _read_status(sock) == 413
    with _tls_socket(server) as sock:
        sock.sendall(_request_head(None, chunked=True))
        with contextlib.suppress(OSError):
            for start in range(0, len(padded), 1 << 20):
                piece = padded[start : start + (1 << 20)]
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sock.sendall(b"0\r\n\r\n")
        assert _read_status(sock) == 413
    for body in (b'{"kind": "AdmissionReview", "request": {"uid": "\xff\xfe"}}', b"{nope", b"\xc3\x28"):
        conn = server.connect()
        conn.request("POST", "/mutate", body=body, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        assert answer.status == 400, answer.read()
        conn.close()
    slow_body = admission_review(pod(), "slow")
    with _tls_socket(server) as sock:
        sock.sendall(_request_head(len(slow_body)))
        for index in range(0, len(slow_body), max(1, len(slow_body) // 20)):
            sock.sendall(slow_body[index : index + max(1, len(slow_body) // 20)])
            time.sleep(0.05)
            if index == 0:
                _healthy(server, "during-slow")  # another connection is served meanwhile
        assert _read_status(sock) == 200
    for i in range(6):
        _healthy(server, f"after-{i}")
    assert sorted(_worker_pids(server.process.pid)) == workers, "a worker died or was replaced"
