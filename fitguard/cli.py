"""The `fitguard` console script: one subcommand per component, each registered by its own module.

Modules register their subparser cheaply and import heavy dependencies (flask, boto3, kubernetes)
only when their command runs, so `fitguard --help` and `fitguard instance-types` start fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fitguard import __version__

# (module, attribute) of each subcommand's `register(subparsers)`; order is the order of --help.
SUBCOMMANDS: tuple[str, ...] = (
    "webhook.cli",
    "controller.cli",
    "fitguard.report",
    "fitguard.check",
    "fitguard.state_export",
    "certs.cli",
    "fitguard.instance_types",
    "fitguard.demo",
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    parser = build_parser(only)
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
