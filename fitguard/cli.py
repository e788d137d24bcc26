"""The `fitguard` console script: one subcommand per component, each registered by its own module.

Modules register their subparser cheaply and import heavy dependencies (flask, boto3, kubernetes)
only when their command runs, so `fitguard --help` and `fitguard instance-types` start fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from cmdline.runner import Register, run, top_parser

# Each loader imports one subcommand's module (only when called) and returns its `register`.


def _webhook() -> Register:
    from webhook.cli import register

    return register


def _controller() -> Register:
    from controller.cli import register

    return register


def _report() -> Register:
    from fitguard.report import register

    return register


def _check() -> Register:
    from fitguard.check import register

    return register


def _state() -> Register:
    from fitguard.state_export import register

    return register


def _certs() -> Register:
    from certs.cli import register

    return register


def _instance_types() -> Register:
    from fitguard.instance_types import register

    return register


def _demo() -> Register:
    from fitguard.demo import register

    return register


# Each subcommand's name and the loader of its `register(subparsers)`; order is --help's.
COMMANDS: dict[str, Callable[[], Register]] = {
    "webhook": _webhook,
    "controller": _controller,
    "report": _report,
    "check": _check,
    "state": _state,
    "certs": _certs,
    "instance-types": _instance_types,
    "demo": _demo,
}


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` runs, when its first word names one. Only that one's module is imported
    then: another's imports must not run first (the webhook has to set up multiprocess metrics
    before anything imports prometheus_client, which the controller's modules do)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `fitguard` parser with every subcommand, or with the subcommand `only` alone."""
    parser, subparsers = top_parser()
    for command, load in COMMANDS.items():
        if only is None or command == only:
            load()(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, only: str | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run(build_parser(only or command_of(argv)), argv)


if __name__ == "__main__":
    sys.exit(main())
