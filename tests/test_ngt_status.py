"""NodeGroupTemplate status against the fake API server: written through the status subresource
(never the main resource), with the Discovered, AutoscalerViewMatches and AutoscalerRemembers
conditions, the group, observedGeneration and the last discovery time, and lastTransitionTime kept
while a condition holds."""

from __future__ import annotations

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
    from controller.metrics import ControllerMetrics
    from controller.report import CycleReport
    from tests.test_controller_metrics import values

    groups = [
        template("ng-kept", memory=memory(True, REMEMBERS_REASON)).to_object(),
        template("ng-forgotten", memory=memory(False, FORGOT_REASON)).to_object(),
        template("ng-unobserved").to_object(),
    ]
    metrics = ControllerMetrics(
        is_leader=lambda: True, synced=lambda: True, last_cycle=lambda: CycleReport(node_groups=tuple(groups))
    )
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
