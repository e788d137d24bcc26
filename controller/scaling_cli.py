"""The scaling flags of `fitguard controller`, and the ScalingDriver they describe."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capacity.expander import parse_expanders
from capacity.planner import PlannerOptions, parse_headroom
from cmdline.durations import parse_duration
from controller.scaling_options import MODES, ON, PLAN, ScalingOptions

if TYPE_CHECKING:
    from controller.scaling import ScalingDriver


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scaling (where cluster-autoscaler is blind)")
    group.add_argument(
        "--scaling",
        choices=MODES,
        default=PLAN,
        help="off; plan (default: decisions in logs, events and metrics, nothing written to AWS); "
        "on (SetDesiredCapacity upward only, never above max size, never down)",
    )
    group.add_argument(
        "--scaling-scope",
        choices=("blind", "all"),
        default="blind",
        help="blind (default): only pods no group's autoscaler view can serve but some actual view can; "
        "all: every unschedulable pod (clusters without cluster-autoscaler)",
    )
    group.add_argument(
        "--expander",
        default="least-waste",
        help="comma-separated expanders, as cluster-autoscaler's: least-waste (default), priority "
        "(from ConfigMap cluster-autoscaler-priority-expander)",
    )
    group.add_argument(
        "--max-nodes-per-scale-up",
        type=int,
        default=1000,
        metavar="N",
        help="at most N nodes added per group in one scale-up, as cluster-autoscaler's flag (default: 1000)",
    )
    group.add_argument(
        "--scale-up-cooldown", type=parse_duration, default=300.0, metavar="DURATION", help="per group (5m)"
    )
    group.add_argument(
        "--headroom",
        action="append",
        default=[],
        metavar="GROUP:RESOURCE=N[,...]",
        help="keep at least N truly free (pod-eni, ephemeral-storage, cpu, memory) in GROUP by scaling "
        "ahead of demand; ENIs held by finished pods do not count as free; repeatable",
    )
    group = parser.add_argument_group("rescue and reclaim")
    group.add_argument(
        "--rescue-waiting-pods",
        action="store_true",
        help="delete a controller-owned pod that never started and still waits for a branch ENI after "
        "the release window, so its replacement is scheduled elsewhere (never fitguard.io/keep=true)",
    )
    group.add_argument(
        "--reclaim-finished-pods-after",
        type=parse_duration,
        default=None,
        metavar="DURATION",
        help="on a node with waiting pods, delete finished Job-owned or unowned pods still holding a "
        "branch ENI after they have been finished this long (off by default)",
    )


@dataclass(frozen=True)
class RescueOptions:
    rescue: bool = False
    reclaim_after: float | None = None


def scaling_config(args: argparse.Namespace) -> ScalingOptions:
    """Raises ValueError with the flag's problem."""
    planner = PlannerOptions(
        expanders=parse_expanders(args.expander),
        max_nodes_per_scale_up=args.max_nodes_per_scale_up,
        cooldown=args.scale_up_cooldown,
        headroom=tuple(h for text in args.headroom for h in parse_headroom(text)),
    )
    mode = PLAN if args.dry_run and args.scaling == ON else args.scaling
    return ScalingOptions(mode=mode, scope=args.scaling_scope, planner=planner)


def build_driver(
    config: ScalingOptions, autoscaling: Any, recorder: Any = None, registry: Any = None
) -> ScalingDriver | None:
    """The scaling driver on the process's Auto Scaling client (controller/compose.py); None when off."""
    if config.mode == "off":
        return None
    from controller.aws.asgs import AsgGroups
    from controller.scaling import ScalingDriver

    return ScalingDriver(config, AsgGroups(autoscaling), recorder, registry)
