"""`fitguard controller` (and `fitguard webhook`) as an operator meets it: every bad input ends
with one line on stderr and exit status 2 (the command line or its files are wrong) or 1 (a failure
while running), never a traceback; and the AWS region comes from --region, AWS_REGION,
AWS_DEFAULT_REGION, the AWS config file or the instance metadata service, in that order, and is
logged at start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from controller.aws.region import NO_REGION, NoRegion, Region, resolve_region
from tests.awsfixtures import AwsEnvironment
from tests.tlsfixtures import TlsFiles

ROOT = Path(__file__).resolve().parents[2]
FITGUARD = str(Path(sys.executable).with_name("fitguard"))  # the installed console script
EXAMPLE_STATE = str(ROOT / "examples" / "cluster.yaml")


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FITGUARD, "controller", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def bare_environment(tmp_path: Path) -> dict[str, str]:
    """No region, no credentials, no kubeconfig, no instance metadata service."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBE"))}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        KUBECONFIG=str(tmp_path / "no-kubeconfig"),
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


def unreachable_kubeconfig(path: Path) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{closed_port()}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return path


UNREADABLE_SELECTOR = "label selector 'app in (': cannot read 'app in ('"


def test_bad_inputs_end_with_one_clear_line_and_the_right_exit_status(tmp_path: Path) -> None:
    """A missing or malformed --state file, no AWS region (even with --state --dry-run), an unknown
    --log-level, a selector of cluster-autoscaler's or Karpenter's pods that cannot be read (named
    by its flag), no kubeconfig: exit 2. An API server nobody answers on: exit 1. Each with exactly
    one line on stderr (logs silenced with --log-level error where a run gets that far)."""
    env = bare_environment(tmp_path)
    missing = tmp_path / "absent.yaml"
    malformed = tmp_path / "bad.yaml"
    malformed.write_text("items: [\n  - {kind: Node\n")
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    region = ["--region", "us-east-1", "--log-level", "error"]
    offline = ["--once", "--dry-run", "--state", EXAMPLE_STATE, *region]
    cases: list[tuple[list[str], dict[str, str], int, str]] = [
        (["--once", "--dry-run", "--state", str(missing)], {}, 2,
         f"fitguard controller: --state {missing}: No such file or directory"),
        (["--once", "--dry-run", "--state", EXAMPLE_STATE], {}, 2, f"fitguard controller: {NO_REGION}"),
        (["--log-level", "verbose", "--once"], {}, 2,
         "fitguard controller: argument --log-level: invalid choice: 'VERBOSE' (choose from 'DEBUG', "
         "'INFO', 'WARNING', 'ERROR') (see fitguard controller --help)"),
        ([*offline, "--autoscaler-selector", "app in ("], {}, 2,
         f"fitguard controller: --autoscaler-selector: {UNREADABLE_SELECTOR}"),
        ([*offline, "--karpenter-selector", "app in ("], {}, 2,
         f"fitguard controller: --karpenter-selector: {UNREADABLE_SELECTOR}"),
        (["--once", *region], {}, 2,
         f"fitguard controller: cannot load the Kubernetes configuration: $KUBECONFIG "
         f"{tmp_path / 'no-kubeconfig'} does not exist; pass --kubeconfig PATH, or --once --state PATH "
         "to read the cluster from a file"),
    ]  # fmt: skip
    for args, extra, status, line in cases:
        done = run(args, {**env, **extra})
        assert (done.returncode, done.stderr) == (status, line + "\n"), args
    bad = run(["--once", "--dry-run", "--state", str(malformed)], env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith(f"fitguard controller: --state {malformed}: not YAML or JSON: ")
    unreachable = run(["--once", "--kubeconfig", str(kubeconfig), *region], env)
    assert unreachable.returncode == 1 and unreachable.stderr.count("\n") == 1, unreachable.stderr
    assert unreachable.stderr.startswith(
        "fitguard controller: cannot reach the Kubernetes API server (MaxRetryError): "
    )


class FakeImds:
    """The instance metadata service's region path (IMDSv2: a token, then the zone)."""

    def __init__(self, zone: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                self._send(b"token" if self.path == "/latest/api/token" else b"", 200)

            def do_GET(self) -> None:
                found = self.path == "/latest/meta-data/placement/availability-zone/"
                self._send(zone.encode() if found else b"", 200 if found else 404)

            def _send(self, body: bytes, code: int) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"


@pytest.fixture
def no_region(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield monkeypatch


def test_the_region_comes_from_the_flag_then_aws_region_then_aws_default_region(
    no_region: pytest.MonkeyPatch,
) -> None:
    """--region wins; else AWS_REGION (IRSA and Pod Identity set it) over AWS_DEFAULT_REGION."""
    with pytest.raises(NoRegion, match="pass --region or set AWS_REGION"):
        resolve_region("")
    no_region.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert resolve_region("") == Region("eu-west-1", "AWS_DEFAULT_REGION")
    no_region.setenv("AWS_REGION", "eu-central-1")
    assert resolve_region("") == Region("eu-central-1", "AWS_REGION")
    assert resolve_region("ap-south-1") == Region("ap-south-1", "--region")


def test_the_region_comes_from_the_aws_config_file_then_the_instance_metadata_service(
    no_region: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With no variable set, the profile's region; with none there either, the instance metadata
    service's availability zone without its letter, as cluster-autoscaler asks it."""
    imds = FakeImds("us-west-2b")
    try:
        no_region.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.url)
        no_region.delenv("AWS_EC2_METADATA_DISABLED")
        assert resolve_region("") == Region("us-west-2", "instance metadata")
        config = tmp_path / "config"
        config.write_text("[default]\nregion = sa-east-1\n")
        no_region.setenv("AWS_CONFIG_FILE", str(config))
        assert resolve_region("") == Region("sa-east-1", "AWS config")
    finally:
        imds.server.shutdown()


def test_the_region_in_use_is_logged_at_start(aws: AwsEnvironment, tmp_path: Path) -> None:
    """A run against moto with AWS_REGION set logs that region and where it came from."""
    env = {**os.environ, "AWS_REGION": "us-east-1", "NO_PROXY": "127.0.0.1,localhost"}
    done = run(["--once", "--dry-run", "--state", EXAMPLE_STATE, "-o", "json"], env)
    assert done.returncode == 0, done.stderr
    assert "controller.cli: AWS region us-east-1 (from AWS_REGION) region=us-east-1" in done.stderr


def test_the_webhook_refuses_an_unloadable_kubeconfig_in_one_line(
    tls_files: TlsFiles, tmp_path: Path
) -> None:
    """`fitguard webhook` without --state and with no loadable kubeconfig stops before any worker
    boots: one line, exit status 2, no worker traceback."""
    env = bare_environment(tmp_path)
    done = subprocess.run(
        [FITGUARD, "webhook", "--bind", "127.0.0.1:0", "--metrics-bind", "127.0.0.1:0",
         "--tls-cert", str(tls_files.cert_path), "--tls-key", str(tls_files.key_path)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2,
        f"fitguard webhook: cannot load the Kubernetes configuration: $KUBECONFIG {env['KUBECONFIG']} "
        "does not exist; pass --kubeconfig PATH, or --state PATH to answer from a state file\n",
    )


def test_every_controller_flag_has_help_and_sits_in_its_concerns_group() -> None:
    """`fitguard controller --help` groups its flags by concern, in this order, and every flag says
    what it does; the logging flags are the same as the webhook's."""
    from fitguard.cli import build_parser

    def groups(command: str) -> dict[str, list[str]]:
        parser = build_parser(command)._subparsers._group_actions[0].choices[command]
        found = {}
        for group in parser._action_groups:
            flags = [a.option_strings[-1] for a in group._group_actions if a.option_strings]
            assert all(a.help for a in group._group_actions if a.dest != "help"), group.title
            if flags:
                found[group.title] = flags
        return found

    controller = groups("controller")
    assert list(controller) == [
        "options",
        "run",
        "discovery",
        "tag sync",
        "branch ENI books",
        "guard",
        "scaling (where cluster-autoscaler is blind)",
        "rescue and reclaim",
        "certificates",
        "leader election",
        "HTTP",
        "logging",
    ]
    assert controller["options"] == ["--help"]
    assert controller["logging"] == ["--log-format", "--log-level"] == groups("webhook")["logging"]


@pytest.mark.parametrize("command", ["controller", "webhook"])
@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--log-format", "xml", "argument --log-format: invalid choice: 'xml' (choose from 'text', 'json')"),
        ("--log-level", "loud", "argument --log-level: invalid choice: 'LOUD'"),
    ],
)
def test_a_bad_logging_flag_is_refused_by_both_long_running_commands(
    command: str, flag: str, value: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared logging flags refuse a value they do not know, in either command, with exit 2 and
    the flag named."""
    from fitguard.cli import build_parser

    with pytest.raises(SystemExit) as stop:
        build_parser(command).parse_args([command, flag, value])
    assert stop.value.code == 2
    assert said in capsys.readouterr().err
