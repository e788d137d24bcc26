"""The webhook's metrics are counted per thread without a lock and reach prometheus_client's series
when the tally is flushed (webhook/tally.py): every review once, whatever the threads; a histogram
exactly as `observe` would have built it; the in-flight gauge as the threads are now; counts of
threads that ended kept; a forked child starting from nothing; and through gunicorn with one
worker (the manifests' default), a scrape that counts every review answered before it."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.values import MutexValue

from tests.tlsfixtures import TlsFiles
from tests.waiting import eventually
from tests.webhook_server import SHOP_STATE, admission_review, get_status, post, running
from webhook import metrics
from webhook.tally import FlushFirst, Tally, ThreadTally

BOUNDS = (*metrics.DURATION_BUCKETS, float("inf"))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def counter(registry: CollectorRegistry) -> Counter:
    return Counter("probe_total", "probe", ["webhook"], registry=registry)


def in_threads(count: int, work: object) -> None:
    threads = [threading.Thread(target=work) for _ in range(count)]  # type: ignore[arg-type]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_counts_of_every_thread_reach_the_series_at_the_flush_with_one_write_per_series(
    registry: CollectorRegistry,
) -> None:
    """Four threads count 250 reviews each under two label sets: nothing is written to the series
    while they count; the flush writes each series once, with every review; a flush with nothing
    new writes nothing and changes nothing."""
    probe, tally = counter(registry), Tally(interval=0)

    def work() -> None:
        mine = tally.mine()
        for _ in range(250):
            mine.count((probe, "mutate"))
            mine.count((probe, "validate"))

    # Only this probe's writes count: other tests' servers and the process's own flush thread may
    # write their series meanwhile (one pytest worker runs many tests in one process).
    mine = {id(probe.labels(webhook=name)._value) for name in ("mutate", "validate")}

    def probe_writes(inc: mock.MagicMock) -> int:
        return sum(1 for call in inc.call_args_list if id(call.args[0]) in mine)

    writes = mock.patch.object(MutexValue, "inc", autospec=True, side_effect=MutexValue.inc)
    with writes as inc:
        in_threads(4, work)
        assert probe_writes(inc) == 0
        tally.flush()
        assert probe_writes(inc) == 2
        tally.flush()
        assert probe_writes(inc) == 2
    assert registry.get_sample_value("probe_total", {"webhook": "mutate"}) == 1000
    assert registry.get_sample_value("probe_total", {"webhook": "validate"}) == 1000


def test_a_flushed_histogram_is_the_one_observe_builds(registry: CollectorRegistry) -> None:
    """Durations on and between the bucket bounds (a duration equal to a bound is in that bound's
    bucket), beyond the last, flushed in two rounds: every sample (buckets, count, sum) is what
    Histogram.observe gives for the same durations."""
    tallied = Histogram(
        "tallied_seconds", "t", ["webhook"], buckets=metrics.DURATION_BUCKETS, registry=registry
    )
    direct_registry = CollectorRegistry()
    direct = Histogram(
        "tallied_seconds", "t", ["webhook"], buckets=metrics.DURATION_BUCKETS, registry=direct_registry
    )
    tally = Tally(interval=0)
    durations = [0.0, 0.0005, 0.0007, 0.001, 0.0011, 0.0025, 0.3, 10.0, 11.0, 0.0049]
    for half in (durations[:5], durations[5:]):
        for seconds in half:
            tally.mine().observe((tallied, "validate"), BOUNDS, seconds)
            direct.labels("validate").observe(seconds)
        tally.flush()
        assert samples(registry) == samples(direct_registry)
    assert registry.get_sample_value("tallied_seconds_bucket", {"webhook": "validate", "le": "0.001"}) == 4


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in registry.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_the_in_flight_gauge_is_what_the_threads_do_now(registry: CollectorRegistry) -> None:
    """A thread inside a review counts 1 at a flush, 0 at the flush after it left."""
    gauge, tally = Gauge("flight", "f", ["webhook"], registry=registry), Tally(interval=0)
    inside, leave = threading.Event(), threading.Event()

    def review() -> None:
        mine = tally.mine()
        mine.enter((gauge, "mutate"))
        inside.set()
        leave.wait(30)
        mine.leave((gauge, "mutate"))

    thread = threading.Thread(target=review)
    thread.start()
    inside.wait(30)
    tally.flush()
    assert registry.get_sample_value("flight", {"webhook": "mutate"}) == 1
    leave.set()
    thread.join()
    tally.flush()
    assert registry.get_sample_value("flight", {"webhook": "mutate"}) == 0


def test_two_threads_at_once_add_up_and_an_unchanged_gauge_is_not_written(
    registry: CollectorRegistry,
) -> None:
    """Two threads inside a review at once, each timing one: the gauge reads 2 and the histogram
    both durations (each thread's cells added, not the last thread's kept); a flush with nothing
    changed writes the gauge no more."""
    gauge = Gauge("flight", "f", ["webhook"], registry=registry)
    timed = Histogram("timed_seconds", "t", ["webhook"], buckets=metrics.DURATION_BUCKETS, registry=registry)
    tally, inside, leave = Tally(interval=0), threading.Barrier(3), threading.Event()

    def review(seconds: float) -> None:
        mine = tally.mine()
        mine.enter((gauge, "mutate"))
        mine.observe((timed, "mutate"), BOUNDS, seconds)
        inside.wait(30)
        leave.wait(30)

    threads = [threading.Thread(target=review, args=(seconds,)) for seconds in (0.002, 0.3)]
    for thread in threads:
        thread.start()
    inside.wait(30)
    tally.flush()
    assert registry.get_sample_value("flight", {"webhook": "mutate"}) == 2
    assert registry.get_sample_value("timed_seconds_count", {"webhook": "mutate"}) == 2
    assert registry.get_sample_value("timed_seconds_sum", {"webhook": "mutate"}) == 0.302
    writes = mock.patch.object(MutexValue, "set", autospec=True, side_effect=MutexValue.set)
    gauge_value = id(gauge.labels(webhook="mutate")._value)
    with writes as set_:
        tally.flush()
        assert [call for call in set_.call_args_list if id(call.args[0]) == gauge_value] == []
    leave.set()
    for thread in threads:
        thread.join()


def test_counts_of_threads_that_ended_are_kept_once(registry: CollectorRegistry) -> None:
    """A thread counts and ends; flushed twice, then another thread counts: each review once."""
    probe, tally = counter(registry), Tally(interval=0)
    in_threads(1, lambda: [tally.mine().count((probe, "mutate")) for _ in range(5)])
    tally.flush()
    tally.flush()
    in_threads(1, lambda: [tally.mine().count((probe, "mutate")) for _ in range(2)])
    tally.flush()
    assert registry.get_sample_value("probe_total", {"webhook": "mutate"}) == 7


def test_the_process_flushes_on_its_own(registry: CollectorRegistry) -> None:
    """With an interval, counts reach the series with no flush asked for (the other workers'
    scrapes read them so)."""
    probe, tally = counter(registry), Tally(interval=0.05)
    tally.mine().count((probe, "mutate"))
    eventually(lambda: registry.get_sample_value("probe_total", {"webhook": "mutate"}) == 1, "the flusher")


def test_the_flusher_is_one_daemon_thread_started_by_the_first_review(registry: CollectorRegistry) -> None:
    """No thread before the first review; then one, named for thread dumps (py-spy, faulthandler),
    and a daemon: a gunicorn worker told to exit must not wait on it. Threads counting after
    the first start no other flusher."""
    probe, tally = counter(registry), Tally(interval=30)
    assert tally._flusher is None
    in_threads(3, lambda: tally.mine().count((probe, "mutate")))
    flusher = tally._flusher
    assert flusher is not None and flusher.is_alive()
    assert (flusher.name, flusher.daemon) == ("metrics-flush", True)
    assert [t for t in threading.enumerate() if t is flusher] == [flusher]


class _FullVolume:
    """A metric whose first write fails as a full multiprocess volume does (OSError from the
    mmap'd file), then writes into `real`."""

    def __init__(self, real: Counter) -> None:
        self.real, self.failed = real, False

    def labels(self, *values: str) -> Any:
        if not self.failed:
            self.failed = True
            raise OSError(28, "No space left on device")
        return self.real.labels(*values)


def test_a_flush_that_fails_is_logged_and_the_next_one_writes(
    registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """The flusher's flush fails once: the error is logged with its words, the thread goes on, and
    the count reaches the series at the next flush, once."""
    probe, tally = counter(registry), Tally(interval=0.05)
    caplog.set_level(logging.ERROR, logger="webhook.tally")
    tally.mine().count((_FullVolume(probe), "mutate"))
    eventually(
        lambda: registry.get_sample_value("probe_total", {"webhook": "mutate"}) == 1, "the second flush"
    )
    logged = [(r.name, r.getMessage(), type(r.exc_info[1]).__name__) for r in caplog.records if r.exc_info]
    assert logged == [("webhook.tally", "could not write the admission metrics", "OSError")]
    tally.flush()
    assert registry.get_sample_value("probe_total", {"webhook": "mutate"}) == 1


def test_a_thread_tally_holds_whole_values() -> None:
    """One thread's tally, whole: counts add, the in-flight gauge goes up per entry and down per
    exit, and a histogram series is [sum, one cell per bucket], +Inf last."""
    tally = ThreadTally(threading.current_thread())
    key = ("metric", "mutate")
    tally.count(key)
    tally.count(key)
    tally.enter(key)
    tally.enter(key)
    tally.leave(key)
    for amount in (0.001, 0.3, 99.0):
        tally.observe(key, (0.005, 0.5, float("inf")), amount)
    assert (tally.counts, tally.busy) == ({key: 2}, {key: 1})
    assert tally.observed == {key: [99.301, 1, 1, 1]}


def test_a_forked_child_starts_from_nothing(registry: CollectorRegistry) -> None:
    """What the parent counted is the parent's: a forked child (a gunicorn worker) flushes none
    of it, and counts its own."""
    probe, tally = counter(registry), Tally(interval=0)
    tally.mine().count((probe, "mutate"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its count after a flush of its own, then leave at once
        tally.mine().count((probe, "validate"))
        tally.flush()
        seen = (
            registry.get_sample_value("probe_total", {"webhook": "mutate"}),
            registry.get_sample_value("probe_total", {"webhook": "validate"}),
        )
        os.write(write, repr(seen).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        seen = pipe.read()
    os.waitpid(pid, 0)
    assert seen == "(None, 1.0)"  # the parent's count never written, by either


def test_the_registry_is_flushed_before_it_is_read(registry: CollectorRegistry) -> None:
    """`FlushFirst` registered before a metric: reading the registry sees every count, unflushed
    until then."""
    tally = Tally(interval=0)
    registry.register(FlushFirst(tally))  # type: ignore[arg-type]
    probe = counter(registry)
    tally.mine().count((probe, "mutate"))
    assert registry.get_sample_value("probe_total", {"webhook": "mutate"}) == 1


@pytest.fixture
def one_worker(tls_files: TlsFiles, tmp_path: Path) -> Iterator[object]:
    state = tmp_path / "state.json"
    state.write_text(json.dumps(SHOP_STATE))
    with running(tls_files, ["--state", str(state)], workers=1, metrics_dir=tmp_path / "m") as server:
        yield server


@pytest.mark.slow
def test_a_scrape_counts_every_review_answered_before_it(one_worker: object) -> None:
    """`fitguard webhook` with one worker: after each batch of reviews, the next scrape has every
    one of them in the counters and the duration's count, and none in flight; never waited for."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "shop"},
           "spec": {"containers": [{"name": "c"}]}}  # fmt: skip
    conn = one_worker.connect()  # type: ignore[attr-defined]
    for batch in range(1, 4):
        for i in range(7):
            path = ("/mutate", "/validate")[i % 2]
            assert post(conn, admission_review(pod, uid=f"u-{batch}-{i}"), path)[0] == 200
        status, body = get_status(one_worker, "/metrics")  # type: ignore[arg-type]
        assert status == 200
        found = totals(body.decode())
        assert found["fitguard_admission_reviews_total"] == 7 * batch
        assert found["fitguard_admission_requests_total"] == 7 * batch
        assert found["fitguard_admission_duration_seconds_count"] == 7 * batch
        assert found["fitguard_admission_requests_in_flight"] == 0
    conn.close()


def totals(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found
