"""The `fitguard` console script: one subcommand per component, each registered by its own module.

Modules register their subparser cheaply and import heavy dependencies (flask, boto3, kubernetes)
only when their command runs, so `fitguard --help` and `fitguard instance-types` start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cmdline.runner import PROG, Register, run, top_parser

# The subcommands, in --help's order.
COMMANDS: tuple[str, ...] = (
    "webhook",
    "controller",
    "report",
    "check",
    "state",
    "certs",
    "instance-types",
    "demo",
)


def load(command: str) -> Register:
    """The `register(subparsers)` of `command`, its module imported only now: a plain import per
    command, so that the layers contract sees each edge and no other command's imports run."""
    match command:
        case "webhook":
            from webhook.cli import register
        case "controller":
            from controller.cli import register
        case "report":
            from fitguard.report import register
        case "check":
            from fitguard.check import register
        case "state":
            from fitguard.state_export import register
        case "certs":
            from certs.cli import register
        case "instance-types":
            from fitguard.instance_types import register
        case "demo":
            from fitguard.demo import register
        case _:
            raise KeyError(command)
    return register


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` runs, when its first word names one. Only that one's module is imported
    then: another's imports must not run first (the webhook has to set up multiprocess metrics
    before anything imports prometheus_client, which the controller's modules do)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def build_parser(
    only: str | None = None, prog: str = PROG, epilog: str | None = None
) -> argparse.ArgumentParser:
    """The `fitguard` parser (named `prog`) with every subcommand, or with the subcommand `only`."""
    if only is not None and only not in COMMANDS:
        raise ValueError(f"no fitguard command {only!r} (one of {', '.join(COMMANDS)})")
    parser, subparsers = top_parser(prog, epilog)
    for command in COMMANDS:
        if only is None or command == only:
            load(command)(subparsers)
    return parser


def main(
    argv: Sequence[str] | None = None, only: str | None = None, prog: str = PROG, epilog: str | None = None
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run(build_parser(only or command_of(argv), prog, epilog), argv)


if __name__ == "__main__":
    sys.exit(main())
