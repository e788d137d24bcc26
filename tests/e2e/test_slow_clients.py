"""Slow and malicious clients of the admission port (issue 30): `fitguard webhook` started with the
manifests' flags (one worker; the attack also against 2 workers), 8 threads per worker, and
connection timeouts of 8 s (the defaults are 5 s: a little more leaves room to open 64 TLS
connections on a busy machine before the first one is due).

What a slow client may hold is a file descriptor, never a worker thread: while 64 slow connections
are held (tests/slowclients.py: stalled handshakes, bodies and headers trickled a byte a second),
real /validate and /mutate reviews are answered within the apiserver's timeout; every slow
connection is closed by the server once its phase's timeout passed; and /readyz says so when the
admission port cannot take more connections, and recovers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import objects
from tests.slowclients import KINDS, SlowConn, Trickler, open_slow
from tests.tlsfixtures import TlsFiles, client_ssl_context
from tests.webhook_server import (
    SHOP_STATE,
    Server,
    admission_review,
    get_status,
    post,
    running,
)

pytestmark = pytest.mark.slow

# The apiserver's timeout for /mutate (manifests/base/webhook-configurations.yaml; /validate has 5 s).
APISERVER_TIMEOUT = 3.0
TIMEOUT = 8.0  # --tls-handshake-timeout, --header-timeout and --body-timeout here
TIMEOUTS = ["--tls-handshake-timeout", str(TIMEOUT), "--header-timeout", str(TIMEOUT),
            "--body-timeout", str(TIMEOUT)]  # fmt: skip
# A deadline is enforced on the worker loop's next turn, which comes at least once a second.
TURN = 1.0
SLOW = 64
HANG = 30.0  # ends a hang only


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump_all(SHOP_STATE))
    return path


def pod(name: str) -> dict[str, Any]:
    return objects.pod(name, {"cpu": "100m"}, namespace="shop", image="nginx", labels={"app": "web"})


def review_in_time(server: Server, path: str, uid: str) -> tuple[int, dict[str, Any], float]:
    """One review on a new connection, as the apiserver makes it: (status, body, seconds taken)."""
    started = time.monotonic()
    conn = server.connect()
    conn.timeout = APISERVER_TIMEOUT
    try:
        status, body = post(conn, admission_review(pod(uid), uid, namespace="shop"), path)
    finally:
        conn.close()
    return status, body, time.monotonic() - started


def open_many(server: Server, count: int) -> list[SlowConn]:
    context = client_ssl_context(server.tls.ca_path)
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda i: open_slow(KINDS[i % len(KINDS)], server.port, context), range(count)))


# None: the manifests' worker count (one per replica), given no --workers here
@pytest.fixture(params=[None, 2], ids=["manifests-workers", "2-workers"])
def slow_server(request: pytest.FixtureRequest, tls_files: TlsFiles, state: Path) -> Iterator[Server]:
    with running(tls_files, ["--state", str(state), *TIMEOUTS], workers=request.param, threads=8) as server:
        yield server


def test_reviews_are_answered_in_time_while_64_slow_clients_are_held(slow_server: Server) -> None:
    """64 slow connections (a third each stalled in the handshake, trickling a body a byte a second,
    trickling half a header line) would hold 8 threads per worker with gunicorn's gthread worker.
    Here, with the manifests' one worker and with two, while they are all held, 16 /validate and 16
    /mutate reviews on new connections are each answered 200 with their uid within the apiserver's
    3 s; then each slow connection is closed by the server within its phase's timeout (plus one
    turn of the worker's loop)."""
    slow = open_many(slow_server, SLOW)
    trickler = Trickler(slow).start()
    try:
        paths = ["/validate", "/mutate"] * 16
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: review_in_time(slow_server, paths[i], f"uid-{i}"), range(32)))
        still_open = len(trickler.open())
        for i, (status, body, seconds) in enumerate(answers):
            assert status == 200, (paths[i], status, body)
            assert body["response"]["uid"] == f"uid-{i}"
            assert seconds < APISERVER_TIMEOUT, (paths[i], seconds)
        # the reviews were answered while every slow connection was held, not after they were dropped
        assert still_open == SLOW, [(c.kind, c.closed and c.closed - c.opened) for c in slow if c.closed]
        deadline = time.monotonic() + HANG
        while trickler.open() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        trickler.stop()
    held = {conn.kind: max(held_for(c) for c in slow if c.kind == conn.kind) for conn in slow}
    assert all(conn.closed is not None for conn in slow), held
    # a header or body cut short is answered 408; a handshake cut short cannot be answered
    for conn in slow:
        assert held_for(conn) <= TIMEOUT + TURN + 0.5, sorted((c.kind, round(held_for(c), 2)) for c in slow)[
            -8:
        ]
        assert conn.answer.startswith(b"HTTP/1.1 408 ") == (conn.kind != "handshake"), conn.answer


def held_for(conn: SlowConn) -> float:
    return (conn.closed or time.monotonic()) - conn.opened


def readyz(server: Server) -> tuple[int, str]:
    status, body = get_status(server, "/readyz")
    return status, body.decode()


@pytest.mark.parametrize("workers", [None, 2], ids=["manifests-workers", "2-workers"])
def test_readyz_says_not_ready_while_the_admission_port_is_full_and_recovers(
    workers: int | None, tls_files: TlsFiles, state: Path
) -> None:
    """With --max-connections 4, 8 connections stalled in the handshake fill every worker's slots
    (with 2 workers: a worker at its bound stops accepting, so the other takes the rest; with the
    manifests' one, the rest wait in the backlog and fill it again once the first 4 are dropped):
    after the short saturation bound /readyz on the status port, whichever worker answers, is 503
    and names the admission connections; once the server dropped the slow connections (their
    timeout), it is 200 again and reviews are answered. With a bound off by a large factor (or
    none), the slots never fill and /readyz stays 200."""
    options = ["--state", str(state), *TIMEOUTS, "--max-connections", "4"]
    with running(tls_files, options, workers=workers, threads=8) as server:
        both_ready = wait_for(
            lambda: [readyz(server) for _ in range(8)], lambda got: {*got} == {(200, "ok\n")}
        )
        assert both_ready
        slow = [open_slow("handshake", server.port, client_ssl_context(tls_files.ca_path)) for _ in range(8)]
        trickler = Trickler(slow).start()
        try:
            # each worker turns not ready a second after it filled up; then every answer, from
            # either worker, says why (the slots free up only seconds later)
            seen = wait_for(
                lambda: [readyz(server) for _ in range(8)], lambda got: {s for s, _ in got} == {503}
            )
            for _, text in seen:
                assert text.startswith("waiting for: admission connections (all 4 held for "), text
            wait_for(lambda: readyz(server), lambda got: got == (200, "ok\n"))
        finally:
            trickler.stop()
        status, body, _ = review_in_time(server, "/validate", "after")
        assert (status, body["response"]["uid"]) == (200, "after")


def wait_for(probe: Any, done: Any) -> Any:
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        got = probe()
        if done(got):
            return got
        time.sleep(0.1)
    raise AssertionError(f"still {got!r} after {HANG} s")
