"""No kubeconfig: every command that reads one (check, report, state export, controller, webhook)
stops with exit status 2 and one line saying what it looked for and how to run without a cluster
(`check` names `--state`), through the installed console script with no ~/.kube/config and
$KUBECONFIG unset; a kubeconfig that exists but does not load, the same; and the controller's
`--context` picks the context as `check`'s does (the fake API server, moto for AWS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.awsfixtures import AwsEnvironment
from tests.fakekube.server import FakeKubeServer
from tests.tlsfixtures import TlsFiles

ROOT = Path(__file__).resolve().parents[2]
FITGUARD = str(Path(sys.executable).parent / "fitguard")
MANIFEST = str(ROOT / "examples" / "check" / "web.yaml")
CANNOT = "cannot load the Kubernetes configuration"
# what each command offers instead of a cluster
OFFLINE = {
    "check": "pass --kubeconfig PATH, or check against a state file with --state PATH (made by "
    "`fitguard state export` or `fitguard state from-controller`)",
    "report": "pass --kubeconfig PATH, or report a saved snapshot with --snapshot PATH",
    "state export": "pass --kubeconfig PATH (without a cluster: fitguard state from-controller)",
    "controller": "pass --kubeconfig PATH, or --once --state PATH to read the cluster from a file",
    "webhook": "pass --kubeconfig PATH, or --state PATH to answer from a state file",
}


def environment(home: Path, **extra: str) -> dict[str, str]:
    """A user with an empty home: no ~/.kube/config, no $KUBECONFIG, not in a pod."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AWS_"))}
    env.update(HOME=str(home), AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true", **extra)
    return env


def commands(tls: TlsFiles) -> dict[str, list[str]]:
    return {
        "check": ["check", "-f", MANIFEST],
        "report": ["report"],
        "state export": ["state", "export"],
        "controller": ["controller", "--once", "--log-level", "error"],
        "webhook": ["webhook", "--bind", "127.0.0.1:0", "--metrics-bind", "127.0.0.1:0",
                    "--tls-cert", str(tls.cert_path), "--tls-key", str(tls.key_path)],
    }  # fmt: skip


def fitguard(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FITGUARD, *args], env=env, capture_output=True, text=True, timeout=60, check=False, cwd=ROOT
    )


@pytest.mark.parametrize("command", list(OFFLINE))
def test_no_kubeconfig_is_one_line_and_exit_2_from_every_command(
    command: str, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """The line says what was looked for (~/.kube/config, $KUBECONFIG) and the command's way to
    run without a cluster; `check` names --state."""
    done = fitguard(commands(tls_files)[command], environment(tmp_path))
    expected = (
        f"fitguard {command}: {CANNOT}: ~/.kube/config does not exist and $KUBECONFIG is not set; "
        f"{OFFLINE[command]}\n"
    )
    assert (done.returncode, done.stderr) == (2, expected)


@pytest.mark.parametrize("command", ["check", "report", "state export", "controller"])
def test_a_kubeconfig_that_does_not_load_is_exit_2_with_the_clients_reason(
    command: str, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """$KUBECONFIG names a file that exists but holds no configuration: one line, exit 2."""
    broken = tmp_path / "kubeconfig"
    broken.write_text("apiVersion: v1\nkind: Config\n")
    done = fitguard(commands(tls_files)[command], environment(tmp_path, KUBECONFIG=str(broken)))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"fitguard {command}: {CANNOT}: ") and line.endswith(OFFLINE[command])


def test_a_missing_file_named_by_kubeconfig_or_its_list_is_named(tmp_path: Path) -> None:
    """--kubeconfig PATH, or every file of a $KUBECONFIG list, missing: the line names them."""
    named = fitguard(["check", "-f", MANIFEST, "--kubeconfig", "nowhere.yaml"], environment(tmp_path))
    assert named.returncode == 2
    assert named.stderr.startswith(f"fitguard check: {CANNOT}: --kubeconfig nowhere.yaml does not exist; ")
    listed = fitguard(["report"], environment(tmp_path, KUBECONFIG=os.pathsep.join(["/a", "/b"])))
    assert listed.returncode == 2
    assert listed.stderr.startswith(
        f"fitguard report: {CANNOT}: none of the files $KUBECONFIG names exists (/a, /b); "
    )


@pytest.mark.slow
def test_the_controller_reads_the_cluster_of_its_context(
    aws: AwsEnvironment, fake_kube: FakeKubeServer, tmp_path: Path
) -> None:
    """A kubeconfig whose current context points at nothing: `controller --once` fails to reach
    the API (exit 1); with `--context fakekube` the same run reads the fake API server (exit 0); an
    unknown context is a configuration error (exit 2)."""
    config = fake_kube.kubeconfig()
    config["clusters"].append({"name": "nowhere", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"].append({"name": "nowhere", "context": {"cluster": "nowhere", "user": "fakekube"}})
    config["current-context"] = "nowhere"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    once = ["controller", "--once", "--dry-run", "-o", "json", "--log-level", "error"]
    current = fitguard([*once, "--kubeconfig", str(kubeconfig)], env)
    assert current.returncode == 1 and "cannot reach the Kubernetes API server" in current.stderr
    chosen = fitguard([*once, "--kubeconfig", str(kubeconfig), "--context", "fakekube"], env)
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(chosen.stdout)["errors"] == {}
    unknown = fitguard([*once, "--kubeconfig", str(kubeconfig), "--context", "elsewhere"], env)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith(f"fitguard controller: {CANNOT}: ")
