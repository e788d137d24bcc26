"""`fitguard check -k DIR`: a kustomization rendered exactly as `kubectl apply -k DIR` renders it,
by `kubectl kustomize DIR` itself (kustomize's Components, patches, generators and `namespace:`
included), and the refusal of `-f` on a directory whose raw files are not what gets applied.

kubectl must be on PATH: fitguard models no kustomize behaviour of its own. Missing kubectl, a
kustomization kustomize refuses, or a rendering past the input bounds is one ManifestError (the
check's exit status 2) carrying kustomize's own message in one line.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cmdline.runner import one_line
from fitguard.manifests import STDIN, Located, ManifestError, parse_manifests
from kube.bounded import InputLimitError, read_text

# kustomize's api/konfig/general.go, RecognizedKustomizationFileNames: a directory is a
# kustomization when it holds one of these (kustomize refuses a directory holding two)
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# a remote base (a git URL) is fetched by kustomize; this bounds a hang, not a normal render
RENDER_TIMEOUT = 300.0
# kubectl reports a failed command through klog, `E1202 ... run.go:72] "command failed"
# err="<Go-quoted message>"` (component-base cli/run.go, Run: klog.ErrorS); older ones printed
# `error: <message>` (kubectl pkg/cmd/util/helpers.go, CheckErr)
_KLOG_FAILURE = re.compile(r'"command failed" err="((?:[^"\\]|\\.)*)"')


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file `directory` holds, if any."""
    return next((directory / name for name in KUSTOMIZATION_FILES if (directory / name).is_file()), None)


def kustomized_directories(path: Path) -> list[Path]:
    """The directories at or under `path` that hold a kustomization (the parent of `path` when it
    is itself a kustomization file), in a stable order."""
    if path.is_file():
        return [path.parent] if path.name in KUSTOMIZATION_FILES else []
    if not path.is_dir():
        return []
    found = {file.parent for name in KUSTOMIZATION_FILES for file in path.rglob(name) if file.is_file()}
    return sorted(found)


def refuse_kustomized(paths: Iterable[str]) -> tuple[list[str], list[ManifestError]]:
    """(the `-f` arguments to read, one error for each that names a kustomization or a directory
    holding one): `-f` would judge the raw files, while the cluster gets what kustomize renders
    from them (another namespace, patched selectors), so such an input is not judged at all."""
    kept: list[str] = []
    refused: list[ManifestError] = []
    for raw in paths:
        found = [] if raw == STDIN else kustomized_directories(Path(raw))
        if not found:
            kept.append(raw)
            continue
        first = found[0]
        held = kustomization_file(first)
        where = f"{first} holds {held.name if held else 'a kustomization'}"
        if len(found) > 1:
            where = f"{raw} holds {len(found)} kustomizations ({', '.join(str(d) for d in found)})"
        elif Path(raw).is_file():
            where = f"{raw} is a kustomization"
        elif first != Path(raw):
            where = f"{raw}: {where}"
        refused.append(
            ManifestError(
                f"{where}, so -f would judge its raw files instead of what kustomize renders from "
                f"them: use -k {first}",
                raw,
            )
        )
    return kept, refused


def kustomize_message(stderr: str) -> str:
    """kubectl's error output as one line: the klog `err="..."` unquoted, else `error: ` dropped."""
    match = _KLOG_FAILURE.search(stderr)
    if match:
        try:
            return one_line(json.loads(f'"{match[1]}"'))
        except json.JSONDecodeError:  # a Go escape JSON lacks (\x..): the quoted text as it is
            return one_line(match[1])
    return one_line(stderr).removeprefix("error: ") or "no message"


def render(target: str, kubectl: str | None = None, timeout: float = RENDER_TIMEOUT) -> str:
    """`kubectl kustomize target`'s output, read within kube/bounded.py's limits."""
    program = kubectl or shutil.which("kubectl")
    if program is None:
        raise ManifestError(
            f"-k {target}: kubectl is not on PATH (fitguard renders a kustomization with "
            f"`kubectl kustomize`, as kubectl apply -k does); install kubectl, or render it yourself: "
            f"kustomize build {target} | fitguard check -f -",
            target,
        )
    with tempfile.TemporaryDirectory(prefix="fitguard-kustomize-") as scratch:
        output = Path(scratch) / "rendered.yaml"
        try:
            with output.open("wb") as handle:
                done = subprocess.run(
                    [program, "kustomize", target],
                    stdout=handle,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    timeout=timeout,
                    check=False,
                )
        except subprocess.TimeoutExpired:
            raise ManifestError(
                f"-k {target}: kubectl kustomize did not finish in {timeout:g} s", target
            ) from None
        except OSError as err:
            raise ManifestError(f"-k {target}: cannot run {program}: {err.strerror or err}", target) from None
        if done.returncode != 0:
            said = kustomize_message(done.stderr.decode("utf-8", "replace"))
            raise ManifestError(f"-k {target}: kubectl kustomize failed: {said}", target)
        try:
            return read_text(output)
        except InputLimitError as err:
            raise ManifestError(f"-k {target}: the rendered manifests: {err}", target) from None


def label(target: str) -> str:
    """What a rendered object's location names as its file: the kustomization, marked as rendered
    (its lines count in kustomize's output, not in any file of the directory)."""
    return f"{target} (kustomized)"


def read_kustomizations(
    targets: Iterable[str], kubectl: str | None = None
) -> tuple[list[Located], list[ManifestError]]:
    """Every object each `-k` target renders to, in order, and one error per target that did not
    render or parse (the other targets are still read)."""
    found: list[Located] = []
    problems: list[ManifestError] = []
    for target in targets:
        try:
            found.extend(parse_manifests(render(target, kubectl), label(target)))
        except ManifestError as err:
            problems.append(err)
    return found, problems
