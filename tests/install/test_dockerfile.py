"""The Dockerfile (which cannot be built here) has the shape the image promises: a builder stage that
installs exactly what the Makefile installs, and a slim final stage with only the venv and the
source, no compilers, a non-root numeric user and `fitguard` as the one entrypoint."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "python:3.11-slim"
COMPILERS = ("build-essential", "gcc", "g++", "clang", "make", "python3-dev", "libffi-dev", "libssl-dev")


@dataclass
class Stage:
    image: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [arguments for instruction, arguments in self.instructions if instruction == keyword]


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    joined = re.sub(r"\\\n(?:\s*#.*\n)*", " ", text)
    parsed = []
    for raw in joined.splitlines():
        line = " ".join(raw.split())
        if line and not line.startswith("#"):
            keyword, _, arguments = line.partition(" ")
            parsed.append((keyword.upper(), arguments))
    return parsed


def stages(text: str) -> list[Stage]:
    args: dict[str, str] = {}
    result: list[Stage] = []
    for keyword, arguments in instructions(text):
        if keyword == "ARG" and not result:
            name, _, default = arguments.partition("=")
            args[name] = default
        elif keyword == "FROM":
            words = arguments.split()
            image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m.group(1) or m.group(2)], words[0])
            name = words[2] if len(words) > 2 and words[1].upper() == "AS" else str(len(result))
            result.append(Stage(image, name))
        else:
            result[-1].instructions.append((keyword, arguments))
    return result


@pytest.fixture(scope="module")
def dockerfile() -> list[Stage]:
    return stages((ROOT / "Dockerfile").read_text())


def makefile_requirements() -> set[str]:
    """Every requirements file `make` installs, following `-r` includes."""
    makefile = (ROOT / "Makefile").read_text()
    pending = re.findall(r"pip install[^\n]*?-r\s+(\S+)", makefile)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            pending += re.findall(r"^-r\s+(\S+)", (ROOT / name).read_text(), flags=re.MULTILINE)
    return seen


def test_the_parser_reads_continuations_and_stages() -> None:
    """The checks below rest on this parser: it must see through continuations and ARG defaults."""
    parsed = stages("ARG B=img:1\nFROM ${B} AS one\nRUN a \\\n  # note\n && b\nFROM $B\nUSER 1\n")
    assert [(s.image, s.name) for s in parsed] == [("img:1", "one"), ("img:1", "1")]
    assert parsed[0].all("RUN") == ["a && b"] and parsed[1].all("USER") == ["1"]


def test_two_stages_on_the_same_slim_python(dockerfile: list[Stage]) -> None:
    assert len(dockerfile) == 2
    assert [stage.image for stage in dockerfile] == [BASE_IMAGE, BASE_IMAGE]


def test_the_builder_installs_what_make_installs(dockerfile: list[Stage]) -> None:
    runs = " && ".join(dockerfile[0].all("RUN"))
    venv = re.search(r"python -m venv (\S+)", runs)
    assert venv, "the builder creates a virtual environment"
    requirement_files = re.findall(r"pip install[^&]*?-r\s+(\S+)", runs)
    assert requirement_files == ["requirements.txt"]
    assert set(requirement_files) <= makefile_requirements()
    assert re.search(r"pip install[^&]*--no-deps[^&]*\s\.(\s|$)", runs), "the project itself with --no-deps"
    # The dependencies are installed before the project, as in the Makefile.
    assert runs.index("-r requirements.txt") < runs.index("--no-deps")
    copied = " ".join(dockerfile[0].all("COPY"))
    assert "requirements.txt" in copied and "pyproject.toml" in copied


def test_the_builder_copies_every_package_pyproject_ships(dockerfile: list[Stage]) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {name.rstrip("*") for name in config["tool"]["setuptools"]["packages"]["find"]["include"]}
    sources = {shlex.split(arguments)[0].rstrip("/") for arguments in dockerfile[0].all("COPY")}
    assert packages <= sources


def test_the_final_stage_has_only_the_venv_and_source_and_no_compilers(dockerfile: list[Stage]) -> None:
    builder, final = dockerfile
    venv = re.search(r"python -m venv (\S+)", " ".join(builder.all("RUN")))
    assert venv
    copies = final.all("COPY")
    assert copies and all(arguments.startswith(f"--from={builder.name} ") for arguments in copies)
    sources = {shlex.split(arguments)[1] for arguments in copies}
    workdir = builder.all("WORKDIR")[-1]
    assert sources == {venv.group(1), workdir}
    final_runs = " ".join(final.all("RUN"))
    assert "pip install" not in final_runs and "apt-get install" not in final_runs
    assert not any(re.search(rf"(^|\s){re.escape(tool)}(\s|$)", final_runs) for tool in COMPILERS)


def test_the_image_runs_fitguard_as_a_non_root_numeric_user(dockerfile: list[Stage]) -> None:
    final = dockerfile[-1]
    user = final.all("USER")[-1].split(":")
    assert user[0].isdigit() and int(user[0]) == 65532
    assert json.loads(final.all("ENTRYPOINT")[-1]) == ["fitguard"]
    environment = " ".join(final.all("ENV"))
    assert "/opt/venv/bin" in environment


def test_dockerignore_keeps_local_state_out_of_the_context() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "tests"} <= ignored
    # Nothing the Dockerfile copies may be ignored.
    copied = {
        shlex.split(arguments)[0].rstrip("/")
        for keyword, arguments in instructions((ROOT / "Dockerfile").read_text())
        if keyword == "COPY" and not arguments.startswith("--from")
    }
    assert not copied & ignored
