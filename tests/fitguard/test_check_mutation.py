"""`fitguard check` says what /mutate does to the pods it judges (issue 31): in `-o json` always, in
text with `--show-mutation`; and it sends each object as the API server would (a YAML date as its
text, a value JSON cannot hold refused with one line), run as the installed command against the demo
state (examples/cluster.yaml, whose SecurityGroupPolicy selects app=payments-api in payments)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / "examples" / "cluster.yaml"
ENI = "vpc.amazonaws.com/pod-eni"
GUARD = "fitguard.io/branch-eni-exhausted DoesNotExist"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

MATCHED = """\
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: payments, labels: {app: payments-api}}
spec:
  containers:
  - name: api
    resources: {requests: {cpu: 100m}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: payments}
spec:
  selector: {matchLabels: {app: payments-api}}
  template:
    metadata: {labels: {app: payments-api}}
    spec:
      containers:
      - name: api
        resources: {requests: {cpu: 100m}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: web
    resources: {requests: {cpu: 100m}}
"""
INJECTED = [
    {"kind": "resource", "field": "spec.containers[0].resources (limits and requests)", "value": ENI},
    {"kind": "guard-affinity", "field": f"spec.affinity.nodeAffinity.{REQUIRED}", "value": GUARD},
]
PATCH = [
    {"op": "add", "path": "/spec/containers/0/resources/limits", "value": {ENI: "1"}},
    {"op": "add", "path": "/spec/containers/0/resources/requests/vpc.amazonaws.com~1pod-eni", "value": "1"},
    {
        "op": "add",
        "path": "/spec/affinity",
        "value": {
            "nodeAffinity": {
                REQUIRED: {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "fitguard.io/branch-eni-exhausted", "operator": "DoesNotExist"}
                            ]
                        }
                    ]
                }
            }
        },
    },
]


def check(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "fitguard", "check", "-f", str(manifest), "--state", str(STATE), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


def test_json_says_what_mutate_does_to_a_pod_and_to_each_pod_of_a_workload(tmp_path: Path) -> None:
    """A Pod and a Deployment the policy selects: each result's `mutation` holds the injected
    pod-eni and the guard's affinity, and the patch the API server applies (for the Deployment,
    to each of its pods); a pod no policy selects gets null."""
    run = check(tmp_path, MATCHED, "-o", "json")
    assert run.returncode == 0, run.stderr
    mutations = [r["mutation"] for r in json.loads(run.stdout)["results"]]
    assert mutations == [
        {"appliesTo": "pod", "injected": INJECTED, "patch": PATCH},
        {"appliesTo": "each pod", "injected": INJECTED, "patch": PATCH},
        None,
    ]


def test_text_shows_the_mutation_only_when_asked(tmp_path: Path) -> None:
    """`--show-mutation` adds one line per change under each object it changes; without it the text
    is as before, every other line the same."""
    shown = check(tmp_path, MATCHED, "--show-mutation")
    plain = check(tmp_path, MATCHED)
    assert (shown.returncode, plain.returncode) == (0, 0)
    lines = [f'  Mutation ({who}): {ENI}: "1" in spec.containers[0].resources (limits and requests)'
             for who in ("the pod", "each pod")]  # fmt: skip
    guard = f"in every required term of spec.affinity.nodeAffinity.{REQUIRED}"
    added = [line for line in shown.stdout.splitlines() if line.startswith("  Mutation")]
    assert added == [
        lines[0],
        f"  Mutation (the pod): {GUARD} {guard}",
        lines[1],
        f"  Mutation (each pod): {GUARD} {guard}",
    ]
    assert [line for line in shown.stdout.splitlines() if line not in added] == plain.stdout.splitlines()
    assert "Mutation" not in plain.stdout


def test_a_yaml_date_is_sent_as_its_text_and_a_binary_value_is_one_line(tmp_path: Path) -> None:
    """A Deployment whose annotation is an unquoted date is judged (kubectl sends it as text);
    one whose annotation JSON cannot hold (YAML binary) is that file's one-line problem, exit 2,
    never a traceback."""
    dated = MATCHED.split("---\n")[1].replace(
        "metadata: {name: api,", "metadata: {annotations: {at: 2024-01-01}, name: api,"
    )
    run = check(tmp_path, dated, "-o", "json")
    assert run.returncode == 0, run.stderr
    assert [r["verdict"] for r in json.loads(run.stdout)["results"]] == ["admitted"]
    binary = dated.replace("2024-01-01", "!!binary aGVsbG8=")
    refused = check(tmp_path, binary)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"fitguard check: {tmp_path / 'app.yaml'}:1 (document 1): Deployment could not be reviewed: "
        "not a JSON object: Object of type bytes is not JSON serializable"
    ]
    assert "Traceback" not in refused.stderr


def mutation_of(run: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(run.stdout)["results"][0]["mutation"]


def test_a_pod_already_injected_and_guarded_shows_no_mutation(tmp_path: Path) -> None:
    """A pod carrying pod-eni "1" and the guard already gets an empty patch: nothing is said to be
    injected (`mutation` null), as /mutate adds nothing on its reinvocation."""
    pod = MATCHED.split("---\n", maxsplit=1)[0].replace(
        "resources: {requests: {cpu: 100m}}",
        f"resources: {{requests: {{cpu: 100m, {ENI}: '1'}}, limits: {{{ENI}: '1'}}}}",
    ) + (
        "  affinity: {nodeAffinity: {" + REQUIRED + ": {nodeSelectorTerms: "
        "[{matchExpressions: [{key: fitguard.io/branch-eni-exhausted, operator: DoesNotExist}]}]}}}\n"
    )
    run = check(tmp_path, pod, "-o", "json")
    assert run.returncode == 0, run.stderr
    assert mutation_of(run) is None
