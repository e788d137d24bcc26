"""controller/nodepools.py for EKS Auto Mode: a NodePool whose nodeClassRef names an
`eks.amazonaws.com` NodeClass is built from that NodeClass (never from an EC2NodeClass of the same
name), and the memory of joined nodes, which fitguard matches to an EC2NodeClass by its label, is
not applied to it."""

from __future__ import annotations

from typing import Any

from capacity.karpenter.nodeclass import KarpenterOptions
from capacity.quantity import canonical_quantity
from controller.nodepools import nodepool_outcomes


def _pool(name: str, ref: dict[str, str]) -> dict[str, Any]:
    requirement = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}
    return {
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": [requirement]}}},
    }


AUTO_REF = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "shared"}
EC2_REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "shared"}
EC2_CLASS = {"metadata": {"name": "shared"}, "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}]}}
AUTO_CLASS = {"metadata": {"name": "shared"}, "spec": {"ephemeralStorage": {"size": "100Gi"}}}
# a joined m5.large of the EC2NodeClass `shared`, with less memory than Karpenter's estimate
NODE = {
    "metadata": {
        "name": "ip-10-0-0-1",
        "labels": {
            "karpenter.k8s.aws/ec2nodeclass": "shared",
            "node.kubernetes.io/instance-type": "m5.large",
            "karpenter.sh/nodepool": "ec2",
        },
    },
    "status": {"capacity": {"memory": "7000Mi"}},
}


def _allocatable(outcomes: Any, name: str) -> dict[str, str]:
    template = next(o.template for o in outcomes.outcomes if o.name == name)
    [(_, offered)] = template.karpenter.offers
    return {k: canonical_quantity(v, k) for k, v in offered.items() if k in ("memory", "ephemeral-storage")}


def test_each_nodepool_is_built_from_the_kind_of_class_it_names() -> None:
    """Two NodePools name a class `shared`, one an EC2NodeClass, one an Auto Mode NodeClass: each is
    built from its own (17Gi of the AL2023 default volume, 89Gi of the NodeClass's 100Gi); the
    EC2NodeClass's joined node (7000Mi, less 574Mi kube-reserved and 100Mi eviction: 6326Mi)
    lowers the EC2 NodePool's memory only."""
    outcomes = nodepool_outcomes(
        [_pool("ec2", EC2_REF), _pool("auto", AUTO_REF)],
        [EC2_CLASS],
        [NODE],
        [],
        KarpenterOptions(),
        automode_classes=[AUTO_CLASS],
    )
    assert outcomes.errors == {}
    assert _allocatable(outcomes, "ec2") == {"memory": "6326Mi", "ephemeral-storage": "17Gi"}
    assert _allocatable(outcomes, "auto") == {"memory": "6903Mi", "ephemeral-storage": "89Gi"}


def test_an_ec2nodeclass_is_not_taken_for_a_missing_automode_nodeclass() -> None:
    """The Auto Mode NodePool's NodeClass is absent: no template, the error names the NodeClass."""
    outcomes = nodepool_outcomes([_pool("auto", AUTO_REF)], [EC2_CLASS], [], [], KarpenterOptions())
    assert outcomes.outcomes == ()
    assert outcomes.errors == {
        "nodepool/auto": "NodeClass 'shared' (spec.template.spec.nodeClassRef) not found"
    }
