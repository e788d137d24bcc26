"""capacity/pod_memo.py, the memos of a pod's requests and timestamps: a hit is exactly what the
function would compute, whatever came before (values equal as keys but not as quantities, maps in
another order, odd shapes that are computed and refused as before), and the memos are bounded."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from capacity import pod_memo
from capacity.pod_status import parse_time
from capacity.requests import pod_requests
from tests.bench import bigcluster


def _outcome(compute: Any, *args: Any) -> Any:
    try:
        return ("value", compute(*args))
    except (TypeError, ValueError) as err:
        return ("error", type(err).__name__, str(err))


def _container(requests: Any = None, limits: Any = None, **extra: Any) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": "c", "resources": resources, **extra}


# specs whose keys would collide if the memo keyed anything but plain strings, or ignored a field
SPECS: list[Any] = [
    {"containers": [_container({"cpu": "1"})]},
    {"containers": [_container({"cpu": 1})]},
    {"containers": [_container({"cpu": True})]},
    {"containers": [_container({"cpu": 1.0})]},
    {"containers": [_container({"cpu": "1", "memory": "1Gi"})]},
    {"containers": [_container({"memory": "1Gi", "cpu": "1"})]},
    {"containers": [_container(None, {"cpu": "2"})]},
    {"containers": [_container({"cpu": "1"}, {"cpu": "2"})]},
    {"containers": [_container({"cpu": "-1"})]},
    {"containers": [_container({"cpu": "12x"})]},
    {"containers": [_container({"cpu": {"a": 1}})]},
    {"containers": [_container({"cpu": "1"})], "initContainers": [_container({"cpu": "3"})]},
    {
        "containers": [_container({"cpu": "1"})],
        "initContainers": [_container({"cpu": "3"}, restartPolicy="Always")],
    },
    {"containers": [_container({"cpu": "1"})], "initContainers": [_container({"cpu": "3"}, restartPolicy=1)]},
    {"containers": [_container({"cpu": "1"})], "overhead": {"cpu": "100m"}},
    {"containers": [_container({"cpu": "1"})], "overhead": {"cpu": 100}},
    {"containers": [_container({"cpu": "1"})], "resources": {"requests": {"cpu": "4"}}},
    {"containers": [_container({"cpu": "1"})], "resources": {"requests": {}}},
    {"containers": [_container({"cpu": "1"})], "resources": ["odd"]},
    {"containers": [_container({"cpu": "1"})], "resources": {"requests": ["odd"]}},
    {"containers": [{"name": "c", "resources": None}]},
    {"containers": [{"name": "c", "resources": "odd"}]},
    {"containers": ["odd"]},
    {"containers": "odd"},
    {"containers": ""},
    {"containers": None},
    {"containers": []},
    {},
]


def test_every_spec_gets_what_pod_requests_gives_with_the_memo_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each spec twice, in order and then reversed, through the memo: the requests (or the error)
    `pod_requests` gives that spec alone."""
    monkeypatch.setattr(pod_memo, "_requests", {})
    for spec in [*SPECS, *reversed(SPECS), *SPECS]:
        assert _outcome(pod_memo.requests_of, spec) == _outcome(pod_requests, copy.deepcopy(spec)), spec


def test_the_benchmarks_pods_get_the_same_requests_through_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variant of the benchmark's pods, the memo shared between them: pod_requests' figures."""
    monkeypatch.setattr(pod_memo, "_requests", {})
    pods = [json.loads(raw) for raw in bigcluster.render(2 * bigcluster.VARIANTS, 0).pods]
    for pod in pods:
        assert pod_memo.requests_of(pod["spec"]) == pod_requests(pod["spec"])
    assert 0 < len(pod_memo._requests) <= bigcluster.VARIANTS


@pytest.mark.parametrize(
    "value", ["2024-05-01T12:00:00Z", "2024-05-01T12:00:00.5+02:00", "", None, "not a time", 17, ["x"]]
)
def test_a_timestamp_reads_as_parse_time_reads_it_the_first_and_second_time(
    value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same float or the same error as `parse_time`, twice (the second time from the memo)."""
    monkeypatch.setattr(pod_memo, "_times", {})
    for _ in range(2):
        assert _outcome(pod_memo.time_of, value) == _outcome(parse_time, value)


def test_the_memos_start_again_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MEMO_MAX keys a memo is emptied before the next key goes in: never larger."""
    monkeypatch.setattr(pod_memo, "MEMO_MAX", 2)
    monkeypatch.setattr(pod_memo, "_times", {})
    monkeypatch.setattr(pod_memo, "_requests", {})
    for second in range(5):
        pod_memo.time_of(f"2024-05-01T12:00:0{second}Z")
        pod_memo.requests_of({"containers": [_container({"cpu": f"{second + 1}"})]})
        assert len(pod_memo._times) <= 2 and len(pod_memo._requests) <= 2
    assert pod_memo.time_of("2024-05-01T12:00:04Z") == parse_time("2024-05-01T12:00:04Z")


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """How many times pod_memo calls its function `name` from now on (a one-element list)."""
    calls, compute = [0], getattr(pod_memo, name)

    def counted(*args: Any) -> Any:
        calls[0] += 1
        return compute(*args)

    monkeypatch.setattr(pod_memo, name, counted)
    return calls


# shapes the memo keys (plain strings throughout): each one's second reading is a hit
KEYED: list[Any] = [
    {"containers": [_container({"cpu": "1"}, {"cpu": "2"})]},
    {
        "containers": [_container({"cpu": "1"})],
        "initContainers": [_container({"cpu": "3"}, restartPolicy="Always")],
    },
    {"containers": [_container({"cpu": "1"})], "resources": {"requests": {"cpu": "4"}}},
    {"containers": [_container({"cpu": "1"})], "overhead": {"cpu": "100m"}},
]
# shapes computed each time and never kept: a key of them could be unhashable or collide
UNKEYED: list[Any] = [
    {"containers": [_container({"cpu": "1"})], "resources": ["odd"]},
    {
        "containers": [_container({"cpu": "1"})],
        "initContainers": [_container({"cpu": "3"}, restartPolicy={})],
    },
    {"containers": [_container({"cpu": 1})]},
]


@pytest.mark.parametrize("spec", KEYED, ids=["limits", "sidecar", "pod-level", "overhead"])
def test_a_keyed_spec_read_again_is_the_memos_own_value(spec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An equal spec (a copy: another object, the same strings) gets the very Resources the memo
    kept the first time, without computing it again, and the memo holds that one key."""
    monkeypatch.setattr(pod_memo, "_requests", {})
    computed = _counting(monkeypatch, "pod_requests")
    first = pod_memo.requests_of(spec)
    assert first == pod_requests(spec)
    assert pod_memo.requests_of(copy.deepcopy(spec)) is first
    assert computed == [1]
    assert list(pod_memo._requests.values()) == [first]


@pytest.mark.parametrize("spec", UNKEYED, ids=["pod-level-not-a-map", "policy-not-a-string", "number"])
def test_an_odd_spec_is_computed_and_never_kept(spec: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shape that is not plain strings is computed as `pod_requests` computes it, every time,
    and leaves the memo empty."""
    monkeypatch.setattr(pod_memo, "_requests", {})
    assert _outcome(pod_memo.requests_of, spec) == _outcome(pod_requests, copy.deepcopy(spec))
    assert _outcome(pod_memo.requests_of, spec) == _outcome(pod_requests, copy.deepcopy(spec))
    assert pod_memo._requests == {}


def test_a_timestamp_read_again_is_the_memos_own_float(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second reading of a timestamp is the float kept by the first (parse_time makes a new
    one each call); what parse_time cannot read, and what is not a string, is never kept."""
    monkeypatch.setattr(pod_memo, "_times", {})
    computed = _counting(monkeypatch, "parse_time")
    first = pod_memo.time_of("2024-05-01T12:00:00Z")
    assert pod_memo.time_of("".join(["2024-05-01T12:00:00", "Z"])) is first
    assert computed == [1]
    for odd in ("not a time", "", None, 17):
        assert _outcome(pod_memo.time_of, odd) == _outcome(parse_time, odd)
    assert pod_memo._times == {"2024-05-01T12:00:00Z": first}
