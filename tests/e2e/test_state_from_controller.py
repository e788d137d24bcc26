"""A state for CI without a cluster: `fitguard controller --once -o json` run against AWS alone
(moto in server mode, `--state /dev/null`, no kubeconfig anywhere), written as a state file by
`fitguard state from-controller`, then read by `fitguard check --state`; and every input
from-controller refuses, in one line with exit status 2 and no file written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from capacity.quantity import parse_quantity
from controller.aws.clients import AwsClients
from fitguard.cli import main
from kube.statefile import read_state_file
from tests import objects
from tests.awsfixtures import AwsEnvironment
from tests.controller.test_discovery_aws import ENABLED, EPH_TAG, asg, launch_template

ROOT = Path(__file__).resolve().parents[2]


def fitguard(*args: str, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitguard", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=120,
    )


def pod(name: str, cpu: str) -> str:
    return yaml.safe_dump(objects.pod(name, {"cpu": cpu}, image="x"))


def millicores(quantity: str) -> int:
    return parse_quantity(quantity)  # milli-units


def boundary(template: dict[str, Any]) -> int:
    """The most cpu (millicores) a pod can request and still be served by this group at zero: what
    a new node offers after its DaemonSets, and what cluster-autoscaler's template offers after
    what it adds itself, whichever is less."""
    spec = template["spec"]
    actual = millicores(spec["actual"]["allocatable"]["cpu"]) - millicores(
        spec["daemonSetOverhead"].get("cpu", "0")
    )
    autoscaler = millicores(spec["autoscaler"]["allocatable"]["cpu"]) - millicores(
        spec["autoscalerOverhead"].get("cpu", "0")
    )
    return min(actual, autoscaler)


def test_controller_output_becomes_a_state_check_judges_the_boundary_by(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """One ASG at zero (m5.large, its ephemeral-storage tagged) in moto, and no cluster: no
    kubeconfig, KUBECONFIG naming a file that does not exist. The controller's JSON becomes a
    state; `check --state` admits a Pod one millicore under the group's boundary and one at it,
    denies one a millicore over (exit 1), and says where the state came from."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", {**ENABLED, EPH_TAG: "44Gi"})
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "absent"), "HOME": str(tmp_path)}
    once = fitguard(
        "controller",
        "--once",
        "--dry-run",
        "--state",
        os.devnull,
        "-o",
        "json",
        "--log-level",
        "error",
        env=env,
    )
    assert once.returncode == 0, once.stderr
    (tmp_path / "groups.json").write_text(once.stdout)
    state = tmp_path / "state.yaml"
    made = fitguard("state", "from-controller", str(tmp_path / "groups.json"), "-o", str(state), env=env)
    assert made.returncode == 0, made.stderr
    assert made.stderr == (
        f"wrote {state}: 4 Namespace, 4 ServiceAccount, 1 NodeGroupTemplate "
        "from fitguard controller --once -o json\n"
    )
    [template] = json.loads(once.stdout)["nodeGroups"]
    edge = boundary(template)
    assert edge == 1900  # m5.large: cluster-autoscaler's 2 cpu less the 100m it adds for kube-proxy
    verdicts = {}
    for name, cpu in (("under", edge - 1), ("at", edge), ("over", edge + 1)):
        manifest = tmp_path / f"{name}.yaml"
        manifest.write_text(pod(name, f"{cpu}m"))
        run = fitguard("check", "-f", str(manifest), "--state", str(state), "-o", "json", env=env)
        [result] = json.loads(run.stdout)["results"]
        verdicts[name] = (run.returncode, result["verdict"])
        assert json.loads(run.stdout)["state exported-from"] == "fitguard controller --once -o json"
    assert verdicts == {"under": (0, "admitted"), "at": (0, "admitted"), "over": (1, "denied")}


def report(*groups: str, errors: dict[str, str] | None = None) -> dict[str, Any]:
    """A controller report holding a NodeGroupTemplate for each of `groups`."""
    template = yaml.safe_load((ROOT / "examples" / "cluster.yaml").read_text())
    by_name = {o["metadata"]["name"]: o for o in template["items"] if o["kind"] == "NodeGroupTemplate"}
    return {"nodeGroups": [by_name[g] for g in groups], "tagSync": [], "errors": errors or {}}


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["state", "from-controller", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "not json",
            "groups.json:1: not JSON (Expecting value); expected fitguard controller --once -o json",
        ),
        (
            "{}",
            "groups.json: no nodeGroups list in it; expected the output of "
            "fitguard controller --once -o json",
        ),
        (
            json.dumps({"nodeGroups": [], "errors": {"": "AccessDenied: not allowed"}}),
            "groups.json: the controller's discovery failed: AccessDenied: not allowed",
        ),
        (json.dumps({"nodeGroups": [], "errors": {}}), "groups.json: no NodeGroupTemplates in it"),
        ("[" * 200 + "]" * 200, "groups.json: nested deeper than 128 levels"),
    ],
    ids=["not-json", "not-a-report", "discovery-failed", "no-groups", "too-deep"],
)
def test_what_is_not_a_usable_report_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, says: str
) -> None:
    """Each refusal: exit 2, one line saying why and that no state was written, no file."""
    monkeypatch.chdir(tmp_path)
    Path("groups.json").write_text(text)
    status, out, err = run_main(capsys, "groups.json", "-o", "state.yaml")
    assert (status, out) == (2, "")
    [line] = err.splitlines()
    assert line.startswith(f"fitguard state from-controller: {says}") and line.endswith("; no state written")
    assert not Path("state.yaml").exists()


def test_f_adds_the_cluster_objects_a_team_keeps_and_each_namespace_gets_its_default_account(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """-f's Namespace, ServiceAccount and SecurityGroupPolicy are kept (a Deployment is left out
    and counted); every namespace, the cluster's own four and -f's, has ServiceAccount `default`
    once; a group the controller could not build is warned about."""
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps(report("ng-general", errors={"ng-gpu": "launch template lt-1 not found"})))
    platform = tmp_path / "platform.yaml"
    platform.write_text(
        yaml.safe_dump_all(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": "payments", "labels": {"t": "p"}},
                },
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "default", "namespace": "payments", "labels": {"own": "yes"}},
                },
                {
                    "apiVersion": "vpcresources.k8s.aws/v1beta1",
                    "kind": "SecurityGroupPolicy",
                    "metadata": {"name": "db", "namespace": "payments"},
                    "spec": {
                        "podSelector": {"matchLabels": {"app": "api"}},
                        "securityGroups": {"groupIds": ["sg-1"]},
                    },
                },
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {}},
            ]
        )
    )
    state = tmp_path / "state.yaml"
    status, _, err = run_main(capsys, str(groups), "-f", str(platform), "-o", str(state))
    assert status == 0, err
    assert err.splitlines()[:2] == [
        "fitguard state from-controller: left out 1 object(s) of -f of kinds a state does not hold",
        "fitguard state from-controller: warning: node group ng-gpu is not in the state (the "
        "controller could not build it: launch template lt-1 not found); `fitguard check` denies "
        "what only it could hold",
    ]
    objects = read_state_file(state).objects
    accounts = sorted(
        (o["metadata"]["namespace"], o["metadata"].get("labels"))
        for o in objects
        if o["kind"] == "ServiceAccount"
    )
    assert accounts == [
        ("default", None),
        ("kube-node-lease", None),
        ("kube-public", None),
        ("kube-system", None),
        ("payments", {"own": "yes"}),
    ]
    kinds = sorted(o["kind"] for o in objects if o["kind"] not in ("ServiceAccount",))
    assert kinds == ["Namespace"] * 5 + ["NodeGroupTemplate", "SecurityGroupPolicy"]


def test_the_report_and_f_cannot_both_be_standard_input(capsys: pytest.CaptureFixture[str]) -> None:
    """Standard input can be read once: a usage error, exit 2."""
    status, _, err = run_main(capsys, "-", "-f", "-")
    assert (
        status == 2
        and err == "fitguard state from-controller: the report and -f cannot both be standard input\n"
    )
