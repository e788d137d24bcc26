"""Reviews under a slow-client attack (issue 30), for each gunicorn worker model considered:

    python -m tests.bench.slowclients [--models buffering,gthread,gevent] [--slow 64]
                                      [--duration 10] [--clients 4] [--workers 2]

Each model serves `fitguard webhook` with the manifests' flags, `--workers` workers (default 2) of 8
threads (gevent: 1000 connections each), from a state file. Per model:
- throughput: `--clients` threads post /validate reviews back to back on kept-alive connections for
  `--duration` seconds, no attack;
- under attack: `--slow` slow connections (tests/slowclients.py: stalled handshakes, bodies and
  header lines trickled a byte a second) held for `--duration` seconds, any the server closes
  opened again at once; meanwhile `--clients` threads post reviews on new connections (the
  apiserver's worst case: accept and handshake included) with the apiserver's 3 s timeout. Counted:
  reviews sent, answered 200 with their uid within 3 s, their latency.
Benchmarks never fail; the client and the server share the machine's CPUs.

`serve` is the launcher the benchmark runs: `fitguard webhook` with webhook.server.WORKER_CLASS set.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.slowclients import KINDS, SlowConn, Trickler, open_slow
from tests.tlsfixtures import TlsFiles, client_ssl_context, make_tls_files
from tests.webhook_server import Server, admission_review, manifest_args, post, wait_ready

MODELS = {
    "buffering": "webhook.worker.BufferingWorker",
    "gthread": "gthread",
    "gevent": "gevent",
}
APISERVER_TIMEOUT = 3.0
STATE = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": "shop", "name": "default"}},
]
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"namespace": "shop", "name": "web"},
    "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
}


def serve(argv: list[str]) -> int:
    """`serve WORKER_CLASS FITGUARD_ARGS...`: the webhook with another gunicorn worker class."""
    from fitguard.cli import main
    from webhook import server

    server.WORKER_CLASS = argv[0]
    return main(argv[1:])


def start(tls: TlsFiles, state: Path, model: str, work: Path, workers: int = 2) -> Server:
    listener = socket.create_server(("127.0.0.1", 0), backlog=2048)
    status = socket.create_server(("127.0.0.1", 0))
    fd, status_fd = listener.fileno(), status.fileno()
    args = manifest_args(bind=f"fd://{fd}", metrics_bind=f"fd://{status_fd}", tls_cert=str(tls.cert_path),
                         tls_key=str(tls.key_path), metrics_dir=str(work / f"metrics-{model}"))  # fmt: skip
    command = [sys.executable, "-m", "tests.bench.slowclients", "serve", MODELS[model], *args,
               "--workers", str(workers), "--threads", "8", "--log-level", "error",
               "--state", str(state)]  # fmt: skip
    process = subprocess.Popen(command, pass_fds=(fd, status_fd))
    server = Server(listener.getsockname()[1], tls, process, None, status.getsockname()[1], tuple(command))
    listener.close()
    status.close()
    wait_ready(server, time.monotonic() + 30)
    return server


def stop(server: Server) -> None:
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=25)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@dataclass
class Tally:
    latencies: list[float]
    sent: int = 0
    failed: int = 0  # refused, timed out, or no uid

    def add(self, seconds: float | None) -> None:
        self.sent += 1
        if seconds is None:
            self.failed += 1
        else:
            self.latencies.append(seconds)


def one_review(server: Server, uid: str, conn: Any = None) -> tuple[float | None, Any]:
    """(seconds, connection to reuse) of one /validate review; seconds None when not answered in time."""
    started = time.monotonic()
    try:
        if conn is None:
            conn = server.connect()
            conn.timeout = APISERVER_TIMEOUT
        status, body = post(conn, admission_review(POD, uid), "/validate")
        took = time.monotonic() - started
        ok = status == 200 and body["response"]["uid"] == uid and took <= APISERVER_TIMEOUT
        return (took if ok else None), conn
    except (OSError, ssl.SSLError, ValueError, KeyError):
        if conn is not None:
            conn.close()
        return None, None


def review_loop(server: Server, until: float, tally: Tally, lock: threading.Lock, keepalive: bool) -> None:
    conn = None
    n = 0
    while time.monotonic() < until:
        n += 1
        took, conn = one_review(server, f"{threading.get_ident()}-{n}", conn if keepalive else None)
        if not keepalive and conn is not None:
            conn.close()
            conn = None
        with lock:
            tally.add(took)


def load(server: Server, clients: int, duration: float, keepalive: bool) -> Tally:
    tally, lock = Tally([]), threading.Lock()
    until = time.monotonic() + duration
    with ThreadPoolExecutor(clients) as pool:
        for _ in range(clients):
            pool.submit(review_loop, server, until, tally, lock, keepalive)
    return tally


class Attack:
    """`count` slow connections held; each one the server closes is opened again."""

    def __init__(self, server: Server, count: int) -> None:
        self.server, self.count = server, count
        self.context = client_ssl_context(server.tls.ca_path)
        self.tricklers: list[Trickler] = []
        self.closed = 0
        self.samples: list[int] = []  # connections held, five times a second
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open_one(self, kind: str) -> SlowConn | None:
        try:
            return open_slow(kind, self.server.port, self.context, APISERVER_TIMEOUT)
        except OSError:
            return None  # the server did not take it in time: try again on the next round

    def _open(self, count: int, offset: int) -> None:
        kinds = [KINDS[(offset + i) % len(KINDS)] for i in range(count)]
        with ThreadPoolExecutor(16) as pool:
            conns = [conn for conn in pool.map(self._open_one, kinds) if conn is not None]
        if conns:
            self.tricklers.append(Trickler(conns).start())

    def held(self) -> int:
        return sum(len(t.open()) for t in self.tricklers)

    def start(self) -> Attack:
        self._open(self.count, 0)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.samples.append(self.held())
            missing = self.count - self.samples[-1]
            if missing > 0:
                self._open(missing, self.closed)
                self.closed += missing

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        for trickler in self.tricklers:
            trickler.stop()


def figures(tally: Tally, duration: float) -> dict[str, Any]:
    lat = sorted(tally.latencies)

    def pct(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else float("nan")

    return {
        "sent": tally.sent,
        "in_time": len(lat),
        "rate": round(len(lat) / duration, 1),
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
        "max_ms": round(lat[-1] * 1000, 1) if lat else float("nan"),
        "median_ms": round(statistics.median(lat) * 1000, 1) if lat else float("nan"),
    }


def measure(model: str, args: argparse.Namespace, tls: TlsFiles, state: Path, work: Path) -> dict[str, Any]:
    server = start(tls, state, model, work, args.workers)
    try:
        calm = figures(load(server, args.clients, args.duration, keepalive=True), args.duration)
        attack = Attack(server, args.slow).start()
        time.sleep(1.0)  # every slow connection in place
        attack.samples.clear()
        tally = load(server, args.clients, args.duration, keepalive=False)
        held = list(attack.samples)
        attack.stop()
        hot = figures(tally, args.duration)
        return {"model": model, "workers": args.workers, "calm": calm, "attack": hot,
                "reopened": attack.closed,
                "held_min_mean": (min(held, default=0), round(statistics.mean(held or [0]), 1))}  # fmt: skip
    finally:
        stop(server)


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        return serve(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m tests.bench.slowclients")
    parser.add_argument("--models", default="buffering,gthread")
    parser.add_argument("--slow", type=int, default=64)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers of each model")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fitguard-slow-") as tmp:
        work = Path(tmp)
        tls = make_tls_files(work)
        state = work / "state.yaml"
        state.write_text(yaml.safe_dump_all(STATE))
        for model in args.models.split(","):
            result = measure(model, args, tls, state, work)
            print(result, flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    sys.exit(main(sys.argv[1:]))
