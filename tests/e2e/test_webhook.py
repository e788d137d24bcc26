"""`fitguard webhook` for real, as the image and the manifests run it, with two gthread workers
(the manifests run one; two prove what is summed across workers) over TLS, called by a client that
verifies the CA and the host name, as the apiserver does; probes and scrapes on the plain-HTTP
status port."""

from __future__ import annotations

import base64
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from capacity.names import EXHAUSTED_LABEL
from tests.fakekube.server import FakeKubeServer
from tests.tlsfixtures import TlsFiles
from tests.waiting import eventually
from tests.webhook_server import (
    FITGUARD,
    SHOP_STATE,
    Server,
    admission_review,
    get_status,
    metric_sum,
    post,
    running,
    wait_ready,
)
from webhook.tally import FLUSH_SECONDS

pytestmark = pytest.mark.slow

GUARD = {"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}


@pytest.fixture(scope="module")
def server(tls_files: TlsFiles, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("webhook")
    state = work / "state.yaml"
    state.write_text(yaml.safe_dump_all(SHOP_STATE))
    with running(tls_files, ["--state", str(state)], threads=4, metrics_dir=work / "metrics") as started:
        yield started


def review(pod: dict[str, Any], uid: str = "e2e-1", **request: Any) -> bytes:
    return admission_review(pod, uid, **{"namespace": "shop", **request})


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def web_pod() -> dict[str, Any]:
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    arch = {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
    terms = [{"matchExpressions": [zone]}, {"matchExpressions": [arch]}]
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "w", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "affinity": {"nodeAffinity": required},
        },
    }


def test_mutation_over_tls_merges_the_guard_and_reinvocation_adds_nothing(server: Server) -> None:
    """Over one verified keep-alive connection: pod-eni is injected, the guard is ANDed into both
    existing terms, the patched pod sent again gets no patch, and dryRun gets the same answer."""
    conn = server.connect()
    status, body = post(conn, review(web_pod()))
    assert (
        status == 200 and body["response"]["uid"] == "e2e-1" and body["apiVersion"] == "admission.k8s.io/v1"
    )
    after = jsonpatch.apply_patch(web_pod(), patch_of(body["response"]))  # an independent applier
    terms = after["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert all(term["matchExpressions"][-1] == GUARD for term in terms["nodeSelectorTerms"])
    assert after["spec"]["containers"][0]["resources"]["limits"] == {"vpc.amazonaws.com/pod-eni": "1"}
    status, again = post(conn, review(after, uid="e2e-2"))
    assert status == 200 and again["response"]["allowed"] is True and "patch" not in again["response"]
    status, dry = post(conn, review(web_pod(), dryRun=True))
    assert dry["response"] == body["response"]
    conn.close()


def test_malformed_requests_over_tls(server: Server) -> None:
    """400 for non-JSON, 415 for a wrong content type, 413 from the Content-Length alone (the
    body is never sent); the server keeps answering afterwards."""
    conn = server.connect()
    conn.request("POST", "/mutate", body=b"{nope", headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    assert answer.status == 400 and json.loads(answer.read())["message"]
    conn.request("POST", "/mutate", body=review(web_pod()), headers={"Content-Type": "text/plain"})
    answer = conn.getresponse()
    assert answer.status == 415
    answer.read()
    conn.putrequest("POST", "/mutate")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(8 * 1024 * 1024))
    conn.endheaders()
    answer = conn.getresponse()
    assert answer.status == 413
    conn.close()
    status, _ = post(server.connect(), review(web_pod(), uid="after-413"))
    assert status == 200


def _worker_pids(master: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                pids.append(int(entry.name))
    return pids


def _requests_total(server: Server) -> float:
    return metric_sum(server, "fitguard_admission_requests_total", 'webhook="mutate"')


def test_the_console_script_serves_review_metrics_on_the_status_port(server: Server) -> None:
    """Started by the installed `fitguard webhook` with the manifests' args, the webhook counts a
    review in /metrics on the status port: the console script must not import prometheus_client
    (through another subcommand's modules) before the webhook sets up multiprocess metrics, or every
    worker's counts stay in the worker and /metrics is empty. (Two workers: the one not serving
    the scrape writes its counts every second, webhook/tally.py, so the count is waited for.)"""
    assert server.command[:2] == (FITGUARD, "webhook")
    key = (
        'fitguard_admission_requests_total{allowed="true",dry_run="true",operation="CREATE",webhook="mutate"}'
    )
    before = _settled(lambda: _samples(server).get(key, 0.0), 0.0)
    conn = server.connect()
    assert post(conn, review(web_pod(), uid="metrics-1", dryRun=True))[0] == 200
    conn.close()
    assert _settled(lambda: _samples(server).get(key, 0.0), before + 1) == before + 1


def _settled(read: Any, at_least: float) -> float:
    """The value `read()` gives once it is at least `at_least` and has not moved for longer than a
    worker's flush interval (webhook/tally.py): the other worker's counts, and those of reviews an
    earlier test sent to this module's server, are then all written (read so both before and after
    a test's reviews). The deadline ends a hang."""
    seen: list[tuple[float, float]] = []

    def still() -> bool:
        now, value = time.monotonic(), read()
        seen.append((now, value))
        since = [t for t, v in seen if v != value]
        last_change = since[-1] if since else seen[0][0]
        return value >= at_least and now - last_change > 1.5 * FLUSH_SECONDS

    eventually(still, f"the count at {at_least} or more, and settled")
    return seen[-1][1]


def _samples(server: Server) -> dict[str, float]:
    """Every sample of /metrics on the status port, by name and labels."""
    status, body = get_status(server, "/metrics")
    assert status == 200
    return {
        line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
        for line in body.decode().splitlines()
        if line and not line.startswith("#")
    }


def test_metrics_are_summed_over_workers_and_survive_a_worker_death(server: Server) -> None:
    """Reviews counted by workers that were then killed still show in /metrics served by their
    replacements: the count is summed over worker processes, not kept by one. (Each worker writes
    its counts to its file every second, webhook/tally.py: the workers are killed once the counts
    are in /metrics, hence written.)"""
    before = _settled(lambda: _requests_total(server), 0.0)
    for i in range(6):
        conn = server.connect()  # a fresh connection each time, to spread over the workers
        assert post(conn, review(web_pod(), uid=f"m-{i}"))[0] == 200
        conn.close()
    counted = _settled(lambda: _requests_total(server), before + 6)
    workers = _worker_pids(server.process.pid)
    assert len(workers) == 2
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    eventually(
        lambda: len(fresh := _worker_pids(server.process.pid)) == 2 and not set(fresh) & set(workers),
        "two new workers",
    )
    wait_ready(server, time.monotonic() + 15)
    assert _requests_total(server) == counted


def test_policy_created_at_run_time_takes_effect(
    fake_kube: FakeKubeServer, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """With list+watch caches against the fake apiserver, a SecurityGroupPolicy created while the
    webhook runs changes its answer, on four successive fresh connections (spread over both
    workers, each with its own caches). The change is waited for; no time is asserted."""
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    fake_kube.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": "shop", "name": "default"}}
    )
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    with running(tls_files, ["--kubeconfig", str(kubeconfig)], threads=2) as server:
        conn = server.connect()
        assert "patch" not in post(conn, review(web_pod()))[1]["response"]
        conn.close()
        fake_kube.create(SHOP_STATE[2])
        patched = 0

        def four_in_a_row() -> bool:
            nonlocal patched
            conn = server.connect()  # fresh connections reach both workers
            patched = patched + 1 if "patch" in post(conn, review(web_pod()))[1]["response"] else 0
            conn.close()
            return patched == 4

        eventually(four_in_a_row, "four successive answers carry the new policy's patch")
