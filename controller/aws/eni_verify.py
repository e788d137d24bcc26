"""`--verify-with-ec2`: count the branch ENIs EC2 holds per node and report the leaked ones.

The VPC resource controller tags what it creates `eks:eni:owner=eks-vpc-resource-controller`; a
branch ENI also carries `vpcresources.k8s.aws/trunk-eni-id`, and the trunk ENI (description
`aws-k8s-trunk-eni`) is attached to the node's instance. Source: the tags and descriptions shown by
`aws ec2 describe-network-interfaces` on EKS clusters with security groups for pods (AWS EKS
workshop and best-practices guide, "Security groups per pod").
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Gauge

from capacity.eni_audit import Audit, BranchEni, LeakTracker
from capacity.records import NodeRecord, PodRecord
from controller.aws.clients import AWS_ERRORS, describe_error
from kube.events import EventRecorder, ObjectRef

log = logging.getLogger(__name__)
OWNER_TAG = ("eks:eni:owner", "eks-vpc-resource-controller")
TRUNK_TAG = "vpcresources.k8s.aws/trunk-eni-id"
TRUNK_DESCRIPTION = "aws-k8s-trunk-eni"


def describe_branch_enis(ec2: Any, cluster_name: str = "") -> tuple[list[BranchEni], dict[str, str]]:
    """(branch ENIs, trunk ENI id -> instance id) of the VPC resource controller, all pages."""
    filters = [{"Name": f"tag:{OWNER_TAG[0]}", "Values": [OWNER_TAG[1]]}]
    if cluster_name:
        filters.append({"Name": f"tag:kubernetes.io/cluster/{cluster_name}", "Values": ["owned"]})
    branches: list[BranchEni] = []
    trunks: dict[str, str] = {}
    for page in ec2.get_paginator("describe_network_interfaces").paginate(Filters=filters):
        for eni in page.get("NetworkInterfaces") or ():
            tags = {t.get("Key"): t.get("Value") for t in eni.get("TagSet") or ()}
            eni_id = str(eni.get("NetworkInterfaceId") or "")
            if tags.get(TRUNK_TAG):
                branches.append(BranchEni(eni_id, str(tags[TRUNK_TAG])))
            elif eni.get("InterfaceType") == "trunk" or eni.get("Description") == TRUNK_DESCRIPTION:
                trunks[eni_id] = str((eni.get("Attachment") or {}).get("InstanceId") or "")
    return branches, trunks


class Ec2Verifier:
    """One per controller; the leader calls `verify` each cycle."""

    def __init__(
        self,
        ec2: Any,
        window: float,
        cluster_name: str = "",
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.ec2 = ec2
        self.cluster_name = cluster_name
        self.recorder = recorder
        self.tracker = LeakTracker(window)
        self.registry = registry or CollectorRegistry()
        self.held = Gauge(
            "fitguard_branch_eni_ec2", "Branch ENIs EC2 holds per node", ["node"], registry=self.registry
        )
        self.leaked = Gauge(
            "fitguard_branch_eni_leaked",
            "Branch ENIs no pod has claimed for longer than the release window, per node",
            ["node"],
            registry=self.registry,
        )
        self._reported: set[str] = set()

    def verify(
        self, pods: Iterable[PodRecord], nodes: Iterable[NodeRecord], *, now: float, window: float
    ) -> dict[str, Any]:
        """Reads EC2 and audits; a failed read changes nothing (no decision on partial data)."""
        try:
            enis, trunks = describe_branch_enis(self.ec2, self.cluster_name)
        except AWS_ERRORS as err:
            reason = describe_error("DescribeNetworkInterfaces", err)
            log.warning("EC2 branch ENI check skipped: %s", reason)
            return {"error": reason}
        self.tracker.window = window
        claimed = {eni for pod in pods for eni in pod.eni_ids}
        instances = {node.instance_id: node.name for node in nodes if node.instance_id}
        audit = self.tracker.audit(enis, trunks, claimed, instances, now)
        self._publish(audit, instances.values())
        return {
            "perNode": dict(sorted(audit.per_node.items())),
            "leaked": [
                {
                    "eniId": x.eni_id,
                    "node": x.node,
                    "instanceId": x.instance_id,
                    "unclaimedSeconds": round(x.unclaimed_for),
                }
                for x in audit.leaks
            ],
        }

    def _publish(self, audit: Audit, nodes: Iterable[str] = ()) -> None:
        self.held.clear()
        self.leaked.clear()
        for node in nodes:
            self.leaked.labels(node=node)  # a 0 series for every node: a leak is a change, not a new series
        for node, count in audit.per_node.items():
            self.held.labels(node=node).set(count)
        for leak in audit.leaks:
            self.leaked.labels(node=leak.node).inc()
            if leak.eni_id in self._reported:
                continue
            self._reported.add(leak.eni_id)
            note = (
                f"branch ENI {leak.eni_id} on instance {leak.instance_id or '?'} has been claimed by no pod "
                f"for {leak.unclaimed_for:.0f} s, past the release window: it is leaked and takes a branch "
                "ENI slot the scheduler counts as free; delete the ENI or report it to AWS support"
            )
            log.warning("leaked branch ENI", extra={"eni": leak.eni_id, "node": leak.node})
            if self.recorder is not None and leak.node:
                self.recorder.warning(
                    ObjectRef("Node", leak.node), "BranchENILeaked", note, action="VerifyEC2"
                )
        self._reported &= {leak.eni_id for leak in audit.leaks}
