"""NodeGroupTemplate objects parse and render the docs/design.md shape, and pick the view that will
really be used for a new pod."""

import pytest

from capacity.quantity import parse_quantity
from capacity.template import NodeGroupTemplate, View
from capacity.view_match import MissingResource, autoscaler_scales_from_zero, missing_resources

OBJECT = {
    "apiVersion": "fitguard.io/v1alpha1",
    "kind": "NodeGroupTemplate",
    "metadata": {"name": "ng-batch"},
    "spec": {
        "provider": "aws-asg",
        "instanceTypes": ["m5.large"],
        "minSize": 0,
        "maxSize": 10,
        "desiredSize": 0,
        "nodes": 0,
        "actual": {
            "source": "launch-template",
            "allocatable": {
                "cpu": "1930m",
                "memory": "7220Mi",
                "ephemeral-storage": "19136439364",
                "pods": "29",
                "vpc.amazonaws.com/pod-eni": "9",
            },
            "labels": {"node.kubernetes.io/instance-type": "m5.large"},
            "taints": [],
        },
        "autoscaler": {
            "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "labels": {"node.kubernetes.io/instance-type": "m5.large"},
            "taints": [],
        },
        "daemonSetOverhead": {"cpu": "200m", "memory": "300Mi", "pods": "3"},
        "scaleFromZero": "autoscaler",
    },
}


def test_the_design_example_parses() -> None:
    t = NodeGroupTemplate.from_object(OBJECT)
    assert t.name == "ng-batch" and t.instance_type == "m5.large"
    assert t.actual is not None and t.actual.source == "launch-template"
    assert t.actual.allocatable["ephemeral-storage"] == parse_quantity("19136439364")
    assert t.autoscaler is not None and "ephemeral-storage" not in t.autoscaler.allocatable
    assert t.daemonset_overhead == {"cpu": 200, "memory": parse_quantity("300Mi")}
    assert t.daemonset_pods == 3


def test_render_then_parse_is_the_same_template() -> None:
    t = NodeGroupTemplate.from_object(OBJECT)
    assert NodeGroupTemplate.from_object(t.to_object()) == t


def test_judged_view_follows_who_builds_the_next_node() -> None:
    t = NodeGroupTemplate.from_object(OBJECT)
    assert t.judged_view() == (t.autoscaler, "no nodes: cluster-autoscaler builds the node from tags")
    live = NodeGroupTemplate.from_object({**OBJECT, "spec": {**OBJECT["spec"], "nodes": 2}})
    assert live.judged_view()[0] is live.actual
    ours = NodeGroupTemplate.from_object({**OBJECT, "spec": {**OBJECT["spec"], "scaleFromZero": "fitguard"}})
    assert ours.judged_view()[0] is ours.actual
    closed = NodeGroupTemplate.from_object({**OBJECT, "spec": {**OBJECT["spec"], "maxSize": 0}})
    assert closed.judged_view() == (None, "max size is 0")
    manual = NodeGroupTemplate("m", provider="manual", max_size=1, actual=View({"cpu": 1000}))
    assert manual.judged_view()[0] is manual.actual


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"maxSize": "ten"}, "spec.maxSize"),
        ({"actual": {"allocatable": {"cpu": "fast"}}}, "spec.actual.allocatable.cpu"),
        ({"actual": {"taints": "none"}}, "spec.actual.taints"),
    ],
)
def test_bad_templates_name_the_field(spec: dict, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message.replace(".", r"\.")):
        NodeGroupTemplate.from_object({"metadata": {"name": "x"}, "spec": spec})


def test_a_template_needs_a_name() -> None:
    with pytest.raises(ValueError, match=r"metadata\.name"):
        NodeGroupTemplate.from_object({"metadata": {}, "spec": {}})


def test_autoscaler_overhead_defaults_to_daemonsets_plus_kube_proxy_and_round_trips() -> None:
    """Without spec.autoscalerOverhead (an older or hand-written object) the template node runs the
    DaemonSets plus cluster-autoscaler's kube-proxy pod; a given one is kept as it is; either way
    overhead_of hands it out for the autoscaler view only, and the object round-trips whole."""
    autoscaler = {"allocatable": {"cpu": "2", "pods": "110"}}
    actual = {"source": "launch-template", "allocatable": {"cpu": "1930m", "pods": "29"}}
    base = {"autoscaler": autoscaler, "actual": actual, "daemonSetOverhead": {"cpu": "200m", "pods": "3"}}
    older = NodeGroupTemplate.from_object({"metadata": {"name": "ng"}, "spec": base})
    assert older.overhead_of(older.autoscaler) == ({"cpu": 300}, 4)
    assert older.overhead_of(older.actual) == ({"cpu": 200}, 3)
    given = {**base, "autoscalerOverhead": {"cpu": "150m", "memory": "64Mi", "pods": "2"}}
    newer = NodeGroupTemplate.from_object({"metadata": {"name": "ng"}, "spec": given})
    assert newer.overhead_of(newer.autoscaler) == ({"cpu": 150, "memory": 64 * 2**20 * 1000}, 2)
    assert newer.to_object()["spec"]["autoscalerOverhead"] == {"cpu": "150m", "memory": "64Mi", "pods": "2"}
    assert NodeGroupTemplate.from_object(newer.to_object()) == newer


# -- cluster-autoscaler's view against the actual one (the mutation run of capacity/view_match.py)


def _group(
    actual: dict[str, int] | None, autoscaler: dict[str, int] | None, max_size: int = 3
) -> NodeGroupTemplate:
    return NodeGroupTemplate(
        "ng",
        max_size=max_size,
        actual=None if actual is None else View(actual),
        autoscaler=None if autoscaler is None else View(autoscaler),
    )


def test_the_resources_autoscaler_lacks_and_the_tags_that_fix_them() -> None:
    """Ephemeral-storage then pod-eni, each when the actual view offers more; cpu, memory and pods
    are not compared; each missing resource names its tag with the canonical quantity."""
    storage = parse_quantity("20Gi")
    group = _group(
        {"cpu": 2000, "ephemeral-storage": storage, "vpc.amazonaws.com/pod-eni": 9000, "memory": 5},
        {"cpu": 1000, "ephemeral-storage": storage - 1000, "memory": 1},
    )
    missing = missing_resources(group)
    assert missing == [
        MissingResource("ephemeral-storage", storage, storage - 1000),
        MissingResource("vpc.amazonaws.com/pod-eni", 9000, 0),
    ]
    assert missing is not None
    assert [m.tag for m in missing] == [
        "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage=20Gi",
        "k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/pod-eni=9",
    ]
    assert autoscaler_scales_from_zero(group) is False


@pytest.mark.parametrize(
    ("actual", "autoscaler", "max_size", "missing", "scales"),
    [
        (None, {}, 3, None, False),
        ({}, None, 3, None, False),
        ({}, {}, 3, [], True),
        ({}, {}, 0, [], False),
        ({"vpc.amazonaws.com/pod-eni": 9000}, {"vpc.amazonaws.com/pod-eni": 9000}, 1, [], True),
        ({"vpc.amazonaws.com/pod-eni": 9000}, {"vpc.amazonaws.com/pod-eni": 10000}, 1, [], True),
        ({"ephemeral-storage": 1000}, {}, 1, [MissingResource("ephemeral-storage", 1000, 0)], False),
    ],
)
def test_whether_autoscaler_can_scale_the_group_from_zero(
    actual: dict | None, autoscaler: dict | None, max_size: int, missing: list | None, scales: bool
) -> None:
    """Comparable only when both views are known; scales from zero only with a max size above zero
    and nothing missing (offering as much or more is fine)."""
    group = _group(actual, autoscaler, max_size)
    assert missing_resources(group) == missing
    assert autoscaler_scales_from_zero(group) is scales
