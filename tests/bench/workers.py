"""What one webhook replica costs at 1, 2 and 4 gunicorn workers (issue 32): the list and watch
requests it makes of the API server per kind, and the memory of the whole replica (the gunicorn
master and its workers: RSS summed, and PSS, which shares the pages the workers inherited from the
master through the fork between them as the kernel charges them).

    python -m tests.bench --only workers            (part of `make bench`)
    python -m tests.bench.workers [--workers 1,2,4] [--nodes 5000] [--templates 2000] [--nodepools 50]
                                  [--list-paths streamed,paged]

`fitguard webhook` runs with the base manifests' args (tests/webhook_server.py) and `--kubeconfig`
against tests/fakekube, which holds a realistic cluster: `--nodes` Nodes as the API serves them
(tests/bench/bigcluster.py), `--templates` NodeGroupTemplates and 20 namespaces with their
ServiceAccounts and 200 SecurityGroupPolicies (tests/bench/synth.py), `--nodepools` Karpenter
NodePools and the VPC CNI ConfigMap. The fake's request log counts, per resource, the watches
(a streamed list is a watch with sendInitialEvents) and the paged list requests. Both list paths:
the fake streams lists, then refuses them as a server without WatchList does (Kubernetes 1.30 and
1.31 by default), where each worker lists in pages of 500 and then watches. Figures are read
once /readyz answers 200, every worker's watches are open and the replica's memory stopped growing.

Then one worker is killed (SIGKILL, as the kernel's OOM killer or a crash ends it): how long /readyz
on the status port answers anything but 200 before the replacement has synced (the replica is out
of the Service's endpoints only after the readiness probe failed twice, 10 s), and that the
replacement lists and watches again. Benchmarks never fail; nothing here is a test.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench import bigcluster, synth
from tests.bench.report import Row
from tests.e2e.test_webhook import _worker_pids

HANG = 600.0  # ends a hang only: 4 workers syncing 5,000 nodes from the fake share two CPUs
STABLE_SECONDS = 3.0  # memory and watch counts unchanged this long: the replica is settled
# /validate's timeoutSeconds in manifests/base/webhook-configurations.yaml
APISERVER_TIMEOUT = 5.0
PROBE_TIMEOUT = 2.0  # the webhook Deployment's readinessProbe timeoutSeconds
REVIEWED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"namespace": synth.namespace_name(0), "name": "web"},
    "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
}
MANIFEST_THREADS = 8  # the manifests pass no --threads: the command's default
# what each worker lists and watches: webhook/cluster.py WATCHES and its optional stores (the fake
# API server serves NodePools, EC2NodeClasses and Auto Mode NodeClasses)
WATCHED_RESOURCES = 9


def nodepool(i: int) -> dict[str, Any]:
    types = [synth.TYPES[i % len(synth.TYPES)][0], synth.TYPES[(i + 1) % len(synth.TYPES)][0]]
    requirement = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": f"pool-{i:03d}"},
        "spec": {
            "template": {
                "metadata": {"labels": {"workload": f"team-{i % synth.TEAMS:02d}"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [requirement],
                },
            }
        },
    }


def fill(fake: Any, nodes: int, templates: int, nodepools: int) -> dict[str, int]:
    """The cluster the webhook lists: objects created per kind."""
    objects = synth.state_objects(templates)
    objects += [bigcluster.node(i) for i in range(nodes)]
    objects += [nodepool(i) for i in range(nodepools)]
    made: Counter[str] = Counter()
    for obj in objects:
        fake.create(obj)
        made[obj["kind"]] += 1
    return dict(made)


def requests_by_resource(fake: Any) -> dict[str, dict[str, int]]:
    """Per resource watched (the collection path's last segment): watches (a streamed list is
    one), list pages, and streamed lists the fake refused (it does so for every one while it
    plays a server without WatchList); other GETs, discovery or a single object, are not counted."""
    records = fake.requests.find(method="GET")
    refusing = fake.watch_list == "old"

    def resource(record: Any) -> str:
        return str(record.path.rsplit("/", 1)[-1])

    def refused(record: Any) -> bool:
        return refusing and record.query.get("sendInitialEvents") == "true"

    watches = Counter(resource(r) for r in records if r.watch and not refused(r))
    streams_refused = Counter(resource(r) for r in records if r.watch and refused(r))
    lists = Counter(resource(r) for r in records if not r.watch)
    return {
        r: {"watches": watches[r], "lists": lists[r], "streamsRefused": streams_refused[r]}
        for r in sorted(watches)
    }


def memory_kb(pid: int) -> dict[str, int]:
    """Rss and Pss of one process (smaps_rollup), in kB."""
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            key, _, value = line.partition(":")
            if key in ("Rss", "Pss"):
                fields[key] = int(value.split()[0])
    return fields


def replica_memory(master: int) -> dict[str, Any]:
    """The replica's memory in MB: summed over the master and its workers, and per process."""
    processes = {"master": memory_kb(master)}
    for n, pid in enumerate(sorted(_worker_pids(master))):
        processes[f"worker{n}"] = memory_kb(pid)
    return {
        "rssMb": round(sum(p["Rss"] for p in processes.values()) / 1024, 1),
        "pssMb": round(sum(p["Pss"] for p in processes.values()) / 1024, 1),
        "perProcessRssMb": {name: round(p["Rss"] / 1024, 1) for name, p in processes.items()},
    }


def settle(master: int, fake: Any, watched: int, workers: int, ready: Callable[[], bool]) -> float:
    """Until /readyz is 200, each worker watches every resource and memory and requests stopped
    changing; the seconds that took from now."""
    started = time.monotonic()
    last: tuple[Any, ...] = ()
    since = started
    while time.monotonic() - started < HANG:
        counts = requests_by_resource(fake)
        opened = sum(1 for c in counts.values() if c["watches"] >= workers)
        state = (opened, tuple(sorted((r, c["watches"], c["lists"]) for r, c in counts.items())))
        rss = replica_memory(master)["rssMb"]
        if state != last[:2] or not last or abs(rss - last[2]) > max(1.0, 0.01 * rss):
            last, since = (*state, rss), time.monotonic()
        elif opened >= watched and ready() and time.monotonic() - since >= STABLE_SECONDS:
            return round(since - started, 1)
        time.sleep(0.5)
    raise RuntimeError(f"the replica did not settle in {HANG} s: {last}")


class Reviews:
    """/validate reviews on new connections, one after the other, as the apiserver sends them
    (its timeout: manifests/base/webhook-configurations.yaml, 5 s): how many were answered 200
    with their uid within it, and the slowest answer."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.sent = self.in_time = 0
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _one(self, uid: str) -> bool:
        from tests.webhook_server import admission_review, post

        conn = self.server.connect()
        conn.timeout = APISERVER_TIMEOUT
        try:
            status, body = post(conn, admission_review(REVIEWED_POD, uid), "/validate")
            return status == 200 and body["response"]["uid"] == uid
        except (OSError, ValueError, KeyError):
            return False
        finally:
            conn.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            ok = self._one(f"outage-{self.sent}")
            took = time.monotonic() - started
            self.sent += 1
            self.in_time += ok and took <= APISERVER_TIMEOUT
            self.slowest = max(self.slowest, took)
            self._stop.wait(0.1)

    def __enter__(self) -> Reviews:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def outage(server: Any, fake: Any, watched: int, workers: int) -> dict[str, Any]:
    """SIGKILL one worker; the seconds /readyz answered anything but 200 (or nothing) until the
    replacement's watches were all open again, whether it relisted, and how the reviews sent
    meanwhile on new connections fared (they wait in the master's listen backlog while no worker
    accepts)."""
    with Reviews(server) as reviews:
        figures = _kill_one(server, fake, watched, workers)
    figures.update(reviewsSent=reviews.sent, reviewsInTime=reviews.in_time)
    figures["slowestSeconds"] = round(reviews.slowest, 2)
    return figures


def kubelet_probe(server: Any) -> bool:
    """GET /readyz as the manifests' readinessProbe does: 200 within its 2 s timeout. While no
    worker accepts, the connection waits in the master's listen backlog until the timeout."""
    conn = http.client.HTTPConnection("127.0.0.1", server.status_port, timeout=PROBE_TIMEOUT)
    try:
        conn.request("GET", "/readyz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _kill_one(server: Any, fake: Any, watched: int, workers: int) -> dict[str, Any]:
    before = requests_by_resource(fake)
    time.sleep(0.5)  # a few reviews before the kill
    victim = min(_worker_pids(server.process.pid))
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    failed_from: float | None = None  # when the first failing probe was sent
    not_ready = 0.0  # from then to the first probe answered 200 after it
    relisted = 0
    while time.monotonic() - killed < HANG:
        probe = time.monotonic()
        ok = kubelet_probe(server)
        if not ok and failed_from is None:
            failed_from = probe
        elif ok and failed_from is not None and not not_ready:
            not_ready = time.monotonic() - failed_from
        after = requests_by_resource(fake)
        relisted = sum(1 for r, c in after.items() if c["watches"] > before.get(r, {}).get("watches", 0))
        if ok and relisted >= watched and len(_worker_pids(server.process.pid)) == workers:
            break
        time.sleep(0.1)
    return {
        "secondsUntilRelisted": round(time.monotonic() - killed, 1),
        "secondsNotReady": round(not_ready, 1),
        "resourcesRelisted": relisted,
    }


def cached(server: Any) -> dict[str, int]:
    """Objects per store, as the worker that answers /snapshotz holds them."""
    from tests.webhook_server import get_status

    status, body = get_status(server, "/snapshotz")
    if status != 200:
        return {}
    return {kind: store["objects"] for kind, store in json.loads(body)["stores"].items()}


def one_replica(workers: int, fake: Any, tls: Any, kubeconfig: Path) -> dict[str, Any]:
    from tests.webhook_server import get_status, start, stop

    fake.requests.clear()
    # --snapshotz: to read back how many objects the caches hold (nothing is computed unless asked)
    options = ["--kubeconfig", str(kubeconfig), "--snapshotz"]
    server = start(tls, options, workers=workers, threads=MANIFEST_THREADS)
    started = time.monotonic()

    def ready() -> bool:
        try:
            return get_status(server, "/readyz")[0] == 200
        except OSError:
            return False

    try:
        settled = settle(server.process.pid, fake, WATCHED_RESOURCES, workers, ready)
        figures = {
            "workers": workers,
            "secondsToSettled": round(time.monotonic() - started, 1),
            "secondsToLastChange": settled,
            "requests": requests_by_resource(fake),
            "memory": replica_memory(server.process.pid),
            "cached": cached(server),
        }
        figures["workerKilled"] = outage(server, fake, WATCHED_RESOURCES, workers)
        return figures
    finally:
        stop(server)


# how the fake answers a streamed list (tests/fakekube/server.py watch_list): served (1.27+ with
# WatchList on), or refused as by a server without it, where every worker lists in pages
LIST_PATHS = {"streamed": "supported", "paged": "old"}


def run(
    worker_counts: tuple[int, ...] = (1, 2, 4),
    nodes: int = 5000,
    templates: int = 2000,
    nodepools: int = 50,
    say: Callable[[str], None] = print,
    list_paths: tuple[str, ...] = tuple(LIST_PATHS),
) -> dict[str, Any]:
    from tests.fakekube import FakeKubeServer
    from tests.tlsfixtures import make_tls_files

    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    results: dict[str, Any] = {"cluster": {}, "replicas": {}}
    with tempfile.TemporaryDirectory(prefix="fitguard-bench-workers-") as tmp, FakeKubeServer() as fake:
        results["cluster"] = fill(fake, nodes, templates, nodepools)
        tls = make_tls_files(Path(tmp))
        kubeconfig = fake.write_kubeconfig(Path(tmp) / "kubeconfig")
        for path in list_paths:
            fake.watch_list = LIST_PATHS[path]
            for count in worker_counts:
                figures = one_replica(count, fake, tls, kubeconfig)
                results["replicas"][f"{path}/{count}"] = {"listPath": path, **figures}
                say(f"  {path} lists, {count} worker(s): {line(figures)}")
    return results


def line(figures: dict[str, Any]) -> str:
    requests = figures["requests"]
    watches = ", ".join(f"{r} {c['watches']}" for r, c in requests.items() if c["watches"])
    lists = ", ".join(f"{r} {c['lists']}" for r, c in requests.items() if c["lists"]) or "none"
    memory = figures["memory"]
    killed = figures["workerKilled"]
    return (
        f"watches per resource: {watches}; list pages: {lists}; replica RSS {memory['rssMb']} MB, "
        f"PSS {memory['pssMb']} MB {memory['perProcessRssMb']}; cached {figures['cached']}; "
        f"a worker killed: /readyz not 200 for {killed['secondsNotReady']} s, relisted after "
        f"{killed['secondsUntilRelisted']} s; reviews meanwhile {killed['reviewsInTime']} of "
        f"{killed['reviewsSent']} in time, slowest {killed['slowestSeconds']} s"
    )


def rows(data: dict[str, Any]) -> list[Row]:
    """The summary's rows: per worker count, the most watches one resource got and the replica's
    memory; the target (one watch per resource) applies to the manifests' worker count."""
    from tests.webhook_server import manifest_args

    deployed = next((int(a.partition("=")[2]) for a in manifest_args() if a.startswith("--workers=")), 1)
    out = []
    for figures in data["replicas"].values():
        count = figures["workers"]
        label = f"{figures['listPath']} lists, {count} worker{'s' if count != 1 else ''}"
        most = max((c["watches"] for c in figures["requests"].values()), default=0)
        target = 1.0 if count == deployed else None
        deployed_mark = " (manifests)" if target else ""
        out.append(Row("workers", f"watches per resource, {label}{deployed_mark}", most, "", target))
        pages = max((c["lists"] for c in figures["requests"].values()), default=0)
        out.append(Row("workers", f"most list pages of one resource, {label}", pages, ""))
        out.append(Row("workers", f"replica RSS, {label}", figures["memory"]["rssMb"], "MB"))
        out.append(Row("workers", f"replica PSS, {label}", figures["memory"]["pssMb"], "MB"))
        killed = figures["workerKilled"]["secondsNotReady"]
        out.append(Row("workers", f"/readyz not 200 after a worker is killed, {label}", killed, "s"))
        slowest = figures["workerKilled"]["slowestSeconds"]
        out.append(Row("workers", f"slowest review meanwhile (new connections), {label}", slowest, "s"))
    return out


def main(argv: list[str] | None = None) -> int:
    summary = __doc__.split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m tests.bench.workers", description=summary)
    parser.add_argument("--workers", default="1,2,4", help="worker counts (default: %(default)s)")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--templates", type=int, default=2000)
    parser.add_argument("--nodepools", type=int, default=50)
    parser.add_argument("--list-paths", default=",".join(LIST_PATHS), help="streamed, paged or both")
    args = parser.parse_args(argv)
    counts = tuple(int(n) for n in args.workers.split(",") if n)
    paths = tuple(p for p in args.list_paths.split(",") if p)
    run(counts, args.nodes, args.templates, args.nodepools, list_paths=paths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
