"""The parser and runner of every command line: `fitguard` itself and `python -m webhook` /
`python -m controller`, which run one subcommand without importing the `fitguard` package above
them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from cmdline import __version__

# a subcommand's module adds its parser to the `fitguard` subparsers with this
Register = Callable[[Any], None]

PROG = "fitguard"
DESCRIPTION = "Keep pods on EKS from being admitted into a future they cannot have."


def one_line(text: str) -> str:
    """`text` with every run of whitespace, line breaks included, made one space."""
    return " ".join(str(text).split())


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error told in one line (exit status 2) instead of the whole usage
    block first: `--help` has the usage for whoever wants it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")


def top_parser(prog: str = PROG, epilog: str | None = None) -> tuple[argparse.ArgumentParser, Any]:
    """The `fitguard` parser (named `prog`: `kubectl fitguard` for the plugin) and its subparsers,
    for the subcommands' `register` functions."""
    parser = Parser(prog=prog, description=DESCRIPTION, epilog=epilog)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser, parser.add_subparsers(dest="command", metavar="COMMAND", required=True)


def run(parser: argparse.ArgumentParser, argv: Sequence[str]) -> int:
    """Parses `argv` and runs the chosen subcommand's `func`; its return value is the exit status."""
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `fitguard report | head` closes the pipe early; that is not an error.
        sys.stderr.close()
        return 0


def module_main(register: Register, command: str) -> None:
    """Entry for `python -m webhook` and `python -m controller`: the same subcommand with the same
    flags as `fitguard <command>`, its parser built from `register` alone."""
    parser, subparsers = top_parser()
    register(subparsers)
    sys.exit(run(parser, [command, *sys.argv[1:]]))
