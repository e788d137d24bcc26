"""The admission port's HTTP contract (webhook/app.py) as whole answers: each bad body's status and
message, the AdmissionReview response for each kind of verdict, which requests /mutate handles,
the failure policy's answers, the findings of warn and audit mode, and the metrics each answer
moves (by their exact labels)."""

from __future__ import annotations

import base64
import copy
import io
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from prometheus_client import REGISTRY

from kube.statefile import load_state
from tests import objects
from tests.objects import node_groups_only
from webhook import answer as answers
from webhook.answer import Answer, Outcome, Webhook, is_pod_create, review_response
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.mutate import LINUX, Mutation
from webhook.review import Verdict, WebhookOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = node_groups_only(load_state(EXAMPLES / "cluster.yaml"))
V1 = "admission.k8s.io/v1"


def client(config: WebhookOptions | None = None, audit: Any = None, broken: bool = False) -> FlaskClient:
    view = from_objects(copy.deepcopy(CLUSTER))
    if broken:
        view.templates = None  # type: ignore[assignment]  # /validate fails inside: an internal error
    return create_app(view, config or WebhookOptions(), audit).test_client()


def pod(name: str = "p", cpu: str = "100m", **meta: Any) -> dict[str, Any]:
    return objects.pod(name, {"cpu": cpu}, meta=meta)


POD = {"group": "", "version": "v1", "kind": "Pod"}


def review(obj: Any, api_version: str = V1, **request: Any) -> dict[str, Any]:
    """A review of a Pod whatever `obj` is (the tests send objects that are not pods)."""
    return objects.review(obj, api_version=api_version, **{"kind": POD, "namespace": "default", **request})


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "request body is not JSON"),
        (b"[" * 100_000, "request body is not JSON"),
        (b'{"kind": "Pod"}', "request body is not an AdmissionReview"),
        (b"[]", "request body is not an AdmissionReview"),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}',
            "AdmissionReview has no request",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": []}',
            "AdmissionReview has no request",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": ""}}',
            "AdmissionReview request has no uid",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}}',
            "AdmissionReview request has no uid",
        ),
        (
            b'{"apiVersion": "admission.k8s.io/v9", "kind": "AdmissionReview", "request": {"uid": "u"}}',
            "unsupported AdmissionReview apiVersion 'admission.k8s.io/v9'",
        ),
        (
            b'{"kind": "AdmissionReview", "request": {"uid": "u"}}',
            "unsupported AdmissionReview apiVersion None",
        ),
    ],
)
@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_a_bad_body_gets_400_with_its_own_message_and_is_counted(
    body: bytes, message: str, endpoint: str
) -> None:
    """Each way a body can fail to be a review: HTTP 400, a JSON body holding exactly the message,
    counted once as invalid under the webhook's name and code 400."""
    labels = {"webhook": endpoint, "code": "400"}
    before = sample("fitguard_admission_invalid_requests_total", labels)
    answer = client().post(f"/{endpoint}", data=body, content_type="application/json")
    assert (answer.status_code, answer.mimetype, answer.get_json()) == (
        400,
        "application/json",
        {"message": message},
    )
    assert sample("fitguard_admission_invalid_requests_total", labels) == before + 1


@pytest.mark.parametrize(
    ("body", "content_type", "code", "message"),
    [
        (b"{}", "text/plain", 415, "content type must be application/json"),
        (b"x" * 65, "application/json", 413, "request body too large"),
    ],
)
def test_a_wrong_type_or_a_declared_oversize_is_answered_unread(
    body: bytes, content_type: str, code: int, message: str
) -> None:
    """415 for a content type other than JSON, 413 for a Content-Length over the limit (here 64
    bytes): each a whole JSON message, counted as invalid under its own code."""
    labels = {"webhook": "validate", "code": str(code)}
    before = sample("fitguard_admission_invalid_requests_total", labels)
    answer = client(WebhookOptions(max_body_bytes=64)).post("/validate", data=body, content_type=content_type)
    assert (answer.status_code, answer.get_json()) == (code, {"message": message})
    assert sample("fitguard_admission_invalid_requests_total", labels) == before + 1


def _chunked(app: FlaskClient, body: bytes) -> Any:
    """POST with no Content-Length, as a chunked body reaches the app from gunicorn (werkzeug
    reads `Transfer-Encoding: chunked` as no declared length)."""
    return app.post(
        "/mutate",
        input_stream=io.BytesIO(body),
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )


def test_a_body_exactly_at_the_limit_is_read_and_one_byte_over_is_413() -> None:
    """The limit is inclusive: a review padded with blanks to exactly max_body_bytes is answered,
    with or without a Content-Length; one blank more is 413 either way (a chunked body is judged
    by what arrives, not by a head that alone would parse)."""
    body = json.dumps(review(pod())).encode()
    limit = len(body) + 16
    app = client(WebhookOptions(max_body_bytes=limit))
    at, over = body + b" " * 16, body + b" " * 17
    for answer in (app.post("/mutate", data=at, content_type="application/json"), _chunked(app, at)):
        assert (answer.status_code, answer.get_json()["response"]["allowed"]) == (200, True)
    labels = {"webhook": "mutate", "code": "413"}
    before = sample("fitguard_admission_invalid_requests_total", labels)
    declared = app.post("/mutate", data=over, content_type="application/json")
    assert sample("fitguard_admission_invalid_requests_total", labels) == before + 1
    chunked = _chunked(app, over)
    assert sample("fitguard_admission_invalid_requests_total", labels) == before + 2
    for answer in (declared, chunked):
        assert (answer.status_code, answer.get_json()) == (413, {"message": "request body too large"})
    assert chunked.request.content_length is None


def test_an_oversized_chunked_body_is_read_only_one_byte_past_the_limit() -> None:
    """A chunked body far over the limit is not read whole: the app reads max_body_bytes + 1
    bytes of it (werkzeug's MAX_CONTENT_LENGTH), enough to tell it from a body at the limit, and
    answers 413; a body at the limit is read to its end."""
    body = json.dumps(review(pod())).encode()
    limit = len(body) + 16
    app = client(WebhookOptions(max_body_bytes=limit))
    for extra, code, read in ((16, 200, limit), (17, 413, limit + 1), (5000, 413, limit + 1)):
        stream = io.BytesIO(body + b" " * extra)
        answer = app.post(
            "/mutate",
            input_stream=stream,
            headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
            environ_overrides={"wsgi.input_terminated": True},
        )
        assert (answer.status_code, stream.tell()) == (code, read), extra


def label_values(family: str, label: str) -> set[str]:
    """Every value of `label` among the samples of the metric family `family`."""
    return {s.labels[label] for m in REGISTRY.collect() if m.name == family for s in m.samples}


def test_the_app_makes_its_series_under_its_own_label_values_only() -> None:
    """create_app's series: the internal-error counters of exactly the two webhooks, and the build
    info of the webhook (a misspelt label value would add a series no alert rule reads)."""
    client()
    assert label_values("fitguard_admission_errors", "webhook") == {"mutate", "validate"}
    assert label_values("fitguard_build_info", "component") == {"webhook"}


def test_other_methods_and_paths_get_405_and_404_as_json() -> None:
    """GET on an admission path is 405 naming POST in Allow; an unknown path is 404; both JSON."""
    app = client()
    got = app.get("/mutate")
    assert (got.status_code, got.headers["Allow"], got.mimetype) == (405, "POST", "application/json")
    assert got.get_json() == {"message": "The method is not allowed for the requested URL."}
    missing = app.post("/static/x")
    assert (missing.status_code, missing.mimetype) == (404, "application/json")


@pytest.mark.parametrize(
    ("verdict", "mutating", "response"),
    [
        (Verdict(), True, {"uid": "u", "allowed": True}),
        (
            Verdict(message="ok", patch=[{"op": "add", "path": "/a", "value": 1}], warnings=["w"]),
            True,
            {
                "uid": "u",
                "allowed": True,
                "status": {"code": 200, "message": "ok"},
                "patchType": "JSONPatch",
                "patch": base64.b64encode(b'[{"op":"add","path":"/a","value":1}]').decode(),
                "warnings": ["w"],
            },
        ),
        (Verdict(patch=[{"op": "add", "path": "/a", "value": 1}]), False, {"uid": "u", "allowed": True}),
        (
            Verdict(allowed=False, patch=[{"op": "add", "path": "/a", "value": 1}], message="no"),
            True,
            {"uid": "u", "allowed": False, "status": {"code": 403, "message": "no"}},
        ),
        (
            Verdict.deny("bad", code=400, reason="BadRequest"),
            True,
            {"uid": "u", "allowed": False, "status": {"code": 400, "message": "bad", "reason": "BadRequest"}},
        ),
        (Verdict(code=429), False, {"uid": "u", "allowed": True, "status": {"code": 429}}),
    ],
)
def test_the_review_response_of_each_kind_of_verdict(
    verdict: Verdict, mutating: bool, response: dict[str, Any]
) -> None:
    """uid and allowed always; a status only with a message or code (200 or 403 by default, the
    reason when set); a patch only for an allowed mutating answer; warnings when there are any."""
    assert review_response("admission.k8s.io/v1beta1", "u", verdict, mutating) == {
        "apiVersion": "admission.k8s.io/v1beta1",
        "kind": "AdmissionReview",
        "response": response,
    }


@pytest.mark.parametrize(
    ("request_", "handled"),
    [
        ({"operation": "CREATE", "kind": {"group": "", "kind": "Pod"}}, True),
        ({"operation": "CREATE", "kind": {"kind": "Pod"}}, True),
        ({"operation": "UPDATE", "kind": {"group": "", "kind": "Pod"}}, False),
        ({"operation": "CREATE", "kind": {"group": "apps", "kind": "Pod"}}, False),
        ({"operation": "CREATE", "kind": {"group": "", "kind": "Deployment"}}, False),
        ({"operation": "CREATE", "kind": "Pod"}, False),
        (
            {
                "operation": "CREATE",
                "kind": {"group": "", "kind": "Pod"},
                "subResource": "ephemeralcontainers",
            },
            False,
        ),
    ],
)
def test_mutate_handles_only_the_creation_of_a_core_pod(request_: dict[str, Any], handled: bool) -> None:
    """A CREATE of a core-group Pod (the group may be absent), not of a subresource."""
    assert is_pod_create(request_) is handled


@pytest.mark.parametrize(
    ("policy", "response"),
    [
        (
            "ignore",
            {
                "uid": "u-1",
                "allowed": True,
                "warnings": ["fitguard could not review this object (internal error)"],
            },
        ),
        (
            "fail",
            {
                "uid": "u-1",
                "allowed": False,
                "status": {
                    "code": 500,
                    "message": "fitguard hit an internal error (see its logs)",
                    "reason": "InternalError",
                },
            },
        ),
    ],
)
def test_an_internal_error_gets_the_failure_policys_whole_answer(
    policy: str, response: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A review that fails inside: 200 with the policy's whole response, the error counted once as
    an internal error and as an `error` verdict, and logged with the review's uid."""
    errors = sample("fitguard_admission_errors_total", {"webhook": "validate"})
    labels = {"webhook": "validate", "kind": "Pod", "operation": "CREATE", "verdict": "error"}
    verdicts = sample("fitguard_admission_reviews_total", labels)
    with caplog.at_level(logging.ERROR, logger="webhook.app"):
        answer = client(WebhookOptions(failure_policy=policy), broken=True).post(
            "/validate", json=review(pod())
        )
    assert (answer.status_code, answer.get_json()) == (
        200,
        {"apiVersion": V1, "kind": "AdmissionReview", "response": response},
    )
    assert sample("fitguard_admission_errors_total", {"webhook": "validate"}) == errors + 1
    assert sample("fitguard_admission_reviews_total", labels) == verdicts + 1
    assert [r.getMessage() for r in caplog.records] == ["validate: review u-1 failed"]


class Sink:
    def __init__(self) -> None:
        self.findings: list[tuple[Mapping[str, Any], str]] = []

    def __call__(self, request: Mapping[str, Any], message: str) -> None:
        self.findings.append((request, message))


SCRATCH = "\n".join(
    [
        "pod does not fit any node group",
        "ng-batch: Insufficient cpu: requests 300; an m5.large node would offer 1730m, and"
        " cluster-autoscaler sees 1700m while the group has 0 nodes: request less or use a larger type",
        "ng-burst: Insufficient cpu: requests 300; a t3.large node offers 1730m after 200m of DaemonSets:"
        " request less or use a larger type",
        "ng-general: Insufficient cpu: requests 300; an m5.xlarge node offers 3720m after 200m of DaemonSets:"
        " request less or use a larger type",
        "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 4 live nodes,"
        " no Karpenter NodePools",
    ]
)


@pytest.mark.parametrize("mode", ["warn", "audit"])
def test_a_finding_is_counted_logged_and_sent_to_the_audit_sink_once(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """warn and audit allow a pod that fits nowhere: the finding is counted under its mode, logged
    with kind, namespace, name and message, handed to the audit sink with the request, and the
    review counted under the mode's verdict with allowed="true"."""
    sink = Sink()
    audited = sample("fitguard_admission_audit_findings_total", {"verdict": mode})
    labels = {"webhook": "validate", "kind": "Pod", "operation": "CREATE", "verdict": mode}
    verdicts = sample("fitguard_admission_reviews_total", labels)
    req_labels = {"webhook": "validate", "operation": "CREATE", "allowed": "true", "dry_run": "false"}
    requests = sample("fitguard_admission_requests_total", req_labels)
    body = review(pod("big", cpu="300"))
    with caplog.at_level(logging.WARNING, logger="webhook.app"):
        answer = client(WebhookOptions(mode=mode), sink).post("/validate", json=body).get_json()
    assert answer["response"]["allowed"] is True
    assert sink.findings == [(body["request"], SCRATCH)]
    assert [r.getMessage() for r in caplog.records] == [f"{mode}: Pod default/big: {SCRATCH}"]
    assert sample("fitguard_admission_audit_findings_total", {"verdict": mode}) == audited + 1
    assert sample("fitguard_admission_reviews_total", labels) == verdicts + 1
    assert sample("fitguard_admission_requests_total", req_labels) == requests + 1


def test_a_dry_run_or_an_enforced_denial_records_no_finding() -> None:
    """A dry run gets the same answer and causes no finding; enforce denies (allowed="false",
    verdict deny) and records none either; a pod named only by generateName is logged by it."""
    sink = Sink()
    app = client(WebhookOptions(mode="audit"), sink)
    wet = app.post("/validate", json=review(pod("big", cpu="300"))).get_json()
    dry = app.post("/validate", json=review(pod("big", cpu="300"), dryRun=True)).get_json()
    assert dry == wet and len(sink.findings) == 1
    req_labels = {"webhook": "validate", "operation": "CREATE", "allowed": "false", "dry_run": "true"}
    before = sample("fitguard_admission_requests_total", req_labels)
    denied = client(WebhookOptions(), sink).post("/validate", json=review(pod("big", cpu="300"), dryRun=True))
    assert denied.get_json()["response"]["allowed"] is False
    assert sample("fitguard_admission_requests_total", req_labels) == before + 1
    assert len(sink.findings) == 1


def test_a_pod_named_by_generate_name_is_logged_by_it(caplog: pytest.LogCaptureFixture) -> None:
    """The log line of a finding names the object by generateName when it has no name."""
    obj = pod("x", cpu="300")
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = "web-"
    with caplog.at_level(logging.WARNING, logger="webhook.app"):
        client(WebhookOptions(mode="audit")).post("/validate", json=review(obj))
    assert [r.getMessage() for r in caplog.records] == [f"audit: Pod default/web-: {SCRATCH}"]


@pytest.mark.parametrize(
    ("obj", "request_", "verdict"),
    [
        (pod(), {}, "allow"),
        (pod("big", cpu="300"), {}, "deny"),
        (pod(), {"namespace": "kube-system"}, "allow"),
        (pod(), {"kind": "Pod", "operation": None}, "allow"),
        (pod(), {"kind": {"group": "", "version": "v1"}}, "allow"),
    ],
)
def test_each_review_is_counted_under_its_kind_operation_and_verdict(
    obj: dict[str, Any], request_: dict[str, Any], verdict: str
) -> None:
    """A fitting pod is `allow`, a refused one `deny`, an exempt one `allow`; a request whose kind
    is not a map or names no kind, or whose operation is missing, is counted as kind or operation
    `other`, as any value outside the label's closed set is (the request counter too)."""
    body = review(obj, **request_)
    named = isinstance(body["request"]["kind"], dict) and "kind" in body["request"]["kind"]
    kind = "Pod" if named else "other"
    operation = body["request"]["operation"] or "other"
    labels = {"webhook": "validate", "kind": kind, "operation": operation, "verdict": verdict}
    allowed = "false" if verdict == "deny" else "true"
    req_labels = {"webhook": "validate", "operation": operation, "allowed": allowed, "dry_run": "false"}
    before = sample("fitguard_admission_reviews_total", labels)
    requests = sample("fitguard_admission_requests_total", req_labels)
    assert client().post("/validate", json=body).status_code == 200
    assert sample("fitguard_admission_reviews_total", labels) == before + 1
    assert sample("fitguard_admission_requests_total", req_labels) == requests + 1


def test_mutate_answers_a_warning_verdict_as_warn_and_echoes_v1beta1() -> None:
    """/mutate under warn with a missing ServiceAccount: allowed with the message as a warning,
    counted as `warn`, answered in the review's own apiVersion with no status or patch."""
    labels = {"webhook": "mutate", "kind": "Pod", "operation": "CREATE", "verdict": "warn"}
    before = sample("fitguard_admission_reviews_total", labels)
    obj = pod()
    obj["spec"]["serviceAccountName"] = "ghost"
    body = review(obj, api_version="admission.k8s.io/v1beta1")
    answer = client(WebhookOptions(mode="warn")).post("/mutate", json=body).get_json()
    assert answer == {
        "apiVersion": "admission.k8s.io/v1beta1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u-1",
            "allowed": True,
            "warnings": [
                'fitguard could not match the pod to SecurityGroupPolicies: serviceaccount "ghost" not found'
                ' in namespace "default"'
            ],
        },
    }
    assert sample("fitguard_admission_reviews_total", labels) == before + 1


def test_an_exempt_request_is_allowed_with_its_reason_without_review() -> None:
    """An exempt namespace's pod: allowed, status 200 with the exemption as message, no patch."""
    answer = client().post("/mutate", json=review(pod(), namespace="kube-system")).get_json()
    assert answer["response"] == {
        "uid": "u-1",
        "allowed": True,
        "status": {"code": 200, "message": "namespace kube-system is exempt"},
    }


def test_the_in_flight_gauge_returns_to_where_it_was() -> None:
    """Every answer, even a 400, decrements what it incremented; the duration is observed once."""
    gauge = {"webhook": "mutate"}
    before = sample("fitguard_admission_requests_in_flight", gauge)
    count = sample("fitguard_admission_duration_seconds_count", gauge)
    app = client()
    app.post("/mutate", json=review(pod()))
    app.post("/mutate", data=b"nope", content_type="application/json")
    assert sample("fitguard_admission_requests_in_flight", gauge) == before
    assert sample("fitguard_admission_duration_seconds_count", gauge) == count + 2


def test_options_is_not_answered_and_the_error_series_exist_from_the_start() -> None:
    """No automatic OPTIONS (405 naming POST); right after the app is made, both webhooks'
    internal-error counters exist (at whatever they were), so alert rules can rate() them."""
    app = client()
    got = app.options("/validate")
    assert (got.status_code, got.headers["Allow"]) == (405, "POST")
    for webhook in ("mutate", "validate"):
        assert REGISTRY.get_sample_value("fitguard_admission_errors_total", {"webhook": webhook}) is not None


def test_every_answer_is_compact_json() -> None:
    """The port writes its JSON without blanks: an error message and a whole review answer, byte
    for byte."""
    small = client(WebhookOptions(max_body_bytes=64))
    over = small.post("/validate", data=b"x" * 65, content_type="application/json")
    assert (over.status_code, over.data) == (413, b'{"message":"request body too large"}')
    answer = client().post("/validate", json=review(pod()))
    assert (answer.status_code, answer.mimetype, answer.data) == (
        200,
        "application/json",
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true}}',
    )


def test_an_unknown_path_gets_werkzeugs_whole_404_message() -> None:
    """A path the port does not serve: 404 with werkzeug's own description as the message."""
    missing = client().post("/static/x")
    assert (missing.status_code, missing.data) == (
        404,
        b'{"message":"The requested URL was not found on the server. If you entered the URL manually'
        b' please check your spelling and try again."}',
    )


def test_an_error_outside_a_review_is_a_plain_500_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """An exception that escapes a view of the app (here a route added for the test) gets 500 with
    the whole message "internal error", no stack trace, and is logged with method and path."""
    app = create_app(from_objects(copy.deepcopy(CLUSTER)), WebhookOptions())

    @app.get("/boom")
    def boom() -> str:
        raise RuntimeError("secret detail")

    with caplog.at_level(logging.ERROR, logger="webhook.app"):
        got = app.test_client().get("/boom")
    assert (got.status_code, got.mimetype, got.data) == (
        500,
        "application/json",
        b'{"message":"internal error"}',
    )
    assert [r.getMessage() for r in caplog.records] == ["unhandled error on GET /boom"]


# Not tests.objects.Clock: this one stands in for the `time` module webhook.app reads durations
# from, and moves itself on each reading, so a review's measured duration is known.
class Clock:
    """Stands in for the `time` module of webhook.app: each perf_counter() is 0.25 s after the last."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        self.now += 0.25
        return self.now


def test_the_duration_observed_is_from_the_start_of_the_review_to_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One review read twice from a clock that moves 0.25 s per reading: one observation of exactly
    0.25 s under the webhook's name (the clock is a stand-in, nothing waits)."""
    import webhook.app

    gauge = {"webhook": "validate"}
    count = sample("fitguard_admission_duration_seconds_count", gauge)
    total = sample("fitguard_admission_duration_seconds_sum", gauge)
    app = client()
    monkeypatch.setattr(webhook.app, "time", Clock())
    assert app.post("/validate", json=review(pod())).status_code == 200
    assert sample("fitguard_admission_duration_seconds_count", gauge) == count + 1
    assert sample("fitguard_admission_duration_seconds_sum", gauge) == total + 0.25


def test_the_app_sets_the_webhooks_build_info() -> None:
    """After the app is made, fitguard_build_info says 1 for the webhook at the project's version."""
    client()
    assert sample("fitguard_build_info", {"component": "webhook", "version": "0.1.0"}) == 1.0


@pytest.mark.parametrize("metadata", [{"namespace": "default"}, None, "absent"])
def test_a_finding_about_an_unnamed_pod_is_logged_with_an_empty_name(
    metadata: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A pod with neither name nor generateName, with a null metadata or with none at all: the
    finding is still answered (allowed, 200) and logged with an empty name after the namespace."""
    obj = pod("x", cpu="300")
    if metadata == "absent":
        del obj["metadata"]
    else:
        obj["metadata"] = metadata
    with caplog.at_level(logging.WARNING, logger="webhook.app"):
        answer = client(WebhookOptions(mode="audit")).post("/validate", json=review(obj))
    assert (answer.status_code, answer.get_json()["response"]["allowed"]) == (200, True)
    assert [r.getMessage() for r in caplog.records] == [f"audit: Pod default/: {SCRATCH}"]


def test_a_declared_oversize_is_refused_before_its_body_is_read() -> None:
    """A Content-Length over the limit is answered 413 from the header alone: the app does not wait
    for (nor read) the body it declares, so a short review sent under a declared length of a
    megabyte is refused as too large, not read and judged."""
    body = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u"}}
    ).encode()
    answer = client(WebhookOptions(max_body_bytes=64 * 1024)).post(
        "/validate",
        input_stream=io.BytesIO(body),
        headers={"Content-Type": "application/json"},
        environ_overrides={"CONTENT_LENGTH": str(1024 * 1024)},
    )
    assert (answer.status_code, answer.get_json()) == (413, {"message": "request body too large"})


def test_an_answer_carries_its_webhook_its_exemption_and_its_mutation_whole() -> None:
    """webhook/answer.py answer(), as `fitguard check` reads it: an exempt request is allowed with
    the reason and says it was not reviewed; a pod /mutate reviews carries the mutation it made
    (a pod matching no SecurityGroupPolicy: nothing injected, the message says why)."""
    view = from_objects(copy.deepcopy(CLUSTER))
    exempt = review(pod(), namespace="kube-system")["request"]
    reason = "namespace kube-system is exempt"
    assert answers.answer(Webhook.VALIDATE, exempt, view, WebhookOptions()) == Answer(
        Webhook.VALIDATE, "u-1", Verdict(allowed=True, message=reason), Outcome.ALLOW, exemption=reason
    )
    made = answers.answer(Webhook.MUTATE, review(pod())["request"], view, WebhookOptions())
    said = "Pod didn't match any SGP"
    assert made == Answer(
        Webhook.MUTATE,
        "u-1",
        Verdict(allowed=True, message=said),
        Outcome.ALLOW,
        mutation=Mutation(LINUX, [], said),
    )
