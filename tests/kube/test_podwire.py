"""The schema decoder of pod pages and watch lines (kube/podwire.py) against the tolerant path
(`json.loads`, then `capacity.records.project_pod`): for every pod variant of the scale benchmark
and for hostile pods, both give the same record, or the same rejection with the same message, for
every pod of a page; an odd pod never costs the others of its page the fast path."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity.demand import pending_shapes
from capacity.records import PodRecord, project_pod
from kube import podwire
from kube.store import object_key
from tests.bench import apiserve, bigcluster
from tests.budget import examples

ENI = "vpc.amazonaws.com/pod-eni"
Outcome = PodRecord | tuple[str, str]  # a record, or (exception type, message)


def outcome(obj: Any) -> tuple[tuple[str, str], Outcome]:
    """What the store keeps of one decoded pod: its key and record, or the rejection it logs."""
    key = object_key(obj) if isinstance(obj, dict) else ("?", "?")
    try:
        return key, project_pod(obj)
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        return key, (type(err).__name__, str(err))


def tolerant_page(data: bytes) -> list[tuple[tuple[str, str], Outcome]]:
    return [outcome(obj) for obj in json.loads(data)["items"]]


def schema_page(data: bytes) -> list[tuple[tuple[str, str], Outcome]]:
    return [outcome(obj) for obj in podwire.decode_page(data)["items"]]


def page_of(pods: list[bytes]) -> bytes:
    return apiserve.render_list("PodList", pods, len(pods) or 1, 7)[0]


@cache
def rendered() -> bigcluster.Rendered:
    """Every variant of the benchmark's pods, four times, and watch events of every kind."""
    return bigcluster.render(bigcluster.VARIANTS * 4, bigcluster.VARIANTS * 4)


def guarded_pending_pod() -> bytes:
    """An unschedulable pod-eni pod with a sidecar, a node affinity and tolerations: the records
    keep its placement (`pending_spec`) for the guard. The benchmark's pending pods ask no pod-eni."""
    pod = json.loads(next(p for p in rendered().pods if b'"Unschedulable"' in p))
    spec = pod["spec"]
    spec["containers"][0]["resources"]["requests"]["vpc.amazonaws.com/pod-eni"] = "1"
    spec["initContainers"] = [
        {
            "name": "proxy",
            "image": "envoy",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "100m"}},
        }
    ]
    term = {"matchExpressions": [{"key": "fitguard.io/branch-eni-exhausted", "operator": "DoesNotExist"}]}
    spec["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    spec["tolerations"] = [{"key": "team", "operator": "Exists", "effect": "NoSchedule"}]
    spec["nodeSelector"] = {"workload": "web"}
    return json.dumps(pod).encode()


def debugged_finished_pod() -> bytes:
    """A finished pod whose ephemeral (debug) container finished last, an hour after the others:
    its finishedAt is the pod's latest status time (capacity/pod_status.py released_at)."""
    pod = json.loads(next(p for p in rendered().pods if b'"Succeeded"' in p))
    pod["metadata"]["name"] += "-debugged"
    pod["status"]["ephemeralContainerStatuses"] = [
        {
            "name": "debugger",
            "image": "busybox",
            "state": {"terminated": {"finishedAt": "2099-01-01T00:00:00Z"}},
        }
    ]
    return json.dumps(pod).encode()


def test_every_benchmark_variant_gives_the_same_records_by_both_paths() -> None:
    """Each pod of the benchmark cluster (running, finished, pending, with and without a branch
    ENI), an unschedulable pod-eni pod keeping its placement and a finished pod dated by its
    ephemeral container project to the same whole record."""
    page = page_of([*rendered().pods, guarded_pending_pod(), debugged_finished_pod()])
    want = tolerant_page(page)
    assert all(isinstance(record, PodRecord) for _, record in want)
    assert any(record.pending_spec for _, record in want)  # the guard's pods are among them
    assert want[-1][1].finished_at == 4070908800.0  # 2099-01-01T00:00:00Z, the debugger's finish
    assert schema_page(page) == want


def test_the_schema_names_the_labels_and_annotation_the_records_read() -> None:
    """The schema's label and annotation keys are written out (a TypedDict needs literals): they
    are the names capacity/ reads, whole sets compared."""
    from capacity.names import IGNORE_LABEL, KEEP_LABEL
    from capacity.records import POD_ENI_ANNOTATION

    assert set(podwire._Labels.__annotations__) == {KEEP_LABEL, IGNORE_LABEL}
    assert set(podwire._Annotations.__annotations__) == {POD_ENI_ANNOTATION}


def test_the_fast_path_keeps_only_what_the_records_read() -> None:
    """A pod decoded by the schema holds no managedFields, image, env or container status image:
    that is where the time and the transient memory go. A whole value, checked for one pod."""
    pod = podwire.decode_page(page_of(rendered().pods[:1]))["items"][0]  # a pod with a branch ENI
    full = json.loads(rendered().pods[0])
    spec, status = full["spec"], full["status"]
    assert pod == {
        "metadata": {
            key: full["metadata"][key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "ownerReferences")
        }
        | {"labels": {}, "annotations": {ENI: full["metadata"]["annotations"][ENI]}},
        "spec": {
            "containers": [{"resources": c["resources"]} for c in spec["containers"]],
            "nodeName": spec["nodeName"],
        }
        | {key: spec[key] for key in ("nodeSelector", "affinity", "tolerations") if key in spec},
        "status": {
            "phase": status["phase"],
            "conditions": status["conditions"],
            "containerStatuses": [{"state": c["state"]} for c in status["containerStatuses"]],
        },
    }


def test_watch_lines_give_the_same_events_by_both_paths() -> None:
    """ADDED, MODIFIED and DELETED lines: same type, same resourceVersion, same record."""
    for line in rendered().events:
        fast, full = podwire.decode_event(line), json.loads(line)
        assert fast["type"] == full["type"]
        assert fast["object"]["metadata"]["resourceVersion"] == full["object"]["metadata"]["resourceVersion"]
        assert outcome(fast["object"]) == outcome(full["object"])


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12",'
        b'"annotations":{"k8s.io/initial-events-end":"true"}}}}',
        b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}',
        b'{"type":"ERROR","object":null}',
        b'{"type":["odd"],"object":{"metadata":{"name":"a"}}}',
        b'{"type":"ADDED","object":{"metadata":{"name":"a","labels":5}}}',
        b'{"type":"ADDED","object":7}',
        b"[1,2]",
    ],
)
def test_other_watch_lines_are_decoded_whole(line: bytes) -> None:
    """Bookmarks and errors (read for other fields than a pod's), odd types and odd objects: the
    whole `json.loads` value."""
    assert podwire.decode_event(line) == json.loads(line)


def test_a_line_that_is_not_json_is_refused_as_json_loads_refuses_it() -> None:
    """A watch line cut short raises ValueError, which the reflector reports as an interrupted watch."""
    with pytest.raises(ValueError):
        podwire.decode_event(b'{"type":"ADDED","object":{"metadata":')
    with pytest.raises(ValueError):
        podwire.decode_page(b'{"items":[')


# -- hostile pods -------------------------------------------------------------------------------

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(["1", "250m", "1Gi", "-1", "1e3", "Unschedulable", "True", "Always", "\ud800", "\x00"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just({}),
    st.just([]),
    st.just([{}]),
    st.just([5]),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value` (map keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value


@st.composite
def hostile_pod(draw: st.DrawFn) -> bytes:
    """A benchmark pod with a few of its values (at any depth) replaced by odd ones, or removed,
    and odd keys added where the records look (labels, annotations, resources)."""
    pool = [*rendered().pods[:24], guarded_pending_pod(), debugged_finished_pod()]
    pod = copy.deepcopy(json.loads(draw(st.sampled_from(pool))))
    paths = _paths(pod)
    for path in draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4)):
        try:
            if draw(st.booleans()) and isinstance(path[-1], str):
                parent = pod
                for step in path[:-1]:
                    parent = parent[step]
                parent.pop(path[-1], None)
            else:
                _set(pod, path, draw(ODD))
        except (KeyError, IndexError, TypeError, AttributeError):
            continue  # an earlier change removed or replaced this path's parent
    for path, key in draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        ("metadata", "labels"),
                        ("metadata", "annotations"),
                        ("spec", "containers", 0, "resources", "requests"),
                        ("status",),
                        ("spec",),
                    ]
                ),
                st.sampled_from(["fitguard.io/keep", "vpc.amazonaws.com/pod-eni", "cpu", "phase", "x"]),
            ),
            max_size=2,
        )
    ):
        try:
            _set(pod, (*path, key), draw(ODD))
        except (KeyError, IndexError, TypeError, AttributeError):
            continue
    return json.dumps(pod).encode()


@settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(hostile_pod(), min_size=1, max_size=3), st.integers(min_value=0, max_value=2))
def test_hostile_pods_give_the_same_records_by_both_paths(hostile: list[bytes], where: int) -> None:
    """A page of well-formed pods with hostile ones among them: every pod, the well-formed ones
    included, gets the same record or the same rejection by both paths; so does each hostile pod
    as a watch event."""
    good = rendered().pods[:3]
    pods = [*good[:where], *hostile, *good[where:]]
    page = page_of(pods)
    assert schema_page(page) == tolerant_page(page)
    for raw in hostile:
        line = b'{"type":"MODIFIED","object":' + raw + b"}"
        assert outcome(podwire.decode_event(line)["object"]) == outcome(json.loads(line)["object"])


def test_an_odd_pod_does_not_cost_the_others_of_its_page_the_fast_path() -> None:
    """Labels that are a number: that pod is decoded whole (and rejected as before); its
    neighbours still come out slim."""
    odd = json.loads(rendered().pods[1])
    odd["metadata"]["labels"] = 5
    page = page_of([rendered().pods[0], json.dumps(odd).encode(), rendered().pods[2]])
    items = podwire.decode_page(page)["items"]
    assert [sorted(item) for item in items] == [
        ["metadata", "spec", "status"],
        ["apiVersion", "kind", "metadata", "spec", "status"],
        ["metadata", "spec", "status"],
    ]
    assert [outcome(item) for item in items] == tolerant_page(page)
    assert outcome(items[1])[1] == ("TypeError", "labels: expected a map, got int")


def planned(pods: list[Any]) -> tuple[list[tuple[str, list[Any]]], list[Any]]:
    """What the planner makes of pending pods: each shape's key with its pods, and the malformed."""
    shapes, malformed = pending_shapes(pods)
    return [(shape.key, shape.pods) for shape in shapes], malformed


def unschedulable_variants() -> list[bytes]:
    """The benchmark's unschedulable pods, the guarded pod-eni one, and one opted out."""
    pods = [p for p in rendered().pods if b'"Unschedulable"' in p]
    ignored = json.loads(pods[0])
    ignored["metadata"]["labels"]["fitguard.io/ignore"] = "true"
    ignored["metadata"]["name"] = "ignored"
    return [*pods, guarded_pending_pod(), json.dumps(ignored).encode()]


def test_the_planner_makes_the_same_shapes_of_slim_pending_pods() -> None:
    """The cycle's unschedulable pods are decoded through the schema (controller/cache.py's pod
    watch, and kube/api.py list_slim_pods for --once): the planner groups them into the same
    shapes, with the same pods, as it does the whole objects; the opted-out pod is left out by both."""
    page = page_of(unschedulable_variants())
    want = planned(json.loads(page)["items"])
    assert len(want[0]) >= 2 and "ignored" not in str(want)
    assert planned(podwire.decode_page(page)["items"]) == want


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(hostile_pod(), min_size=1, max_size=3))
def test_hostile_pending_pods_give_the_planner_the_same_shapes(hostile: list[bytes]) -> None:
    """Hostile pods among the unschedulable ones: same shapes, same pods, same malformed list."""
    page = page_of([*unschedulable_variants()[:2], *hostile])
    try:
        want: Any = planned(json.loads(page)["items"])
    except (TypeError, ValueError, AttributeError) as err:  # the planner's own limits, both paths
        want = type(err)
    try:
        got: Any = planned(podwire.decode_page(page)["items"])
    except (TypeError, ValueError, AttributeError) as err:
        got = type(err)
    assert got == want
