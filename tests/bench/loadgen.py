"""Our own HTTPS load generator: separate processes, each with one keep-alive HTTP/1.1 connection
(http.client), verifying the server's CA as the apiserver does.

Two modes. Saturation: every connection sends its next request as soon as the last is answered
(closed loop) and we count answers. Fixed rate: every process sends on a fixed schedule, and a
request's latency runs from when it was *due*, not when it went out, so a server that falls
behind is charged for the wait (no coordinated omission).
"""

from __future__ import annotations

import http.client
import math
import multiprocessing
import os
import ssl
import time
from dataclasses import dataclass
from typing import Any

START_DELAY = 1.5  # seconds for spawned processes to import, connect and warm up before the start


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    path: str
    ca_file: str


@dataclass(frozen=True)
class LoadResult:
    sent: int
    ok: int  # 200 answers
    failed: int  # other statuses and broken connections
    seconds: float
    latencies: list[float]  # seconds, one per answered request

    @property
    def per_second(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0


def _connect(target: Target) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=target.ca_file)
    connection = http.client.HTTPSConnection(target.host, target.port, context=context, timeout=30)
    connection.connect()
    return connection


def _send(connection: http.client.HTTPSConnection, target: Target, body: bytes) -> int:
    connection.request("POST", target.path, body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status


@dataclass(frozen=True)
class Job:
    target: Target
    bodies: list[bytes]
    offset: int  # which body this process sends first
    start: float  # time.monotonic() (system-wide on Linux) when the clock starts
    duration: float
    rate: float  # this process's requests per second; 0 is closed loop
    cpus: tuple[int, ...] = ()  # the CPUs this process runs on; () leaves the affinity alone


def _worker(job: Job) -> tuple[int, int, int, list[float]]:
    """One process: rate 0 is closed loop; otherwise `rate` requests a second on a schedule."""
    if job.cpus:
        os.sched_setaffinity(0, job.cpus)
    target, bodies, offset, start, duration, rate = (
        job.target,
        job.bodies,
        job.offset,
        job.start,
        job.duration,
        job.rate,
    )
    connection = _connect(target)
    _send(connection, target, bodies[offset % len(bodies)])  # handshake and first request off the clock
    sent = ok = failed = 0
    latencies: list[float] = []
    interval = 1.0 / rate if rate else 0.0
    end = start + duration
    i = offset
    while True:
        due = start + sent * interval if rate else time.monotonic()
        if due >= end:
            break
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        elif not rate and now < start:
            time.sleep(start - now)
            continue
        sent += 1
        try:
            status = _send(connection, target, bodies[i % len(bodies)])
        except (OSError, http.client.HTTPException):
            failed += 1
            connection.close()
            connection = _connect(target)
            continue
        finally:
            i += 1
        if status == 200:
            ok += 1
            latencies.append(time.monotonic() - due)
        else:
            failed += 1
    connection.close()
    return sent, ok, failed, latencies


def run(
    target: Target,
    bodies: list[bytes],
    processes: int,
    duration: float,
    rate: float = 0.0,
    *,
    cpus: tuple[int, ...] = (),
) -> LoadResult:
    """Load from `processes` spawned processes (on `cpus` when given); rate 0 is saturation, else
    the total rate."""
    context = multiprocessing.get_context("spawn")
    start = time.monotonic() + START_DELAY + 0.15 * processes
    per_process = rate / processes if rate else 0.0
    jobs = [
        Job(
            target,
            bodies,
            p * len(bodies) // processes,
            start + (p / rate if rate else 0.0),
            duration,
            per_process,
            cpus,
        )
        for p in range(processes)
    ]
    with context.Pool(processes) as pool:
        parts = pool.map(_worker, jobs)
    latencies = sorted(lat for part in parts for lat in part[3])
    return LoadResult(
        sent=sum(p[0] for p in parts),
        ok=sum(p[1] for p in parts),
        failed=sum(p[2] for p in parts),
        seconds=duration,
        latencies=latencies,
    )


def percentile(ordered: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of sorted values; 0 when there are none."""
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


def summary(result: LoadResult) -> dict[str, Any]:
    lat = result.latencies
    return {
        "sent": result.sent,
        "ok": result.ok,
        "failed": result.failed,
        "seconds": result.seconds,
        "perSecond": round(result.per_second, 1),
        "p50Ms": round(percentile(lat, 50) * 1000, 3),
        "p99Ms": round(percentile(lat, 99) * 1000, 3),
        "p999Ms": round(percentile(lat, 99.9) * 1000, 3),
        "maxMs": round(lat[-1] * 1000, 3) if lat else 0.0,
    }
