"""`fitguard check` as a command: the inputs it reads (multi-document YAML, JSON, `kind: List`,
directories, standard input), its exit statuses, and its three outputs, run as a subprocess of the
installed package against the demo cluster's state (examples/cluster.yaml)."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from fitguard.manifests import ManifestError, parse_manifests

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / "examples" / "cluster.yaml"

GOOD = """\
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: default}
spec:
  containers:
  - name: web
    resources: {requests: {cpu: 100m}}
"""
BAD = """\
apiVersion: v1
kind: Pod
metadata: {name: scratch-build, namespace: default}
spec:
  containers:
  - name: build
    resources: {requests: {ephemeral-storage: 30Gi}}
"""
CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {a: b}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: video-transcode}
spec:
  template:
    metadata: {labels: {app: video-transcode}}
    spec:
      containers:
      - name: ffmpeg
        resources: {limits: {ephemeral-storage: 40Gi}}
"""


def check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitguard", "check", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def results(run: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return list(json.loads(run.stdout)["results"])


def test_multi_document_input_with_one_bad_object_exits_1_and_names_it(tmp_path: Path) -> None:
    """Three documents, the second denied: exit 1, and the text block of that object carries its
    file, line and document index, its name and kubectl's denial wording; the others are not denied."""
    manifest = write(tmp_path / "app.yaml", f"{GOOD}---\n{BAD}---\n{CONFIG_MAP}")
    run = check("-f", str(manifest), "--state", str(STATE))
    assert run.returncode == 1, run.stderr
    blocks = [line for line in run.stdout.splitlines() if line.startswith(str(manifest))]
    assert blocks == [
        f"{manifest}:1 (document 1): Pod default/web-0: admitted",
        f"{manifest}:9 (document 2): Pod default/scratch-build: denied",
    ]
    assert (
        '  Error from server (Forbidden): admission webhook "validate.fitguard.io" denied the request: '
        "pod does not fit any node group"
    ) in run.stdout.splitlines()
    assert run.stdout.splitlines()[-1] == (
        "2 object(s) checked: 1 admitted, 1 denied; 1 skipped (kinds the webhook does not judge)"
    )


def test_warn_mode_exits_0_with_the_warnings(tmp_path: Path) -> None:
    """The same denied objects under --mode warn: exit 0, each carries the webhook's warnings with
    the field path to edit; a namespace-less Deployment is judged in the default namespace."""
    manifest = write(tmp_path / "app.yaml", f"{BAD}---\n{DEPLOYMENT}")
    run = check("-f", str(manifest), "--state", str(STATE), "--mode", "warn", "-o", "json")
    assert run.returncode == 0, run.stderr
    found = results(run)
    assert [(r["kind"], r["namespace"], r["verdict"], r["allowed"]) for r in found] == [
        ("Pod", "default", "warned", True),
        ("Deployment", "default", "warned", True),
    ]
    assert found[1]["warnings"][0].startswith(
        "spec.template.spec.containers[0].resources.limits.ephemeral-storage: fits no node group"
    )
    assert json.loads(run.stdout)["summary"] == {
        "admitted": 0,
        "warned": 2,
        "audit": 0,
        "exempt": 0,
        "unjudged": 0,
        "denied": 0,
        "skipped": 0,
    }


def test_namespace_flag_places_objects_that_name_none(tmp_path: Path) -> None:
    """-n sets the namespace of objects without one (kube-system is exempt); an object naming
    another namespace than an explicit -n is refused as kubectl refuses it, naming the object."""
    manifest = write(tmp_path / "app.yaml", DEPLOYMENT)
    run = check("-f", str(manifest), "--state", str(STATE), "-n", "kube-system", "-o", "json")
    assert run.returncode == 0, run.stderr
    assert [(r["namespace"], r["verdict"]) for r in results(run)] == [("kube-system", "exempt")]
    mixed = write(tmp_path / "mixed.yaml", f"{DEPLOYMENT}---\n{BAD}")
    refused = check("-f", str(mixed), "--state", str(STATE), "-n", "kube-system")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"fitguard check: {mixed}:12 (document 2): "
        "the object's namespace default does not match -n kube-system\n"
    )


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (f"{GOOD}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: x\n", 12, "not valid YAML"),
        (f"{GOOD}---\n- just\n- a list\n", 9, "document 2 is a list, not an object"),
        ("apiVersion: v1\nmetadata: {name: x}\n", 1, "document 1 has no kind or apiVersion"),
    ],
    ids=["yaml-syntax", "not-an-object", "no-kind"],
)
def test_unreadable_input_exits_2_naming_file_and_line(
    tmp_path: Path, text: str, line: int, problem: str
) -> None:
    """Broken input: exit 2, nothing judged, stderr names the file and the line of the problem."""
    manifest = write(tmp_path / "broken.yaml", text)
    run = check("-f", str(manifest), "--state", str(STATE))
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"fitguard check: {manifest}:{line}: {problem}"), run.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    """No -f, both --state and --kubeconfig, a missing file, a missing state file: exit 2 each."""
    manifest = write(tmp_path / "app.yaml", GOOD)
    assert check("--state", str(STATE)).returncode == 2
    assert check("-f", str(manifest), "--state", str(STATE), "--kubeconfig", "k").returncode == 2
    missing = check("-f", str(tmp_path / "nope.yaml"), "--state", str(STATE))
    assert (missing.returncode, missing.stderr.startswith(f"fitguard check: {tmp_path / 'nope.yaml'}: ")) == (
        2,
        True,
    )
    no_state = check("-f", str(manifest), "--state", str(tmp_path / "none.yaml"))
    assert no_state.returncode == 2 and "none.yaml" in no_state.stderr


def test_junit_has_one_testcase_per_object(tmp_path: Path) -> None:
    """-o junit parses as JUnit XML: one testcase per object, the denial a failure carrying the
    webhook's message, the skipped kind a skipped testcase, counts on the suite."""
    manifest = write(tmp_path / "app.yaml", f"{GOOD}---\n{BAD}---\n{CONFIG_MAP}")
    run = check("-f", str(manifest), "--state", str(STATE), "-o", "junit")
    assert run.returncode == 1
    root = ET.fromstring(run.stdout)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert {k: suite.get(k) for k in ("name", "tests", "failures", "errors", "skipped")} == {
        "name": "fitguard check",
        "tests": "3",
        "failures": "1",
        "errors": "0",
        "skipped": "1",
    }
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (str(manifest), f"Pod default/web-0 ({manifest}:1 (document 1))"),
        (str(manifest), f"Pod default/scratch-build ({manifest}:9 (document 2))"),
        (str(manifest), f"ConfigMap default/settings ({manifest}:17 (document 3))"),
    ]
    assert [[child.tag for child in case] for case in cases] == [[], ["failure"], ["skipped"]]
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "pod does not fit any node group"
    assert (failure.text or "").startswith("pod does not fit any node group\nng-batch: ")


def test_lists_json_directories_and_stdin(tmp_path: Path) -> None:
    """A `kind: List` (items located by line), a JSON file, a directory read recursively in name
    order (non-manifest files ignored), and standard input all feed the same judgement."""
    items = [yaml.safe_load(GOOD), yaml.safe_load(BAD)]
    write(
        tmp_path / "dir" / "a" / "list.yaml",
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}),
    )
    write(tmp_path / "dir" / "b.json", json.dumps(yaml.safe_load(BAD), indent=2))
    write(tmp_path / "dir" / "notes.txt", "not a manifest")
    run = check("-f", str(tmp_path / "dir"), "-f", "-", "--state", str(STATE), "-o", "json", stdin=GOOD)
    assert run.returncode == 1, run.stderr
    located = [
        (Path(r["file"]).name, r["document"], r["item"], r["line"], r["name"], r["verdict"])
        for r in results(run)
    ]
    assert located == [
        ("list.yaml", 1, 1, 3, "web-0", "admitted"),
        ("list.yaml", 1, 2, 14, "scratch-build", "denied"),
        ("b.json", 1, None, 1, "scratch-build", "denied"),
        ("<stdin>", 1, None, 1, "web-0", "admitted"),
    ]


def test_parse_manifests_reports_json_errors_by_line() -> None:
    """A second JSON object that breaks is reported at its own line, not as YAML."""
    text = (
        '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}\n{"apiVersion": "v1",\n "kind": }\n'
    )
    with pytest.raises(ManifestError, match=r"^in\.json:3: not JSON: "):
        parse_manifests(text, "in.json")


def test_the_demo_section_checks_the_example_application() -> None:
    """`fitguard demo`'s check section: the command it shows, the CronJob denied with the
    webhook's message, the Deployment admitted, the count, and status 1 reported."""
    from io import StringIO

    from fitguard.check import demo

    out = StringIO()
    assert demo(out, ROOT / "examples") == 1
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("$ fitguard check -f ") and lines[0].endswith("examples/cluster.yaml")
    assert any(
        line.endswith("transcode.yaml:3 (document 1): CronJob default/transcode: denied") for line in lines
    )
    assert any(line.endswith("web.yaml:1 (document 1): Deployment default/web: admitted") for line in lines)
    assert "2 object(s) checked: 1 admitted, 1 denied; 2 skipped (kinds the webhook does not judge)" in lines
    assert lines[-1].startswith("(exit status 1: ")
