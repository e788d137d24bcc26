"""Clients that hang up on the status ports are routine: a reset before the request, a reset right
after it (the answer then meets a closed socket), a close mid-request, and a connection that stays
silent past the idle timeout each leave at most one DEBUG line, never an ERROR or a traceback, and the
port keeps answering. For the webhook's status server (webhook/status.py, in-process and through
`fitguard webhook`) and the controller's (cmdline/statushttp.py StatusPort, bound to its own port)."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cmdline import statushttp
from cmdline.statushttp import StatusPort, StatusRoutes
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import get_status, running
from webhook.cluster import from_objects
from webhook.review import WebhookOptions
from webhook.status import bind_listener, status_port

ROOT = Path(__file__).resolve().parents[2]
HANG_SECONDS = 10.0  # only ends a hang: each wait below returns as soon as the server acts
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS)
    # SO_LINGER 0: close() sends a reset instead of a FIN, as a client that crashed or timed out
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return sock


def reset_before_request(port: int) -> None:
    _connect(port).close()


def reset_after_request(port: int) -> None:
    sock = _connect(port)
    sock.sendall(REQUEST)
    sock.close()


def close_mid_request(port: int) -> None:
    sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS)
    sock.sendall(b"GET /metr")
    sock.close()


def silent_until_closed(port: int) -> None:
    """Connects, sends half a request line, and waits for the server to close the connection."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS)
    sock.sendall(b"GET /readyz")
    assert sock.recv(1024) == b""  # closed by the server's idle timeout, not by us
    sock.close()


HANG_UPS: list[Callable[[int], None]] = [reset_before_request, reset_after_request, close_mid_request]


def answered(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return int(sock.recv(1024).split(b" ", 2)[1])


# the status servers' loggers: records of other threads of the test process (a client of an earlier
# test's fake API server retrying) are not the status port's to answer for
STATUS_LOGGERS = ("webhook", "controller", "cmdline")


def assert_quiet(caplog: pytest.LogCaptureFixture, stderr: str, connections: int) -> None:
    """No ERROR record, no traceback on stderr, and at most one DEBUG line per hang-up."""
    ours = [r for r in caplog.records if r.name.split(".")[0] in STATUS_LOGGERS]
    assert [r for r in ours if r.levelno >= logging.WARNING] == []
    assert "Traceback" not in stderr and "Exception occurred" not in stderr, stderr
    hang_lines = [r for r in caplog.records if "hung up" in r.getMessage() or "timed out" in r.getMessage()]
    assert len(hang_lines) <= connections


@pytest.fixture
def short_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The idle timeout shortened, so a silent client is dropped within the test's bound."""
    monkeypatch.setattr(statushttp.StatusHandler, "timeout", 0.3)


@pytest.fixture
def webhook_port(short_idle: None) -> Iterator[int]:
    listener = bind_listener("127.0.0.1:0")
    server = status_port(listener, from_objects([]), WebhookOptions(), lambda: True).start()
    yield listener.getsockname()[1]
    server.server.shutdown()
    listener.close()


@pytest.fixture
def controller_port(short_idle: None) -> Iterator[int]:
    routes = StatusRoutes(waiting=list, metrics=lambda: (b"", "text/plain"), snapshot=dict)
    http = StatusPort(routes, logging.getLogger("test"), bind="127.0.0.1:0").start()
    yield http.port
    http.stop()


def _hang_up_many(port: int, rounds: int = 20, silent: bool = True) -> int:
    for _ in range(rounds):
        for hang_up in HANG_UPS:
            hang_up(port)
    if silent:
        silent_until_closed(port)
    # the server threads log after the client has gone: wait until a request is answered again
    deadline = time.monotonic() + HANG_SECONDS
    while answered(port) != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # let the last handler threads finish their one log line
    return rounds * len(HANG_UPS) + silent


@pytest.mark.parametrize("which", ["webhook", "controller"])
def test_clients_that_hang_up_log_no_error(
    which: str,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """61 hang-ups of four kinds on one status port: no ERROR, no traceback on stderr, at most one
    DEBUG line each, and the port still answers /healthz."""
    port = request.getfixturevalue(f"{which}_port")
    caplog.set_level(logging.DEBUG)
    connections = _hang_up_many(port)
    assert answered(port) == 200
    assert_quiet(caplog, capfd.readouterr().err, connections)


def test_a_failing_answer_is_still_an_error(
    webhook_port: int, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quiet is for hang-ups only: a bug while answering is logged at ERROR with its traceback."""
    from webhook import metrics

    def broken() -> tuple[bytes, str]:
        raise RuntimeError("planted")

    monkeypatch.setattr(metrics, "render", broken)
    with socket.create_connection(("127.0.0.1", webhook_port), timeout=HANG_SECONDS) as sock:
        sock.sendall(REQUEST)
        assert sock.recv(1024) == b""  # the connection is closed, the thread lives on
    assert answered(webhook_port) == 200
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None


@pytest.mark.slow
def test_hang_ups_through_the_webhook_server(tls_files: TlsFiles, tmp_path: Path) -> None:
    """`fitguard webhook` as the manifests start it, at log level debug: after 60 hang-ups on its
    status port its stderr holds no ERROR line and no traceback, and /metrics still answers."""
    log = tmp_path / "stderr.log"
    options = ["--state", str(ROOT / "examples" / "cluster.yaml"), "--log-level", "debug"]
    with log.open("wb") as stderr, running(tls_files, options, stderr=stderr) as server:
        _hang_up_many(server.status_port, rounds=20, silent=False)  # its idle timeout is 30 s
        assert get_status(server, "/metrics")[0] == 200
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "Exception occurred" not in text
    assert not [line for line in text.splitlines() if "ERROR" in line], text[-2000:]
    assert "hung up" in text  # the hang-ups reached the server, and were logged at DEBUG
