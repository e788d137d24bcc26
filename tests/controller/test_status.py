"""NodeGroupTemplate status against the fake API server: written through the status subresource
(never the main resource), with the Discovered, AutoscalerViewMatches and AutoscalerRemembers
conditions, the group, observedGeneration and the last discovery time, and lastTransitionTime kept
while a condition holds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from capacity.template import AutoscalerMemory, NodeGroupTemplate, View
from controller.discovery import GroupOutcome
from controller.publish import publish, write_statuses
from controller.status import LAST_DISCOVERY_REFRESH, rfc3339
from kube.client import KubeClient

PATH = "/apis/fitguard.io/v1alpha1/nodegrouptemplates"
GIB = 2**30 * 1000  # milli-units
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
T0_TEXT = "2027-01-15T08:00:00Z"
T1 = T0 + 60
T1_TEXT = "2027-01-15T08:01:00Z"
ALL_TAG = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage=44Gi"


def template(
    name: str,
    autoscaler_gib: int = 0,
    nodes: int = 0,
    max_size: int = 10,
    memory: AutoscalerMemory | None = None,
) -> NodeGroupTemplate:
    actual = View(allocatable={"cpu": 1930, "ephemeral-storage": 44 * GIB}, source="launch-template")
    autoscaler_allocatable = {"cpu": 2000}
    if autoscaler_gib:
        autoscaler_allocatable["ephemeral-storage"] = autoscaler_gib * GIB
    autoscaler = View(allocatable=autoscaler_allocatable, source="tags")
    return NodeGroupTemplate(
        name=name,
        provider="aws-asg",
        instance_types=("m5.large",),
        max_size=max_size,
        nodes=nodes,
        actual=actual,
        autoscaler=autoscaler,
        memory=memory,
    )


def stored(fake_kube: Any, name: str) -> dict[str, Any]:
    return fake_kube.get("NodeGroupTemplate", name, api_version="fitguard.io/v1alpha1")


def status_writes(fake_kube: Any) -> list[Any]:
    return [r for r in fake_kube.requests.find(path=PATH) if r.method in ("PUT", "PATCH", "POST")]


def discovered(status: str, reason: str, message: str, since: str, generation: int) -> dict[str, Any]:
    return {
        "type": "Discovered",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }


def remembers(status: str, reason: str, message: str, since: str, generation: int) -> dict[str, Any]:
    return {
        "type": "AutoscalerRemembers",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }


NOT_OBSERVED = "cluster-autoscaler's memory of the group not observed yet"
MATCH_MESSAGE = "cluster-autoscaler's template offers what a real node does"
BLIND_MESSAGE = (
    "cluster-autoscaler's template lacks ephemeral-storage (a real node offers 44Gi, "
    f"cluster-autoscaler's template 0): tag {ALL_TAG} fixes it"
)


def view(status: str, reason: str, message: str, since: str, generation: int) -> dict[str, Any]:
    return {
        "type": "AutoscalerViewMatches",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }


def test_status_is_written_through_the_subresource_with_both_conditions(fake_kube: Any) -> None:
    """A blind group's status says which resource CA's template lacks and the tag that fixes it;
    a matching group's says True; both through PATCH .../status, whole status compared."""
    api = KubeClient(fake_kube.api_client())
    outcomes = [GroupOutcome("ng-blind", template("ng-blind")), GroupOutcome("ng-ok", template("ng-ok", 44))]
    result = publish(api, outcomes, now=T0, autoscaling_groups={"ng-blind": "asg-blind", "ng-ok": "asg-ok"})
    assert sorted(result.statuses) == ["ng-blind", "ng-ok"]
    patches = [(r.method, r.path) for r in status_writes(fake_kube) if r.method == "PATCH"]
    assert patches == [("PATCH", f"{PATH}/ng-blind/status"), ("PATCH", f"{PATH}/ng-ok/status")]
    ok_message = "node group read completely from AWS this cycle"
    assert stored(fake_kube, "ng-blind")["status"] == {
        "observedGeneration": 1,
        "autoscalerScalesFromZero": False,
        "autoscalingGroup": "asg-blind",
        "lastDiscoveryTime": T0_TEXT,
        "conditions": [
            remembers("Unknown", "NotObserved", NOT_OBSERVED, T0_TEXT, 1),
            view("False", "ResourcesMissing", BLIND_MESSAGE, T0_TEXT, 1),
            discovered("True", "Discovered", ok_message, T0_TEXT, 1),
        ],
    }
    assert stored(fake_kube, "ng-ok")["status"] == {
        "observedGeneration": 1,
        "autoscalerScalesFromZero": True,
        "autoscalingGroup": "asg-ok",
        "lastDiscoveryTime": T0_TEXT,
        "conditions": [
            remembers("Unknown", "NotObserved", NOT_OBSERVED, T0_TEXT, 1),
            view("True", "ViewsMatch", MATCH_MESSAGE, T0_TEXT, 1),
            discovered("True", "Discovered", ok_message, T0_TEXT, 1),
        ],
    }


def test_a_spec_change_bumps_observed_generation_and_keeps_unchanged_transitions(fake_kube: Any) -> None:
    """The spec written again (generation 2): observedGeneration follows; a condition whose status
    did not change keeps its lastTransitionTime, one that flipped gets the new time."""
    api = KubeClient(fake_kube.api_client())
    publish(api, [GroupOutcome("ng-a", template("ng-a"))], now=T0, autoscaling_groups={"ng-a": "asg-a"})
    publish(api, [GroupOutcome("ng-a", template("ng-a", 44))], now=T1, autoscaling_groups={"ng-a": "asg-a"})
    status = stored(fake_kube, "ng-a")["status"]
    assert stored(fake_kube, "ng-a")["metadata"]["generation"] == 2
    ok_message = "node group read completely from AWS this cycle"
    assert status == {
        "observedGeneration": 2,
        "autoscalerScalesFromZero": True,
        "autoscalingGroup": "asg-a",
        "lastDiscoveryTime": T1_TEXT,
        "conditions": [
            remembers("Unknown", "NotObserved", NOT_OBSERVED, T0_TEXT, 2),
            view("True", "ViewsMatch", MATCH_MESSAGE, T1_TEXT, 2),
            discovered("True", "Discovered", ok_message, T0_TEXT, 2),
        ],
    }


def test_unchanged_status_is_not_written_again(fake_kube: Any) -> None:
    """The same cycle at the same time writes nothing: neither spec nor status."""
    api = KubeClient(fake_kube.api_client())
    outcomes = [GroupOutcome("ng-a", template("ng-a"))]
    publish(api, outcomes, now=T0)
    fake_kube.requests.clear()
    again = publish(api, outcomes, now=T0)
    assert again.statuses == [] and status_writes(fake_kube) == []


def test_failed_discovery_sets_discovered_false_and_keeps_the_last_discovery_time(fake_kube: Any) -> None:
    """AWS failing: Discovered False with the AWS error, lastDiscoveryTime still the last success,
    the group name kept from before."""
    api = KubeClient(fake_kube.api_client())
    publish(api, [GroupOutcome("ng-a", template("ng-a", 44))], now=T0, autoscaling_groups={"ng-a": "asg-a"})
    error = "DescribeAutoScalingGroups: AccessDenied: not authorized"
    result = write_statuses(api, [GroupOutcome("ng-a", template("ng-a", 44), error)], now=T1)
    assert result.statuses == ["ng-a"]
    assert stored(fake_kube, "ng-a")["status"] == {
        "observedGeneration": 1,
        "autoscalerScalesFromZero": True,
        "autoscalingGroup": "asg-a",
        "lastDiscoveryTime": T0_TEXT,
        "conditions": [
            remembers("Unknown", "NotObserved", NOT_OBSERVED, T0_TEXT, 1),
            view("True", "ViewsMatch", MATCH_MESSAGE, T0_TEXT, 1),
            discovered("False", "DiscoveryFailed", error, T1_TEXT, 1),
        ],
    }


def test_a_spec_rewrite_does_not_reset_the_status(fake_kube: Any) -> None:
    """The main resource's PUT cannot change the status: after a spec change and a failed status
    write nothing of the earlier status is lost (the status subresource is the only writer)."""
    api = KubeClient(fake_kube.api_client())
    publish(api, [GroupOutcome("ng-a", template("ng-a"))], now=T0, autoscaling_groups={"ng-a": "asg-a"})
    before = stored(fake_kube, "ng-a")["status"]
    fake_kube.faults.fail(method="PATCH", path=f"{PATH}/ng-a/status", code=500)
    result = publish(api, [GroupOutcome("ng-a", template("ng-a", nodes=1))], now=T1)
    assert result.updated == ["ng-a"] and result.statuses == []
    assert [e.split(":")[0] for e in result.errors] == ["ng-a status"]
    assert stored(fake_kube, "ng-a")["status"] == before


def test_manual_templates_get_no_status(fake_kube: Any) -> None:
    """A person's template is never written, its status included."""
    manual = template("ng-manual").to_object()
    manual["spec"]["provider"] = "manual"
    fake_kube.create(manual)
    api = KubeClient(fake_kube.api_client())
    result = publish(api, [GroupOutcome("ng-manual", template("ng-manual"))], now=T0)
    assert result.statuses == [] and "status" not in stored(fake_kube, "ng-manual")


def test_no_status_for_a_spec_that_was_not_written(fake_kube: Any) -> None:
    """The spec PUT refused: the status is not written either (it would describe the new spec
    under the old generation)."""
    api = KubeClient(fake_kube.api_client())
    publish(api, [GroupOutcome("ng-a", template("ng-a"))], now=T0)
    before = stored(fake_kube, "ng-a")["status"]
    fake_kube.faults.fail(method="PUT", path=f"{PATH}/ng-a", code=500)
    result = publish(api, [GroupOutcome("ng-a", template("ng-a", 44))], now=T1)
    assert result.updated == [] and result.statuses == []
    assert stored(fake_kube, "ng-a")["status"] == before


SEEN_TEXT = "2027-01-15T07:30:00Z"
EXPIRES_TEXT = "2028-01-15T07:30:00Z"
REMEMBERS_REASON = (
    "cluster-autoscaler kube-system/cluster-autoscaler-7d9 (started 2027-01-15T06:00:00Z) saw a live node "
    f"of the group at {SEEN_TEXT} and builds the group's next node from it until it restarts "
    f"or until {EXPIRES_TEXT}"
)
FORGOT_REASON = (
    "cluster-autoscaler kube-system/cluster-autoscaler-8f1 started at 2027-01-15T08:00:30Z, too late to have "
    f"seen the group's last live node (seen {SEEN_TEXT}): it builds the group's node from its tags"
)


def memory(remembers_now: bool, reason: str) -> AutoscalerMemory:
    """A memory record as capacity/autoscaler_memory.next_memory writes it."""
    node = View(allocatable={"cpu": 1930, "ephemeral-storage": 44 * GIB, "vpc.amazonaws.com/pod-eni": 9000})
    return AutoscalerMemory(
        remembers=remembers_now,
        reason=reason,
        view=node,
        last_seen=SEEN_TEXT,
        autoscaler="kube-system/cluster-autoscaler-7d9",
        started="2027-01-15T06:00:00Z",
        expires=EXPIRES_TEXT if remembers_now else "",
    )


def test_the_remembers_condition_follows_cluster_autoscalers_memory(fake_kube: Any) -> None:
    """True while cluster-autoscaler remembers the group, with the record's reason (its pod, when it
    saw the node, until when) and what the remembered node offers; after a restart, False with the
    reason and a new lastTransitionTime; the other conditions are unchanged. Whole lists."""
    api = KubeClient(fake_kube.api_client())
    ok_message = "node group read completely from AWS this cycle"
    remembered = template("ng-a", memory=memory(True, REMEMBERS_REASON))
    publish(api, [GroupOutcome("ng-a", remembered)], now=T0, autoscaling_groups={"ng-a": "asg-a"})
    assert stored(fake_kube, "ng-a")["status"]["conditions"] == [
        remembers(
            "True",
            "Remembers",
            f"{REMEMBERS_REASON}; the remembered node offers "
            "ephemeral-storage 44Gi, vpc.amazonaws.com/pod-eni 9",
            T0_TEXT,
            1,
        ),
        view("False", "ResourcesMissing", BLIND_MESSAGE, T0_TEXT, 1),
        discovered("True", "Discovered", ok_message, T0_TEXT, 1),
    ]
    forgotten = template("ng-a", memory=memory(False, FORGOT_REASON))
    publish(api, [GroupOutcome("ng-a", forgotten)], now=T1, autoscaling_groups={"ng-a": "asg-a"})
    assert stored(fake_kube, "ng-a")["status"]["conditions"] == [
        remembers("False", "NotRemembered", FORGOT_REASON, T1_TEXT, 2),
        view("False", "ResourcesMissing", BLIND_MESSAGE, T0_TEXT, 2),
        discovered("True", "Discovered", ok_message, T0_TEXT, 2),
    ]


def test_the_remembers_gauge_is_one_per_remembered_group_and_absent_before_observation() -> None:
    """fitguard_node_group_autoscaler_remembers, whole: 1 for a group cluster-autoscaler remembers,
    0 for one it does not, no series for a group whose memory was never observed."""
    from controller.cache import ClusterCache
    from controller.discovery import GroupOutcome
    from controller.metrics import ControllerMetrics
    from controller.report import CycleReport
    from tests.controller.test_metrics import AlwaysLeader, values

    groups = [
        template("ng-kept", memory=memory(True, REMEMBERS_REASON)),
        template("ng-forgotten", memory=memory(False, FORGOT_REASON)),
        template("ng-unobserved"),
    ]
    report = CycleReport(tuple(GroupOutcome(t.name, t) for t in groups))
    metrics = ControllerMetrics(AlwaysLeader(), ClusterCache(), last_cycle=lambda: report)
    assert values(metrics, "fitguard_node_group_autoscaler_remembers") == {
        (("node_group", "ng-kept"),): 1.0,
        (("node_group", "ng-forgotten"),): 0.0,
    }


def test_a_status_that_changed_only_by_its_discovery_time_is_not_written_until_it_is_stale(
    fake_kube: Any,
) -> None:
    """The same outcome a cycle later writes nothing (lastDiscoveryTime may lag by up to
    LAST_DISCOVERY_REFRESH); once the stored time is that old, one PATCH moves it on; a real
    change is written at once, with the new time."""
    api = KubeClient(fake_kube.api_client())
    outcomes = [GroupOutcome("ng-a", template("ng-a"))]
    publish(api, outcomes, now=T0)
    fake_kube.requests.clear()
    assert publish(api, outcomes, now=T1).statuses == [] and status_writes(fake_kube) == []
    assert stored(fake_kube, "ng-a")["status"]["lastDiscoveryTime"] == T0_TEXT
    later = T0 + LAST_DISCOVERY_REFRESH
    assert publish(api, outcomes, now=later).statuses == ["ng-a"]
    assert stored(fake_kube, "ng-a")["status"]["lastDiscoveryTime"] == rfc3339(later)
    changed = publish(api, [GroupOutcome("ng-a", template("ng-a", 44))], now=later + 60)
    assert changed.statuses == ["ng-a"]
    assert stored(fake_kube, "ng-a")["status"]["lastDiscoveryTime"] == rfc3339(later + 60)


# controller/status.py in process: whole conditions, merges and patches for the cases the publish
# tests above do not reach (no template, a stale outcome, odd stored statuses, the refresh bounds).

DISCOVERED_MESSAGE = "node group read completely from AWS this cycle"


def test_a_condition_is_whole_for_every_state_of_its_input() -> None:
    """Discovered True or False with the AWS error; the view Unknown without an autoscaler view;
    remembers Unknown, False with the record's reason or a default, True with or without what the
    remembered node offers (only the compared resources, in their order)."""
    from controller.status import discovered_condition, remembers_condition, view_condition

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {"type": kind, "status": status, "reason": reason, "message": message}

    assert discovered_condition(GroupOutcome("ng", template("ng"))) == condition(
        "Discovered", "True", "Discovered", DISCOVERED_MESSAGE
    )
    assert discovered_condition(
        GroupOutcome("ng", template("ng"), "DescribeAutoScalingGroups: throttled")
    ) == (condition("Discovered", "False", "DiscoveryFailed", "DescribeAutoScalingGroups: throttled"))
    viewless = NodeGroupTemplate(name="ng", provider="aws-asg", instance_types=("m5.large",), max_size=1)
    assert view_condition(viewless) == condition(
        "AutoscalerViewMatches", "Unknown", "NoAutoscalerView", "no autoscaler view to compare with"
    )
    assert view_condition(template("ng")) == condition(
        "AutoscalerViewMatches", "False", "ResourcesMissing", BLIND_MESSAGE
    )
    short = (
        "cluster-autoscaler's template lacks ephemeral-storage (a real node offers 44Gi, "
        f"cluster-autoscaler's template 20Gi): tag {ALL_TAG} fixes it"
    )
    assert view_condition(template("ng", 20)) == condition(
        "AutoscalerViewMatches", "False", "ResourcesMissing", short
    )
    eni_node = View(
        allocatable={"cpu": 1930, "ephemeral-storage": 44 * GIB, "vpc.amazonaws.com/pod-eni": 9000},
        source="launch-template",
    )
    both = (
        f"{BLIND_MESSAGE}; vpc.amazonaws.com/pod-eni (a real node offers 9, cluster-autoscaler's "
        "template 0): tag k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/pod-eni=9 "
        "fixes it"
    )
    assert view_condition(replace(template("ng"), actual=eni_node)) == condition(
        "AutoscalerViewMatches", "False", "ResourcesMissing", both
    )
    assert remembers_condition(template("ng")) == condition(
        "AutoscalerRemembers", "Unknown", "NotObserved", NOT_OBSERVED
    )
    assert remembers_condition(template("ng", memory=AutoscalerMemory())) == condition(
        "AutoscalerRemembers", "False", "NotRemembered", "cluster-autoscaler keeps no node"
    )
    assert remembers_condition(template("ng", memory=memory(False, FORGOT_REASON))) == condition(
        "AutoscalerRemembers", "False", "NotRemembered", FORGOT_REASON
    )
    no_view = AutoscalerMemory(remembers=True, reason="kept")
    assert remembers_condition(template("ng", memory=no_view)) == condition(
        "AutoscalerRemembers", "True", "Remembers", "kept"
    )
    cpu_only = AutoscalerMemory(remembers=True, reason="kept", view=View(allocatable={"cpu": 1930}))
    assert remembers_condition(template("ng", memory=cpu_only)) == condition(
        "AutoscalerRemembers", "True", "Remembers", "kept"
    )
    storage_only = AutoscalerMemory(
        remembers=True, reason="kept", view=View(allocatable={"ephemeral-storage": 44 * GIB})
    )
    assert remembers_condition(template("ng", memory=storage_only)) == condition(
        "AutoscalerRemembers", "True", "Remembers", "kept; the remembered node offers ephemeral-storage 44Gi"
    )


def test_merge_keeps_a_transition_time_only_while_the_status_holds() -> None:
    """Each wanted condition gets the generation; its lastTransitionTime is the stored one when the
    stored condition of its type has the same status and a time, else now. Another writer's
    conditions are kept as they were; entries that are not conditions are dropped; all sorted by
    type."""
    from controller.status import merge_conditions

    def wanted(kind: str, status: str) -> dict[str, str]:
        return {"type": kind, "status": status, "reason": "r", "message": "m"}

    previous = [
        {"type": "B", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        {"type": "C", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        {"type": "D", "status": "True"},
        {"type": "Z", "status": "True", "reason": "theirs", "lastTransitionTime": "2019-01-01T00:00:00Z"},
        {"type": 5, "status": "True"},
        "not a condition",
    ]
    wants = [wanted("D", "True"), wanted("C", "False"), wanted("B", "True"), wanted("A", "True")]
    assert merge_conditions(previous, wants, T0, 3) == [
        {**wanted("A", "True"), "observedGeneration": 3, "lastTransitionTime": T0_TEXT},
        {**wanted("B", "True"), "observedGeneration": 3, "lastTransitionTime": "2020-01-01T00:00:00Z"},
        {**wanted("C", "False"), "observedGeneration": 3, "lastTransitionTime": T0_TEXT},
        {**wanted("D", "True"), "observedGeneration": 3, "lastTransitionTime": T0_TEXT},
        {"type": "Z", "status": "True", "reason": "theirs", "lastTransitionTime": "2019-01-01T00:00:00Z"},
    ]
    assert merge_conditions(None, [wanted("A", "True")], T1, 0) == [
        {**wanted("A", "True"), "observedGeneration": 0, "lastTransitionTime": T1_TEXT}
    ]


def test_desired_status_of_a_stale_or_new_group_and_of_an_odd_stored_status() -> None:
    """No template: no status. A stale outcome keeps the stored lastDiscoveryTime and group (or has
    none); a fresh one takes now and the group given; a stored status that is not an object and a
    missing generation read as empty and 0."""
    from controller.status import desired_status

    assert desired_status(GroupOutcome("ng", None), {}, T0) is None
    stale = GroupOutcome("ng", template("ng", 44, nodes=1), "AWS: throttled")
    stored_status = {
        "metadata": {"generation": 4},
        "status": {"lastDiscoveryTime": T0_TEXT, "autoscalingGroup": "asg-old", "conditions": []},
    }
    conditions = [
        remembers("Unknown", "NotObserved", NOT_OBSERVED, T1_TEXT, 4),
        view("True", "ViewsMatch", MATCH_MESSAGE, T1_TEXT, 4),
        discovered("False", "DiscoveryFailed", "AWS: throttled", T1_TEXT, 4),
    ]
    assert desired_status(stale, stored_status, T1) == {
        "observedGeneration": 4,
        "autoscalerScalesFromZero": True,
        "autoscalingGroup": "asg-old",
        "lastDiscoveryTime": T0_TEXT,
        "conditions": conditions,
    }
    assert desired_status(stale, {"status": "garbage"}, T1) == {
        "observedGeneration": 0,
        "autoscalerScalesFromZero": True,
        "conditions": [{**c, "observedGeneration": 0} for c in conditions],
    }
    fresh = GroupOutcome("ng", template("ng", 44))
    assert desired_status(fresh, stored_status, T1, "asg-new") == {
        "observedGeneration": 4,
        "autoscalerScalesFromZero": True,
        "autoscalingGroup": "asg-new",
        "lastDiscoveryTime": T1_TEXT,
        "conditions": [
            remembers("Unknown", "NotObserved", NOT_OBSERVED, T1_TEXT, 4),
            view("True", "ViewsMatch", MATCH_MESSAGE, T1_TEXT, 4),
            discovered("True", "Discovered", DISCOVERED_MESSAGE, T1_TEXT, 4),
        ],
    }


def test_a_status_patch_is_none_only_when_nothing_but_a_fresh_enough_time_differs() -> None:
    """Equal statuses: no patch. Only lastDiscoveryTime newer by less than the refresh: no patch;
    (the same second spelt otherwise included); by exactly the refresh, older than stored,
    unreadable, or absent on one side: the whole desired
    status. Fields no longer set are removed with null; a stored status that is not an object
    counts as empty."""
    from controller.status import status_patch

    def current(**status: Any) -> dict[str, Any]:
        return {"status": {"observedGeneration": 1, **status}}

    def desired(**status: Any) -> dict[str, Any]:
        return {"observedGeneration": 1, **status}

    def patch(**status: Any) -> dict[str, Any]:
        return {"status": desired(**status)}

    assert status_patch(current(), desired()) is None
    assert status_patch(current(lastDiscoveryTime=T0_TEXT), desired(lastDiscoveryTime=T1_TEXT)) is None
    assert status_patch(current(lastDiscoveryTime=T0_TEXT), desired(lastDiscoveryTime=T1_TEXT), 61.0) is None
    same_second = "2027-01-15T8:00:00Z"  # T0 spelt without the hour's leading zero
    assert status_patch(current(lastDiscoveryTime=same_second), desired(lastDiscoveryTime=T0_TEXT)) is None
    assert status_patch(
        current(lastDiscoveryTime=T0_TEXT), desired(lastDiscoveryTime=T1_TEXT), 60.0
    ) == patch(lastDiscoveryTime=T1_TEXT)
    assert status_patch(current(lastDiscoveryTime=T1_TEXT), desired(lastDiscoveryTime=T0_TEXT)) == patch(
        lastDiscoveryTime=T0_TEXT
    )
    assert status_patch(current(lastDiscoveryTime="soon"), desired(lastDiscoveryTime=T1_TEXT)) == patch(
        lastDiscoveryTime=T1_TEXT
    )
    assert status_patch(current(lastDiscoveryTime=T0_TEXT), desired(lastDiscoveryTime="soon")) == patch(
        lastDiscoveryTime="soon"
    )
    assert status_patch(current(), desired(lastDiscoveryTime=T1_TEXT)) == patch(lastDiscoveryTime=T1_TEXT)
    assert status_patch(current(lastDiscoveryTime=T0_TEXT, autoscalingGroup="a"), desired()) == {
        "status": {"lastDiscoveryTime": None, "autoscalingGroup": None, "observedGeneration": 1}
    }
    assert status_patch({"status": []}, desired()) == patch()
    assert status_patch(current(), desired(observedGeneration=2, lastDiscoveryTime=None)) == patch(
        observedGeneration=2, lastDiscoveryTime=None
    )


def test_a_nodepools_status_says_nothing_of_cluster_autoscaler_scaling_from_zero() -> None:
    """cluster-autoscaler never scales a Karpenter NodePool: its template's status has no
    autoscalerScalesFromZero (kubectl's CA FROM ZERO column stays empty), a node group's has it."""
    from capacity.karpenter.published import PROVIDER, PublishedNodePool
    from controller.status import desired_status

    record = PublishedNodePool("default", "default", "EC2NodeClass", {}, {})
    pool = NodeGroupTemplate("default", provider=PROVIDER, karpenter=record)
    status = desired_status(GroupOutcome("default", pool), {}, 0.0)
    assert status is not None and "autoscalerScalesFromZero" not in status
    group = desired_status(GroupOutcome("ng", template("ng")), {}, 0.0)
    assert group is not None and group["autoscalerScalesFromZero"] is False
