"""`fitguard report`: the branch ENI books per node, from a snapshot file or the live cluster.

A snapshot is what `kubectl get nodes,pods,configmaps -A -o json` prints. Finished pods carry
timestamps, so the books depend on "now": `--now` pins it; otherwise a snapshot that records its
own capture time (annotation `fitguard.io/captured-at`, RFC 3339, on the List's metadata) is read
at that moment; otherwise the current time is used. Record a snapshot with its capture time:

    kubectl get nodes,pods,configmaps -A -o json \\
      | jq --arg t "$(date -u +%FT%TZ)" '.metadata.annotations["fitguard.io/captured-at"] = $t'
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from capacity.branch_eni import DEFAULT_WAITING_GRACE, RELEASE_MODELS, NodeSummary
from capacity.branch_eni_words import (
    held_message,
    lacking,
    overcommitted_message,
    shown_free,
    waiting_message,
)
from capacity.names import CAPTURED_AT, VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
from capacity.pod_status import parse_time
from cmdline.table import render_table

COLUMNS = ("NODE", "GROUP", "INSTANCE TYPE", "CAPACITY", "IN USE", "HELD", "SCHEDULER FREE", "TRUE FREE")


@dataclass
class Report:
    nodes: list[NodeSummary]
    now: float
    window: float
    release: str
    skipped: int  # pods or nodes too malformed to project

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [_row_json(row) for row in self.nodes],
            "releaseModel": self.release,
            "releaseWindowSeconds": self.window,
            "now": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now)),
            "skipped": self.skipped,
        }


def _row_json(row: NodeSummary) -> dict[str, Any]:
    """A node's books as the report prints them: free counts never below zero, and `lacking`, the
    branch ENIs the pods placed there ask for beyond those the node has (they wait)."""
    obj = row.to_json()
    obj["schedulerFree"] = shown_free(row.scheduler_free)
    obj["trueFree"] = shown_free(row.true_free)
    obj["lacking"] = lacking(row)
    return obj


def build_report(
    objects: Sequence[Mapping[str, Any]],
    now: float,
    release: str = "cooldown",
    waiting_grace: float = DEFAULT_WAITING_GRACE,
    window: float | None = None,
) -> Report:
    """The books of every node in `objects` (Pods, Nodes and the VPC CNI ConfigMap) at `now`,
    built as the controller builds them (its cache and books); the release window comes from the
    ConfigMap unless given."""
    from controller.books import Books
    from controller.cache import CacheOptions, ClusterCache
    from controller.settings import BooksOptions

    cache = ClusterCache(CacheOptions(autoscaler_selector=""))  # cluster-autoscaler is not read
    settings = BooksOptions(release=release, window=window, waiting_grace=waiting_grace)
    books = Books(cache, settings, clock=lambda: now)
    kinds: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        if isinstance(obj, Mapping):
            kinds.setdefault(str(obj.get("kind")), []).append(dict(obj))
    cache.fill(kinds)
    skipped = cache.pods.rejected + cache.nodes.rejected  # too malformed to count
    return Report(books.snapshot(now), now, books.window, release, skipped)


def write_report_table(report: Report, out: TextIO) -> None:
    header = (*COLUMNS, "WAITING")
    rows = [
        (
            row.name,
            row.node_group or "-",
            row.instance_type or "-",
            str(row.capacity),
            str(row.in_use),
            str(row.held),
            str(shown_free(row.scheduler_free)),
            str(shown_free(row.true_free)),
            str(row.waiting),
        )
        for row in report.nodes
    ]
    out.write(render_table([header, *rows]) + "\n")
    for row in report.nodes:
        if row.held:
            out.write(f"\n{row.name}: {held_message(row)}")
        elif lacking(row):
            out.write(f"\n{row.name}: {overcommitted_message(row)}")
        for waiting in row.waiting_pods:
            out.write(f"\n{waiting.namespace}/{waiting.pod}: {waiting_message(row, waiting, report.now)}")
    if any(row.held or row.waiting or lacking(row) for row in report.nodes):
        out.write("\n")


def _captured_at(text: str) -> float | None:
    """The capture time a snapshot records on its List (see the module docstring)."""
    stripped = text.lstrip()
    try:
        if stripped.startswith("{"):
            doc = json.loads(text)
        else:
            import yaml

            doc = next(iter(yaml.safe_load_all(text)), None)
    except ValueError:
        return None
    if not isinstance(doc, Mapping):
        return None
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    return parse_time(annotations.get(CAPTURED_AT)) if isinstance(annotations, Mapping) else None


def load_snapshot(path: str) -> tuple[list[dict[str, Any]], float | None]:
    """The objects of a snapshot file and the capture time it records, if any."""
    from kube.statefile import parse_state

    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return parse_state(text, path), _captured_at(text)


def load_live(kubeconfig: str | None, context: str | None) -> list[dict[str, Any]]:
    """Nodes, pods and the VPC CNI ConfigMap listed from the cluster, page by page."""
    from kube.api import get_config_map, list_all_nodes, list_all_pods
    from kube.client import KubeClient, KubeError, load_api_client

    client = KubeClient(load_api_client(kubeconfig, context))
    objects: list[dict[str, Any]] = []
    objects.extend({**item, "kind": "Node"} for item in list_all_nodes(client))
    objects.extend({**item, "kind": "Pod"} for item in list_all_pods(client))
    try:
        config_map = get_config_map(client, VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME)
        objects.append({**config_map, "kind": "ConfigMap"})
    except KubeError as err:
        if not err.not_found:  # absent means the default cooldown, anything else is a real failure
            raise
    return objects


def run(args: argparse.Namespace) -> int:
    if args.now:
        try:
            now = parse_time(args.now)
        except ValueError:
            print(f"fitguard report: --now {args.now!r} is not an RFC 3339 time", file=sys.stderr)
            return 2
    else:
        now = None
    if args.snapshot:
        try:
            objects, captured = load_snapshot(args.snapshot)
        except (OSError, ValueError) as err:  # StateFileError is a ValueError
            print(f"fitguard report: {err}", file=sys.stderr)
            return 1
        now = now if now is not None else captured
    else:
        from kube.client import KubeError
        from kube.kubeconfig import config_problem

        try:
            objects = load_live(args.kubeconfig, args.context)
        except KubeError as err:
            problem = config_problem(
                err, "pass --kubeconfig PATH, or report a saved snapshot with --snapshot PATH"
            )
            print(f"fitguard report: {problem or err}", file=sys.stderr)
            return 2 if problem else 1
    report = build_report(objects, now if now is not None else time.time(), args.branch_eni_release)
    if args.output == "json":
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        write_report_table(report, sys.stdout)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="branch ENI books per node: capacity, in use, held, scheduler-free, true free, waiting",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--snapshot", metavar="PATH", help="read a snapshot file instead of the cluster")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    parser.add_argument(
        "--branch-eni-release",
        choices=RELEASE_MODELS,
        default="cooldown",
        help="cooldown: released a window after the pod finishes or is deleted (VPC resource "
        "controller v1.1.0+); on-delete: held until the pod object is deleted (older controllers)",
    )
    parser.add_argument("--now", metavar="RFC3339", help="judge the books at this time")
    parser.add_argument("--kubeconfig", help="kubeconfig for the live report (default: $KUBECONFIG)")
    parser.add_argument("--context", help="kubeconfig context for the live report")
    parser.set_defaults(func=run)
