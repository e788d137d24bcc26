"""Issue 30's hostile inputs, each as reported, through the installed `fitguard` console script
(`check`, `state export`, `webhook --state`): every bad input gets one line on standard error and
exit status 2 in every output format, the report is still written and well formed, nothing from the
input reaches the terminal unescaped, and quantities are answered as the API server answers them."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from capacity.names import TEMPLATE_KIND
from kube.statefile import load_state
from tests.fakekube.server import FakeKubeServer
from tests.hostile_inputs import FITGUARD, ROOT, STATE, billion_laughs, deep_json, fitguard, measured, pod
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import manifest_args

FORMATS = ("text", "json", "junit")
# what the YAML parser says of `metadata: {name: x` left open
BROKEN_YAML = "while parsing a flow mapping did not find expected ',' or '}'"
# far above a healthy run (about 36 MiB) and far below the 1.5 GB the bomb used to take
PEAK_KIB_BOUND = 200 * 1024


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def assert_refused(args: list[str], says: str, source: Path) -> None:
    """In each format: exit 2, exactly one line on stderr saying `says`; `-o json` a document with
    `error`; `-o junit` a well-formed report with an error testcase for `source`."""
    for output in FORMATS:
        run = fitguard("check", *args, "-o", output)
        assert run.status == 2, (output, run.stderr)
        lines = run.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("fitguard check: ") and says in lines[0], run.stderr
        assert "Traceback" not in run.stderr
        if output == "json":
            body = json.loads(run.stdout)
            assert says in body["error"] and body["errors"][0]["source"] == str(source)
        if output == "junit":
            suite = ET.fromstring(run.stdout).find("testsuite")
            assert suite is not None and suite.get("errors") == "1"
            (error,) = suite.iter("error")
            assert says in (error.get("message") or "")


def test_the_539_byte_billion_laughs_is_refused_at_once_in_every_format(tmp_path: Path) -> None:
    """The reported bomb (9 levels of aliases) ran a minute, took 1.5 GB and died in a MemoryError:
    now refused by kubectl's own alias rule with the line where it trips, in small memory; as a
    state file too."""
    bomb = write(tmp_path / "bomb.yaml", billion_laughs())
    assert bomb.stat().st_size == 539
    assert_refused(["-f", str(bomb), "--state", str(STATE)], "the document contains excessive aliasing", bomb)
    good = write(tmp_path / "good.yaml", pod("web-0"))
    assert_refused(["-f", str(good), "--state", str(bomb)], "excessive aliasing", bomb)
    assert measured("check", "-f", str(bomb), "--state", str(STATE)).peak_kib < PEAK_KIB_BOUND


def test_json_100000_deep_is_refused_as_a_manifest_and_as_a_state(tmp_path: Path) -> None:
    """Deep JSON raised a RecursionError traceback: now one line naming the limit."""
    deep = write(tmp_path / "deep.json", deep_json())
    assert_refused(["-f", str(deep), "--state", str(STATE)], "nested deeper than 128 levels", deep)
    good = write(tmp_path / "good.yaml", pod("web-0"))
    assert_refused(["-f", str(good), "--state", str(deep)], "nested deeper than 128 levels", deep)


def test_a_binary_state_file_is_refused_naming_the_first_bad_byte(tmp_path: Path) -> None:
    """A binary state raised a UnicodeDecodeError traceback: now one line with the byte and offset."""
    binary = write(tmp_path / "state.bin", bytes(range(256)) * 64)
    good = write(tmp_path / "good.yaml", pod("web-0"))
    assert_refused(
        ["-f", str(good), "--state", str(binary)], "not UTF-8 text (byte 0x80 at offset 128)", binary
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no NodeGroupTemplates in it"),
        ("apiVersion: v1\nkind: List\nitems: []\n", "no NodeGroupTemplates in it"),
        (
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [
                        {
                            "apiVersion": "fitguard.io/v1alpha1",
                            "kind": TEMPLATE_KIND,
                            "metadata": {"name": n},
                            "spec": {"actual": {"allocatable": {"cpu": "lots"}}},
                        }
                        for n in ("ng-a", "ng-b")
                    ],
                }
            ),
            "all 2 NodeGroupTemplates in it are malformed (the first, ng-a: spec.actual.allocatable.cpu",
        ),
    ],
    ids=["0-byte", "empty-list", "all-malformed"],
)
def test_a_state_without_a_usable_template_fails_the_check(tmp_path: Path, text: str, says: str) -> None:
    """These states made every verdict "not checked", exit 0, and a passing JUnit test case: now the
    check fails (exit 2) saying what is missing."""
    state = write(tmp_path / "state.yaml", text)
    good = write(tmp_path / "good.yaml", pod("web-0"))
    assert_refused(["-f", str(good), "--state", str(state)], says, state)


@pytest.mark.slow
def test_the_export_of_a_cluster_with_no_templates_warns_and_fails_the_check(
    fake_kube: FakeKubeServer, tmp_path: Path
) -> None:
    """A cluster whose controller published nothing: `state export` writes the file and warns on
    stderr; `check` against that file or against the cluster itself fails, exit 2."""
    for obj in load_state(STATE):
        if obj["kind"] in ("Namespace", "ServiceAccount"):
            fake_kube.apply(obj)
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    exported = tmp_path / "state.yaml"
    run = fitguard("state", "export", "--kubeconfig", str(kubeconfig), "-o", str(exported))
    assert run.status == 0, run.stderr
    assert "warning: no NodeGroupTemplates in it" in run.stderr
    good = write(tmp_path / "good.yaml", pod("web-0"))
    assert_refused(["-f", str(good), "--state", str(exported)], "no NodeGroupTemplates in it", exported)
    live = fitguard("check", "-f", str(good), "--kubeconfig", str(kubeconfig), "-o", "junit")
    assert live.status == 2 and "no NodeGroupTemplates in it" in live.stderr
    assert ET.fromstring(live.stdout).find("testsuite").get("errors") == "1"  # type: ignore[union-attr]


def test_one_malformed_file_in_a_directory_is_an_error_testcase_beside_the_verdicts(tmp_path: Path) -> None:
    """-f DIR with one broken file among good ones: the good files are judged and reported, the
    broken one is an error testcase, the status is 2."""
    (tmp_path / "app").mkdir()
    write(tmp_path / "app" / "a.yaml", pod("web-0"))
    write(tmp_path / "app" / "b.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    write(tmp_path / "app" / "c.yaml", pod("big", "{ephemeral-storage: 50Gi}"))
    run = fitguard("check", "-f", str(tmp_path / "app"), "--state", str(STATE), "-o", "junit")
    assert run.status == 2
    broken = tmp_path / "app" / "b.yaml"
    said = f"not valid YAML: {BROKEN_YAML}"
    assert run.stderr.splitlines() == [f"fitguard check: {broken}:4: {said}"]
    suite = ET.fromstring(run.stdout).find("testsuite")
    assert suite is not None
    counts = {k: suite.get(k) for k in ("tests", "failures", "errors")}
    assert counts == {"tests": "3", "failures": "1", "errors": "1"}
    cases = {Path(c.get("classname") or "").name: [child.tag for child in c] for c in suite.iter("testcase")}
    assert cases == {"a.yaml": [], "c.yaml": ["failure"], "b.yaml": ["error"]}


def test_a_directory_holding_only_one_malformed_file_still_gets_its_junit_report(tmp_path: Path) -> None:
    """Issue 31: -f DIR whose one file is malformed, -o junit redirected to a file as CI does: the
    report is written, well formed, with that file as the one error testcase; exit 2."""
    (tmp_path / "app").mkdir()
    broken = write(tmp_path / "app" / "only.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    report = tmp_path / "fitguard.xml"
    with report.open("w") as out:
        status = subprocess.run(
            [FITGUARD, "check", "-f", str(tmp_path / "app"), "--state", str(STATE), "-o", "junit"],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert status.returncode == 2
    assert status.stderr.splitlines() == [f"fitguard check: {broken}:4: not valid YAML: {BROKEN_YAML}"]
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("tests", "failures", "errors")} == {
        "tests": "1",
        "failures": "0",
        "errors": "1",
    }
    [case] = suite.iter("testcase")
    assert case.get("classname") == str(broken) and [child.tag for child in case] == ["error"]


@pytest.mark.parametrize("output", FORMATS)
def test_a_lone_surrogate_in_a_name_is_shown_escaped_and_judged(tmp_path: Path, output: str) -> None:
    """A name with a lone surrogate crashed text and JUnit output (exit 1, read by CI as denied):
    now the object is judged (admitted, exit 0) and the name shown as `\\udc80`."""
    # YAML refuses a surrogate escape; JSON takes it (as `kubectl get -o json` could print it)
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-\udc80", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}  # fmt: skip
    manifest = write(tmp_path / "pod.json", json.dumps(doc))
    run = fitguard("check", "-f", str(manifest), "--state", str(STATE), "-o", output)
    assert (run.status, run.stderr) == (0, "")
    if output == "json":
        assert json.loads(run.stdout)["results"][0]["name"] == "web-\udc80"
    else:
        assert "web-\\udc80" in run.stdout
    if output == "junit":
        ET.fromstring(run.stdout)


def test_a_newline_or_escape_sequence_in_a_name_cannot_forge_lines_or_reach_the_terminal(
    tmp_path: Path,
) -> None:
    """A name with a newline forged text lines; ANSI and OSC escapes reached the terminal raw. Now
    each object is one line `location: Kind ns/name: verdict`, with the name escaped."""
    forged = "web\\n1 object(s) checked: 1 admitted\\n"
    ansi = "web\\e[31mred\\e[0m\\e]0;owned\\a"
    manifest = write(tmp_path / "pods.yaml", pod(forged) + "---\n" + pod(ansi))
    run = fitguard("check", "-f", str(manifest), "--state", str(STATE))
    assert run.status == 0, run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    lines = run.stdout.splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        f"{manifest}:1 (document 1): Pod default/web\\n1 object(s) checked: 1 admitted\\n: admitted",
        f"{manifest}:9 (document 2): Pod default/web\\x1b[31mred\\x1b[0m\\x1b]0;owned\\x07: admitted",
        "2 object(s) checked: 2 admitted",
    ]


def test_escape_and_bell_in_names_leave_the_junit_report_well_formed(tmp_path: Path) -> None:
    """\\x1b or \\x07 in a name made the JUnit file not well-formed XML: now it parses, the denial
    message quoting the name included, and shows the characters escaped."""
    manifest = write(tmp_path / "pod.yaml", pod("big\\e\\a", "{ephemeral-storage: 50Gi}"))
    run = fitguard("check", "-f", str(manifest), "--state", str(STATE), "-o", "junit")
    assert run.status == 1, run.stderr
    root = ET.fromstring(run.stdout)
    (case,) = root.iter("testcase")
    assert "big\\x1b\\x07" in (case.get("name") or "")
    assert case.find("failure") is not None


REFUSED = 'Pod in version "v1" cannot be handled as a Pod: '
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("quantity", "status", "says"),
    [
        ("10gi", 1, f"Error from server (BadRequest): {REFUSED}{FORMAT_WRONG}"),
        (
            "'-500Gi'",
            1,
            'The Pod "q" is invalid: spec.containers[0].resources.requests[ephemeral-storage]: '
            'Invalid value: "-500Gi": must be greater than or equal to 0',
        ),
        ("NaN", 1, f"Error from server (BadRequest): {REFUSED}{FORMAT_WRONG}"),
        (".nan", 1, f"Error from server (BadRequest): {REFUSED}not finite"),
        ("\uff15\uff10\uff10Gi", 1, f"Error from server (BadRequest): {REFUSED}{FORMAT_WRONG}"),
        ("'1_0Gi'", 1, f"Error from server (BadRequest): {REFUSED}{FORMAT_WRONG}"),
        ("' 50Gi'", 1, 'admission webhook "validate.fitguard.io" denied the request: pod does not fit'),
        ("' 10Gi'", 0, ": admitted"),
        ("1e400", 0, "could not check this pod"),
    ],
    ids=["10gi", "-500Gi", "NaN", "yaml-nan", "fullwidth", "underscore", "blank-50Gi", "blank-10Gi", "1e400"],
)
def test_quantities_are_answered_as_the_api_server_answers_them(
    tmp_path: Path, quantity: str, status: int, says: str
) -> None:
    """The API server refuses `10gi`, `NaN`, digits of other scripts and underscores when it decodes
    the body (400, ParseQuantity's reason) and a negative request when it validates (422); it trims
    blanks around a quantity (UnmarshalJSON), so ` 50Gi` is 50Gi and does not fit while ` 10Gi`
    does; it accepts `1e400`, which fitguard cannot count, and says so, admitting."""
    manifest = write(tmp_path / "q.yaml", pod("q", f"{{ephemeral-storage: {quantity}}}"))
    run = fitguard("check", "-f", str(manifest), "--state", str(STATE))
    assert (run.status, run.stderr) == (status, "")
    assert says in run.stdout, run.stdout


def _webhook_with_state(tls: TlsFiles, state: Path) -> subprocess.CompletedProcess[str]:
    args = manifest_args(bind="127.0.0.1:0", metrics_bind="127.0.0.1:0", tls_cert=str(tls.cert_path),
                         tls_key=str(tls.key_path), metrics_dir=str(state.parent / "metrics"))  # fmt: skip
    return subprocess.run(
        [FITGUARD, *args, "--workers", "2", "--state", str(state)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (bytes(range(256)) * 64, "not UTF-8 text (byte 0x80 at offset 128)"),
        (billion_laughs().encode(), "line 13: the document contains excessive aliasing"),
        (deep_json().encode(), "nested deeper than 128 levels"),
    ],
    ids=["binary", "bomb", "deep"],
)
def test_webhook_state_that_cannot_be_read_stops_the_command_once(
    tls_files: TlsFiles, tmp_path: Path, content: bytes, says: str
) -> None:
    """`fitguard webhook --state` on such a file crashed each worker at boot, over and over: now the
    master reads the file before any worker starts and exits 2 with one line."""
    state = write(tmp_path / "state.yaml", content)
    run = _webhook_with_state(tls_files, state)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [f"fitguard webhook: {state}: {says}"], run.stderr
