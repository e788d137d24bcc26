"""`fitguard check`: the webhook's verdicts on manifests, before they reach a cluster.

Reads manifests (files, directories recursively, `-` for standard input; multi-document YAML, JSON,
`kind: List`) and kustomizations (`-k DIR`, rendered by `kubectl kustomize` as `kubectl apply -k`
renders them; `-f` refuses a directory holding one), and judges every Pod and workload exactly as
`kubectl apply` would meet fitguard: through the webhook's own /mutate and /validate code, against
a state file (`fitguard state export`, `fitguard state from-controller`) or the cluster a kubeconfig
points at. Other kinds are counted as skipped.

A terminal watching a long check sees its progress on standard error.

Exit status: 0 every object admitted (mode warn or audit: admitted, with warnings or findings),
1 any object denied, 2 usage errors or unreadable input.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from webhook.review import MODES

EXIT_ADMITTED, EXIT_DENIED, EXIT_USAGE = 0, 1, 2
# what a check without a cluster reads instead, said where no kubeconfig loads
OFFLINE = (
    "pass --kubeconfig PATH, or check against a state file with --state PATH "
    "(made by `fitguard state export` or `fitguard state from-controller`)"
)
# the demo's application (examples/check), without its kustomization.yaml
APPLICATION = ("web.yaml", "transcode.yaml", "settings.yaml")


class UnreadableCluster(Exception):
    """The state file or the cluster could not be read, or describes nothing to judge against."""

    def __init__(self, message: str, source: str) -> None:
        super().__init__(message)
        self.source = source


def _fail(message: str) -> int:
    from cmdline.safe_text import for_terminal

    print(f"fitguard check: {for_terminal(message)}", file=sys.stderr)
    return EXIT_USAGE


def _usable(objects: list[dict[str, Any]], source: str) -> None:
    from fitguard.state_usable import missing_capacity

    gap = missing_capacity(objects)
    if gap is not None:
        raise UnreadableCluster(f"{source}: {gap}", source)


def _cluster(args: argparse.Namespace) -> tuple[Any, dict[str, str], str]:
    """(cluster view, what the output says about its source, the default namespace)."""
    from fitguard.state_export import provenance
    from webhook.cluster import from_objects

    if args.state is not None:
        from kube.statefile import StateFileError, read_state_file

        try:
            state = read_state_file(args.state)
        except StateFileError as err:
            raise UnreadableCluster(str(err), str(args.state)) from None
        _usable(state.objects, str(args.state))
        header = {"state": str(args.state)}
        header.update({f"state {key}": value for key, value in provenance(state.annotations).items()})
        return from_objects(state.objects), header, args.namespace or "default"
    from fitguard.state_export import export_state
    from kube.client import KubeError
    from kube.kubeconfig import config_problem
    from kube.state_listing import identify

    try:
        identity = identify(args.kubeconfig, args.context)
        exported = export_state(args.kubeconfig, args.context, identity=identity)
    except KubeError as err:
        problem = config_problem(err, OFFLINE)
        raise UnreadableCluster(problem or f"cannot read the cluster: {err}", "cluster") from None
    _usable(exported["items"], f"the cluster {identity.server}")
    header = {"cluster": identity.server, "context": identity.context}
    # kubectl's order (client-go clientcmd DirectClientConfig.Namespace): -n, the context's, default
    return from_objects(exported["items"]), header, args.namespace or identity.namespace


def _report(
    args: argparse.Namespace, out: TextIO, results: list[Any], header: dict[str, str], problems: list[Any]
) -> int:
    """Writes the report in the chosen format and each problem as one line on standard error. With
    problems, the text report appears only when some object was judged (the JSON and JUnit reports
    always do, saying error), and the status is 2 whatever the verdicts."""
    from fitguard.check_output import RENDERERS, render_text

    for problem in problems:
        _fail(problem.message)
    if results or not problems or args.output != "text":
        if args.output == "text":
            render_text(results, header, out, problems, show_mutation=args.show_mutation)
        else:
            RENDERERS[args.output](results, header, out, problems)
    if problems:
        return EXIT_USAGE
    return (
        EXIT_DENIED if any(r.judgement is not None and r.judgement.denied for r in results) else EXIT_ADMITTED
    )


def _read(args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """Every object of the `-f` inputs then of the `-k` kustomizations, and what could not be read."""
    from fitguard.kustomize import read_kustomizations, refuse_kustomized
    from fitguard.manifests import read_inputs

    paths, refused = refuse_kustomized(args.filename or [])
    located, unreadable = read_inputs(paths)
    rendered, failed = read_kustomizations(args.kustomize or [])
    return [*located, *rendered], [*refused, *unreadable, *failed]


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from fitguard.check_output import Problem, Result
    from fitguard.judge import Judge
    from fitguard.progress import Progress
    from webhook.review import WebhookOptions

    out = out or sys.stdout
    if not args.filename and not args.kustomize:
        return _fail("nothing to check: give -f PATH|DIR|- or -k DIR (see fitguard check --help)")
    if args.state is not None and args.context is not None:
        return _fail("--context needs --kubeconfig (or the default kubeconfig), not --state")
    located, unreadable = _read(args)
    problems = [Problem(err.file, str(err)) for err in unreadable]
    try:
        cluster, header, namespace = _cluster(args)
    except UnreadableCluster as err:
        return _report(args, out, [], {"mode": args.mode}, [*problems, Problem(err.source, str(err))])
    header = {**header, "mode": args.mode}
    # the mutations are looked up only for an output that shows them
    shown = args.output == "json" or args.show_mutation
    judge = Judge(cluster, WebhookOptions(mode=args.mode), mutations=shown)
    # what was read stays to the end: out of every collection, so judging does not walk it again
    gc.freeze()
    progress = Progress(len(located), sys.stderr)
    results = []
    for item in located:
        progress.step()
        own = str((item.obj.get("metadata") or {}).get("namespace") or namespace)
        if args.namespace and own != args.namespace and judge.judges(item.obj):
            # as kubectl refuses it (cli-runtime resource/visitor.go RequireNamespace): nothing applied
            message = f"{item.location}: the object's namespace {own} does not match -n {args.namespace}"
            progress.done()
            return _report(args, out, [], header, [Problem(item.file, message)])
        try:
            judgement = judge.judge(item.obj, namespace) if judge.judges(item.obj) else None
        except ValueError as err:  # the webhook refused the review itself (e.g. over its size limit)
            kind = item.obj.get("kind")
            problems.append(Problem(item.file, f"{item.location}: {kind} could not be reviewed: {err}"))
            continue
        results.append(Result(item, own, judgement))
    progress.done()
    return _report(args, out, results, header, problems)


def demo(out: TextIO, examples: Path) -> int:
    """For `fitguard demo`: one check of the example application against the example state."""
    from fitguard.cli import build_parser

    # the application's files one by one: `-k examples/check` renders the same objects, but needs
    # kubectl, which the demo does not
    files = [os.path.relpath(examples / "check" / name) for name in APPLICATION]
    application = [part for file in files for part in ("-f", file)]
    argv = ["check", *application, "--state", os.path.relpath(examples / "cluster.yaml")]
    out.write(f"$ fitguard {' '.join(argv)}\n")
    status = run(build_parser(only="check").parse_args(argv), out)
    out.write(
        f"(exit status {status}: the CronJob would be denied at deploy time, so CI fails the pull request)\n"
    )
    return status


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="judge manifests as the webhook would (CI, terminal)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        metavar="PATH|DIR|-",
        help="a manifest file, a directory (read recursively; one holding a kustomization is refused: "
        "use -k) or - for standard input; repeatable",
    )
    parser.add_argument(
        "-k",
        "--kustomize",
        action="append",
        metavar="DIR",
        help="a kustomization directory, rendered by `kubectl kustomize` (kubectl on PATH) as "
        "kubectl apply -k renders it; repeatable, and with -f",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--state", type=Path, metavar="PATH", help="judge against this state file")
    source.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="judge against this cluster (default: $KUBECONFIG, ~/.kube/config)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "-n",
        "--namespace",
        help="namespace of objects that name none (default: the kubeconfig context's, else default)",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="enforce",
        help="as the webhook's --mode; the namespace label fitguard.io/mode overrides it "
        "(default: %(default)s)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json", "junit"), default="text")
    parser.add_argument(
        "--show-mutation",
        action="store_true",
        help="in text output, also say what /mutate does to each object's pods (pod-eni, the guard's "
        "affinity); -o json always says it",
    )
    parser.set_defaults(func=run)
