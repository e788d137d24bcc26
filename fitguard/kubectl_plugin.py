"""`kubectl-fitguard`: fitguard as a kubectl plugin (`kubectl fitguard check -f deploy.yaml`,
`kubectl fitguard report`).

kubectl runs the executable named `kubectl-fitguard` on PATH with the words after `fitguard`, and
parses none of its own flags for a plugin; it even refuses flags placed before the plugin name
(kubernetes/kubernetes staging/src/k8s.io/kubectl/pkg/cmd/cmd.go, HandlePluginCommand). So this
entry takes kubectl's connection flags itself, wherever they are written
(`kubectl fitguard -n prod check ...` as well as after the command): `--kubeconfig PATH`,
`--context NAME` and `-n/--namespace NAME`, and hands them to the subcommand that uses them. As
kubectl does for cluster-scoped resources, `-n` is accepted and has no effect on `report` (branch
ENI books are per node) and `state export` (the state is cluster-wide).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from fitguard.cli import main as fitguard_main

# the kubectl connection flags each subcommand takes (others are passed through untouched)
TAKES: dict[str, tuple[str, ...]] = {
    "check": ("--kubeconfig", "--context", "--namespace"),
    "report": ("--kubeconfig", "--context"),
    "state": ("--kubeconfig", "--context"),
}
_LONG = {
    "--kubeconfig": "--kubeconfig",
    "--context": "--context",
    "--namespace": "--namespace",
    "-n": "--namespace",
}


PROG = "kubectl fitguard"
EPILOG = (
    "As a kubectl plugin, kubectl's --kubeconfig, --context and -n/--namespace may come before or "
    "after the command: kubectl fitguard -n prod check -f deploy.yaml."
)


class PluginUsageError(ValueError):
    pass


def split_kubectl_flags(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(the other words, {flag: value}) with every kubectl connection flag taken out."""
    rest: list[str] = []
    flags: dict[str, str] = {}
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            rest.extend(words[i:])
            break
        name, eq, value = word.partition("=")
        if name in _LONG and (eq or name == word):
            if not eq:
                if i + 1 >= len(words):
                    raise PluginUsageError(f"flag needs an argument: {word}")
                value = words[i + 1]
                i += 1
            flags[_LONG[name]] = value
        elif word.startswith("-n") and len(word) > 2 and not word.startswith("--"):
            flags["--namespace"] = word[2:]  # -nprod, as kubectl accepts it
        else:
            rest.append(word)
        i += 1
    return rest, flags


def plugin_argv(argv: Sequence[str]) -> list[str]:
    """The `fitguard` command line for a plugin command line."""
    rest, flags = split_kubectl_flags(argv)
    command = next((word for word in rest if not word.startswith("-")), None)
    taken = TAKES.get(command or "", ())
    for flag in flags:
        if flag not in taken and not (flag == "--namespace" and command in TAKES):
            raise PluginUsageError(f"{flag} does not apply to `kubectl fitguard {command or ''}`".rstrip())
    forwarded = [part for flag, value in flags.items() if flag in taken for part in (flag, value)]
    if "--" in rest:
        cut = rest.index("--")
        return [*rest[:cut], *forwarded, *rest[cut:]]
    return [*rest, *forwarded]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = plugin_argv(sys.argv[1:] if argv is None else argv)
    except PluginUsageError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    return fitguard_main(args, prog=PROG, epilog=EPILOG)


if __name__ == "__main__":
    sys.exit(main())
