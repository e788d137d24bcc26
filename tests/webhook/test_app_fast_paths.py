"""The shortcuts the admission path takes for speed give the answers the long way gave: a template
judged with /mutate's resource built in (sharing the rest) instead of its patch applied to a deep
copy, a denial's text remembered per shape,
templates listed only when the memo misses, each reason's field found once."""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from capacity.fit import PodNeeds, Reason
from capacity.serve import GroupVerdict, denial_message
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate
from kube.statefile import load_state
from kube.store import Store
from tests.bench.admission import split_cpus, spread
from webhook.app import create_app
from webhook.cluster import ClusterView, from_objects
from webhook.denial_fields import field_lines, reason_path, warnings_for
from webhook.memo import RefusalMemo
from webhook.mutate import POD_ENI, apply_patch, inject_resource, with_resource
from webhook.review import WebhookOptions
from webhook.review_wire import load_json
from webhook.validate import Listed, review

OBJECTS = load_state(Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml")
TEMPLATES = [NodeGroupTemplate.from_object(o) for o in OBJECTS if o["kind"] == "NodeGroupTemplate"]

CASES = [
    ({"a": {"b": 1}}, [{"op": "add", "path": "/a/c", "value": {"d": [1]}}]),
    ({"a": {"b": 1}}, [{"op": "replace", "path": "/a/b", "value": 2}]),
    ({"a": {"b": 1, "c": 2}}, [{"op": "remove", "path": "/a/b"}]),
    ({"a": [1, 2]}, [{"op": "add", "path": "/a/-", "value": 3}]),
    ({"a": [1, 2]}, [{"op": "add", "path": "/a/0", "value": 0}]),
    ({"a": [1, 2]}, [{"op": "replace", "path": "/a/1", "value": 5}]),
    ({"a": [1, 2]}, [{"op": "remove", "path": "/a/0"}]),
    ({"a/b": {"~c": 1}}, [{"op": "replace", "path": "/a~1b/~0c", "value": 2}]),
    ({"l": [{"x": 1}, {"x": 2}]}, [{"op": "add", "path": "/l/1/y", "value": 3}]),
    ([1, [2]], [{"op": "add", "path": "/1/-", "value": 3}]),  # a list at the root
    (7, []),  # no operation on a document that is not a container: the document itself
    # two operations down the same path: the second changes the copy the first made
    (
        {"s": {"c": [{"r": {"q": {"cpu": "1"}}}]}, "keep": {"k": [1]}},
        [
            {"op": "add", "path": "/s/c/0/r/q/x", "value": "1"},
            {"op": "add", "path": "/s/c/0/r/l", "value": {"x": "1"}},
        ],
    ),
]


@pytest.mark.parametrize(("document", "patch"), CASES)
def test_the_patch_applier_agrees_with_jsonpatch_and_leaves_its_input(
    document: Any, patch: list[Any]
) -> None:
    """`apply_patch` (what `fitguard check` applies /mutate's patch with, as the API server does)
    gives the document jsonpatch gives, and the input is left unchanged."""
    before = copy.deepcopy(document)
    assert apply_patch(document, patch) == jsonpatch.apply_patch(document, patch, in_place=False)
    assert document == before


RESOURCES: list[Any] = [
    None,
    {},
    {"limits": None, "requests": {"cpu": "1"}},
    {"requests": {"cpu": "1", "memory": "1Gi"}},
    {"limits": {"memory": "1Gi"}},
    {"requests": {POD_ENI: "2", "cpu": "1"}, "limits": {"cpu": "2", POD_ENI: "1"}},
    {"claims": [{"name": "gpu"}], "requests": {"cpu": "1"}},
]


@pytest.mark.parametrize("resources", RESOURCES)
def test_the_spec_built_with_the_resource_is_the_patched_one_key_for_key(resources: Any) -> None:
    """`with_resource` (how /validate judges a workload's template as /mutate leaves its pods) gives
    the spec that `inject_resource`'s patch gives, with every key in the same order (absent maps,
    null maps, a different value already there), and shares the containers it does not change."""
    first: dict[str, Any] = {"name": "app"} if resources is None else {"name": "app", "resources": resources}
    pod = {"metadata": {}, "spec": {"containers": [first, {"name": "sidecar"}], "volumes": []}}
    patch: list[dict[str, Any]] = []
    inject_resource(patch, pod, POD_ENI)
    patched = jsonpatch.apply_patch(pod, patch, in_place=False)["spec"]
    built = with_resource(pod["spec"], POD_ENI)
    assert json.dumps(built) == json.dumps(patched)
    assert built["containers"][1] is pod["spec"]["containers"][1]
    assert built["volumes"] is pod["spec"]["volumes"]
    assert pod["spec"]["containers"][0] == first  # the input is left as it was


def test_a_reason_shared_by_many_groups_names_its_field_once_in_order() -> None:
    """Hundreds of refusing groups with a few distinct reasons: one field per distinct reason, in
    the order of first appearance (not in the order of a set); a taint and a selector mismatch,
    neither with a resource, stay apart."""
    names = ("memory", "cpu", "ephemeral-storage", "vpc.amazonaws.com/pod-eni", "hugepages-2Mi", "pods")
    spec = {"containers": [{"name": "c", "resources": {"requests": dict.fromkeys(names, "1")}}]}
    reasons = [Reason(f"Insufficient {name}", name) for name in names]
    taint = Reason("untolerated taint", taint=Taint("k", "v", "NoSchedule"))
    verdicts = [GroupVerdict(f"ng-{i}", serves=False, reasons=(reasons[0],)) for i in range(200)]
    selector = Reason("node(s) didn't match Pod's node affinity/selector")
    verdicts += [GroupVerdict("ng-t", serves=False, reasons=(taint, selector, *reasons[1:3]))]
    verdicts += [GroupVerdict(f"ng-m{i}", serves=False, reasons=tuple(reversed(reasons))) for i in range(200)]
    # a group that serves names no field, whatever it carries
    verdicts.insert(
        0, GroupVerdict("ng-s", serves=True, reasons=(Reason("Insufficient x", "example.com/x"),))
    )
    field = "s.containers[0].resources.requests"
    later = (*names[1:3], *reversed(names[3:]))  # the last group names the other three first, reversed
    expected = [
        f"{field}.{names[0]}",
        "s.tolerations",
        "s.affinity.nodeAffinity",
        *(f"{field}.{name}" for name in later),
    ]
    assert field_lines(verdicts, spec, "s") == [f"fields to edit: {', '.join(expected)}"]


def _warnings_the_long_way(verdicts: list[GroupVerdict], spec: Any, base: str) -> list[str]:
    """`warnings_for` as it was first written: every reason's field looked up on its own."""
    by_path: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.serves:
            continue
        for reason in verdict.reasons:
            note = reason.message.removeprefix("Insufficient ")
            by_path.setdefault(reason_path(spec, base, reason), []).append(f"{verdict.group} ({note})")
    return [f"{path}: fits no node group: {', '.join(groups)}" for path, groups in by_path.items()]


def test_the_warnings_find_each_reasons_field_once_and_say_what_the_long_way_says() -> None:
    """warn mode's warnings look each kind of reason's field up once: a taint and a selector
    mismatch (neither with a resource) still go to their own fields, and every group is listed
    under the field the per-reason lookup gives it, in the same order."""
    spec = {
        "nodeSelector": {"team": "a"},
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}}],
    }
    taint = Reason("untolerated taint", taint=Taint("k", "v", "NoSchedule"))
    selector = Reason("node(s) didn't match Pod's node affinity/selector")
    cpu, memory = Reason("Insufficient cpu", "cpu"), Reason("Insufficient memory", "memory")
    verdicts = [
        GroupVerdict("a", serves=False, reasons=(taint,)),
        GroupVerdict("b", serves=False, reasons=(selector, cpu)),
        GroupVerdict("c", serves=False, reasons=(memory, taint)),
    ]
    expected = _warnings_the_long_way(verdicts, spec, "s")
    assert warnings_for(verdicts, spec, "s") == expected
    assert expected == [
        "s.tolerations: fits no node group: a (untolerated taint), c (untolerated taint)",
        "s.nodeSelector: fits no node group: b (node(s) didn't match Pod's node affinity/selector)",
        "s.containers[0].resources.requests.cpu: fits no node group: b (cpu)",
        "s.containers[0].resources.limits.memory: fits no node group: c (memory)",
    ]


def test_a_denial_text_is_remembered_per_shape_subject_and_extra_lines() -> None:
    """The same shape, subject and extra lines in one generation get the very same text; another
    subject, other extra lines or a new generation get their own, each equal to what
    `denial_message` writes."""
    memo = RefusalMemo()
    shape = PodNeeds.from_spec({"containers": [{"name": "c", "resources": {"requests": {"cpu": "300"}}}]})
    verdicts = memo.refusals(shape, TEMPLATES, 1)
    assert verdicts is not None
    first = memo.denial_message(verdicts, shape, "pod", [], 1)
    assert first == denial_message(verdicts, shape, "pod", [])
    assert memo.denial_message(verdicts, shape, "pod", [], 1) is first
    other = memo.denial_message(verdicts, shape, "Deployment web", ["fields to edit: x"], 1)
    assert other == denial_message(verdicts, shape, "Deployment web", ["fields to edit: x"])
    assert memo.denial_message(verdicts, shape, "Deployment web", [], 1) == denial_message(
        verdicts, shape, "Deployment web", []
    )
    assert memo.denial_message([], shape, "pod", [], 2) == denial_message([], shape, "pod", [])


class CountingStore(Store[NodeGroupTemplate]):
    """A templates store that counts how often its items are listed."""

    listed = 0

    def items(self, namespace: str | None = None) -> list[NodeGroupTemplate]:
        self.listed += 1
        return super().items(namespace)


def counting_view() -> tuple[ClusterView, CountingStore]:
    """The bundled cluster, its templates in a store that counts how often it is listed."""
    view = from_objects(copy.deepcopy(OBJECTS))
    store = CountingStore("NodeGroupTemplate", NodeGroupTemplate.from_object)
    store.replace([o for o in copy.deepcopy(OBJECTS) if o["kind"] == "NodeGroupTemplate"])
    view.templates = store
    return view, store


def pod_request(cpu: str) -> dict[str, Any]:
    """The admission request of a one-container pod asking for `cpu`."""
    return {
        "uid": "u",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": "default",
        "object": {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        },
    }


def test_templates_are_listed_once_on_a_miss_and_not_at_all_on_a_hit() -> None:
    """A shape the memo knows is answered without listing the templates; a new shape lists them
    once, and both questions (refusals, then autoscaler memory) read that one listing."""
    view, store = counting_view()
    pod = pod_request("100m")
    config = WebhookOptions()
    first = review(pod, view, config)
    assert store.listed == 1
    assert review(pod, view, config) == first
    assert store.listed == 1
    listed = Listed(store)
    assert list(listed) == list(listed) == store.items()
    assert store.listed == 3  # the two iterations above shared one listing; items() made the third


def test_each_label_set_is_counted_apart_by_one_app() -> None:
    """One app answers an allowed pod, a denied pod and an UPDATE: each review is counted under
    its own webhook, kind, operation and verdict (the app keeps a series per label set)."""
    app = create_app(from_objects(copy.deepcopy(OBJECTS)), WebhookOptions()).test_client()
    series = [
        ("validate", "Pod", "CREATE", "allow"),
        ("validate", "Pod", "CREATE", "deny"),
        ("validate", "Pod", "UPDATE", "allow"),
        ("mutate", "Pod", "CREATE", "allow"),
    ]
    keys = ("webhook", "kind", "operation", "verdict")

    def counts() -> list[float]:
        name = "fitguard_admission_reviews_total"
        return [REGISTRY.get_sample_value(name, dict(zip(keys, s, strict=True))) or 0.0 for s in series]

    before = counts()
    for endpoint, cpu, operation in (
        ("validate", "100m", "CREATE"),
        ("validate", "300", "CREATE"),
        ("validate", "300", "CREATE"),
        ("validate", "100m", "UPDATE"),
        ("mutate", "100m", "CREATE"),
    ):
        obj = {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        }
        req = {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": operation,
               "namespace": "default", "object": obj, "oldObject": obj}  # fmt: skip
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
        assert app.post(f"/{endpoint}", json=body).status_code == 200
    assert [after - b for after, b in zip(counts(), before, strict=True)] == [1.0, 2.0, 1.0, 1.0]


def test_a_json_content_type_with_parameters_is_parsed_and_accepted() -> None:
    """`application/json; charset=utf-8` is JSON (parsed as before); `text/json` is refused 415."""
    app = create_app(from_objects(copy.deepcopy(OBJECTS)), WebhookOptions()).test_client()
    body = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}'
    with_charset = app.post("/validate", data=body, content_type="application/json; charset=utf-8")
    assert (with_charset.status_code, with_charset.get_json()) == (
        200,
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": True},
        },
    )
    refused = app.post("/validate", data=body, content_type="text/json")
    assert (refused.status_code, refused.get_json()) == (
        415,
        {"message": "content type must be application/json"},
    )


def test_the_server_gets_one_cpu_and_the_load_the_others() -> None:
    """The highest-numbered CPU serves; every other one loads; fewer than two CPUs cannot pin."""
    assert split_cpus({0, 1}) == ((1,), (0,))
    assert split_cpus({2, 5, 7, 3}) == ((7,), (2, 3, 5))
    with pytest.raises(ValueError, match="two CPUs"):
        split_cpus({0})


def test_rounds_are_summarised_by_their_median_and_spread() -> None:
    """An odd number of rounds: the middle one; min and max are the extremes."""
    assert spread([0.8, 0.95, 0.9, 0.7, 0.92]) == {"median": 0.9, "min": 0.7, "max": 0.95}


def typed(value: Any) -> Any:
    """A value with the type of every part spelled out (1 and 1.0 differ; NaN equals NaN)."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def json_loads_outcome(body: bytes) -> Any:
    try:
        return typed(json.loads(body))
    except (ValueError, RecursionError) as err:
        return ("refused", type(err).__name__)


def load_json_outcome(body: bytes) -> Any:
    try:
        return typed(load_json(body))
    except (ValueError, RecursionError) as err:
        return ("refused", type(err).__name__)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(values)
@example(-(2**63) - 1)  # 19 digits, below int64: orjson would read a float
@example(2**64)  # 20 digits, beyond uint64
@example(2**63)  # 19 digits, within uint64: orjson reads it whole, but it goes to json.loads anyway
@example(1234567890123456789.5)
@example(float("nan"))
@example({"a": "\ud800"})  # a lone surrogate: orjson refuses, json.loads takes it
def test_the_fast_json_reader_decodes_every_document_as_json_loads_does(value: Any) -> None:
    """Whatever the document, `load_json` gives json.loads' value, types included (an integer
    beyond 64 bits stays an integer, NaN and a lone surrogate are read as json.loads reads them)."""
    body = json.dumps(value).encode("utf-8", "surrogatepass")
    assert load_json_outcome(body) == json_loads_outcome(body)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xef\xbb\xbf{}",  # a UTF-8 byte order mark
        b'{"a": 1,}',
        b"\xff\xfe{\x00}\x00",  # UTF-16 with its mark: json.loads reads it
        b"[" * 5000 + b"]" * 5000,  # deeper than either reader goes
        b'"\x00"',
        b'{"a": 1} x',
        '{"é": "\u2026"}'.encode(),
    ],
)
def test_the_fast_json_reader_refuses_and_accepts_what_json_loads_does(body: bytes) -> None:
    """Bodies at the edges of JSON: accepted with the same value, or refused with the same error."""
    assert load_json_outcome(body) == json_loads_outcome(body)


def admission_samples(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every sample of one admission metric in the registry, by its whole label set."""
    return {
        tuple(sorted(s.labels.items())): s.value
        for metric in REGISTRY.collect()
        for s in metric.samples
        if s.name == name
    }


def test_each_answer_is_timed_under_its_own_webhook_and_none_stays_in_flight() -> None:
    """After reviews through /validate and /mutate, the in-flight gauge and the duration histogram
    hold series for those two webhooks only, each gauge back at 0; each review adds one count to
    its own webhook's histogram, and the time it adds is what passed within the request."""
    app = create_app(from_objects(copy.deepcopy(OBJECTS)), WebhookOptions()).test_client()
    obj = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    }
    req = {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
           "namespace": "default", "object": obj}  # fmt: skip
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}
    count = "fitguard_admission_duration_seconds_count"
    total = "fitguard_admission_duration_seconds_sum"
    for endpoint in ("validate", "mutate", "validate"):
        counts, sums = admission_samples(count), admission_samples(total)
        started = time.perf_counter()
        assert app.post(f"/{endpoint}", json=body).status_code == 200
        elapsed = time.perf_counter() - started
        key = (("webhook", endpoint),)
        assert admission_samples(count)[key] - counts.get(key, 0.0) == 1.0
        assert 0.0 < admission_samples(total)[key] - sums.get(key, 0.0) <= elapsed
    assert admission_samples("fitguard_admission_requests_in_flight") == {
        (("webhook", "mutate"),): 0.0,
        (("webhook", "validate"),): 0.0,
    }
    assert set(admission_samples(count)) == {(("webhook", "mutate"),), (("webhook", "validate"),)}


def test_a_denied_pod_reviewed_again_is_answered_from_the_memo_with_the_same_text() -> None:
    """A pod no group serves, reviewed twice in one generation: the templates are listed once and
    both answers are the same denial; the memo keeps its verdicts and its text in that generation."""
    view, store = counting_view()
    pod = pod_request("300")
    config = WebhookOptions(mode="enforce")
    first = review(pod, view, config)
    assert first.allowed is False
    assert review(pod, view, config) == first
    assert review(pod, view, config) == first
    assert store.listed == 1


def test_a_denial_text_is_remembered_apart_for_each_pod_shape() -> None:
    """Two shapes with the same subject and extra lines in one generation get each its own text."""
    memo = RefusalMemo()
    texts = []
    for cpu in ("300", "500"):
        shape = PodNeeds.from_spec({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]})
        verdicts = memo.refusals(shape, TEMPLATES, 1)
        assert verdicts is not None
        texts.append(memo.denial_message(verdicts, shape, "pod", [], 1))
        assert texts[-1] == denial_message(verdicts, shape, "pod", [])
    assert texts[0] != texts[1]
