"""The NodePool template (capacity/karpenter/template.py) and the fit check (fit.py): boundary pods
one unit over an instance type's allocatable are refused naming the NodePool and the field to
change, one unit under are taken; taints, requirements, minValues, DaemonSet overhead; EKS Auto
Mode (automode.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capacity.karpenter.discovered import discovered_memory
from capacity.karpenter.fit import Change, NodePoolDecision, Shortfall, judge
from capacity.karpenter.pools import reason_words
from capacity.karpenter.template import KarpenterTemplate, build_template
from capacity.quantity import parse_quantity

GI = 2**30 * 1000  # one Gi in milli-units
AL2023: dict[str, Any] = {"spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}]}}
AUTO_REF = {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"}


def _pool(types: list[str], name: str = "general", **spec: Any) -> dict[str, Any]:
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}]
    return {
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": requirements,
                    **spec,
                }
            }
        },
    }


def _template(types: list[str], nodeclass: dict[str, Any] | None = None, **spec: Any) -> KarpenterTemplate:
    pool = _pool(types, **spec)
    return build_template(pool, nodeclass or AL2023, names=types)


def _q(text: str) -> int:
    return parse_quantity(text)


def _only(verdict: NodePoolDecision) -> Any:
    assert not verdict.fits
    (reason,) = verdict.reasons
    assert reason.nodepool == "general"
    return reason


def test_ephemeral_storage_one_byte_over_m5_large_is_refused_naming_the_root_volume() -> None:
    """m5.large AL2023 offers 17Gi: a pod asking 17Gi fits, one byte more does not, and the reason
    names the NodePool and the EC2NodeClass root volume (m5.large has no instance store, so RAID0
    would not help)."""
    template = _template(["m5.large"])
    assert judge(template, {}, {"ephemeral-storage": _q("17Gi")}).instance_types == ("m5.large",)
    reason = _only(judge(template, {}, {"ephemeral-storage": _q("17Gi") + 1000}))
    assert reason.shortfall is Shortfall.EPHEMERAL_STORAGE
    assert reason.changes == (Change.ROOT_VOLUME_SIZE,)
    assert (reason.needed, reason.best_offered) == (_q("17Gi") + 1000, _q("17Gi"))


def test_raid0_is_named_when_an_allowed_nvme_type_would_then_fit() -> None:
    """m5d.large has 75G of NVMe: under RAID0 it offers 75G less 1Gi and 7.5G, so a 50Gi pod would
    fit, and the reason names instanceStorePolicy RAID0 before the root volume."""
    reason = _only(judge(_template(["m5d.large"]), {}, {"ephemeral-storage": _q("50Gi")}))
    assert reason.changes == (Change.INSTANCE_STORE_RAID0, Change.ROOT_VOLUME_SIZE)
    raid0 = {"spec": {**AL2023["spec"], "instanceStorePolicy": "RAID0"}}
    assert judge(_template(["m5d.large"], raid0), {}, {"ephemeral-storage": _q("50Gi")}).fits


def test_a_sized_mapping_not_marked_root_is_named() -> None:
    """A 100Gi mapping on /dev/xvdb is not where AL2023's pods write (/dev/xvda), so the node offers
    the default 20Gi; the reason names rootVolume: true, which would make that volume count."""
    nodeclass = {
        "spec": {
            **AL2023["spec"],
            "blockDeviceMappings": [{"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi"}}],
        }
    }
    reason = _only(judge(_template(["m5.large"], nodeclass), {}, {"ephemeral-storage": _q("50Gi")}))
    assert reason.changes == (Change.ROOT_VOLUME_FLAG, Change.ROOT_VOLUME_SIZE)
    marked = copy.deepcopy(nodeclass)
    marked["spec"]["blockDeviceMappings"][0]["rootVolume"] = True
    assert judge(_template(["m5.large"], marked), {}, {"ephemeral-storage": _q("50Gi")}).fits
    # once a mapping is marked, only its size is left to change
    reason = _only(judge(_template(["m5.large"], marked), {}, {"ephemeral-storage": _q("100Gi")}))
    assert reason.changes == (Change.ROOT_VOLUME_SIZE,)


def test_daemonset_overhead_is_taken_from_the_allocatable() -> None:
    """The DaemonSet pods that would run there are added to the pod's requests, pods included."""
    template = _template(["m5.large"])
    daemons = {"ephemeral-storage": GI, "pods": 2000}
    assert judge(template, {}, {"ephemeral-storage": _q("16Gi")}, daemons).fits
    assert not judge(template, {}, {"ephemeral-storage": _q("16Gi") + 1000}, daemons).fits
    # 29 pods: 26 DaemonSet pods and this one fit, 27 do not
    assert judge(template, {}, {}, {"pods": 28000}).fits
    assert not judge(template, {}, {}, {"pods": 29000}).fits


def test_no_branch_eni_on_a_t3_names_the_instance_type_requirement() -> None:
    """'should not launch AWS Pod ENI on a t3': a NodePool of t3 only cannot take a pod-eni pod;
    the field to change is the NodePool's instance-type requirement, which excludes every type with
    enough branch ENIs (m5.large offers 9); unless no type has that many."""
    reason = _only(judge(_template(["t3.large"]), {}, {"vpc.amazonaws.com/pod-eni": 1000}))
    assert reason.shortfall is Shortfall.BRANCH_ENIS
    assert reason.changes == (Change.INSTANCE_TYPE_REQUIREMENT,)
    both = _template(["t3.large", "m5.large"])
    assert judge(both, {}, {"vpc.amazonaws.com/pod-eni": 9000}).instance_types == ("m5.large",)
    assert not judge(both, {}, {"vpc.amazonaws.com/pod-eni": 10000}).fits
    # no instance type anywhere offers 1000 branch ENIs: the requirement is not the field to change
    reason = _only(judge(both, {}, {"vpc.amazonaws.com/pod-eni": 1000 * 1000}))
    assert (reason.shortfall, reason.changes) == (Shortfall.BRANCH_ENIS, ())


def test_taints_startup_taints_and_prefer_no_schedule() -> None:
    """A NoSchedule taint must be tolerated (the reason names the taint); startup taints and
    PreferNoSchedule taints never keep a pod off."""
    taints = [
        {"key": "dedicated", "value": "shop", "effect": "NoSchedule"},
        {"key": "soft", "effect": "PreferNoSchedule"},
    ]
    startup = [{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}]
    template = _template(["m5.large"], taints=taints, startupTaints=startup)
    reason = _only(judge(template, {}, {}))
    assert (reason.shortfall, reason.changes, reason.detail) == (
        Shortfall.TAINT,
        (Change.TOLERATE_TAINT,),
        "dedicated=shop:NoSchedule",
    )
    tolerated = {
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "shop", "effect": "NoSchedule"}]
    }
    assert judge(template, tolerated, {}).fits


def test_requirements_custom_labels_and_instance_types() -> None:
    """A custom label the NodePool does not define refuses the pod (naming the key); NotIn is
    allowed; a key the NodePool constrains must intersect; a well-known label it leaves open but no
    allowed type carries leaves no instance type."""
    template = _template(["m5.large"])
    reason = _only(judge(template, {"nodeSelector": {"app": "x"}}, {}))
    assert (reason.shortfall, reason.resource) == (Shortfall.REQUIREMENTS, "app")
    not_in = [{"key": "app", "operator": "NotIn", "values": ["x"]}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": not_in}]
            }
        }
    }
    assert judge(template, {"affinity": affinity}, {}).fits
    # the NodePool constrains the instance type: a pod asking another is incompatible with it
    reason = _only(judge(template, {"nodeSelector": {"node.kubernetes.io/instance-type": "c5.large"}}, {}))
    assert reason.shortfall is Shortfall.REQUIREMENTS
    # it leaves the family open (well-known): compatible, but no allowed type is of family c5
    reason = _only(judge(template, {"nodeSelector": {"karpenter.k8s.aws/instance-family": "c5"}}, {}))
    assert reason.shortfall is Shortfall.NO_INSTANCE_TYPE


def test_the_guard_affinity_never_keeps_a_pod_from_a_nodepool_that_does_not_set_the_label() -> None:
    """The exhausted-node guard's affinity (`fitguard.io/branch-eni-exhausted DoesNotExist`, which
    /mutate adds before /validate judges) is on a key the NodePool does not define: compatible
    (requirements.go `Compatible` allows DoesNotExist there), so a guarded pod fits whatever
    fitguard's label says of live nodes; the decision is the unguarded pod's, whole. Only a NodePool
    whose own template sets the label gives nodes the guarded pod can never have: refused, naming
    the key."""
    from capacity.names import EXHAUSTED_LABEL

    guard = [{"key": EXHAUSTED_LABEL, "operator": "DoesNotExist"}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": guard}]
            }
        }
    }
    requests = {"cpu": 1000, "vpc.amazonaws.com/pod-eni": 1000}
    template = _template(["m5.large"])
    assert judge(template, {"affinity": affinity}, requests) == judge(template, {}, requests)
    assert judge(template, {"affinity": affinity}, requests).fits
    pool = _pool(["m5.large"])
    pool["spec"]["template"]["metadata"] = {"labels": {EXHAUSTED_LABEL: "true"}}
    reason = _only(judge(build_template(pool, AL2023, names=["m5.large"]), {"affinity": affinity}, requests))
    assert (reason.shortfall, reason.resource) == (Shortfall.REQUIREMENTS, EXHAUSTED_LABEL)


def test_the_second_required_term_can_fit() -> None:
    """Karpenter relaxes to the next required node-selector term: the pod fits through it."""
    terms = [
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]},
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
    ]
    pod = {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    }
    assert judge(_template(["m5.large"]), pod, {}).fits


def test_min_values_over_the_types_that_fit() -> None:
    """minValues counts the types that fit the pod: 3 instance types required, only two of the
    three allowed offer 30Gi of memory."""
    requirements = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["m5.large", "m5.4xlarge", "m5.8xlarge"],
            "minValues": 3,
        }
    ]
    pool = _pool([], requirements=requirements)
    template = build_template(pool, AL2023, names=["m5.large", "m5.4xlarge", "m5.8xlarge"])
    assert judge(template, {}, {"memory": _q("1Gi")}).fits
    reason = _only(judge(template, {}, {"memory": _q("30Gi")}))
    assert reason.shortfall is Shortfall.MIN_VALUES


def test_resources_no_one_type_offers_together() -> None:
    """c5.2xlarge has the cpu, r5.large the memory; no one type has both: a combination reason."""
    template = _template(["c5.2xlarge", "r5.large"])
    reason = _only(judge(template, {}, {"cpu": 7000, "memory": _q("14Gi")}))
    assert reason.shortfall is Shortfall.RESOURCES and reason.resource is None


def test_a_negative_allocatable_never_fits() -> None:
    """resources.Fits: a type whose reservations exceed its memory takes no pod at all."""
    nodeclass = {"spec": {**AL2023["spec"], "kubelet": {"systemReserved": {"memory": "20Gi"}}}}
    reason = _only(judge(_template(["m5.large"], nodeclass), {}, {"cpu": 100}))
    assert reason.shortfall is Shortfall.RESOURCES


def _auto(types: list[str], nodeclass: dict[str, Any] | None = None) -> KarpenterTemplate:
    pool = _pool(types)
    pool["spec"]["template"]["spec"]["nodeClassRef"] = AUTO_REF
    return build_template(pool, nodeclass or {"spec": {}}, names=types)


def test_auto_mode_pods_storage_and_no_branch_enis() -> None:
    """EKS Auto Mode: max pods min(110, ENI-limited), ephemeral storage the NodeClass size (80Gi by
    default, the larger NVMe store where there is one), and no branch ENIs on any type, so a
    pod-eni pod has no field to change in this NodePool."""
    template = _auto(["m5.large", "m5.24xlarge", "m6idn.32xlarge"])
    by_name = {o.name: o.allocatable for o in template.offers}
    assert by_name["m5.large"]["pods"] == 29000
    assert by_name["m5.24xlarge"]["pods"] == 110000
    assert by_name["m5.large"]["ephemeral-storage"] == _q("80Gi") - _q("1Gi") - _q("8Gi")
    assert by_name["m6idn.32xlarge"]["ephemeral-storage"] == _q("7600G") - _q("1Gi") - _q("760G")
    reason = _only(judge(template, {}, {"vpc.amazonaws.com/pod-eni": 1000}))
    assert (reason.shortfall, reason.changes) == (Shortfall.AUTOMODE_NO_BRANCH_ENIS, ())
    assert reason_words(reason) == (
        "security groups for pods are not supported on EKS Auto Mode (vpc.amazonaws.com/pod-eni:"
        " needs 1 with the DaemonSets, the allowed types offer at most 0)"
    )
    bigger = _auto(["m5.large"], {"spec": {"ephemeralStorage": {"size": "200Gi"}}})
    assert bigger.offers[0].allocatable["ephemeral-storage"] == _q("200Gi") - _q("1Gi") - _q("20Gi")
    reason = _only(judge(bigger, {}, {"ephemeral-storage": _q("180Gi")}))
    assert reason.changes == (Change.AUTOMODE_EPHEMERAL_SIZE,)


def test_a_nodepool_with_empty_parts_is_read_as_empty() -> None:
    """null spec parts are empty, not an error: no requirements allows every type given."""
    template = build_template(
        {"metadata": {"name": "bare"}, "spec": {"template": {"spec": None}}}, AL2023, names=["m5.large"]
    )
    assert [o.name for o in template.offers] == ["m5.large"]


def test_labels_of_an_offer_are_the_nodepools_and_the_types() -> None:
    """A node of the template carries the NodePool's labels and its type's single-valued ones."""
    offer = _template(["m5.large"]).offers[0]
    assert offer.labels["karpenter.sh/nodepool"] == "general"
    assert offer.labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert offer.labels["karpenter.k8s.aws/instance-family"] == "m5"


@pytest.mark.parametrize(
    "bad",
    [
        {"tolerations": {"key": "a"}},
        {"nodeSelector": ["a"]},
        {"affinity": {"nodeAffinity": ["x"]}},
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ["x"]}
                }
            }
        },
    ],
)
def test_a_bad_pod_field_is_refused_with_its_name(bad: dict[str, Any]) -> None:
    """A pod field that cannot be read raises, naming it, rather than being read as empty."""
    with pytest.raises((TypeError, ValueError), match=r"tolerations|nodeSelector|nodeAffinity"):
        judge(_template(["m5.large"]), bad, {})


def test_a_joined_nodes_memory_replaces_the_estimate() -> None:
    """UpdateInstanceTypeCapacityFromNode: the smallest memory capacity of the class's nodes of a
    type replaces the estimate (7577Mi for m5.large); the overhead stays as estimated."""
    nodes = [
        {
            "metadata": {
                "labels": {
                    "karpenter.k8s.aws/ec2nodeclass": "default",
                    "node.kubernetes.io/instance-type": "m5.large",
                }
            },
            "status": {"capacity": {"memory": memory}},
        }
        for memory in ("7800Mi", "7700Mi", "bogus")
    ] + [
        {
            "metadata": {
                "labels": {
                    "karpenter.k8s.aws/ec2nodeclass": "other",
                    "node.kubernetes.io/instance-type": "m5.large",
                }
            },
            "status": {"capacity": {"memory": "1Gi"}},
        }
    ]
    discovered = discovered_memory(nodes, "default")
    assert discovered == {"m5.large": _q("7700Mi")}
    template = build_template(_pool(["m5.large"]), AL2023, names=["m5.large"], discovered=discovered)
    # 7700Mi less 574Mi kube-reserved and 100Mi eviction (6903Mi with the estimate)
    assert template.offers[0].allocatable["memory"] == _q("7026Mi")
    assert judge(template, {}, {"memory": _q("7026Mi")}).fits
    assert not judge(template, {}, {"memory": _q("7026Mi") + 1000}).fits
