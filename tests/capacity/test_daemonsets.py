"""capacity/daemonsets.py: the DaemonSet controller's rules fitguard's verdicts depend on, each
compared whole (pkg/controller/daemon/util/daemonset_util.go AddOrUpdateDaemonPodTolerations,
daemon_controller.go NodeShouldRunDaemonPod)."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.daemonsets import daemon_tolerations, runs_on, without_daemonset
from capacity.selectors import SelectorError
from capacity.taints import Taint, Toleration
from capacity.template import NodeGroupTemplate, View

ADDED = (
    Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),
)
NETWORK = Toleration("node.kubernetes.io/network-unavailable", "Exists", "", "NoSchedule")
LINUX = View({"cpu": 2000}, {"kubernetes.io/os": "linux", "zone": "a"})


def test_every_daemonset_pod_gets_the_controllers_six_tolerations() -> None:
    """The six, in upstream's order, for any template; hostNetwork: true adds network-unavailable
    (and only `true` does)."""
    assert daemon_tolerations({}) == ADDED
    assert daemon_tolerations({"hostNetwork": False}) == ADDED
    assert daemon_tolerations({"hostNetwork": "true"}) == ADDED
    assert daemon_tolerations({"hostNetwork": True}) == (*ADDED, NETWORK)


@pytest.mark.parametrize(
    ("spec", "view", "runs"),
    [
        ({}, LINUX, True),
        ({"nodeSelector": {"kubernetes.io/os": "linux"}}, LINUX, True),
        ({"nodeSelector": {"kubernetes.io/os": "windows"}}, LINUX, False),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                            ]
                        }
                    }
                }
            },
            LINUX,
            False,
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                            ]
                        }
                    }
                }
            },
            LINUX,
            True,
        ),
        ({}, View({}, {}, (Taint("dedicated", "x", "NoSchedule"),)), False),
        (
            {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
            View({}, {}, (Taint("dedicated", "x"),)),
            True,
        ),
        # the controller's own tolerations: a cordoned or not-ready node still gets its pod
        ({}, View({}, {}, (Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),)), True),
        ({}, View({}, {}, (Taint("node.kubernetes.io/not-ready", "", "NoExecute"),)), True),
        ({}, View({}, {}, (Taint("node.kubernetes.io/network-unavailable", "", "NoSchedule"),)), False),
        (
            {"hostNetwork": True},
            View({}, {}, (Taint("node.kubernetes.io/network-unavailable", "", "NoSchedule"),)),
            True,
        ),
        ({}, View({}, {}, (Taint("soft", "", "PreferNoSchedule"),)), True),
    ],
)
def test_which_nodes_a_daemonset_puts_a_pod_on(spec: dict[str, Any], view: View, runs: bool) -> None:
    """nodeSelector, required node affinity, and the NoSchedule/NoExecute taints its own and the
    controller's tolerations leave untolerated."""
    assert runs_on(spec, view) is runs


def test_a_malformed_template_says_which_field() -> None:
    """A selector or toleration the API would refuse raises, naming the field."""
    bad = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]
                }
            }
        }
    }
    with pytest.raises(SelectorError, match=r"^t\.nodeSelectorTerms\[0\]"):
        runs_on(bad, LINUX, "t")
    with pytest.raises(TypeError, match=r"^t\.tolerations"):
        runs_on({"tolerations": "all"}, LINUX, "t")


def template(**changes: Any) -> NodeGroupTemplate:
    fields: dict[str, Any] = {
        "name": "ng",
        "provider": "aws-asg",
        "max_size": 3,
        "actual": LINUX,
        "autoscaler": View({"cpu": 2000}, {"kubernetes.io/os": "linux"}, (), "tags"),
        "daemonset_overhead": {"cpu": 1200, "memory": 100 * 2**20 * 1000},
        "daemonset_pods": 2,
        "autoscaler_overhead": {"cpu": 1300},
        "autoscaler_overhead_pods": 3,
    }
    return NodeGroupTemplate(**{**fields, **changes})


AGENT = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1000m", "memory": "200Mi"}}}]}


def test_an_update_takes_its_old_revision_out_of_both_views_overhead() -> None:
    """Runs on both views: each overhead loses its requests (never below zero) and one pod."""
    got = without_daemonset(template(), AGENT)
    assert (got.daemonset_overhead, got.daemonset_pods) == ({"cpu": 200, "memory": 0}, 1)
    assert (got.autoscaler_overhead, got.autoscaler_overhead_pods) == ({"cpu": 300}, 2)
    assert (got.actual, got.autoscaler, got.name, got.max_size) == (LINUX, template().autoscaler, "ng", 3)


def test_a_view_the_old_revision_does_not_run_on_keeps_its_overhead() -> None:
    """Selected out of the autoscaler view only (its labels lack the zone): that overhead stays."""
    spec = {**AGENT, "nodeSelector": {"zone": "a"}}
    got = without_daemonset(template(), spec)
    assert (got.daemonset_overhead, got.daemonset_pods) == ({"cpu": 200, "memory": 0}, 1)
    assert (got.autoscaler_overhead, got.autoscaler_overhead_pods) == ({"cpu": 1300}, 3)


def test_no_view_no_pods_and_odd_input_leave_the_template_as_it_was() -> None:
    """No autoscaler view: nothing taken from its overhead; no pods counted: the count stays 0; a
    template whose requests or selector cannot be read changes nothing."""
    got = without_daemonset(template(autoscaler=None, daemonset_pods=0), AGENT)
    assert (got.autoscaler_overhead, got.autoscaler_overhead_pods, got.daemonset_pods) == (
        {"cpu": 1300},
        3,
        0,
    )
    assert without_daemonset(template(), {"containers": "x"}) == template()
    bad_selector = {
        **AGENT,
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}
        },
    }
    got = without_daemonset(template(), bad_selector)
    assert (got.daemonset_overhead, got.autoscaler_overhead) == (template().daemonset_overhead, {"cpu": 1300})
