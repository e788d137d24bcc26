"""`fitguard instance-types`: what an EC2 instance type offers pods (branch ENIs, max pods, shape)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cmdline.table import render_table

DESCRIPTION = """\
Print the facts fitguard knows for each EC2 instance type: the branch ENIs a node offers to pods
with security groups (vpc.amazonaws.com/pod-eni), whether the type can trunk at all, its ENIs and
IPv4 addresses per ENI (and the default network card's ENIs), the EKS AMI max pods (default
network card only, as the VPC CNI's eni-max-pods.txt), and cluster-autoscaler's template shape
(vCPU, memory, GPUs of every manufacturer, architecture: amd64 unless EC2 says arm64) where
cluster-autoscaler lists the type.

The facts come from the table compiled into the package (AWS VPC resource controller
pkg/aws/vpc/limits.go, a later copy of it for types it does not list yet, and
cluster-autoscaler's ec2_instance_types.go). Each type names its tables (FROM, `limitsFrom`,
`shapeFrom`); capacity/data/instance_types.json `_source.tables` gives their commits and dates,
`_source.disagreements` which table won where two disagree (i4i.large) and why."""

EPILOG = """\
JSON output: an object keyed by TYPE; an unknown type maps to null (never to zeros), e.g.
  {"m5.large": {"branchInterfaces": 9, "trunking": true, ...}, "x9.huge": null}

exit status:
  0  every TYPE is known
  1  at least one TYPE is unknown (its row says "unknown", its JSON value is null)
  2  usage error"""

_COLUMNS = (
    ("BRANCH-ENIS", "branchInterfaces"),
    ("TRUNKING", "trunking"),
    ("ENIS", "interfaces"),
    ("IPV4/ENI", "ipv4PerInterface"),
    ("MAX-PODS", "maxPods"),
    ("VCPU", "vcpu"),
    ("MEMORY-MIB", "memoryMiB"),
    ("GPU", "gpu"),
    ("ARCH", "architecture"),
    ("FROM", "limitsFrom"),
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "instance-types",
        help="show branch ENIs, trunking, max pods and shape of EC2 instance types",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("types", nargs="+", metavar="TYPE", help="EC2 instance type, e.g. m5.large")
    parser.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="output format (default: table)"
    )
    parser.set_defaults(func=run)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def instance_table(facts: dict[str, dict[str, Any] | None]) -> str:
    header = ["TYPE", *(title for title, _ in _COLUMNS)]
    rows = [header]
    for name, document in facts.items():
        if document is None:
            rows.append([name, "unknown", *("-" for _ in _COLUMNS[1:])])
        else:
            rows.append([name, *(_cell(document.get(key)) for _, key in _COLUMNS)])
    return render_table(rows)


def run(args: argparse.Namespace) -> int:
    from capacity.instances import lookup  # the data file loads only when the command runs

    facts: dict[str, dict[str, Any] | None] = {}
    for name in args.types:
        found = lookup(name)
        facts[name] = None if found is None else found.to_json()
    if args.output == "json":
        print(json.dumps(facts, indent=2))
    else:
        print(instance_table(facts))
    return 0 if all(document is not None for document in facts.values()) else 1
