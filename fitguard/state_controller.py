"""`fitguard state from-controller`: a state file built from the node groups a team keeps in AWS,
with no cluster at all.

Its input is what `fitguard controller --once -o json` prints: `nodeGroups` (each group's
NodeGroupTemplate, built from its launch template, instance types and autoscaler tags) and `errors`
(by group; "" for discovery as a whole). Run against AWS alone, the controller reads its cluster
objects from `--state` (an empty file, or the team's DaemonSets so their overhead counts):

    fitguard controller --once --dry-run --state /dev/null -o json > groups.json
    fitguard state from-controller groups.json -f platform/ -o fitguard-state.yaml

The state holds the NodeGroupTemplates as `fitguard state export` writes them, and records when
and from what it was made. The objects the cluster would hold besides come from `-f` (the
Namespaces, ServiceAccounts, SecurityGroupPolicies and VPC CNI ConfigMap a team keeps in git;
other kinds are left out), and the namespaces every cluster has: default, kube-system, kube-public,
kube-node-lease. Each namespace gets the ServiceAccount `default` the cluster would create in it
(unless `-f` gives one): the webhook refuses a pod whose ServiceAccount does not exist. No live nodes.

A run whose discovery failed, or that found no usable node group, writes nothing (exit status 2):
`fitguard check` would refuse that state anyway, and a CI job must not go on with it. A group the
controller could not build is left out, with a warning.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from capacity.names import (
    EXPORTED_AT,
    EXPORTED_FROM,
    SGP_KIND,
    TEMPLATE_KIND,
    VPC_CNI_CONFIG_NAME,
    VPC_CNI_CONFIG_NAMESPACE,
)
from cmdline.runner import one_line

FROM_CONTROLLER = "fitguard controller --once -o json"
COMMAND = "fitguard state from-controller"
# the namespaces every cluster has (kube-apiserver creates them: pkg/controlplane/controller/
# systemnamespaces), and the ServiceAccount the cluster creates in each namespace (kube-controller-
# manager's ServiceAccountsController, pkg/controller/serviceaccount/serviceaccounts_controller.go
# DefaultServiceAccountsControllerOptions)
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_SERVICE_ACCOUNT = "default"


class NotControllerOutput(ValueError):
    """Input that is not a usable `fitguard controller --once -o json` output."""


def _read(source: str) -> str:
    from fitguard.manifests import MAX_STDIN
    from kube.bounded import InputLimitError, read_text

    if source == "-":
        text = sys.stdin.read(MAX_STDIN + 1)
        if len(text) > MAX_STDIN:
            raise NotControllerOutput(f"<stdin>: larger than {MAX_STDIN // 2**20} MiB")
        return text
    try:
        return read_text(Path(source))
    except OSError as err:
        raise NotControllerOutput(f"{source}: {err.strerror or err}") from None
    except InputLimitError as err:
        raise NotControllerOutput(f"{source}: {err}") from None


def _parse(text: str, name: str) -> Mapping[str, Any]:
    from kube.bounded import InputLimitError, check_json_depth, json_value

    try:
        report = json_value(lambda: json.loads(text))
        check_json_depth(report)
    except json.JSONDecodeError as err:
        raise NotControllerOutput(
            f"{name}:{err.lineno}: not JSON ({err.msg}); expected {FROM_CONTROLLER}"
        ) from None
    except InputLimitError as err:
        raise NotControllerOutput(f"{name}: {err}") from None
    if not isinstance(report, Mapping) or not isinstance(report.get("nodeGroups"), list):
        raise NotControllerOutput(
            f"{name}: no nodeGroups list in it; expected the output of {FROM_CONTROLLER}"
        )
    return report


def state_from_report(
    report: Mapping[str, Any], name: str, cluster: list[dict[str, Any]], now: float | None = None
) -> dict[str, Any]:
    """The state file's content (a `kind: List`): `cluster` (cluster_objects) then the report's
    NodeGroupTemplates; NotControllerOutput when the report's discovery failed or it holds no
    usable NodeGroupTemplate."""
    from fitguard.state_export import project
    from fitguard.state_usable import missing_capacity

    errors = report.get("errors")
    failed = errors.get("") if isinstance(errors, Mapping) else None
    if failed:
        raise NotControllerOutput(f"{name}: the controller's discovery failed: {one_line(str(failed))}")
    groups = [
        obj
        for obj in report["nodeGroups"]
        if isinstance(obj, Mapping) and obj.get("kind") == TEMPLATE_KIND and obj.get("apiVersion")
    ]
    items = [project(obj) for obj in groups]
    gap = missing_capacity(items)
    if gap is not None:
        raise NotControllerOutput(f"{name}: {gap}")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": {EXPORTED_AT: stamp, EXPORTED_FROM: FROM_CONTROLLER}},
        "items": [*cluster, *items],
    }


def _kept(obj: Mapping[str, Any]) -> bool:
    """Whether a state holds an object of this kind (as `fitguard state export` lists them)."""
    kind = obj.get("kind")
    if kind == "ConfigMap":
        meta = obj.get("metadata") or {}
        return (meta.get("namespace"), meta.get("name")) == (VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME)
    return kind in ("Namespace", "ServiceAccount", SGP_KIND)


def cluster_objects(given: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """(the cluster objects of the state, how many of `given` a state does not hold): the kinds a
    state holds from `given`, every cluster's namespaces, and each namespace's `default`
    ServiceAccount where `given` has none."""
    from fitguard.state_export import project

    kept = [project(obj) for obj in given if _kept(obj)]
    names = [str(o["metadata"].get("name")) for o in kept if o["kind"] == "Namespace"]
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in SYSTEM_NAMESPACES
        if name not in names
    ]
    accounts = {(o["metadata"].get("namespace"), o["metadata"].get("name")) for o in kept}
    defaults = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": name},
        }
        for name in [*SYSTEM_NAMESPACES, *names]
        if (name, DEFAULT_SERVICE_ACCOUNT) not in accounts
    ]
    return [*namespaces, *defaults, *kept], len(given) - len(kept)


def group_errors(report: Mapping[str, Any]) -> dict[str, str]:
    """The node groups the controller could not build, with why (discovery's own error left out)."""
    errors = report.get("errors")
    if not isinstance(errors, Mapping):
        return {}
    return {str(group): one_line(str(reason)) for group, reason in errors.items() if group}


def run(args: argparse.Namespace) -> int:
    from fitguard.manifests import read_manifests
    from fitguard.state_export import write_state

    name = "<stdin>" if args.report == "-" else args.report
    if args.report == "-" and "-" in (args.filename or []):
        print(f"{COMMAND}: the report and -f cannot both be standard input", file=sys.stderr)
        return 2
    try:
        report = _parse(_read(args.report), name)
        cluster, left_out = cluster_objects([item.obj for item in read_manifests(args.filename or [])])
        state = state_from_report(report, name, cluster)
    except (NotControllerOutput, ValueError) as err:  # a ManifestError is a ValueError
        print(f"{COMMAND}: {one_line(str(err))}; no state written", file=sys.stderr)
        return 2
    if left_out:
        print(
            f"{COMMAND}: left out {left_out} object(s) of -f of kinds a state does not hold", file=sys.stderr
        )
    for group, reason in group_errors(report).items():
        print(
            f"{COMMAND}: warning: node group {group} is not in the state (the controller could not "
            f"build it: {reason}); `fitguard check` denies what only it could hold",
            file=sys.stderr,
        )
    return write_state(state, args.output, COMMAND, FROM_CONTROLLER)


def register(actions: Any) -> None:
    parser = actions.add_parser(
        "from-controller",
        help="write a state file from `fitguard controller --once -o json` (AWS alone, no cluster)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "report", metavar="FILE|-", help=f"what {FROM_CONTROLLER} printed (- for standard input)"
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        metavar="PATH|DIR|-",
        help="Namespaces, ServiceAccounts, SecurityGroupPolicies and the VPC CNI ConfigMap to add "
        "(files, directories, - for standard input; other kinds are left out); repeatable",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write here (default: standard output)")
    parser.set_defaults(func=run)
