"""`fitguard webhook` given something it cannot start with (webhook/server.py StartError): one line
naming it, exit status 2 as for any bad input, before any worker boots; and the library raises a
typed error, never SystemExit, so that its callers decide how to end."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.tlsfixtures import TlsFiles
from webhook.review import WebhookOptions
from webhook.server import ServeOptions, StartError, read_state, serve

ROOT = Path(__file__).resolve().parents[2]
FITGUARD = str(ROOT / ".venv" / "bin" / "fitguard")


def webhook(tls: TlsFiles, *args: str) -> subprocess.CompletedProcess[str]:
    command = [FITGUARD, "webhook", "--bind", "127.0.0.1:0", "--tls-cert", str(tls.cert_path),
               "--tls-key", str(tls.key_path), *args]  # fmt: skip
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


def test_a_missing_state_file_and_a_port_in_use_end_in_one_line_and_exit_2(
    tls_files: TlsFiles, tmp_path: Path
) -> None:
    """A --state that does not exist, and a --metrics-bind port another socket holds: each one
    line on standard error, exit status 2."""
    missing = tmp_path / "none.yaml"
    done = webhook(tls_files, "--state", str(missing), "--metrics-bind", "127.0.0.1:0")
    assert (done.returncode, done.stderr) == (2, f"fitguard webhook: state file {missing} not found\n")
    state = tmp_path / "state.yaml"
    state.write_text((ROOT / "examples" / "cluster.yaml").read_text())
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = webhook(
            tls_files, "--state", str(state), "--metrics-bind", f"127.0.0.1:{port}", "--log-level", "warning"
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"fitguard webhook: cannot listen on --metrics-bind 127.0.0.1:{port}: ")
    assert len(done.stderr.splitlines()) == 1


def test_the_library_raises_start_error_not_system_exit(tls_files: TlsFiles, tmp_path: Path) -> None:
    """`serve` and `read_state` raise StartError with the line (without the command's name)."""
    with pytest.raises(StartError, match=r"^state file .*none\.yaml not found$"):
        read_state(tmp_path / "none.yaml")
    options = ServeOptions(
        bind="127.0.0.1:0",
        tls_cert=tmp_path / "absent.crt",
        tls_key=tls_files.key_path,
        config=WebhookOptions(),
    )
    with pytest.raises(StartError, match=r"absent\.crt"):
        serve(options)
