"""No metric label takes its value from a request: every label value of the webhook's metrics is one
of a closed set beside the metric definitions (webhook/metrics.py) or `other`, so reviews with
random kinds, operations, namespaces, names, uids, dryRun, userInfo and paths add no series, however
many distinct values they carry. Through the Flask app, and through `fitguard webhook` as the
manifests start it, with two workers (the manifests run one: two also sum the multiprocess metrics
directory across processes)."""

from __future__ import annotations

import copy
import random
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from kube.statefile import load_state
from tests.reliability.hostile_labels import Series, fitguard_series, hostile_review, random_text, send
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import Server, get_status, running
from webhook import metrics
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import MODES, WebhookOptions
from webhook.validate import TEMPLATE_PATHS

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = load_state(ROOT / "examples" / "cluster.yaml")
COLLECTORS = [c for c in vars(metrics).values() if isinstance(c, MetricWrapperBase)]
FAMILIES = frozenset(m.name for c in COLLECTORS for m in c.describe())


def assert_closed(series: Series) -> None:
    """Every label value of every series is in its label's closed set, or `other`."""
    allowed = metrics.label_values()
    for name, label_sets in series.items():
        for labels in label_sets:
            for label, value in labels:
                if label == "le":  # a histogram's bucket bounds, fixed where it is defined
                    continue
                assert value in allowed[label] | {metrics.OTHER}, (name, label, value[:60])


def test_the_known_kinds_are_the_ones_the_webhooks_review() -> None:
    """The kind label's set is Pod and every kind validate.py reads a pod template from."""
    assert {"Pod", *TEMPLATE_PATHS} == metrics.KINDS


def test_every_label_of_every_metric_has_a_closed_set() -> None:
    """A metric added with a label that has no closed set fails here, before it reaches a scrape."""
    assert COLLECTORS
    for collector in COLLECTORS:
        for label in collector._labelnames:
            assert label in metrics.label_values(), (collector._name, label)


def test_a_value_outside_its_set_is_other() -> None:
    """Members map to themselves; anything else, a string or not, maps to `other`."""
    assert metrics.bounded("CREATE", metrics.OPERATIONS) == "CREATE"
    for value in ("create", "CREATE ", "x" * 4096, "", None, 1, ["CREATE"], {"CREATE": 1}):
        assert metrics.bounded(value, metrics.OPERATIONS) == metrics.OTHER


def _flask_round(seed: int, reviews: int, size: int) -> Series:
    """`reviews` hostile reviews to each webhook in every mode, and as many random paths; then the
    webhook's series in the exposition text. The shapes are the same in every round, the strings
    those of `seed`."""
    shape, values = random.Random(0), random.Random(seed)
    for mode in MODES:
        client = create_app(from_objects(copy.deepcopy(CLUSTER)), WebhookOptions(mode=mode)).test_client()
        for _ in range(reviews):
            for path in ("/mutate", "/validate"):
                answer = client.post(path, data=hostile_review(shape, values, size),
                                     content_type="application/json")  # fmt: skip
                assert answer.status_code == 200, answer.status_code
            assert client.post("/" + quote(random_text(values, 64), safe="")).status_code == 404
    return fitguard_series(metrics.render()[0].decode(), FAMILIES)


def test_random_request_fields_add_no_series_in_the_app() -> None:
    """Two rounds of reviews of the same shapes (known or random kind and operation, fitting or
    not, every mode) whose strings differ: the second round adds no series, every label value is
    in its closed set, and the random kinds and operations were counted, as `other`."""
    first = _flask_round(seed=10, reviews=40, size=1024)
    second = _flask_round(seed=20, reviews=40, size=1024)
    assert second == first
    assert_closed(second)
    reviews = second["fitguard_admission_reviews_total"]
    assert any(("kind", "other") in labels for labels in reviews)
    assert any(("operation", "other") in labels for labels in reviews)
    assert any(("kind", "Deployment") in labels for labels in reviews)


@pytest.mark.slow
def test_random_request_fields_add_no_series_through_gunicorn(tls_files: TlsFiles, tmp_path: Path) -> None:
    """The same through `fitguard webhook` with two workers: /metrics after a second round of
    hostile reviews (4 KiB strings) and random status-port paths has the same series as after
    the first, all within their closed sets. Each round is read once both workers' reviews are
    in it (the worker not serving the scrape flushes its tally every second: webhook/tally.py)."""
    state = ROOT / "examples" / "cluster.yaml"
    with running(tls_files, ["--state", str(state)], workers=2, metrics_dir=tmp_path / "m") as server:
        rounds = []
        for sent, seed in enumerate((1, 1001), start=1):
            send(server, 60, seed, 4096)
            for _ in range(5):
                path = "/" + quote(random_text(random.Random(seed), 256), safe="")
                assert get_status(server, path)[0] == 404
            rounds.append(scraped_with(server, 60 * sent))
    assert rounds[1] == rounds[0]
    assert_closed(rounds[1])
    assert any(("kind", "other") in labels for labels in rounds[1]["fitguard_admission_reviews_total"])


def scraped_with(server: Server, reviews: int) -> Series:
    """The series of /metrics once it counts `reviews` reviews (the deadline only ends a hang)."""
    deadline = time.monotonic() + 30
    while True:
        status, body = get_status(server, "/metrics")
        assert status == 200
        text = body.decode()
        counted = sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "fitguard_admission_reviews_total"
        )
        if counted >= reviews or time.monotonic() > deadline:
            assert counted == reviews
            return fitguard_series(text)
        time.sleep(0.1)
