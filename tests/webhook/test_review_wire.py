"""The admission path decodes only what an answer reads (webhook/review_wire.py `decode_review`),
and answers exactly as it did when it decoded the whole review with `load_json`: the same
AdmissionReview back, byte for byte, for the benchmark's reviews and for every workload and pod of
the add-on corpus; the same value or the same refusal for bodies at the edges of JSON."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.bench import synth
from tests.corpus.subjects import CLUSTERS, load_objects, subjects, with_installed_accounts
from webhook.answer import Webhook, answer
from webhook.app import create_app
from webhook.cluster import ClusterView, from_objects
from webhook.review import WebhookOptions
from webhook.review_wire import SLIM_KINDS, decode_review, load_json
from webhook.validate import TEMPLATE_PATHS


def outcome(decode: Any, body: bytes) -> Any:
    try:
        return ("decoded", decode(body))
    except (ValueError, RecursionError) as err:
        return ("refused", type(err).__name__)


@functools.cache
def bench_view() -> ClusterView:
    return from_objects(synth.state_objects(40))


@functools.cache
def demo_objects() -> list[dict[str, Any]]:
    return with_installed_accounts(load_objects(CLUSTERS["demo"]))


def review_of(obj: Mapping[str, Any], operation: str = "CREATE", old: Any = None) -> bytes:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    meta = obj.get("metadata") or {}
    request = {
        "uid": "u-1",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": f"{str(obj['kind']).lower()}s"},
        "namespace": meta.get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": "someone", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    ).encode()


def answers(view: ClusterView, body: bytes, config: WebhookOptions) -> list[Any]:
    """Each webhook's answer to the review decoded whole, and decoded by the schema."""
    whole, slim = load_json(body)["request"], decode_review(body)["request"]
    found = []
    for webhook in Webhook:
        for request in (whole, slim):
            given = answer(webhook, request, view, config)
            found.append(
                (given.review("admission.k8s.io/v1"), given.outcome, given.exemption, given.mutation)
            )
    return found


def test_every_kind_the_validating_webhook_judges_has_its_schema() -> None:
    """A kind /validate judges that the wire had no schema for would be decoded whole (correct, but
    slow); one with a schema /validate does not judge would be a schema for nothing."""
    assert set(SLIM_KINDS) == set(TEMPLATE_PATHS)


@pytest.mark.parametrize("mode", ["enforce", "warn", "audit"])
def test_the_benchmarks_reviews_get_the_same_answers_from_the_slim_decode(mode: str) -> None:
    """Pods and Deployments of 4 to 20 KB (env, probes, volumes), judged against 40 node groups
    with SecurityGroupPolicies: every answer of both webhooks is the one the whole decode gives."""
    config = WebhookOptions(mode=mode)
    bodies = synth.review_bodies(24, seed=7, deployments=0.4)
    for body in bodies:
        mutate_whole, mutate_slim, validate_whole, validate_slim = answers(bench_view(), body, config)
        assert mutate_slim == mutate_whole
        assert validate_slim == validate_whole


def test_the_corpus_gets_the_same_answers_from_the_slim_decode() -> None:
    """Every add-on workload and every pod its controller makes (tests/corpus), as a CREATE on the
    demo cluster: the same answer from both decodes, denials included."""
    view = from_objects(demo_objects())
    judged = subjects(demo_objects())
    assert judged
    for subject in judged:
        mutate_whole, mutate_slim, validate_whole, validate_slim = answers(
            view, review_of(subject.obj), WebhookOptions()
        )
        assert (mutate_slim, validate_slim) == (mutate_whole, validate_whole), subject.where


def test_an_update_is_decoded_whole_old_and_new() -> None:
    """An update is judged by comparing its old and new templates whole, so a change the answer
    does not read (a container's env) still tells them apart: both objects come whole."""
    pod = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}}},
    }
    changed = json.loads(json.dumps(pod))
    changed["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "2"
    body = review_of(changed, "UPDATE", old=pod)
    slim, whole = decode_review(body)["request"], load_json(body)["request"]
    assert (slim["object"], slim["oldObject"]) == (whole["object"], whole["oldObject"])
    assert slim["object"] != slim["oldObject"]


def test_a_create_that_carries_an_old_object_keeps_it_whole() -> None:
    """The API server sends no oldObject with a CREATE; a client that does still has it read (a
    DaemonSet's verdict compares the two): the old object comes whole, as json.loads reads it."""
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:1"}]}}},
    }
    body = review_of(daemonset, "CREATE", old=daemonset)
    slim, whole = decode_review(body)["request"], load_json(body)["request"]
    assert slim["oldObject"] == whole["oldObject"] == daemonset


def test_a_create_keeps_what_the_answer_reads_and_drops_the_rest() -> None:
    """The schema's cut: the request's frame, the object's kind, names, labels and annotations,
    every pod spec field, and of each container its name, resources and restartPolicy."""
    container = {
        "name": "c",
        "image": "x",
        "env": [{"name": "A", "value": "1"}],
        "resources": {"requests": {"cpu": "1"}},
        "restartPolicy": "Always",
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "uid": "x",
            "labels": {"a": "b"},
            "annotations": {"kubernetes.io/config.mirror": "x"},
            "managedFields": [],
        },
        "spec": {
            "containers": [container],
            "initContainers": [container],
            "volumes": [{"name": "v"}],
            "os": {},
        },
        "status": {"phase": "Pending"},
    }
    request = decode_review(review_of(pod))["request"]
    slim = {"name": "c", "resources": {"requests": {"cpu": "1"}}, "restartPolicy": "Always"}
    assert request["object"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "uid": "x",
            "labels": {"a": "b"},
            "annotations": {"kubernetes.io/config.mirror": "x"},
        },
        "spec": {"containers": [slim], "initContainers": [slim], "volumes": [{"name": "v"}], "os": {}},
    }
    assert set(request) == {"uid", "kind", "namespace", "operation", "object", "oldObject", "dryRun"}
    assert request["oldObject"] is None
    # the mirror of a static pod is not judged, by either decode (its annotation is kept)
    _, _, validate_whole, validate_slim = answers(bench_view(), review_of(pod), WebhookOptions())
    assert validate_slim == validate_whole
    assert validate_slim[0]["response"]["auditAnnotations"] == {"abstained": "static-pod"}


POD = (
    b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[%s]}}'
)


def review_bytes(obj: bytes, extra: bytes = b"") -> bytes:
    frame = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",'
    return (
        frame
        + b'"kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE",'
        + extra
        + b'"object":'
        + obj
        + b"}}"
    )


@pytest.mark.parametrize(
    "body",
    [
        review_bytes(
            POD % b'{"name":"c","env":[{"name":"A","value":"\xff"}]}'
        ),  # not UTF-8, in a skipped string
        review_bytes(POD % b'{"name":"\xff"}'),  # not UTF-8 where it is kept
        review_bytes(POD % '{"name":"c","env":[{"value":"\u00e9\u2026"}]}'.encode()),  # UTF-8, skipped
        review_bytes(POD % b'{"name":"c","env":[{"value":"\\ud800"}]}'),  # a lone surrogate
        review_bytes(POD % b'{"name":"c","resources":{"requests":{"cpu":NaN}}}'),
        review_bytes(POD % b'{"name":"c","resources":{"requests":{"cpu":12345678901234567890123}}}'),
        review_bytes(POD % b'"not a container"'),  # the schema refuses: the object comes whole
        review_bytes(POD % b'{"name":"c"}', b'"userInfo":{"extra":' + b"[" * 3000 + b"]" * 3000 + b"},"),
        review_bytes(POD % b'{"name":"c"}', b'"options":1e400,'),
        review_bytes(POD % b'{"name":"c"}', b'"object":{"kind":"first"},'),  # the last key wins
        review_bytes(b'{"metadata":null,"spec":null}'),
        review_bytes(b"[1,2]"),
        review_bytes(POD % b'{"name":"c"}')[:-2],  # cut short
        b"\xef\xbb\xbf" + review_bytes(POD % b'{"name":"c"}'),  # a UTF-8 byte order mark
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[1]}',
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":{},"oldObject":[]}}',
        b"[]",
        b"",
        # a kind that is no string (no schema is looked up by it) and a request with no kind
        review_bytes(POD % b'{"name":"c"}').replace(b'"kind":"Pod"}', b'"kind":["Pod"]}', 1),
        review_bytes(POD % b'{"name":"c"}').replace(
            b'"kind":{"group":"","version":"v1","kind":"Pod"},', b"", 1
        ),
    ],
)
def test_the_slim_decode_accepts_and_refuses_what_the_whole_one_does(body: bytes) -> None:
    """Bodies at the edges of JSON, in the parts the answer reads and in those it skips: refused
    with the same error, or accepted with the same values where the answer reads them."""
    slim, whole = outcome(decode_review, body), outcome(load_json, body)
    assert slim[0] == whole[0]
    if slim[0] == "refused":
        assert slim == whole
        return
    req_slim, req_whole = (
        value.get("request") if isinstance(value, dict) else None for value in (slim[1], whole[1])
    )
    if not isinstance(req_whole, dict):
        assert slim == whole
        return
    obj = req_whole.get("object")
    kept = obj if not isinstance(obj, dict) or req_slim["object"] == obj else project(obj)
    assert req_slim["object"] == kept


def project(obj: Mapping[str, Any]) -> Any:
    """The schema's cut of a whole pod, the long way (for the edge bodies above)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k in ("name", "namespace", "labels")}
    spec = dict(obj.get("spec") or {})
    spec["containers"] = [
        {k: v for k, v in c.items() if k in ("name", "resources")} for c in spec["containers"]
    ]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta, "spec": spec}


leaf = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6)
anything = st.recursive(
    leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    resources=anything,
    selector=anything,
    tolerations=anything,
    labels=anything,
    env=anything,
    kind=st.sampled_from(["Pod", "Deployment", "CronJob", "Service"]),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
)
def test_any_review_gets_the_same_answer_from_either_decode(
    resources: Any, selector: Any, tolerations: Any, labels: Any, env: Any, kind: str, operation: str
) -> None:
    """Whatever the values in the fields the answer reads and in those it skips (maps, lists,
    numbers beyond 64 bits, NaN, odd strings), both webhooks answer as the whole decode lets them."""
    spec = {
        "nodeSelector": selector,
        "tolerations": tolerations,
        "containers": [{"name": "c", "env": env, "resources": resources}],
    }
    template = {"metadata": {"labels": labels}, "spec": spec}
    if kind == "Pod":
        obj = {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {"name": "p", "namespace": "team-01", "labels": labels},
            "spec": spec,
        }
    elif kind == "CronJob":
        obj = {
            "apiVersion": "batch/v1",
            "kind": kind,
            "metadata": {"name": "j"},
            "spec": {"jobTemplate": {"spec": {"template": template}}},
        }
    else:
        obj = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": "d"},
            "spec": {"template": template},
        }
    body = review_of(obj, operation, old=obj if operation == "UPDATE" else None)
    mutate_whole, mutate_slim, validate_whole, validate_slim = answers(bench_view(), body, WebhookOptions())
    assert (mutate_slim, validate_slim) == (mutate_whole, validate_whole)


def test_the_app_decodes_with_the_slim_decoder_and_answers_the_same_bytes() -> None:
    """Through the Flask app: the benchmark's reviews are answered with the bytes the whole decode
    gives (serialised the way the app serialises its answers)."""
    client = create_app(bench_view(), WebhookOptions()).test_client()
    for body in synth.review_bodies(8, seed=3, deployments=0.5):
        for webhook in Webhook:
            sent = client.post(f"/{webhook.value}", data=body, content_type="application/json")
            expected = answer(webhook, load_json(body)["request"], bench_view(), WebhookOptions())
            assert sent.status_code == 200
            assert (
                sent.get_data()
                == json.dumps(expected.review("admission.k8s.io/v1"), separators=(",", ":")).encode()
            )
