"""The hostile inputs of issue 30 (each as its author reported it), and a way to run the installed
console script on them that also reads the child's peak memory (os.wait4), for the tests and for
the figures in RELIABILITY.md (`python -m tests.hostile_inputs` prints them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FITGUARD = str(Path(sys.executable).with_name("fitguard"))
STATE = ROOT / "examples" / "cluster.yaml"
TIMEOUT_SECONDS = 120.0  # only ends a hang


def billion_laughs() -> str:
    """A Pod whose spec carries a classic "billion laughs": nine levels of anchors, each a list of
    nine aliases of the one before (9^9 = 387,420,489 strings once expanded), 539 bytes in all."""
    head = (
        "# billion laughs: aliases, 9 levels\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: lol, namespace: default}\n"
        "spec:\n  containers:\n  - name: c\n    image: busybox\n  lol:\n"
    )
    body = '    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for level in "bcdefghi":
        body += f"    {level}: &{level} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = level
    return head + body


def deep_json(levels: int = 100_000) -> str:
    return "[" * levels + "]" * levels


# Not tests.objects.pod: the manifest is YAML text, so a name can be written with escapes that
# no dict would carry.
def pod(name: str, requests: str = "{cpu: 100m}") -> str:
    """A Pod manifest; `name` is written as a YAML double-quoted scalar (escapes allowed)."""
    return (
        "apiVersion: v1\nkind: Pod\n"
        f'metadata: {{name: "{name}", namespace: default}}\n'
        f"spec:\n  containers:\n  - name: c\n    resources: {{requests: {requests}}}\n"
    )


@dataclass(frozen=True)
class Run:
    status: int
    stdout: str
    stderr: str
    peak_kib: int  # the child's peak resident memory


def fitguard(*args: str) -> Run:
    """The installed console script with `args`: its status, output, and the peak memory of the
    largest child this process has had (run it from a fresh interpreter, `measured`, for a figure
    that is this child's alone)."""
    import resource

    # the fake apiserver is on loopback: a proxy from the environment must not get in between
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    done = subprocess.run(
        [FITGUARD, *args],
        env=env,
        check=False,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        timeout=TIMEOUT_SECONDS,
    )
    peak = int(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    decode = lambda data: data.decode("utf-8", "backslashreplace")  # noqa: E731
    return Run(done.returncode, decode(done.stdout), decode(done.stderr), peak)


def measured(*args: str) -> Run:
    """`fitguard(*args)` run from a fresh interpreter, so that RUSAGE_CHILDREN holds this child only."""
    code = (
        "import json, sys; from tests.hostile_inputs import fitguard; "
        "r = fitguard(*sys.argv[1:]); print(json.dumps([r.status, r.stdout, r.stderr, r.peak_kib]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=TIMEOUT_SECONDS,
    )
    status, stdout, stderr, peak = json.loads(done.stdout)
    return Run(status, stdout, stderr, peak)


def write_inputs(directory: Path) -> dict[str, list[str]]:
    """Each hostile input written under `directory`, with the `fitguard check` arguments that read it."""
    files = {
        "bomb.yaml": billion_laughs(),
        "deep.json": deep_json(),
        "empty-state.yaml": "",
        "empty-list.yaml": "apiVersion: v1\nkind: List\nitems: []\n",
        "good.yaml": pod("web-0"),
        "names.yaml": pod("web\\n1 object(s) checked\\e[31m\\e]0;owned\\a"),
        "malformed-templates.yaml": "apiVersion: v1\nkind: List\nitems:\n"
        + "".join(
            f"- {{apiVersion: fitguard.io/v1alpha1, kind: NodeGroupTemplate, metadata: {{name: ng-{i}}}, "
            "spec: {actual: {allocatable: {cpu: lots}}}}\n"
            for i in range(3)
        ),
    }
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "binary.yaml").write_bytes(bytes(range(256)) * 64)
    state, good = str(STATE), str(directory / "good.yaml")
    return {
        "billion laughs as a manifest (539 bytes)": ["-f", str(directory / "bomb.yaml"), "--state", state],
        "billion laughs as the state": ["-f", good, "--state", str(directory / "bomb.yaml")],
        "JSON 100,000 deep as a manifest": ["-f", str(directory / "deep.json"), "--state", state],
        "JSON 100,000 deep as the state": ["-f", good, "--state", str(directory / "deep.json")],
        "binary state (16 KiB)": ["-f", good, "--state", str(directory / "binary.yaml")],
        "0-byte state": ["-f", good, "--state", str(directory / "empty-state.yaml")],
        "empty List as the state": ["-f", good, "--state", str(directory / "empty-list.yaml")],
        "3 malformed templates as the state": [
            "-f",
            good,
            "--state",
            str(directory / "malformed-templates.yaml"),
        ],
        "newline, ANSI and OSC in a name": ["-f", str(directory / "names.yaml"), "--state", state],
        "a good manifest and state (for comparison)": ["-f", good, "--state", state],
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for label, args in write_inputs(Path(scratch)).items():
            run = measured("check", *args, "-o", "junit")
            print(f"| {label} | {run.status} | {run.peak_kib / 1024:.0f} MiB |")


if __name__ == "__main__":
    main()
