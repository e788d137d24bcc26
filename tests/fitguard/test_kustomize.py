"""`fitguard check -k DIR` judges what `kubectl apply -k DIR` would apply, rendered by the real
`kubectl kustomize` (skipped cleanly without kubectl), Components included; `-f` on a directory
holding a kustomization refuses to judge the raw files; a kustomization kubectl cannot render, or
no kubectl at all, is one line and exit status 2 with the report still written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fitguard.kustomize import kustomize_message

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / "examples" / "cluster.yaml"
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

# The input: a base Deployment naming no namespace and no node selector, and an overlay
# that sets `namespace: payments` (where a SecurityGroupPolicy matches app=payments-api, so the pod
# needs a branch ENI) and pins the pods to ng-burst (t3.large: no branch ENIs). The raw files are
# admitted in `default`; what kustomize renders is denied.
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: payments-api}
spec:
  selector: {matchLabels: {app: payments-api}}
  template:
    metadata: {labels: {app: payments-api}}
    spec:
      containers:
      - name: api
        image: public.ecr.aws/nginx/nginx:1.27
        resources: {requests: {cpu: 500m, memory: 512Mi}}
"""
PIN_TO_BURST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: payments-api}
spec:
  template:
    spec:
      nodeSelector: {eks.amazonaws.com/nodegroup: ng-burst}
"""
OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: payments
resources: [../../base]
patches:
- path: pin.yaml
"""
COMPONENT = """\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
- path: pin.yaml
"""
WITH_COMPONENT = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: payments
resources: [../../base]
components: [../../components/pin-burst]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def application(root: Path) -> Path:
    """base/, overlays/prod (patch in the overlay), overlays/prod-c (the patch from a Component)."""
    write(root / "base" / "deployment.yaml", DEPLOYMENT)
    write(root / "base" / "kustomization.yaml", "resources: [deployment.yaml]\n")
    write(root / "overlays" / "prod" / "pin.yaml", PIN_TO_BURST)
    write(root / "overlays" / "prod" / "kustomization.yaml", OVERLAY)
    write(root / "components" / "pin-burst" / "pin.yaml", PIN_TO_BURST)
    write(root / "components" / "pin-burst" / "kustomization.yaml", COMPONENT)
    write(root / "overlays" / "prod-c" / "kustomization.yaml", WITH_COMPONENT)
    return root


def check(*args: str, stdin: str | None = None, env: dict[str, str] | None = None, cwd: Path = ROOT) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "fitguard", "check", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=120,
        env=env,
    )


def verdicts(run: Any) -> list[tuple[Any, ...]]:
    return [
        (r["kind"], r["namespace"], r["name"], r["verdict"], r["message"])
        for r in json.loads(run.stdout)["results"]
    ]


@needs_kubectl
@pytest.mark.parametrize("overlay", ["prod", "prod-c"], ids=["patch", "component"])
def test_k_gives_the_verdict_of_kubectl_kustomize_piped_into_check(tmp_path: Path, overlay: str) -> None:
    """The raw base is admitted in `default`; `-k overlays/<overlay>` judges the rendered
    Deployment in `payments`, pinned to ng-burst, and denies it (exit 1) with exactly the verdict and
    message of `kubectl kustomize DIR | fitguard check -f -`; the patch comes from the overlay or
    from a kustomize Component."""
    root = application(tmp_path / "app")
    raw = check("-f", str(root / "base" / "deployment.yaml"), "--state", str(STATE), "-o", "json")
    assert raw.returncode == 0
    assert [v[1:4] for v in verdicts(raw)] == [("default", "payments-api", "admitted")]
    target = str(root / "overlays" / overlay)
    kustomized = check("-k", target, "--state", str(STATE), "-o", "json")
    assert kustomized.returncode == 1, kustomized.stderr
    rendered = subprocess.run(
        [str(KUBECTL), "kustomize", target], capture_output=True, text=True, timeout=120, check=True
    )
    piped = check("-f", "-", "--state", str(STATE), "-o", "json", stdin=rendered.stdout)
    assert piped.returncode == 1, piped.stderr
    assert verdicts(kustomized) == verdicts(piped)
    [(kind, namespace, name, verdict, _)] = verdicts(kustomized)
    assert (kind, namespace, name, verdict) == ("Deployment", "payments", "payments-api", "denied")
    [result] = json.loads(kustomized.stdout)["results"]
    assert result["file"] == f"{target} (kustomized)"


@pytest.mark.parametrize(
    ("given", "holder", "says"),
    [
        ("app/overlays/prod", "app/overlays/prod", "app/overlays/prod holds kustomization.yaml"),
        ("app/base/kustomization.yaml", "app/base", "app/base/kustomization.yaml is a kustomization"),
        ("app/components", "app/components/pin-burst", "app/components: app/components/pin-burst holds"),
        ("app", "app/base", "app holds 4 kustomizations (app/base, app/components/pin-burst,"),
    ],
    ids=["overlay", "the-file-itself", "below", "several"],
)
def test_f_on_a_kustomization_refuses_the_raw_files_and_points_at_k(
    tmp_path: Path, given: str, holder: str, says: str
) -> None:
    """-f (paths relative to the working directory, as a user types them) on a kustomization
    directory, its kustomization file, or a directory with one below:
    nothing of it is judged, one line names where the kustomization is and the -k to use, exit 2;
    another -f input of the same run is still judged and reported."""
    application(tmp_path / "app")
    good = write(tmp_path / "good.yaml", DEPLOYMENT)
    run = check("-f", given, "-f", str(good), "--state", str(STATE), "-o", "json", cwd=tmp_path)
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"fitguard check: {says}") and line.endswith(f": use -k {holder}"), line
    assert "so -f would judge its raw files instead of what kustomize renders from them" in line
    assert [r["file"] for r in json.loads(run.stdout)["results"]] == [str(good)]


@needs_kubectl
def test_a_kustomization_kubectl_cannot_render_is_one_line_and_an_error_testcase(tmp_path: Path) -> None:
    """kustomize's own reason, in one line, exit 2; -o junit still writes the report with the
    kustomization as an error testcase."""
    broken = write(tmp_path / "broken" / "kustomization.yaml", "resources: [missing.yaml]\n").parent
    run = check("-k", str(broken), "--state", str(STATE), "-o", "junit")
    assert run.returncode == 2
    [line] = run.stderr.splitlines()
    assert line.startswith(f"fitguard check: -k {broken}: kubectl kustomize failed: accumulating resources")
    assert "missing.yaml" in line
    suite = ET.fromstring(run.stdout).find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    [case] = suite.iter("testcase")
    assert case.get("classname") == str(broken)


def test_without_kubectl_k_says_so_in_one_line(tmp_path: Path) -> None:
    """No kubectl on PATH: exit 2, one line naming what is missing and the pipe that works instead."""
    application(tmp_path / "app")
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    run = check("-k", str(tmp_path / "app" / "overlays" / "prod"), "--state", str(STATE), env=env)
    assert (run.returncode, run.stdout) == (2, "")
    [line] = run.stderr.splitlines()
    assert "kubectl is not on PATH" in line and "| fitguard check -f -" in line


def test_check_needs_f_or_k() -> None:
    """Neither input flag: a usage error, exit 2."""
    run = check("--state", str(STATE))
    assert run.returncode == 2 and run.stderr.startswith("fitguard check: nothing to check: give -f")


@pytest.mark.parametrize(
    ("stderr", "said"),
    [
        (
            'E1202 02:05:45.745813   15500 run.go:72] "command failed" err="unable to find one of '
            "'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '/tmp/x'\"\n",
            "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in "
            "directory '/tmp/x'",
        ),
        (
            'E1202 run.go:72] "command failed" err="invalid Kustomization: a \\"quoted\\"\\nline"\n',
            'invalid Kustomization: a "quoted" line',
        ),
        ("error: accumulating resources: bad\n  more\n", "accumulating resources: bad more"),
        ("", "no message"),
    ],
    ids=["klog", "klog-escapes", "older-kubectl", "silent"],
)
def test_kubectls_failure_is_told_in_one_line(stderr: str, said: str) -> None:
    """kubectl 1.30+'s klog line unquoted, an older kubectl's `error: ` dropped."""
    assert kustomize_message(stderr) == said
