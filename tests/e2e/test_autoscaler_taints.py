"""cluster-autoscaler's taint flags end to end: `fitguard controller --once -o json` against the fake
API server (the real kubernetes client) and moto (boto3 over HTTP) reads the flags of the running
cluster-autoscaler pod and publishes a group at zero without the taint tags they name; `POST
/validate` on a real gunicorn over TLS and `fitguard check --state` (a subprocess) on the published
template then admit a pod that does not tolerate such a taint, and refuse it, with the taint named,
when the flags do not name it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from capacity.autoscaler_memory import format_time
from controller.aws.clients import AwsClients
from fitguard.cli import main as fitguard_main
from tests.awsfixtures import AwsEnvironment
from tests.controller.test_discovery_aws import ENABLED, asg, launch_template
from tests.fakekube.server import FakeKubeServer
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import Server, admission_review, post, running

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NGT_API = "fitguard.io/v1alpha1"
CILIUM = "node.cilium.io/agent-not-ready"
TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/"
WATCH_SECONDS = 10.0  # bounds the wait for a template change to reach the webhook's cache
CHECK_SECONDS = 120  # bounds the `fitguard check` subprocess
REFUSAL = (
    "pod does not fit any node group\n"
    f"ng-cni: node(s) had untolerated taint {{{CILIUM}: true}}: add a toleration for {CILIUM}=true:"
    "NoExecute\n"
    "judged every place it could run: 1 node group (ng-cni), 0 live nodes, no Karpenter NodePools"
)
WEB = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}]},
}


def ca_pod(started: float, args: list[str]) -> dict[str, Any]:
    """cluster-autoscaler as the Helm chart deploys it, `args` being its `customArgs`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": "kube-system",
            "name": "ca-aws-cluster-autoscaler-7d9f",
            "labels": {"app.kubernetes.io/name": "aws-cluster-autoscaler"},
        },
        "spec": {
            "containers": [
                {
                    "name": "aws-cluster-autoscaler",
                    "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.0",
                    "command": ["./cluster-autoscaler", "--cloud-provider=aws", "--namespace=kube-system"],
                    "args": args,
                }
            ]
        },
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "aws-cluster-autoscaler", "state": {"running": {"startedAt": format_time(started)}}}
            ],
        },
    }


@pytest.fixture
def cni_asg(aws: AwsEnvironment) -> None:
    """ng-cni: an m5.large ASG at zero whose nodes boot with the CNI agent's not-ready taint, which
    its tags declare (as `--sync-autoscaler-label-tags` would have copied from a booting node)."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-cni", "m5.large", 50)
    asg(clients.autoscaling, "ng-cni", {**ENABLED, TAINT_TAG + CILIUM: "true:NoExecute"})


@pytest.fixture
def kubeconfig(fake_kube: FakeKubeServer, tmp_path: Path) -> Path:
    return fake_kube.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def webhook(kubeconfig: Path, tls_files: TlsFiles, tmp_path: Path) -> Iterator[Server]:
    """A ready webhook (one worker) reading the fake API server."""
    with ExitStack() as stack:
        options = ["--kubeconfig", str(kubeconfig)]
        yield stack.enter_context(running(tls_files, options, workers=1, metrics_dir=tmp_path / "m"))


def autoscaler_taints(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    """One `fitguard controller --once -o json` cycle: ng-cni's published autoscaler view's taints."""
    capsys.readouterr()
    code = fitguard_main(
        ["controller", "--once", "-o", "json", "--kubeconfig", str(kubeconfig)], only="controller"
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["errors"]
    (group,) = report["nodeGroups"]
    return list(group["spec"]["autoscaler"]["taints"])


def until_allowed(server: Server, allowed: bool) -> dict[str, Any]:
    """Asks again until the answer turns (the watch carries the template change)."""
    deadline = time.monotonic() + WATCH_SECONDS
    while True:
        conn = server.connect()
        status, body = post(conn, admission_review(WEB, "t-1"), "/validate")
        conn.close()
        assert status == 200
        response = body["response"]
        if response["allowed"] is allowed or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert response["allowed"] is allowed, f"the change did not reach the webhook within {WATCH_SECONDS} s"
    return dict(response)


def check_published(fake_kube: FakeKubeServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`fitguard check -o json` of the web pod against a state file holding the published template
    (and the pod's ServiceAccount, which the mutating webhook's SecurityGroupPolicy match needs)."""
    stored = fake_kube.get("NodeGroupTemplate", "ng-cni", api_version=NGT_API)
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": "default"},
    }
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [stored, account]}))
    manifest = tmp_path / "web.yaml"
    manifest.write_text(yaml.safe_dump(WEB))
    return subprocess.run(
        [sys.executable, "-m", "fitguard", "check", "-f", str(manifest), "--state", str(state), "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=CHECK_SECONDS,
    )


@pytest.mark.usefixtures("cni_asg")
def test_a_group_at_zero_is_judged_without_the_taint_tags_the_running_autoscaler_ignores(
    fake_kube: FakeKubeServer,
    kubeconfig: Path,
    webhook: Server,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """cluster-autoscaler runs with `--startup-taint node.cilium.io/agent-not-ready`: the published
    autoscaler view of ng-cni has no taint and a pod that does not tolerate it is admitted, by the
    webhook and by `fitguard check --state`. Restarted with the two taints as one comma list (one
    key to cluster-autoscaler, naming neither), the taint is back and the pod refused, the taint
    named. Restarted with `--ignore-taint=...`, merged into the startup taints: admitted again."""
    now = time.time()
    fake_kube.create(ca_pod(now - 600, ["--startup-taint", CILIUM]))
    assert autoscaler_taints(kubeconfig, capsys) == []
    assert until_allowed(webhook, True) == {"uid": "t-1", "allowed": True}
    checked = check_published(fake_kube, tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert [(r["verdict"], r["message"]) for r in json.loads(checked.stdout)["results"]] == [("admitted", "")]

    fake_kube.apply(ca_pod(now - 300, [f"--startup-taint={CILIUM},ebs.csi.aws.com/agent-not-ready"]))
    kept = {"key": CILIUM, "value": "true", "effect": "NoExecute"}
    assert autoscaler_taints(kubeconfig, capsys) == [kept]
    denied = until_allowed(webhook, False)
    assert denied["status"]["message"] == REFUSAL
    refused = check_published(fake_kube, tmp_path)
    assert refused.returncode == 1, refused.stderr
    (result,) = json.loads(refused.stdout)["results"]
    assert (result["verdict"], result["message"]) == ("denied", REFUSAL)

    fake_kube.apply(ca_pod(now, [f"--ignore-taint={CILIUM}"]))
    assert autoscaler_taints(kubeconfig, capsys) == []
    assert until_allowed(webhook, True)["allowed"] is True


@pytest.mark.usefixtures("cni_asg")
def test_from_a_state_file_the_cluster_autoscaler_pod_in_it_gives_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fitguard controller --once --state` reads cluster-autoscaler's pod from the state file as it
    would from the API: with `--startup-taint=...` among the chart's repeated extraArgs the group's
    autoscaler view has no taint; with the pod's label not the one `--autoscaler-selector` asks for,
    none is found and the taint stays."""
    pod = ca_pod(
        time.time() - 600, ["--startup-taint=ebs.csi.aws.com/agent-not-ready", f"--startup-taint={CILIUM}"]
    )
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod]}))

    def taints(*flags: str) -> list[dict[str, str]]:
        capsys.readouterr()
        code = fitguard_main(
            ["controller", "--once", "-o", "json", "--state", str(state), *flags], only="controller"
        )
        report = json.loads(capsys.readouterr().out)
        assert code == 0, report["errors"]
        (group,) = report["nodeGroups"]
        return list(group["spec"]["autoscaler"]["taints"])

    assert taints() == []
    assert taints("--autoscaler-selector=app=cluster-autoscaler") == [
        {"key": CILIUM, "value": "true", "effect": "NoExecute"}
    ]
