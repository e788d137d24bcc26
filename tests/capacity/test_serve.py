"""`refusals` (the /validate path) agrees with `judge_all` on every pod, over the benchmark's 500
node group templates: None exactly when some group serves, and otherwise the very same verdicts."""

from __future__ import annotations

import random
from typing import Any

import pytest

from capacity.fit import PodNeeds, Reason
from capacity.serve import (
    CACHE_NOTE,
    GroupVerdict,
    denial_message,
    explain,
    judge,
    judge_all,
    memory_reliance,
    memory_warnings,
    refusals,
)
from capacity.taints import Taint
from capacity.template import AutoscalerMemory, NodeGroupTemplate, View
from tests.bench import synth


def test_refusals_is_judge_all_unless_a_group_serves() -> None:
    templates = [NodeGroupTemplate.from_object(synth.node_group_template(i)) for i in range(500)]
    rng = random.Random(3)
    outcomes = set()
    for i in range(120):
        needs = PodNeeds.from_spec(synth.pod_spec(rng, 2_000, f"app-{i:02d}"))
        verdicts = judge_all(needs, templates)
        served = any(v.serves for v in verdicts)
        assert refusals(needs, templates) == (None if served else verdicts)
        outcomes.add(served)
    assert outcomes == {True, False}  # both branches were exercised


def test_no_templates_refuse_with_no_verdicts() -> None:
    needs = PodNeeds.from_spec({"containers": [{"name": "c"}]})
    assert refusals(needs, []) == []


# Whole messages of capacity.serve, group by group (the e2e tests show the same lines through
# gunicorn and kubectl, where mutmut cannot see them).

MIB = 2**20 * 1000  # milli-units
GIB = 2**30 * 1000
ACTUAL = View(
    {"cpu": 1930, "memory": 7220 * MIB, "ephemeral-storage": 44 * GIB, "pods": 29000},
    {"node.kubernetes.io/instance-type": "m5.large", "beta.kubernetes.io/os": "linux", "tier": "batch"},
    (),
    "launch-template",
)
TAGS = View(
    {"cpu": 2000, "memory": 8 * GIB, "pods": 110000},
    {"node.kubernetes.io/instance-type": "m5.large", "kubernetes.io/os": "linux"},
    (),
    "tags",
)
DAEMONSETS = {"cpu": 200, "memory": 300 * MIB}
STORAGE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
TIER_TAG = "k8s.io/cluster-autoscaler/node-template/label/tier"


def _pod(requests: dict[str, str] | None = None, **spec: object) -> PodNeeds:
    return PodNeeds.from_spec(
        {"containers": [{"name": "c", "resources": {"requests": requests or {}}}], **spec}
    )


def _group(
    name: str,
    *,
    actual: View | None = ACTUAL,
    autoscaler: View | None = TAGS,
    instance_type: str = "m5.large",
    provider: str = "aws-asg",
    nodes: int = 0,
    max_size: int = 10,
    daemonsets: dict[str, int] | None = None,
    memory: AutoscalerMemory | None = None,
) -> NodeGroupTemplate:
    return NodeGroupTemplate(
        name,
        provider,
        (instance_type,) if instance_type else (),
        0,
        max_size,
        0,
        nodes,
        actual,
        autoscaler,
        DAEMONSETS if daemonsets is None else daemonsets,
        3 if daemonsets is None else 0,
        memory=memory,
    )


def _small(*taints: Taint, cpu: int = 500) -> View:
    return View({"cpu": cpu, "ephemeral-storage": 10 * GIB, "pods": 10000}, {}, taints, "manual")


def _plain(
    name: str, instance_type: str = "c5.large", view: View | None = None, **kw: Any
) -> NodeGroupTemplate:
    return _group(
        name,
        actual=view or _small(),
        autoscaler=None,
        instance_type=instance_type,
        provider="manual",
        daemonsets={},
        **kw,
    )


AFFINITY_NOT_M5 = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "NotIn",
                            "values": ["m5.large"],
                        }
                    ]
                }
            ]
        }
    }
}
EKS_TAGS = View(
    {"cpu": 2000, "memory": 8 * GIB, "ephemeral-storage": 10 * GIB, "pods": 110000}, {}, (), "tags"
)
TAGS_20G = View(
    {"cpu": 2000, "memory": 8 * GIB, "ephemeral-storage": 20 * GIB, "pods": 110000}, {}, (), "tags"
)
BURST = View({"cpu": 1930, "memory": 7220 * MIB, "pods": 35000}, {}, (), "launch-template")
TAINTED = View(
    {"cpu": 4000, "pods": 29000}, {}, (Taint("gpu", "true"), Taint("soft", "", "PreferNoSchedule"))
)

NODE_17_82 = View(
    {"cpu": 1930, "memory": 7220 * MIB, "ephemeral-storage": 19136439364 * 1000, "pods": 29000},
    {"node.kubernetes.io/instance-type": "m5.large"},
    (),
    "launch-template",
)

EXPLAINED = [
    (
        "tag trap: the real node has it, the tags do not",
        _group("ng-batch"),
        _pod({"ephemeral-storage": "30Gi"}),
        True,
        f"ng-batch: Insufficient ephemeral-storage: requests 30Gi; an m5.large node would offer 44Gi, but "
        f"cluster-autoscaler sees none while the group has 0 nodes: tag the ASG {STORAGE_TAG}, or let "
        "fitguard "
        "sync the tags",
    ),
    (
        "tag trap on a managed node group whose tags say too little",
        _group("ng-eks", autoscaler=EKS_TAGS, provider="eks-managed"),
        _pod({"ephemeral-storage": "30Gi"}),
        True,
        f"ng-eks: Insufficient ephemeral-storage: requests 30Gi; an m5.large node would offer 44Gi, but "
        "cluster-autoscaler sees 10Gi while the group has 0 nodes: tag the managed node group "
        f"{STORAGE_TAG}, "
        "or let fitguard sync the tags",
    ),
    (
        "the real node offers exactly what is asked: still a trap",
        _group("ng-exact", autoscaler=TAGS_20G),
        _pod({"ephemeral-storage": "44Gi"}),
        True,
        f"ng-exact: Insufficient ephemeral-storage: requests 44Gi; an m5.large node would offer 44Gi, but "
        f"cluster-autoscaler sees 20Gi while the group has 0 nodes: tag the ASG {STORAGE_TAG}, or let "
        "fitguard "
        "sync the tags",
    ),
    (
        "a trap by less than a tenth: the request that fits never reads as more than the offer",
        _group("ng-live-ish", actual=NODE_17_82),
        _pod({"ephemeral-storage": "19136000000"}),
        True,
        "ng-live-ish: Insufficient ephemeral-storage: requests 17.8Gi; an m5.large node would offer 17.8Gi, "
        f"but cluster-autoscaler sees none while the group has 0 nodes: tag the ASG {STORAGE_TAG}, or let "
        "fitguard sync the tags",
    ),
    (
        "the real node is too small as well: both figures, the root volume's field, then the tag",
        _group("ng-small", autoscaler=TAGS_20G),
        _pod({"ephemeral-storage": "50Gi"}),
        False,
        "ng-small: Insufficient ephemeral-storage: requests 50Gi; an m5.large node would offer 44Gi, and "
        "cluster-autoscaler sees 20Gi while the group has 0 nodes: request less, or raise the root volume in "
        f"the ASG's launch template (BlockDeviceMappings[].Ebs.VolumeSize), then tag the ASG {STORAGE_TAG} "
        "(or let fitguard sync the tags)",
    ),
    (
        "issue 31: 500Gi where the launch template offers 44Gi and the tags nothing: never 'offers 0'",
        _group("ng-batch"),
        _pod({"ephemeral-storage": "500Gi"}),
        False,
        "ng-batch: Insufficient ephemeral-storage: requests 500Gi; an m5.large node would offer 44Gi, and "
        "cluster-autoscaler sees none while the group has 0 nodes: request less, or raise the root volume in "
        f"the ASG's launch template (BlockDeviceMappings[].Ebs.VolumeSize), then tag the ASG {STORAGE_TAG} "
        "(or let fitguard sync the tags)",
    ),
    (
        "issue 31: 1Gi of DaemonSets on a node the tags give none: never 'offers -1Gi'",
        _group("ng-batch", daemonsets={"ephemeral-storage": GIB}),
        _pod({"ephemeral-storage": "500Gi"}),
        False,
        "ng-batch: Insufficient ephemeral-storage: requests 500Gi; an m5.large node would offer 43Gi, and "
        "cluster-autoscaler sees none while the group has 0 nodes: request less, or raise the root volume in "
        f"the ASG's launch template (BlockDeviceMappings[].Ebs.VolumeSize), then tag the ASG {STORAGE_TAG} "
        "(or let fitguard sync the tags)",
    ),
    (
        "a live ASG group: ephemeral storage is the root volume's, not the type's",
        _group("ng-live", nodes=2),
        _pod({"ephemeral-storage": "50Gi"}),
        False,
        "ng-live: Insufficient ephemeral-storage: requests 50Gi; an m5.large node offers 44Gi: request less, "
        "or raise the root volume in the ASG's launch template (BlockDeviceMappings[].Ebs.VolumeSize)",
    ),
    (
        "a live managed node group: its diskSize, or its launch template's volume",
        _group("ng-eks", nodes=2, provider="eks-managed"),
        _pod({"ephemeral-storage": "50Gi"}),
        False,
        "ng-eks: Insufficient ephemeral-storage: requests 50Gi; an m5.large node offers 44Gi: request less, "
        "or raise the managed node group's diskSize (BlockDeviceMappings[].Ebs.VolumeSize if it has a "
        "launch template)",
    ),
    (
        "a manual group: a larger root volume; DaemonSets that take it all leave none, never less",
        _group(
            "g",
            actual=_small(),
            autoscaler=None,
            instance_type="c5.large",
            provider="manual",
            daemonsets={"ephemeral-storage": 12 * GIB},
        ),
        _pod({"ephemeral-storage": "1Gi"}),
        False,
        "g: Insufficient ephemeral-storage: requests 1Gi; a c5.large node offers none after DaemonSets take "
        "12Gi of its 10Gi: request less, or give its nodes a larger root volume",
    ),
    (
        "issue 31: a group the pod's own node selector excludes gets no tag advice",
        _group("ng-batch"),
        _pod({"ephemeral-storage": "30Gi"}, nodeSelector={"tier": "web"}),
        False,
        "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have no tier label; "
        "Insufficient ephemeral-storage: requests 30Gi; an m5.large node would offer 44Gi, but "
        "cluster-autoscaler sees none while the group has 0 nodes",
    ),
    (
        "excluded by its selector and too small: the volume advice, no tag",
        _group("ng-batch"),
        _pod({"ephemeral-storage": "500Gi"}, nodeSelector={"tier": "web"}),
        False,
        "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have no tier label; "
        "Insufficient ephemeral-storage: requests 500Gi; an m5.large node would offer 44Gi, and "
        "cluster-autoscaler sees none while the group has 0 nodes: request less, or raise the root volume in "
        "the ASG's launch template (BlockDeviceMappings[].Ebs.VolumeSize)",
    ),
    (
        "too big for any m5.large: the autoscaler view's overhead includes kube-proxy",
        _group("ng-batch"),
        _pod({"cpu": "3"}),
        False,
        "ng-batch: Insufficient cpu: requests 3; an m5.large node would offer 1730m, and cluster-autoscaler "
        "sees 1700m while the group has 0 nodes: request less or use a larger type",
    ),
    (
        "a live group is judged on its real node, after its DaemonSets only",
        _group("ng-live", nodes=2),
        _pod({"memory": "8Gi"}),
        False,
        "ng-live: Insufficient memory: requests 8Gi; an m5.large node offers 6.7Gi after 300Mi of "
        "DaemonSets: request less or use a larger type",
    ),
    (
        "1Mi more than the node offers: the request rounds up, the offer down, never the same figure",
        _group("ng-live", nodes=2),
        _pod({"memory": "6921Mi"}),
        False,
        "ng-live: Insufficient memory: requests 6.8Gi; an m5.large node offers 6.7Gi after 300Mi of "
        "DaemonSets: request less or use a larger type",
    ),
    (
        "pod-eni on a type with no branch ENIs",
        _group("ng-burst", actual=BURST, instance_type="t3.large"),
        _pod({"vpc.amazonaws.com/pod-eni": "1"}),
        False,
        "ng-burst: Insufficient vpc.amazonaws.com/pod-eni: requests 1; t3.large supports no branch ENIs (not "
        "trunking-compatible): run pods with security groups on a Nitro type such as m5",
    ),
    (
        "pod-eni on a type fitguard does not know",
        _plain("g", "zz.large"),
        _pod({"vpc.amazonaws.com/pod-eni": "1"}),
        False,
        "g: Insufficient vpc.amazonaws.com/pod-eni: requests 1; a zz.large node offers none: request less or "
        "use a larger type",
    ),
    (
        "pod-eni on a trunking type whose node offers none",
        _plain("g", "c5.large"),
        _pod({"vpc.amazonaws.com/pod-eni": "1"}),
        False,
        "g: Insufficient vpc.amazonaws.com/pod-eni: requests 1; a c5.large node offers none: request less or "
        "use a larger type",
    ),
    (
        "pod-eni on a group with no instance type",
        _plain("g", ""),
        _pod({"vpc.amazonaws.com/pod-eni": "1"}),
        False,
        "g: Insufficient vpc.amazonaws.com/pod-eni: requests 1; a node offers none: request less or use a "
        "larger type",
    ),
    (
        "a filtering taint named with its value and effect; PreferNoSchedule never refuses",
        _plain("ng-gpu", "g4dn.xlarge", TAINTED, nodes=1),
        _pod({"cpu": "100m"}),
        False,
        "ng-gpu: node(s) had untolerated taint {gpu: true}: add a toleration for gpu=true:NoSchedule",
    ),
    (
        "a taint without a value",
        _plain(
            "ng-ded", "c5.large", View({"cpu": 4000, "pods": 29000}, {}, (Taint("dedicated", ""),)), nodes=1
        ),
        _pod(),
        False,
        "ng-ded: node(s) had untolerated taint {dedicated: }: add a toleration for dedicated:NoSchedule",
    ),
    (
        "no pod slot left after the DaemonSets",
        _group(
            "ng-full",
            actual=View({"cpu": 4000, "pods": 3000}),
            autoscaler=None,
            instance_type="",
            provider="manual",
        ),
        _pod(),
        False,
        "ng-full: Too many pods: DaemonSets already take all 3 pod slots",
    ),
    (
        "a selected label the tags lack but a real node has",
        _group("ng-batch"),
        _pod(nodeSelector={"tier": "batch"}),
        True,
        "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have no tier label; a real "
        "node "
        "has tier, but the node cluster-autoscaler builds while the group has 0 nodes does not: tag the ASG "
        f"{TIER_TAG}",
    ),
    (
        "a deprecated beta label: select on the stable one instead",
        _group("ng-batch"),
        _pod(nodeSelector={"beta.kubernetes.io/os": "linux"}),
        True,
        "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have no "
        "beta.kubernetes.io/os "
        "label; a real node has beta.kubernetes.io/os, but the node cluster-autoscaler builds while the "
        "group "
        "has 0 nodes does not: select on kubernetes.io/os instead, or tag the ASG "
        "k8s.io/cluster-autoscaler/node-template/label/beta.kubernetes.io/os",
    ),
    (
        "labels the tags have with another value, and one no node has: no hint",
        _group("ng-batch"),
        _pod(nodeSelector={"node.kubernetes.io/instance-type": "c5.large", "zone": "a"}),
        False,
        "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have "
        "node.kubernetes.io/instance-type=m5.large, no zone label",
    ),
    (
        "a live group: no hint about the tags",
        _group("ng-live", nodes=1),
        _pod(nodeSelector={"kubernetes.io/os": "linux"}),
        False,
        "ng-live: node(s) didn't match Pod's node affinity/selector: its nodes have no kubernetes.io/os "
        "label",
    ),
    (
        "an affinity with only negative terms selects on no label",
        _group("ng-batch"),
        _pod(affinity=AFFINITY_NOT_M5),
        False,
        "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have no labels the pod "
        "selects on",
    ),
    (
        "only tags known (no actual view): no hint of a real node's label",
        _group("ng-tags", actual=None),
        _pod(nodeSelector={"tier": "batch"}),
        False,
        "ng-tags: node(s) didn't match Pod's node affinity/selector: its nodes have no tier label",
    ),
    (
        "only tags known (no actual view): no real node to offer more",
        _group("ng-tags", actual=None),
        _pod({"ephemeral-storage": "1Gi"}),
        False,
        "ng-tags: Insufficient ephemeral-storage: requests 1Gi; cluster-autoscaler sees none on an m5.large "
        f"node while the group has 0 nodes: request less, or tag the ASG {STORAGE_TAG} with what its nodes "
        "offer",
    ),
    (
        "only tags known, and the pod's selector excludes the group: no tag advice",
        _group("ng-tags", actual=None),
        _pod({"ephemeral-storage": "1Gi"}, nodeSelector={"tier": "web"}),
        False,
        "ng-tags: node(s) didn't match Pod's node affinity/selector: its nodes have no tier label; "
        "Insufficient ephemeral-storage: requests 1Gi; cluster-autoscaler sees none on an m5.large node "
        "while the group has 0 nodes: request less, or raise the root volume in the ASG's launch template "
        "(BlockDeviceMappings[].Ebs.VolumeSize)",
    ),
    (
        "a trap: the real node's cpu after its DaemonSets",
        _group("ng-batch"),
        _pod({"cpu": "1720m"}),
        True,
        "ng-batch: Insufficient cpu: requests 1720m; an m5.large node would offer 1730m, but "
        "cluster-autoscaler "
        "sees 1700m while the group has 0 nodes: tag the ASG "
        "k8s.io/cluster-autoscaler/node-template/resources/"
        "cpu, or let fitguard sync the tags",
    ),
    (
        "a trap at the boundary: the real node offers exactly the cpu asked, no DaemonSet takes cpu",
        _group("ng-cpu", daemonsets={"memory": 300 * MIB}),
        _pod({"cpu": "1930m"}),
        True,
        "ng-cpu: Insufficient cpu: requests 1930m; an m5.large node would offer 1930m, but "
        "cluster-autoscaler "
        "sees 1900m while the group has 0 nodes: tag the ASG "
        "k8s.io/cluster-autoscaler/node-template/resources/"
        "cpu, or let fitguard sync the tags",
    ),
    (
        "one milli-cpu more than the real node has: no trap",
        _group("ng-cpu", daemonsets={"memory": 300 * MIB}),
        _pod({"cpu": "1931m"}),
        False,
        "ng-cpu: Insufficient cpu: requests 1931m; an m5.large node would offer 1930m, and "
        "cluster-autoscaler sees 1900m while the group has 0 nodes: request less or use a larger type",
    ),
    (
        "the remembered node is judged, not the bigger real one: no tag advice",
        _group(
            "ng-mem",
            memory=AutoscalerMemory(True, "seen", View({"cpu": 1000, "pods": 29000}), "2026-11-30T12:00:00Z"),
        ),
        _pod({"cpu": "1500m"}),
        False,
        "ng-mem: Insufficient cpu: requests 1500m; an m5.large node offers 800m after 200m of DaemonSets: "
        "request less or use a larger type",
    ),
    (
        "two reasons, joined by a semicolon",
        _plain("ng-gpu", "g4dn.xlarge", View({"cpu": 4000, "pods": 29000}, {}, (Taint("gpu", "true"),))),
        _pod({"cpu": "5"}),
        False,
        "ng-gpu: node(s) had untolerated taint {gpu: true}: add a toleration for gpu=true:NoSchedule; "
        "Insufficient cpu: requests 5; a g4dn.xlarge node offers 4: request less or use a larger type",
    ),
    (
        "a group that cannot add a node",
        _group("ng-closed", max_size=0),
        _pod({"cpu": "100m"}),
        False,
        "ng-closed: max size is 0: it cannot add a node",
    ),
]


@pytest.mark.parametrize(
    ("group", "needs", "trap", "line"), [c[1:] for c in EXPLAINED], ids=[c[0] for c in EXPLAINED]
)
def test_each_refusal_is_explained_whole(
    group: NodeGroupTemplate, needs: PodNeeds, trap: bool, line: str
) -> None:
    """judge refuses the pod with the group's whole explanation line, and marks a tag trap exactly
    when the tags refuse what the real node would take."""
    verdict = judge(needs, group)
    assert (verdict.serves, verdict.trap, explain(verdict, needs)) == (False, trap, line)


@pytest.mark.parametrize(
    ("instance_type", "phrase"),
    [
        ("r6i.large", "an r6i.large node"),
        ("x2gd.large", "an x2gd.large node"),
        ("a1.large", "an a1.large node"),
        ("inf1.xlarge", "an inf1.xlarge node"),
        ("c5.large", "a c5.large node"),
        ("t3.large", "a t3.large node"),
        ("g4dn.xlarge", "a g4dn.xlarge node"),
        ("", "a node"),
    ],
)
def test_the_node_is_named_with_its_article(instance_type: str, phrase: str) -> None:
    """Instance families are read letter by letter: an m5, an r6i, a c5, a t3; no type: a node."""
    needs = _pod({"cpu": "1"})
    verdict = judge(needs, _plain("g", instance_type))
    assert explain(verdict, needs) == (
        f"g: Insufficient cpu: requests 1; {phrase} offers 500m: request less or use a larger type"
    )


def test_a_serving_group_gets_a_plain_yes_and_a_refusal_carries_its_view() -> None:
    """A pod that fits gets a verdict with no reasons, no trap and nothing to explain it with; a
    refused one the whole verdict: reasons, trap, no closing reason, the template and its view."""
    assert judge(_pod({"cpu": "100m"}), _group("ng-batch")) == GroupVerdict("ng-batch", True)
    group = _group("ng-batch")
    needs = _pod({"ephemeral-storage": "1Gi"})
    reason = Reason("Insufficient ephemeral-storage", "ephemeral-storage", GIB, 0, 0)
    assert judge(needs, group) == GroupVerdict("ng-batch", False, (reason,), True, "", group, TAGS)


def test_the_denial_lists_traps_first_then_the_closest_and_counts_the_rest() -> None:
    """Tag traps first, then groups by how few reasons refuse them, closed groups last; beyond 12
    groups the rest are counted by reason; extra lines follow, then the note that a
    cluster-autoscaler whose memory fitguard does not know may still scale the trapped group."""
    needs = _pod({"cpu": "1", "ephemeral-storage": "1Gi"})
    groups = [_plain(f"g{i:02d}") for i in range(12)]
    groups += [
        _plain("g98", view=_small(Taint("gpu", "true"))),
        _plain("g99", max_size=0),
        _plain("g97", view=_small(Taint("a", "b"))),
        _group("zz-trap"),
    ]
    cpu_line = "Insufficient cpu: requests 1; a c5.large node offers 500m: request less or use a larger type"
    assert denial_message(judge_all(needs, groups), needs, "Deployment web", ["extra line"]).splitlines() == [
        "Deployment web does not fit any node group",
        f"zz-trap: Insufficient ephemeral-storage: requests 1Gi; an m5.large node would offer 44Gi, but "
        f"cluster-autoscaler sees none while the group has 0 nodes: tag the ASG {STORAGE_TAG}, or let "
        "fitguard sync the tags",
        *[f"g{i:02d}: {cpu_line}" for i in range(11)],
        "and 4 more node groups: 3 Insufficient cpu, 2 node(s) had untolerated taints, 1 max size 0",
        "extra line",
        "note: cluster-autoscaler may still scale it while it remembers an earlier node of the group, "
        "until it "
        "restarts",
    ]
    assert refusals(needs, groups) == judge_all(needs, groups)


def test_the_cache_note_goes_once_fitguard_knows_the_autoscaler_memory() -> None:
    """A trapped group whose memory names the observed cluster-autoscaler gets no 'may still scale'
    note; an unobserved one (no autoscaler recorded) keeps it; 12 groups are all shown."""
    needs = _pod({"ephemeral-storage": "1Gi"})
    line = (
        f"ng-batch: Insufficient ephemeral-storage: requests 1Gi; an m5.large node would offer 44Gi, but "
        f"cluster-autoscaler sees none while the group has 0 nodes: tag the ASG {STORAGE_TAG}, or let "
        "fitguard sync the tags"
    )
    known = _group("ng-batch", memory=AutoscalerMemory(False, "restarted", autoscaler="kube-system/ca-0"))
    assert denial_message([judge(needs, known)], needs) == f"pod does not fit any node group\n{line}"
    unknown = _group("ng-batch", memory=AutoscalerMemory(False, "no cluster-autoscaler seen"))
    assert denial_message([judge(needs, unknown)], needs) == (
        f"pod does not fit any node group\n{line}\nnote: {CACHE_NOTE}"
    )
    twelve = [_plain(f"g{i:02d}") for i in range(12)]
    assert denial_message(judge_all(_pod({"cpu": "1"}), twelve), _pod({"cpu": "1"})).splitlines()[1:] == [
        f"g{i:02d}: Insufficient cpu: requests 1; a c5.large node offers 500m: request less or use a larger "
        "type"
        for i in range(12)
    ]


def test_refusals_stops_at_the_first_serving_group_and_lists_closed_ones_by_name() -> None:
    """A serving group after a closed one still admits the pod; with none serving, the closed and
    the refused groups come back together, sorted by name."""
    needs = _pod({"cpu": "1"})
    closed = _plain("a-closed", max_size=0)
    assert refusals(needs, [closed, _plain("b", view=_small(cpu=2000))]) is None
    assert refusals(needs, [_plain("z"), closed]) == [
        GroupVerdict("a-closed", False, (), False, "max size is 0", closed),
        judge(needs, _plain("z")),
    ]


NODE = View(
    {"cpu": 1930, "memory": 7220 * MIB, "ephemeral-storage": 44 * GIB, "pods": 29000},
    {"tier": "batch"},
    (),
    "live-node",
)
REMEMBERS = AutoscalerMemory(True, "seen", NODE, "2026-11-30T12:00:00Z", "kube-system/ca-0")
TAINTED_TAGS = View(
    {"cpu": 2000, "memory": 8 * GIB, "pods": 110000}, {}, (Taint("dedicated", "batch"),), "tags"
)


def test_a_pod_only_the_remembered_node_serves_is_told_how_to_make_it_permanent() -> None:
    """Two groups serve the pod only through cluster-autoscaler's memory: the warning names both,
    then per group the tags it lacks (label and resource, once each; 'managed node group' for EKS)
    and the tagged taint to tolerate; a group that neither remembers nor fits is left out."""
    needs = _pod({"ephemeral-storage": "30Gi", "cpu": "1"}, nodeSelector={"tier": "batch"})
    a = _group("ng-a", autoscaler=TAINTED_TAGS, memory=REMEMBERS)
    b = _group("ng-b", provider="eks-managed", memory=REMEMBERS)
    c = _group("ng-c")
    assert refusals(needs, [a, b, c]) is None
    relied = memory_reliance(needs, [c, b, a])
    assert relied is not None
    assert [(v.group, v.serves, v.trap, v.why_closed, v.template, v.view, v.remembered) for v in relied] == [
        ("ng-a", False, False, "", a, TAINTED_TAGS, True),
        ("ng-b", False, False, "", b, TAGS, True),
    ]
    assert [[r.message for r in v.reasons] for v in relied] == [
        [
            "node(s) had untolerated taint {dedicated: batch}",
            "node(s) didn't match Pod's node affinity/selector",
            "Insufficient ephemeral-storage",
        ],
        ["node(s) didn't match Pod's node affinity/selector", "Insufficient ephemeral-storage"],
    ]
    assert memory_warnings(relied, needs, "Deployment payments") == [
        "Deployment payments fits only the node cluster-autoscaler remembers of ng-a, ng-b: it scales up "
        "for it "
        "only until it restarts",
        f"to make it permanent, tag the ASG of ng-a {TIER_TAG}, {STORAGE_TAG}",
        "to make it permanent on ng-a, tolerate its tagged taint dedicated",
        f"to make it permanent, tag the managed node group of ng-b {TIER_TAG}, {STORAGE_TAG}",
        "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
    ]


def test_memory_reliance_is_none_when_some_group_serves_for_good() -> None:
    """Nothing remembered, or a group whose tags serve the pod, or a live group: the pod does not
    rest on cluster-autoscaler's memory. A closed group is skipped."""
    needs = _pod({"ephemeral-storage": "30Gi"})
    assert memory_reliance(needs, [_group("ng-c")]) is None
    remembering = _group("ng-a", memory=REMEMBERS)
    assert memory_reliance(_pod({"cpu": "1"}), [remembering, _group("ng-c")]) is None
    assert memory_reliance(needs, [remembering, _group("ng-live", nodes=1)]) is None
    assert memory_reliance(needs, [_group("ng-closed", max_size=0, memory=REMEMBERS), remembering]) == [
        GroupVerdict(
            "ng-a", False, tuple(judge(needs, _group("ng-a")).reasons), False, "", remembering, TAGS, True
        )
    ]


def test_memory_warnings_skip_pod_slots_and_show_at_most_twelve_groups() -> None:
    """A pod-slot reason asks for no tag; beyond twelve groups the names and lines stop."""
    full = View({"cpu": 2000, "memory": 8 * GIB, "pods": 4000}, {}, (), "tags")
    memory = AutoscalerMemory(True, "seen", NODE, "2026-11-30T12:00:00Z", "kube-system/ca-0")
    groups = [_group(f"g{i:02d}", autoscaler=full, memory=memory) for i in range(13)]
    needs = _pod({"cpu": "1"})
    relied = memory_reliance(needs, groups)
    assert relied is not None and len(relied) == 13
    names = ", ".join(f"g{i:02d}" for i in range(12))
    assert memory_warnings(relied, needs) == [
        f"pod fits only the node cluster-autoscaler remembers of {names}: it scales up for it only until it "
        "restarts",
        "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
    ]
