"""`fitguard state export`: the state file the webhook (`--state`) and `fitguard check` read, taken
from the cluster a kubeconfig points at.

Exactly what a verdict needs is written: NodeGroupTemplates, SecurityGroupPolicies, ServiceAccounts
and Namespaces with their labels, the VPC CNI ConfigMap's keys the webhook reads, Nodes (labels,
taints, whether cordoned, allocatable) and Karpenter's NodePools, EC2NodeClasses and EKS Auto Mode
NodeClasses (their spec) where the cluster has them. Each
object is cut down to those fields (no annotations, no managedFields, no other ConfigMap data);
Secrets, pods and every other kind are never listed. The List records when it was taken and from
which cluster.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from capacity.names import (
    EXPORTED_AT,
    EXPORTED_CLUSTER,
    EXPORTED_CONTEXT,
    EXPORTED_FROM,
    EXPORTED_SERVER,
    GROUP,
    SGP_KIND,
    TEMPLATE_KIND,
    VPC_CNI_CONFIG_NAME,
    VPC_CNI_CONFIG_NAMESPACE,
)
from webhook.cluster import AUTO_NODE_CLASS_KIND, CONFIG_KEYS, EC2_NODE_CLASS_KIND, NODE_POOL_KIND

PROVENANCE = (EXPORTED_AT, EXPORTED_FROM, EXPORTED_CONTEXT, EXPORTED_CLUSTER, EXPORTED_SERVER)
HEADER = "# fitguard state: read by `fitguard check --state` and `fitguard webhook --state`\n"


def _meta(obj: Mapping[str, Any], *, labels: bool) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    kept = {key: meta[key] for key in ("name", "namespace") if meta.get(key)}
    if labels and meta.get("labels"):
        kept["labels"] = dict(meta["labels"])
    return kept


def project(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of one exported object that the webhook reads, and nothing else."""
    kind = obj["kind"]
    head = {"apiVersion": obj["apiVersion"], "kind": kind}
    if kind in ("Namespace", "ServiceAccount"):
        return {**head, "metadata": _meta(obj, labels=True)}
    if kind == "ConfigMap":
        data = obj.get("data") or {}
        return {
            **head,
            "metadata": _meta(obj, labels=False),
            "data": {k: data[k] for k in CONFIG_KEYS if k in data},
        }
    if kind == "Node":
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        return {
            **head,
            "metadata": _meta(obj, labels=True),
            "spec": {k: spec[k] for k in ("taints", "unschedulable") if k in spec},
            "status": {"allocatable": status.get("allocatable") or {}},
        }
    if kind == NODE_POOL_KIND:
        meta = _meta(obj, labels=False)
        deleting = (obj.get("metadata") or {}).get("deletionTimestamp")
        if deleting:
            meta["deletionTimestamp"] = deleting
        return {**head, "metadata": meta, "spec": obj.get("spec") or {}}
    # SecurityGroupPolicy, NodeGroupTemplate: the spec is the verdict's input
    return {**head, "metadata": _meta(obj, labels=kind == TEMPLATE_KIND), "spec": obj.get("spec") or {}}


def listings() -> list[Any]:
    """The kinds exported, as the webhook's reflectors watch them (webhook/cluster.py WATCHES)."""
    from kube import client
    from kube.state_listing import Listing

    return [
        Listing("Namespace", client.NAMESPACES),
        Listing("ServiceAccount", client.SERVICE_ACCOUNTS),
        Listing(SGP_KIND, client.SECURITY_GROUP_POLICIES, optional=True),
        Listing(
            "ConfigMap", client.CONFIG_MAPS, VPC_CNI_CONFIG_NAMESPACE, f"metadata.name={VPC_CNI_CONFIG_NAME}"
        ),
        Listing(TEMPLATE_KIND, client.NODE_GROUP_TEMPLATES, optional=True),
        Listing("Node", client.NODES),
        Listing(NODE_POOL_KIND, client.NODE_POOLS, optional=True),
        Listing(EC2_NODE_CLASS_KIND, client.EC2_NODE_CLASSES, optional=True),
        Listing(AUTO_NODE_CLASS_KIND, client.AUTO_NODE_CLASSES, optional=True),
    ]


def export_state(
    kubeconfig: str | None,
    context: str | None,
    now: float | None = None,
    page_size: int | None = None,
    identity: Any = None,
) -> dict[str, Any]:
    """The state file's content: a `kind: List` of the projected objects, with its provenance
    (`identity`: the kubeconfig's ClusterIdentity when the caller has it already)."""
    from kube.state_listing import PAGE_SIZE, identify, list_from_kubeconfig

    identity = identity or identify(kubeconfig, context)
    objects = list_from_kubeconfig(kubeconfig, context, listings(), page_size or PAGE_SIZE)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
    annotations = {
        EXPORTED_AT: stamp,
        EXPORTED_CONTEXT: identity.context,
        EXPORTED_CLUSTER: identity.cluster,
        EXPORTED_SERVER: identity.server,
    }
    return {
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {"annotations": annotations},
        "items": [project(obj) for obj in objects],
    }


def provenance(annotations: Mapping[str, str]) -> dict[str, str]:
    """What an exported state file records about itself, from its List's annotations (empty for a
    hand-written one)."""
    return {key.removeprefix(f"{GROUP}/"): str(annotations[key]) for key in PROVENANCE if key in annotations}


def write_state(state: dict[str, Any], output: str | None, command: str, source: str) -> int:
    """Writes the state to `output` (standard output for None or -), saying on stderr what was
    written from `source`; exit status 1 when the file cannot be written."""
    text = yaml.safe_dump(state, sort_keys=False, default_flow_style=False)
    if output in (None, "-"):
        sys.stdout.write(HEADER + text)
        return 0
    try:
        Path(output).write_text(HEADER + text, encoding="utf-8")
    except OSError as err:
        print(f"{command}: {output}: {err.strerror or err}", file=sys.stderr)
        return 1
    kinds: dict[str, int] = {}
    for item in state["items"]:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
    counts = ", ".join(f"{n} {kind}" for kind, n in kinds.items()) or "no objects"
    print(f"wrote {output}: {counts} from {source}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from kube.client import KubeError
    from kube.kubeconfig import config_problem

    try:
        state = export_state(args.kubeconfig, args.context)
    except KubeError as err:
        problem = config_problem(
            err, "pass --kubeconfig PATH (without a cluster: fitguard state from-controller)"
        )
        print(f"fitguard state export: {problem or err}", file=sys.stderr)
        return 2 if problem else 1
    from fitguard.state_usable import missing_capacity

    gap = missing_capacity(state["items"])
    if gap is not None:
        # written all the same (it is what the cluster holds), but `fitguard check` will refuse it
        print(
            f"fitguard state export: warning: {gap}; `fitguard check` refuses such a state", file=sys.stderr
        )
    server = state["metadata"]["annotations"][EXPORTED_SERVER]
    return write_state(state, args.output, "fitguard state export", server)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "state",
        help="the cluster state the webhook and `fitguard check` judge by",
        description="Work with fitguard state files.",
    )
    actions = parser.add_subparsers(dest="state_command", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="write the state file of the cluster a kubeconfig points at",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config)"
    )
    export.add_argument("--context", help="kubeconfig context (default: the current one)")
    export.add_argument("-o", "--output", metavar="PATH", help="write here (default: standard output)")
    export.set_defaults(func=run)
    from fitguard.state_controller import register as register_from_controller

    register_from_controller(actions)
