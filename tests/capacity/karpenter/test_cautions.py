"""What a NodePool that takes a pod may still get wrong, and what its live nodes say.

- A pod that requests a branch ENI is warned of the types Karpenter would launch for it whose
  branch ENIs the VPC resource controller never gives (i4i.large: Karpenter's table trunks it, the
  controller's does not); a type Karpenter itself gives no pod-eni (t3.large) is no risk, since
  Karpenter never launches it for such a pod, and is not named.
- A NodePool's live nodes that offer less ephemeral-storage than Karpenter's estimate are published
  with both numbers; the webhook judges with the live number: a refusal when every type the pod
  would get is short on nodes launched under the EC2NodeClass as it is (its hash annotations), a
  caution (admitted) when a reading is from another class spec or another type would do.
"""

from __future__ import annotations

from typing import Any

from capacity.karpenter.cautions import Caution, CautionKind, LiveShort, untrunked
from capacity.karpenter.fit import Change, NodePoolDecision, Reason, Shortfall
from capacity.karpenter.live import HASH, HASH_VERSION, LiveStorage, live_storage
from capacity.karpenter.nodeclass import KarpenterOptions
from capacity.karpenter.pools import PoolsVerdict, caution_lines, judge_pools, pool_lines
from capacity.karpenter.published import PROVIDER, PublishedNodePool, published
from capacity.template import NodeGroupTemplate

GI = 2**30 * 1000  # milli-units of a Gi
M5_ESTIMATE = 17 * GI  # Karpenter's m5.large on AL2023, 20Gi root volume
CURRENT = {HASH: "1234", HASH_VERSION: "v6"}


def _pool(name: str, types: list[str]) -> dict[str, Any]:
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    requirement = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
    return {
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": [requirement]}}},
    }


NODECLASS = {
    "metadata": {"name": "default", "annotations": dict(CURRENT)},
    "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r"},
}


def _node(
    name: str, pool: str, instance_type: str, storage: str, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": instance_type}
    meta = {
        "name": name,
        "labels": labels,
        "annotations": dict(CURRENT if annotations is None else annotations),
    }
    return {"metadata": meta, "status": {"allocatable": {"ephemeral-storage": storage}}}


def _record(name: str, types: list[str], nodes: list[dict[str, Any]] = ()) -> PublishedNodePool:  # type: ignore[assignment]
    """The template the controller publishes, read back as the webhook reads it."""
    record, _ = published(_pool(name, types), NODECLASS, KarpenterOptions(), {}, lambda _o: {}, nodes)
    back = NodeGroupTemplate.from_object(
        NodeGroupTemplate(name, provider=PROVIDER, karpenter=record).to_object()
    )
    assert back.karpenter is not None
    return back.karpenter


def _judge(records: list[PublishedNodePool], requests: dict[str, int]) -> PoolsVerdict:
    return judge_pools([r.nodepool for r in records], {r.nodepool: r for r in records}, {}, requests)


def test_live_storage_is_the_smallest_of_the_nodepools_nodes_under_the_estimate() -> None:
    """Per type, the smallest allocatable of the NodePool's nodes, only where it is below the
    estimate; nodes of another NodePool or type, or unreadable, are not read; nodes launched under
    the class as it is win over others, which count (not current) only when a type has none."""
    nodes = [
        _node("a", "general", "m5.large", "16Gi"),
        _node("b", "general", "m5.large", "15Gi"),
        _node("c", "general", "m5.large", "1Gi", {HASH: "old", HASH_VERSION: "v6"}),  # an earlier class spec
        _node("d", "other", "m5.large", "1Gi"),
        _node("e", "general", "m5.xlarge", "12Gi", {}),  # no hash annotations: not current
        _node("f", "general", "c5.large", "17Gi"),  # at the estimate: nothing to show
        _node("g", "general", "c5.large", "lots"),
    ]
    estimates = {"m5.large": M5_ESTIMATE, "m5.xlarge": M5_ESTIMATE, "c5.large": M5_ESTIMATE}
    assert live_storage(nodes, "general", NODECLASS, estimates) == {
        "m5.large": LiveStorage(15 * GI, 2, True),
        "m5.xlarge": LiveStorage(12 * GI, 1, False),
    }
    # a class without its hash annotations makes no node current
    bare = {"metadata": {"name": "default"}}
    # ... not even a node without them either
    assert live_storage(nodes[4:5], "general", bare, estimates) == {
        "m5.xlarge": LiveStorage(12 * GI, 1, False)
    }
    assert live_storage(nodes[:1], "general", bare, estimates) == {"m5.large": LiveStorage(16 * GI, 1, False)}


def test_the_live_numbers_are_published_beside_the_estimate_and_read_back() -> None:
    """The template's instance type carries its estimate (allocatable) and its live nodes' number."""
    record, _ = published(
        _pool("general", ["m5.large"]),
        NODECLASS,
        KarpenterOptions(),
        {},
        lambda _o: {},
        [_node("a", "general", "m5.large", "16Gi")],
    )
    [entry] = record.to_object()["instanceTypes"]
    assert entry["allocatable"]["ephemeral-storage"] == "17Gi"
    assert entry["live"] == {"allocatable": {"ephemeral-storage": "16Gi"}, "nodes": 1, "sameNodeClass": True}
    assert PublishedNodePool.from_object(record.to_object()).live == {
        "m5.large": LiveStorage(16 * GI, 1, True)
    }
    # a template written without the flag (by hand, an older controller) is never read as current
    raw = record.to_object()
    del raw["instanceTypes"][0]["live"]["sameNodeClass"]
    assert PublishedNodePool.from_object(raw).live == {"m5.large": LiveStorage(16 * GI, 1, False)}


def test_untrunked_names_the_types_the_resource_controller_does_not_trunk() -> None:
    """The resource controller's table decides: m5.large trunks, i4i.large and t3.large do not; a
    type fitguard does not know is not named."""
    assert untrunked(["m5.large", "i4i.large", "t3.large", "zz9.huge"]) == ("i4i.large", "t3.large")


def test_a_pod_needing_a_branch_eni_is_warned_of_types_karpenter_would_launch_untrunked() -> None:
    """i4i.large and m5.large both fit a pod with one pod-eni by Karpenter's numbers (9 each): the
    pod is admitted with a warning naming i4i.large only; t3.large, which Karpenter gives no
    pod-eni, is never launched for it and not named; a pod without pod-eni is not warned."""
    record = _record("general", ["m5.large", "i4i.large", "t3.large"])
    verdict = _judge([record], {"vpc.amazonaws.com/pod-eni": 1000})
    assert verdict == PoolsVerdict(
        True, (), (), (Caution("general", CautionKind.NOT_TRUNKED, ("i4i.large",)),)
    )
    assert caution_lines(verdict.cautions) == [
        "NodePool general may launch i4i.large for this pod: Karpenter counts their branch ENIs, the VPC "
        "resource controller does not trunk them (the pod would wait); exclude them in "
        "spec.template.spec.requirements"
    ]
    assert _judge([record], {"cpu": 1000}) == PoolsVerdict(True, (), (), ())
    assert (
        _judge([_record("safe", ["m5.large", "t3.large"])], {"vpc.amazonaws.com/pod-eni": 1000}).cautions
        == ()
    )


def test_every_nodepool_that_takes_the_pod_is_warned_of() -> None:
    """Karpenter may launch a node of any NodePool that takes the pod: each one's risky types are
    said, not only the first's."""
    first, second = _record("a", ["i4i.large"]), _record("b", ["m5.large", "i4i.large"])
    verdict = _judge([first, second], {"vpc.amazonaws.com/pod-eni": 1000})
    assert verdict.cautions == (
        Caution("a", CautionKind.NOT_TRUNKED, ("i4i.large",)),
        Caution("b", CautionKind.NOT_TRUNKED, ("i4i.large",)),
    )


def test_the_warning_names_three_types_and_counts_the_rest() -> None:
    """A long list of types is cut to three, the rest counted, and the warning stays whole."""
    many = Caution("general", CautionKind.NOT_TRUNKED, tuple(f"x{i}.24xlarge" for i in range(7)))
    [line] = caution_lines([many])
    assert line.startswith(
        "NodePool general may launch x0.24xlarge, x1.24xlarge, x2.24xlarge and 4 more for this pod:"
    )
    assert len(line) <= 256


def test_a_pod_between_the_live_number_and_the_estimate_is_refused_by_current_nodes() -> None:
    """m5.large's live node (launched under the class as it is) offers 16Gi, Karpenter plans 17Gi:
    a pod of 16Gi + 1 byte is refused naming both numbers and the root volume; 16Gi fits."""
    record = _record("general", ["m5.large"], [_node("a", "general", "m5.large", "16Gi")])
    refused = _judge([record], {"ephemeral-storage": 16 * GI + 1000})
    assert (refused.admitted, refused.unjudged) == (False, ())
    assert pool_lines(refused.refused) == [
        "NodePool general: the NodePool's nodes offer less ephemeral-storage than Karpenter plans with "
        "(ephemeral-storage: needs 16.1Gi with the DaemonSets; Karpenter plans m5.large with 17Gi, its nodes "
        "offer 16Gi): change EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    ]
    assert _judge([record], {"ephemeral-storage": 16 * GI}) == PoolsVerdict(True, (), (), ())


def test_a_live_reading_that_may_not_hold_is_a_warning_never_a_denial() -> None:
    """A live node launched under an earlier class spec, or a second type with no short node: the
    pod is admitted, warned of the short type with both numbers."""
    old = _record(
        "general", ["m5.large"], [_node("a", "general", "m5.large", "16Gi", {HASH: "0", HASH_VERSION: "v6"})]
    )
    verdict = _judge([old], {"ephemeral-storage": 16 * GI + 1000})
    short = LiveShort("m5.large", 16 * GI + 1000, M5_ESTIMATE, LiveStorage(16 * GI, 1, False))
    assert verdict == PoolsVerdict(
        True, (), (), (Caution("general", CautionKind.LIVE_STORAGE, ("m5.large",), (short,)),)
    )
    assert caution_lines(verdict.cautions) == [
        "NodePool general may launch m5.large (Karpenter plans 17Gi, nodes of an earlier EC2NodeClass offer "
        "16Gi) for this pod, which needs 16.1Gi of ephemeral-storage there: it would not fit"
    ]
    mixed = _record("general", ["m5.large", "c5.large"], [_node("a", "general", "m5.large", "16Gi")])
    verdict = _judge([mixed], {"ephemeral-storage": 16 * GI + 1000})
    assert verdict.admitted
    assert caution_lines(verdict.cautions) == [
        "NodePool general may launch m5.large (Karpenter plans 17Gi, its nodes offer 16Gi) for this pod, "
        "which needs 16.1Gi of ephemeral-storage there: it would not fit"
    ]


# A kubelet's reading for a 20Gi root volume (its capacity less 1Gi kube-reserved and the 10% hard
# eviction threshold): 16.989Gi, which reads as 16.9Gi rounded down and 17Gi rounded up.
KUBELET_20GI = 18242267955


def _record_with(
    name: str, types: list[str], nodes: list[dict[str, Any]], daemonsets: dict[str, int]
) -> PublishedNodePool:
    """`_record`, the DaemonSets asking `daemonsets` (ephemeral-storage, milli-units) on every type."""
    record, _ = published(
        _pool(name, types),
        NODECLASS,
        KarpenterOptions(),
        {},
        lambda offer: {"ephemeral-storage": daemonsets.get(offer.name, 0)},
        nodes,
    )
    back = NodeGroupTemplate.from_object(
        NodeGroupTemplate(name, provider=PROVIDER, karpenter=record).to_object()
    )
    assert back.karpenter is not None
    return back.karpenter


def test_a_live_refusal_is_a_whole_typed_decision_with_the_largest_need_and_the_best_live_offer() -> None:
    """A pod of 17404Mi, both types short on current nodes: the NodePool's decision is a refusal
    (fits False, no types to launch) with one reason naming the resource, what the pod needs with
    the DaemonSets (the larger of the two types' needs: c5.large's, where a DaemonSet asks 2Mi), the
    most a live node offers (m5.large's 16.989Gi, not c5.large's 16Gi), the root volume to change,
    and each type with its estimate and its live number, what a node offers rounded down (16.9Gi,
    never 17Gi, which would read as enough)."""
    nodes = [
        _node("a", "general", "m5.large", str(KUBELET_20GI)),
        _node("b", "general", "c5.large", "16Gi"),
    ]
    mi = 2**20 * 1000
    # a DaemonSet that runs on c5.large only asks 2Mi more there
    record = _record_with("general", ["m5.large", "c5.large"], nodes, {"c5.large": 2 * mi})
    verdict = _judge([record], {"ephemeral-storage": 17404 * mi})
    needed = 17406 * mi
    detail = (
        "ephemeral-storage: needs 17Gi with the DaemonSets; Karpenter plans c5.large with 17Gi, its "
        "nodes offer 16Gi, m5.large with 17Gi, its nodes offer 16.9Gi"
    )
    assert verdict == PoolsVerdict(
        False,
        (),
        (
            NodePoolDecision(
                "general",
                False,
                (),
                (
                    Reason(
                        "general",
                        Shortfall.LIVE_EPHEMERAL_STORAGE,
                        (Change.ROOT_VOLUME_SIZE,),
                        detail,
                        "ephemeral-storage",
                        needed,
                        KUBELET_20GI * 1000,
                    ),
                ),
            ),
        ),
    )


def test_a_live_refusal_names_three_types_and_counts_the_rest() -> None:
    """Five types, each short on a current node: the refusal's detail names three, each with its two
    numbers, and counts the other two, so the denial stays readable."""
    types = ["c5.large", "c5.xlarge", "m5.large", "m5.xlarge", "r5.large"]
    nodes = [_node(f"n{i}", "general", t, "16Gi") for i, t in enumerate(types)]
    verdict = _judge([_record("general", types, nodes)], {"ephemeral-storage": 16 * GI + 1000})
    assert pool_lines(verdict.refused) == [
        "NodePool general: the NodePool's nodes offer less ephemeral-storage than Karpenter plans with "
        "(ephemeral-storage: needs 16.1Gi with the DaemonSets; Karpenter plans c5.large with 17Gi, its nodes "
        "offer 16Gi, c5.xlarge with 17Gi, its nodes offer 16Gi, m5.large with 17Gi, its nodes offer 16Gi "
        "and 2 more): change EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    ]


def test_the_daemonsets_ephemeral_storage_counts_against_the_live_nodes() -> None:
    """DaemonSets asking 16Gi of ephemeral-storage on a NodePool whose current node offers 16Gi: a
    pod asking none of its own still fits (the DaemonSets exactly fill the node), and is neither
    refused nor warned; a pod asking one byte is refused, needing the DaemonSets' 16Gi and its byte."""
    nodes = [_node("a", "general", "m5.large", "16Gi")]
    record = _record_with("general", ["m5.large"], nodes, {"m5.large": 16 * GI})
    assert _judge([record], {"cpu": 1000}) == PoolsVerdict(True, (), (), ())
    refused = _judge([record], {"cpu": 1000, "ephemeral-storage": 1000})
    assert [
        (d.nodepool, d.fits, [(r.shortfall, r.needed, r.best_offered) for r in d.reasons])
        for d in refused.refused
    ] == [("general", False, [(Shortfall.LIVE_EPHEMERAL_STORAGE, 16 * GI + 1000, 16 * GI)])]


def test_a_caution_reads_what_a_node_offers_rounded_down_and_names_two_types_with_their_numbers() -> None:
    """Three types short on nodes of an earlier class spec (a caution, not a refusal): the warning
    names two with both numbers, the live one rounded down (16.9Gi), and counts the third; the
    pod's need is rounded up (17Gi)."""
    old = {HASH: "0", HASH_VERSION: "v6"}
    nodes = [
        _node("a", "general", "c5.large", str(KUBELET_20GI), old),
        _node("b", "general", "m5.large", str(KUBELET_20GI), old),
        _node("c", "general", "r5.large", str(KUBELET_20GI), old),
    ]
    verdict = _judge(
        [_record("general", ["c5.large", "m5.large", "r5.large"], nodes)], {"ephemeral-storage": 17 * GI}
    )
    assert verdict.admitted
    assert caution_lines(verdict.cautions) == [
        "NodePool general may launch c5.large (Karpenter plans 17Gi, nodes of an earlier EC2NodeClass offer "
        "16.9Gi), m5.large (Karpenter plans 17Gi, nodes of an earlier EC2NodeClass offer 16.9Gi) and 1 more "
        "for this pod, which needs 17Gi of ephemeral-storage there: it would not fit"
    ]


def test_a_nodepool_its_live_nodes_refuse_leaves_the_next_nodepool_to_take_the_pod() -> None:
    """NodePool a refuses a pod of 16Gi + 1 byte by its current node (16Gi); NodePool b, with no live
    node, takes it on Karpenter's estimate: the pod is admitted, without a caution."""
    short = _record("a", ["m5.large"], [_node("x", "a", "m5.large", "16Gi")])
    assert _judge([short, _record("b", ["m5.large"])], {"ephemeral-storage": 16 * GI + 1000}) == PoolsVerdict(
        True, (), (), ()
    )
