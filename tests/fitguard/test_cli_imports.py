"""`fitguard controller --help`, `fitguard webhook --help`, `python -m controller --help` and
`python -m webhook --help` print their usage without importing boto3, botocore, kubernetes or
cryptography: those load only when a command runs (the import set is asserted, never a time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fitguard.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[2]
FITGUARD = str(Path(sys.executable).with_name("fitguard"))  # the installed console script
HEAVY = frozenset({"boto3", "botocore", "kubernetes", "cryptography"})


def imported(argv: list[str]) -> tuple[set[str], str]:
    """The modules `python -X importtime ARGV` imported (importtime names every module imported) and
    its standard output; the command must succeed. ARGV is a script (the installed console script) or
    `-m MODULE`, with the same interpreter as the tests."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60,
        check=False, env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    names = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return names, done.stdout


@pytest.mark.parametrize(
    ("argv", "module", "usage"),
    [
        ([FITGUARD, "controller", "--help"], "controller.cli", "usage: fitguard controller"),
        ([FITGUARD, "webhook", "--help"], "webhook.cli", "usage: fitguard webhook"),
        (["-m", "controller", "--help"], "controller.cli", "usage: fitguard controller"),
        (["-m", "webhook", "--help"], "webhook.cli", "usage: fitguard webhook"),
    ],
)
def test_help_imports_no_aws_kubernetes_or_cryptography(argv: list[str], module: str, usage: str) -> None:
    """The help is printed and the subcommand's module was seen loading (so the import list is read
    right), yet no module of boto3, botocore, kubernetes or cryptography was imported."""
    names, out = imported(argv)
    assert out.startswith(usage)
    assert module in names
    assert {name.split(".")[0] for name in names} & HEAVY == set()


@pytest.mark.parametrize("argv", [[FITGUARD, "webhook", "--help"], ["-m", "webhook", "--help"]])
def test_the_webhook_command_imports_nothing_of_the_controller(argv: list[str]) -> None:
    """Only the subcommand's own module is loaded: the webhook must set up multiprocess metrics before
    anything imports prometheus_client, which the controller's modules do."""
    names, _ = imported(argv)
    assert {name for name in names if name.split(".")[0] == "controller"} == set()


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_loaded_by_its_own_name(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`fitguard COMMAND --help` (the parser built with COMMAND alone) is COMMAND's own help."""
    with pytest.raises(SystemExit) as stop:
        build_parser(command).parse_args([command, "--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: fitguard {command} ")


def test_a_parser_for_an_unknown_command_is_refused_not_built_empty() -> None:
    """`build_parser` with a name that is not a command (a module path, say) raises and names the
    commands, instead of returning a parser that knows no command at all."""
    with pytest.raises(
        ValueError, match=r"no fitguard command 'controller.cli' \(one of webhook, controller, "
    ):
        build_parser("controller.cli")
