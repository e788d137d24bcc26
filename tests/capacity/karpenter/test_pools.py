"""`judge_pools`: a pod against NodePools by their published templates. An EKS Auto Mode NodePool is
never the reason a branch-ENI pod is refused (fitguard does not model the guide's `auto-sgp`
mechanism), but it still refuses such a pod for what else it lacks; the first NodePool that takes
the pod admits it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from capacity.karpenter.automode import automode_class_from_object
from capacity.karpenter.fit import Change, NodePoolDecision, Reason, Shortfall
from capacity.karpenter.nodeclass import NodeClassError
from capacity.karpenter.pools import PoolsVerdict, judge_pools, pool_lines
from capacity.karpenter.published import PublishedNodePool, published
from tests.capacity.karpenter.test_published import NODECLASS, SETTINGS

GI = 2**30 * 1000  # milli-bytes


def pool(name: str, group: str, kind: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": group, "kind": kind, "name": name},
                    "requirements": [
                        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}
                    ],
                }
            }
        },
    }


def record(name: str, *, auto: bool) -> PublishedNodePool:
    if auto:
        nodepool, nodeclass = pool(name, "eks.amazonaws.com", "NodeClass"), {"spec": {}}
    else:
        nodepool, nodeclass = pool(name, "karpenter.k8s.aws", "EC2NodeClass"), NODECLASS
    made, _ = published(nodepool, nodeclass, SETTINGS, {}, lambda offer: {})
    return made


AUTO, EC2 = record("auto", auto=True), record("ec2", auto=False)


def test_an_automode_nodepool_leaves_a_branch_eni_pod_unjudged_when_all_else_fits() -> None:
    """One branch ENI and a Gi of storage: the Auto Mode NodePool would take it but for the branch
    ENI, so it is unjudged, never refused; the same ask of the EC2 NodePool (m5.large has 9) fits."""
    ask = {"vpc.amazonaws.com/pod-eni": 1000, "ephemeral-storage": GI}
    assert judge_pools(["auto"], {"auto": AUTO}, {}, ask) == PoolsVerdict(False, ("auto",), ())
    assert judge_pools(["auto", "ec2"], {"auto": AUTO, "ec2": EC2}, {}, ask) == PoolsVerdict(True, (), ())


def test_an_automode_nodepool_refuses_a_branch_eni_pod_for_what_else_it_lacks() -> None:
    """200Gi is more than the 80Gi default volume offers: refused on ephemeral-storage alone."""
    ask = {"vpc.amazonaws.com/pod-eni": 1000, "ephemeral-storage": 200 * GI}
    verdict = judge_pools(["auto"], {"auto": AUTO}, {}, ask)
    assert (verdict.admitted, verdict.unjudged) == (False, ())
    [decision] = verdict.refused
    assert [(r.nodepool, r.shortfall) for r in decision.reasons] == [("auto", Shortfall.EPHEMERAL_STORAGE)]


def test_a_pod_without_a_branch_eni_is_judged_by_an_automode_nodepool_as_by_any() -> None:
    """No pod-eni asked: the Auto Mode NodePool judges the whole ask and admits what fits."""
    assert judge_pools(["auto"], {"auto": AUTO}, {}, {"ephemeral-storage": GI}) == PoolsVerdict(True, (), ())


@pytest.mark.parametrize(
    ("nodeclass", "says"),
    [
        ({"spec": "big"}, "spec: expected a map"),
        ({"spec": {"ephemeralStorage": ["80Gi"]}}, "spec.ephemeralStorage: expected a map"),
        ({"spec": {"ephemeralStorage": {"size": "lots"}}}, "spec.ephemeralStorage.size"),
    ],
)
def test_an_unreadable_automode_nodeclass_is_refused_naming_the_field(nodeclass: object, says: str) -> None:
    """An Auto Mode NodeClass whose storage cannot be read gives no template (the controller says
    why under errors["nodepool/<name>"]), never a guessed size; 80Gi only when none is given."""
    with pytest.raises(NodeClassError, match=re.escape(says)):
        automode_class_from_object(nodeclass)  # type: ignore[arg-type]
    assert automode_class_from_object({"spec": {}}).ephemeral_bytes == 80 * 2**30


def _ec2_record(nodeclass: dict[str, Any], daemonsets: dict[str, int]) -> PublishedNodePool:
    """The `ec2` NodePool (m5.large) under `nodeclass`, the DaemonSets asking `daemonsets` on its nodes."""
    made, _ = published(
        pool("ec2", "karpenter.k8s.aws", "EC2NodeClass"),
        nodeclass,
        SETTINGS,
        {},
        lambda offer: dict(daemonsets),
    )
    return made


def test_a_refusal_line_gives_each_reason_and_each_field_that_would_let_the_pod_fit() -> None:
    """8 cpus and 30Gi of ephemeral-storage on an m5.large NodePool whose class sizes a volume it
    does not mark as the root: one line, its two reasons joined by "; ", the storage reason naming
    both fields (mark the volume as root, or grow the root volume) joined by " or "."""
    sized = {
        "spec": {
            **NODECLASS["spec"],
            "blockDeviceMappings": [{"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}}],
        }
    }
    verdict = judge_pools(
        ["ec2"], {"ec2": _ec2_record(sized, {})}, {}, {"cpu": 8000, "ephemeral-storage": 30 * GI}
    )
    assert pool_lines(verdict.refused) == [
        "NodePool ec2: no allowed instance type offers enough of a resource (cpu: needs 8 with the "
        "DaemonSets, the allowed types offer at most 1930m): change NodePool "
        "spec.template.spec.requirements; "
        "no allowed instance type offers enough ephemeral-storage (ephemeral-storage: needs 30Gi with the "
        "DaemonSets, the allowed types offer at most 17Gi): change EC2NodeClass "
        "spec.blockDeviceMappings[].rootVolume: true or "
        "EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    ]


def test_the_daemonsets_requests_count_against_karpenters_estimate() -> None:
    """DaemonSets asking 2Gi of ephemeral-storage on m5.large (17Gi): a pod of 15Gi fits; one of
    16Gi is refused, needing 18Gi with the DaemonSets, the reason whole."""
    record = _ec2_record(NODECLASS, {"ephemeral-storage": 2 * GI})
    assert judge_pools(["ec2"], {"ec2": record}, {}, {"ephemeral-storage": 15 * GI}) == PoolsVerdict(
        True, (), ()
    )
    reason = Reason(
        "ec2",
        Shortfall.EPHEMERAL_STORAGE,
        (Change.ROOT_VOLUME_SIZE,),
        "ephemeral-storage: needs 18Gi with the DaemonSets, the allowed types offer at most 17Gi",
        "ephemeral-storage",
        18 * GI,
        17 * GI,
    )
    assert judge_pools(["ec2"], {"ec2": record}, {}, {"ephemeral-storage": 16 * GI}) == PoolsVerdict(
        False, (), (NodePoolDecision("ec2", False, (), (reason,)),)
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"tolerations": "all"},
        {"nodeSelector": "zone-a"},
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}
                        ]
                    }
                }
            }
        },
    ],
    ids=["tolerations-not-a-list", "node-selector-not-a-map", "unknown-operator"],
)
def test_a_pod_whose_requirements_cannot_be_read_leaves_each_nodepool_unjudged_by_name(
    spec: dict[str, Any],
) -> None:
    """A pod spec the NodePools' judgement cannot read is never denied: every NodePool is unjudged,
    each by its name, and the pod is not admitted by a NodePool."""
    published_ = {"auto": AUTO, "ec2": EC2}
    assert judge_pools(["ec2", "auto"], published_, spec, {"cpu": 1000}) == PoolsVerdict(
        False, ("auto", "ec2"), ()
    )


def test_a_published_template_that_cannot_be_rebuilt_is_unjudged_and_the_next_nodepool_judged() -> None:
    """A published template edited by hand to a requirement operator Karpenter has not ("Near"):
    that NodePool alone is unjudged, named; the NodePools after it are still judged, and one that
    takes the pod admits it."""
    raw = EC2.to_object()
    raw["nodePool"] = "a-edited"
    raw["template"]["spec"]["requirements"].append(
        {"key": "node.kubernetes.io/instance-type", "operator": "Near", "values": ["m5.large"]}
    )
    edited = PublishedNodePool.from_object(raw)
    assert judge_pools(["a-edited"], {"a-edited": edited}, {}, {"cpu": 1000}) == PoolsVerdict(
        False, ("a-edited",), ()
    )
    both = {"a-edited": edited, "ec2": EC2}
    assert judge_pools(["a-edited", "ec2"], both, {}, {"cpu": 1000}) == PoolsVerdict(True, (), ())
