"""Reviews whose every request field a client chooses is random, and what they leave in /metrics.

    python -m tests.reliability.hostile_labels [--reviews 10000] [--field-bytes 4096]

Starts `fitguard webhook` as the manifests start it (tests/webhook_server.py), with two workers, the
example cluster as its state), sends `--reviews` reviews, half to /mutate and half to /validate,
whose kind, operation, namespace, name, uid, dryRun and userInfo are random strings of
`--field-bytes` characters (some of them a known kind or operation with the rest random), then
prints the size of one `/metrics` scrape, of the metrics directory, and the number of fitguard_
series. tests/webhook/test_metrics_labels.py uses the same reviews.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import string
import sys
import tempfile
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.tlsfixtures import make_tls_files
from tests.webhook_server import Server, get_status, running

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / "examples" / "cluster.yaml"
KINDS = ("Pod", "Deployment", "CronJob", "Job")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "payments", "labels": {"app": "payments-api"}},
    "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]},
}
# A pod no node group of the example cluster can hold: denied under enforce.
HUGE = copy.deepcopy(POD)
HUGE["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "9000"}}


def random_text(rng: random.Random, size: int) -> str:
    """`size` characters: letters, digits, punctuation, and some from all over Unicode."""
    alphabet = string.ascii_letters + string.digits + string.punctuation + "\u00e9\u4e2d\U0001f600 \t\n"
    return "".join(rng.choices(alphabet, k=size))


def hostile_request(shape: random.Random, values: random.Random, size: int) -> dict[str, Any]:
    """One AdmissionReview request. `shape` decides which fields are random and which are a known
    kind, operation or object, `values` what the random ones say: two runs with the same shape seed
    and different value seeds send the same kinds of review with different strings."""
    known_kind, known_op = shape.random() < 0.5, shape.random() < 0.5
    obj = copy.deepcopy(shape.choice((POD, HUGE)))
    kind = shape.choice(KINDS) if known_kind else random_text(values, size)
    if kind != "Pod" and known_kind:  # a workload whose pod template is the pod
        obj = {"apiVersion": "apps/v1", "kind": kind, "metadata": obj["metadata"],
               "spec": {"template": {"metadata": obj["metadata"], "spec": obj["spec"]}}}  # fmt: skip
        if kind == "CronJob":
            obj["spec"] = {"jobTemplate": {"spec": obj["spec"]}}
    obj["metadata"] = {**obj["metadata"], "name": random_text(values, size)}
    dry_run: Any = shape.choice((True, False, random_text(values, size), {"x": random_text(values, 8)}))
    return {
        "uid": random_text(values, size),
        "kind": {"group": random_text(values, 8), "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": random_text(values, size)},
        "operation": shape.choice(OPERATIONS) if known_op else random_text(values, size),
        "namespace": shape.choice(("payments", random_text(values, size))),
        "name": random_text(values, size),
        "dryRun": dry_run,
        "userInfo": {"username": random_text(values, size), "groups": [random_text(values, size)]},
        "object": obj,
    }


def hostile_review(shape: random.Random, values: random.Random, size: int) -> bytes:
    request = hostile_request(shape, values, size)
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(review).encode()


Series = dict[str, set[tuple[tuple[str, str], ...]]]


def fitguard_series(text: str, families: frozenset[str] | None = None) -> Series:
    """Every fitguard_ sample in an exposition text (of `families` only, when given): sample name ->
    its label sets."""
    series: Series = {}
    for family in text_string_to_metric_families(text):
        if families is not None and family.name not in families:
            continue
        for sample in family.samples:
            if sample.name.startswith("fitguard_"):
                series.setdefault(sample.name, set()).add(tuple(sorted(sample.labels.items())))
    return series


def send(server: Server, reviews: int, values_seed: int, size: int, shape_seed: int = 0) -> None:
    """`reviews` hostile reviews over one keep-alive connection, alternating the two webhooks."""
    shape, values = random.Random(shape_seed), random.Random(values_seed)
    conn = server.connect()
    try:
        for i in range(reviews):
            body = hostile_review(shape, values, size)
            conn.request("POST", ("/mutate", "/validate")[i % 2], body=body,
                         headers={"Content-Type": "application/json"})  # fmt: skip
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 200, answer.status
    finally:
        conn.close()


def directory_bytes(path: Path) -> int:
    """What the files under `path` occupy on disk (as du counts, which an emptyDir limit counts)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reviews", type=int, default=10_000)
    parser.add_argument("--field-bytes", type=int, default=4096)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fitguard-labels-") as work:
        tls = make_tls_files(Path(work))
        metrics_dir = Path(work) / "metrics"
        with running(tls, ["--state", str(STATE)], workers=2, metrics_dir=metrics_dir) as server:
            send(server, args.reviews, 1, args.field_bytes)
            status, body = get_status(server, "/metrics")
            assert status == 200, status
            series = fitguard_series(body.decode())
            print(f"reviews sent:            {args.reviews} (random fields of {args.field_bytes} chars)")
            print(f"/metrics:                {len(body):,} bytes")
            print(f"metrics directory:       {directory_bytes(metrics_dir):,} bytes on disk")
            print(f"fitguard_ series:        {sum(len(s) for s in series.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
