"""fitguard as a kubectl plugin: how kubectl's connection flags are taken apart, and, with the real
`kubectl` (skipped cleanly without it), that kubectl finds `kubectl-fitguard` in the virtual
environment's bin, that `kubectl fitguard check|report` honour --kubeconfig, --context and -n
against the fake apiserver, and that `kubectl kustomize examples/check | fitguard check -f -` gives
the expected verdicts."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from capacity.names import MODE_LABEL
from fitguard.kubectl_plugin import PluginUsageError, plugin_argv
from kube.statefile import load_state
from tests.fakekube.server import FakeKubeServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["check", "-f", "a.yaml"], ["check", "-f", "a.yaml"]),
        (
            ["-n", "prod", "--context=east", "check", "-f", "a.yaml", "--kubeconfig", "k"],
            ["check", "-f", "a.yaml", "--namespace", "prod", "--context", "east", "--kubeconfig", "k"],
        ),
        (["check", "-nprod", "-f", "-"], ["check", "-f", "-", "--namespace", "prod"]),
        (
            ["report", "--context", "east", "-n", "prod", "-o", "json"],
            ["report", "-o", "json", "--context", "east"],
        ),
        (
            ["state", "export", "--kubeconfig=k", "-o", "s.yaml"],
            ["state", "export", "-o", "s.yaml", "--kubeconfig", "k"],
        ),
        (["instance-types", "m5.large"], ["instance-types", "m5.large"]),
    ],
    ids=["plain", "flags-anywhere", "joined-short", "report-ignores-namespace", "state", "untouched"],
)
def test_kubectl_flags_go_to_the_subcommand_that_uses_them(argv: list[str], expected: list[str]) -> None:
    """Connection flags before or after the command reach it in fitguard's spelling; -n has no
    effect where nothing is namespaced (report, state), as kubectl does for cluster-scoped kinds."""
    assert plugin_argv(argv) == expected


@pytest.mark.parametrize("argv", [["instance-types", "--context", "x", "m5.large"], ["check", "-n"]])
def test_flags_that_do_not_apply_or_lack_a_value_are_usage_errors(argv: list[str]) -> None:
    """A connection flag for a command that never connects, or a flag without its value."""
    with pytest.raises(PluginUsageError):
        plugin_argv(argv)


def _env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        **extra,
    }


def _run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, check=False, timeout=120, **kwargs
    )


@needs_kubectl
def test_kubectl_plugin_list_finds_the_plugin_in_the_venv() -> None:
    """`kubectl plugin list` names the console script installed into the venv's bin."""
    assert (BIN / "kubectl-fitguard").is_file(), "pyproject's kubectl-fitguard script is not installed"
    listed = _run([str(KUBECTL), "plugin", "list"], env=_env())
    assert str(BIN / "kubectl-fitguard") in listed.stdout.splitlines(), listed.stdout + listed.stderr


@needs_kubectl
def test_kustomize_output_piped_into_check_gives_the_expected_verdicts() -> None:
    """The example application rendered by kubectl: the web Deployment admitted, the CronJob
    denied (ng-batch's missing tag), the Service and ConfigMap skipped; exit 1."""
    rendered = _run([str(KUBECTL), "kustomize", str(EXAMPLES / "check")], env=_env())
    assert rendered.returncode == 0, rendered.stderr
    run = _run(
        [str(BIN / "fitguard"), "check", "-f", "-", "--state", str(EXAMPLES / "cluster.yaml"), "-o", "json"],
        input=rendered.stdout,
        env=_env(),
    )
    assert run.returncode == 1, run.stderr
    verdicts = [
        (r["kind"], r["namespace"], r["name"], r["verdict"]) for r in json.loads(run.stdout)["results"]
    ]
    assert verdicts == [
        ("ConfigMap", None, "media-settings", "skipped"),
        ("Service", None, "web", "skipped"),
        ("Deployment", "default", "web", "admitted"),
        ("CronJob", "default", "transcode", "denied"),
    ]


def _kubeconfig(fake_kube: FakeKubeServer, path: Path) -> Path:
    """Two contexts: the current one points at nothing, `fakekube` at the fake apiserver."""
    config = fake_kube.kubeconfig()
    config["clusters"].append({"name": "nowhere", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"].append({"name": "nowhere", "context": {"cluster": "nowhere", "user": "fakekube"}})
    config["current-context"] = "nowhere"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.slow
@needs_kubectl
def test_kubectl_fitguard_honours_kubeconfig_context_and_namespace(
    fake_kube: FakeKubeServer, tmp_path: Path
) -> None:
    """`kubectl fitguard check` reaches the cluster only through --kubeconfig and --context, and
    judges a namespace-less CronJob in the -n namespace (mode warn by its label: admitted with
    warnings; in default: denied); `kubectl fitguard report` lists the cluster's nodes."""
    for obj in load_state(EXAMPLES / "cluster.yaml"):
        fake_kube.apply(copy.deepcopy(obj))
    fake_kube.apply(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "relaxed", "labels": {MODE_LABEL: "warn"}},
        }
    )
    kubeconfig = _kubeconfig(fake_kube, tmp_path / "kubeconfig")
    cronjob = str(EXAMPLES / "check" / "transcode.yaml")
    plugin = [str(KUBECTL), "fitguard"]
    connect = ["--kubeconfig", str(kubeconfig), "--context", "fakekube"]

    wrong_context = _run([*plugin, "check", "-f", cronjob, "--kubeconfig", str(kubeconfig)], env=_env())
    assert wrong_context.returncode == 2 and "cannot read the cluster" in wrong_context.stderr

    default = _run([*plugin, "check", "-f", cronjob, *connect, "-o", "json"], env=_env())
    relaxed = _run([*plugin, "-n", "relaxed", "check", "-f", cronjob, *connect, "-o", "json"], env=_env())
    assert (default.returncode, relaxed.returncode) == (1, 0), default.stderr + relaxed.stderr
    (denied,) = json.loads(default.stdout)["results"]
    (warned,) = json.loads(relaxed.stdout)["results"]
    assert (denied["namespace"], denied["verdict"]) == ("default", "denied")
    assert (warned["namespace"], warned["verdict"]) == ("relaxed", "warned")
    assert warned["warnings"][0].startswith(
        "spec.jobTemplate.spec.template.spec.containers[0].resources.limits"
    )

    report = _run([*plugin, "report", *connect, "-n", "relaxed", "-o", "json"], env=_env())
    assert report.returncode == 0, report.stderr
    nodes = sorted(row["name"] for row in json.loads(report.stdout)["nodes"])
    assert nodes == sorted(
        o["metadata"]["name"] for o in load_state(EXAMPLES / "cluster.yaml") if o["kind"] == "Node"
    )


@needs_kubectl
def test_kubectl_fitguard_help_and_usage_errors_say_kubectl_fitguard() -> None:
    """Run through kubectl, the help and a usage error name the command as the user typed it, and
    the help says where kubectl's connection flags may go."""
    top = _run([str(KUBECTL), "fitguard", "--help"], env=_env())
    assert top.returncode == 0 and top.stdout.startswith("usage: kubectl fitguard [-h]"), top.stdout
    said = " ".join(top.stdout.split())  # argparse wraps the epilog to the terminal's width
    assert "kubectl's --kubeconfig, --context and -n/--namespace may come before or after" in said
    check = _run([str(KUBECTL), "fitguard", "check", "--help"], env=_env())
    assert check.stdout.startswith("usage: kubectl fitguard check [-h]"), check.stdout
    wrong = _run([str(KUBECTL), "fitguard", "check", "-o", "xml", "-f", "a.yaml"], env=_env())
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("kubectl fitguard check: argument -o/--output: invalid choice")
    assert wrong.stderr.rstrip().endswith("(see kubectl fitguard check --help)")
