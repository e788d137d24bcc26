"""`fitguard controller`: flags, and the once-path's output (JSON or a table)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from typing import Any

from capacity.autoscaler_memory import DEFAULT_SELECTOR
from capacity.defaults import METRICS_BIND
from capacity.karpenter.controller_options import KARPENTER_SELECTOR
from cmdline.durations import parse_duration
from cmdline.logs import add_arguments as add_logging_arguments
from cmdline.logs import setup_logging
from cmdline.runner import one_line
from controller.scaling_cli import add_arguments as add_scaling_arguments

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "controller",
        help="node groups and their templates, autoscaler tags, branch ENI books, scaling",
        description=(
            "Discovers the node groups (ASGs, EKS managed node groups) in AWS through the standard "
            "boto3 environment (AWS_REGION, AWS_ENDPOINT_URL, credentials), builds each group's "
            "NodeGroupTemplate with its actual view and cluster-autoscaler's view, publishes them "
            "and plans or applies the cluster-autoscaler template tags; plans (or makes) the "
            "scale-ups cluster-autoscaler cannot see. Without --once it also keeps the branch ENI "
            "books of every node from a watch of pods and nodes, labels exhausted nodes "
            "fitguard.io/branch-eni-exhausted=true, writes events and serves /healthz, /readyz, "
            "/metrics (and /snapshotz with --snapshotz) on --metrics-bind. With --leader-elect "
            "only the holder of the Lease writes; the others keep warm books. --once -o json "
            "prints {nodeGroups, tagSync, scaleUps, scaling, errors}."
        ),
    )
    _add_run_arguments(parser.add_argument_group("run"))
    _add_discovery_arguments(parser.add_argument_group("discovery"))
    _add_tag_sync_arguments(parser.add_argument_group("tag sync"))
    _add_books_arguments(parser.add_argument_group("branch ENI books"))
    _add_guard_arguments(parser.add_argument_group("guard"))
    add_scaling_arguments(parser)
    _add_certificate_arguments(parser.add_argument_group("certificates"))
    _add_leader_arguments(parser.add_argument_group("leader election"))
    _add_http_arguments(parser.add_argument_group("HTTP"))
    add_logging_arguments(parser.add_argument_group("logging"))
    parser.set_defaults(func=main)


def _add_run_arguments(parser: Any) -> None:
    """How this run goes: one cycle or for ever, writing or not, from a state file or the API."""
    parser.add_argument("--once", action="store_true", help="run one cycle, print the result, exit")
    parser.add_argument("--dry-run", action="store_true", help="write nothing (no objects, no AWS tags)")
    parser.add_argument("--state", metavar="PATH", help="read nodes, DaemonSets, templates from a state file")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="with --once")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between discovery cycles")
    parser.add_argument(
        "--kubeconfig", default=None, help="kubeconfig (default: in-cluster, then $KUBECONFIG)"
    )
    parser.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")


def _add_leader_arguments(parser: Any) -> None:
    """Leader election."""
    parser.add_argument("--leader-elect", action="store_true", help="run only while holding the Lease")
    # client-go's leader election knobs, named as kube-controller-manager names them
    parser.add_argument(
        "--leader-elect-lease-duration",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long a lease not renewed keeps others from taking it (default: %(default)s)",
    )
    parser.add_argument(
        "--leader-elect-renew-deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="a leader that has not renewed for this long stops acting (default: %(default)s)",
    )
    parser.add_argument(
        "--leader-elect-retry-period",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="time between attempts to take or renew the lease (default: %(default)s)",
    )


def _add_discovery_arguments(parser: Any) -> None:
    """Discovery of the node groups, their templates and cluster-autoscaler's memory."""
    parser.add_argument("--cluster-name", default="", help="the EKS cluster (managed node groups, discovery)")
    parser.add_argument(
        "--node-group-auto-discovery",
        action="append",
        default=[],
        metavar="asg:tag=KEY[=VALUE],...",
        help="as cluster-autoscaler's flag; default: tag k8s.io/cluster-autoscaler/enabled "
        "(and k8s.io/cluster-autoscaler/<cluster-name>)",
    )
    parser.add_argument(
        "--nodes", action="append", default=[], metavar="MIN:MAX:ASG", help="an explicit ASG, as CA's flag"
    )
    parser.add_argument("--node-group-label", default="", help="node label naming the node group, if any")
    parser.add_argument(
        "--autoscaler-selector",
        default=DEFAULT_SELECTOR,
        metavar="SELECTOR",
        help="label selector of cluster-autoscaler's pods (default: the Helm chart's, %(default)s): their "
        "start and --node-info-cache-expire-time tell which groups at zero it still builds from a "
        "remembered live node, and its --startup-taint, --ignore-taint, --startup-taint-prefix and "
        "--status-taint which taints its templates leave out; empty: do not look (every group at zero "
        "is judged by its tags, less only the taints every cluster-autoscaler leaves out)",
    )
    parser.add_argument(
        "--autoscaler-namespace",
        default="",
        metavar="NAMESPACE",
        help="the namespace of cluster-autoscaler's pods (default: all namespaces)",
    )
    parser.add_argument(
        "--karpenter-selector",
        default=KARPENTER_SELECTOR,
        metavar="SELECTOR",
        help="label selector of the Karpenter controller's pods (default: the Helm chart's, %(default)s): "
        "their RESERVED_ENIS and VM_MEMORY_OVERHEAD_PERCENT change what a NodePool's nodes offer; none "
        "found, or empty: Karpenter's defaults",
    )
    parser.add_argument(
        "--karpenter-namespace",
        default="",
        metavar="NAMESPACE",
        help="the namespace of the Karpenter controller's pods (default: all namespaces)",
    )
    parser.add_argument(
        "--region",
        default="",
        help="AWS region (default: $AWS_REGION, $AWS_DEFAULT_REGION, the AWS config file, then the "
        "instance metadata service); the one in use is logged at start",
    )


def _add_tag_sync_arguments(parser: Any) -> None:
    """cluster-autoscaler's template tags on the ASGs."""
    parser.add_argument(
        "--sync-autoscaler-tags",
        nargs="?",
        const="plan",
        default="plan",
        choices=("plan", "apply", "off"),
        help="plan (default) or apply the resources/ephemeral-storage and resources/vpc.amazonaws.com/"
        "pod-eni tags cluster-autoscaler needs to scale node groups up from zero",
    )
    parser.add_argument(
        "--sync-autoscaler-label-tags",
        action="store_true",
        help="with --sync-autoscaler-tags, also the label/* and taint/* tags that make cluster-autoscaler's "
        "template of a self-managed ASG carry the labels and taints of its live nodes (never the ones "
        "kubelet, the cloud provider or EKS set)",
    )


def _add_books_arguments(parser: Any) -> None:
    """The branch ENI books: when an ENI is released, and EC2's count beside them."""
    parser.add_argument(
        "--branch-eni-release",
        choices=("cooldown", "on-delete"),
        default="cooldown",
        help="when a finished or deleted pod's branch ENI is released: after the VPC CNI cooldown "
        "(VPC resource controller v1.1.0 and later, the default) or only when the pod object is deleted",
    )
    parser.add_argument(
        "--verify-with-ec2",
        action="store_true",
        help="count the branch ENIs EC2 holds per node (DescribeNetworkInterfaces, by the VPC resource "
        "controller's tags) and report those claimed by no pod past the release window as leaked",
    )


def _add_guard_arguments(parser: Any) -> None:
    """The exhausted-node guard's grace before it steps aside for cluster-autoscaler."""
    parser.add_argument(
        "--guard-grace",
        type=parse_duration,
        default=30.0,
        metavar="DURATION",
        help="when every ready node of a node group carries fitguard.io/branch-eni-exhausted (branch ENIs "
        "held) and guarded pods pend on it, cluster-autoscaler (which copies a ready node's labels into "
        "the group's template) cannot scale it: unless --scaling=on scales the group, the guard lifts "
        "the label from the group's nodes after this long, with events saying so; never from a Karpenter "
        "NodePool's nodes, since Karpenter builds new nodes from the NodePool (default: 30s)",
    )


def _add_certificate_arguments(parser: Any) -> None:
    """The webhook's serving certificate."""
    parser.add_argument(
        "--manage-certificates",
        action="store_true",
        help="the leader creates and rotates the webhook's CA and serving certificate (Secrets in "
        "$POD_NAMESPACE) and keeps the caBundle of both webhook configurations current",
    )


def _add_http_arguments(parser: Any) -> None:
    """The plain-HTTP port for probes, metrics and the snapshot."""
    parser.add_argument(
        "--metrics-bind",
        default=METRICS_BIND,
        metavar="HOST:PORT",
        help="plain HTTP for /healthz, /readyz, /metrics, /snapshotz (default: %(default)s)",
    )
    parser.add_argument(
        "--snapshotz",
        action="store_true",
        help="serve GET /snapshotz there: every node's branch ENI books, the guard's state and the "
        "last cycle, as JSON, to anyone who can reach the port (default: off, a 404)",
    )


def main(args: argparse.Namespace) -> int:
    """Bad input ends with one line on stderr: exit status 2 for what the command line or its files
    get wrong, 1 for a failure while running (the Kubernetes API unreachable, a failed cycle)."""
    from kube.client import KubeError
    from kube.kubeconfig import config_problem

    try:
        return _main(args)
    except KubeError as err:
        problem = config_problem(
            err, "pass --kubeconfig PATH, or --once --state PATH to read the cluster from a file"
        )
        print(f"fitguard controller: {problem or one_line(kube_problem(err))}", file=sys.stderr)
        return 2 if problem else 1


def kube_problem(err: Any) -> str:
    """A KubeError as one line a person can act on."""
    if err.status == 0:
        return f"cannot reach the Kubernetes API server ({err.reason}): {err.message}"
    return f"the Kubernetes API server refused a request: {err}"


def _main(args: argparse.Namespace) -> int:
    from capacity.autoscaler_flags import pod_selector
    from capacity.autoscaler_specs import SpecError
    from controller.aws.region import NoRegion, resolve_region
    from controller.compose import aws_clients
    from controller.run import run_once
    from controller.scaling_cli import build_driver, scaling_config
    from kube.statefile import StateFileError, load_state

    setup_logging(args.log_format, args.log_level)
    if args.state and not args.once:
        print("fitguard controller: --state needs --once (a file cannot be watched)", file=sys.stderr)
        return 2
    if args.state:
        try:
            load_state(args.state)
        except StateFileError as err:
            print(f"fitguard controller: --state {one_line(str(err))}", file=sys.stderr)
            return 2
    try:
        region = resolve_region(args.region)
    except NoRegion as err:
        print(f"fitguard controller: {err}", file=sys.stderr)
        return 2
    log.info("AWS region %s (from %s)", region.name, region.source, extra={"region": region.name})
    options = _options(args, region.name)
    try:
        options.selection()
        for flag, selector in (
            ("--autoscaler-selector", options.autoscaler_selector),
            ("--karpenter-selector", options.karpenter_selector),
        ):
            try:
                pod_selector(selector)
            except ValueError as err:
                raise ValueError(f"{flag}: {err}") from None
        scaling = scaling_config(args)
    except (SpecError, ValueError) as err:
        print(f"fitguard controller: {err}", file=sys.stderr)
        return 2
    if args.once:
        # the process's clients, built once (controller/compose.py)
        clients = aws_clients(options.region)
        driver = build_driver(scaling, clients.autoscaling)
        report = run_once(options, clients=clients, driver=driver)
        printed = report.to_json()
        from controller.cycle_table import cycle_table

        print(json.dumps(printed, indent=2) if args.output == "json" else cycle_table(printed))
        return 1 if report.discovery_error else 0
    return run_forever(args, options, scaling)


def _options(args: argparse.Namespace, region: str) -> Any:
    """The `--once` path's ControllerOptions from the flags."""
    from controller.run import ControllerOptions
    from controller.settings import TagSyncMode

    return ControllerOptions(
        state=args.state or "",
        dry_run=args.dry_run,
        sync_autoscaler_tags=TagSyncMode(args.sync_autoscaler_tags),
        sync_label_tags=args.sync_autoscaler_label_tags,
        cluster_name=args.cluster_name,
        auto_discovery=tuple(args.node_group_auto_discovery),
        nodes=tuple(args.nodes),
        node_group_label=args.node_group_label,
        autoscaler_selector=args.autoscaler_selector,
        autoscaler_namespace=args.autoscaler_namespace,
        karpenter_selector=args.karpenter_selector,
        karpenter_namespace=args.karpenter_namespace,
        region=region,
        kubeconfig=args.kubeconfig,
        context=args.context,
        branch_eni_release=args.branch_eni_release,
    )


def run_forever(args: argparse.Namespace, options: Any, scaling: Any) -> int:
    from controller.compose import aws_clients, kube_client
    from controller.loop import ControllerLoop
    from controller.scaling_cli import RescueOptions
    from controller.settings import BooksOptions, LoopOptions, ServingOptions

    try:
        leadership = _leadership(args)
    except ValueError:
        print(
            "fitguard controller: need --leader-elect-lease-duration > --leader-elect-renew-deadline > "
            "--leader-elect-retry-period > 0",
            file=sys.stderr,
        )
        return 2
    settings = LoopOptions(
        discovery=options,
        interval=args.interval,
        books=BooksOptions(
            release=args.branch_eni_release, guard_grace=args.guard_grace, dry_run=args.dry_run
        ),
        leadership=leadership,
        serving=ServingOptions(bind=args.metrics_bind, snapshotz=args.snapshotz),
        scaling=scaling,
        rescue=RescueOptions(args.rescue_waiting_pods, args.reclaim_finished_pods_after),
        verify_with_ec2=args.verify_with_ec2,
        manage_certificates=args.manage_certificates,
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    # the process's clients, built once (controller/compose.py)
    api, clients = kube_client(args.kubeconfig, args.context), aws_clients(options.region)
    ControllerLoop(settings, api, clients).run(stop)
    return 0


def _leadership(args: argparse.Namespace) -> Any:
    """The Lease to campaign on with --leader-elect (None without); ValueError for durations that
    do not nest. The namespace is the pod's own (POD_NAMESPACE), as the manifests set it."""
    from capacity.defaults import NAMESPACE
    from kube.options import LeaderOptions

    if not args.leader_elect:
        return None
    return LeaderOptions(
        namespace=os.environ.get("POD_NAMESPACE", NAMESPACE),
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )
