"""The `fitguard` console script: one subcommand per component, each registered by its own module.

Modules register their subparser cheaply and import heavy dependencies (flask, boto3, kubernetes)
only when their command runs, so `fitguard --help` and `fitguard instance-types` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from fitguard import __version__

# Each subcommand's name and the module whose `register(subparsers)` adds it; order is --help's.
COMMANDS: dict[str, str] = {
    "webhook": "webhook.cli",
    "controller": "controller.cli",
    "report": "fitguard.report",
    "check": "fitguard.check",
    "state": "fitguard.state_export",
    "certs": "certs.cli",
    "instance-types": "fitguard.instance_types",
    "demo": "fitguard.demo",
}
SUBCOMMANDS: tuple[str, ...] = tuple(COMMANDS.values())


def command_module(argv: Sequence[str]) -> str | None:
    """The module of the subcommand `argv` runs, when its first word names one. Only that module is
    imported then: another's imports must not run first (the webhook has to set up multiprocess
    metrics before anything imports prometheus_client, which the controller's modules do)."""
    return COMMANDS.get(argv[0]) if argv else None


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error told in one line (exit status 2) instead of the whole usage
    block first: `--help` has the usage for whoever wants it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def one_line(text: str) -> str:
    """`text` with every run of whitespace, line breaks included, made one space."""
    return " ".join(str(text).split())


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="fitguard",
        description="Keep pods on EKS from being admitted into a future they cannot have.",
    )
    parser.add_argument("--version", action="version", version=f"fitguard {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in SUBCOMMANDS:
        if only is not None and module_name != only:
            continue
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, only: str | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only or command_module(argv))
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `fitguard report | head` closes the pipe early; that is not an error.
        sys.stderr.close()
        return 0


def module_main(module_name: str, command: str) -> None:
    """Entry for `python -m webhook` and `python -m controller`: the same subcommand, same flags."""
    sys.exit(main([command, *sys.argv[1:]], only=module_name))


if __name__ == "__main__":
    sys.exit(main())
