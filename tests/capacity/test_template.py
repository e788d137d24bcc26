"""NodeGroupTemplate objects parse and render the docs/design.md shape, and pick the view that will
really be used for a new pod."""

import pytest

from capacity.quantity import parse_quantity
from capacity.quantity_grammar import FORMAT_WRONG
from capacity.taints import Taint
from capacity.template import AutoscalerMemory, NodeGroupTemplate, View
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


MIB = 2**20 * 1000  # one MiB in milli-units

MEMORY_SPEC = {
    "remembers": True,
    "reason": "a node of the group was seen 5m ago",
    "allocatable": {"cpu": "1930m", "pods": "29"},
    "labels": {"zone": "a"},
    "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
    "lastSeen": "2026-11-30T12:00:00Z",
    "autoscaler": "kube-system/cluster-autoscaler-0",
    "started": "2026-11-30T11:00:00+00:00",
    "expires": "2026-11-30T12:10:00Z",
}


def test_a_view_parses_whole_and_renders_with_or_without_its_source() -> None:
    """A view's labels become strings, non-map taints are dropped, the default source fills a
    missing one, and the view renders back whole (sorted labels, taints, source on request)."""
    view = View.from_object(
        {
            "allocatable": {"cpu": "2", "memory": "1Gi"},
            "labels": {"b": 2, "a": "x"},
            "taints": [{"key": "k", "effect": "NoExecute"}, "junk"],
        },
        "spec.actual",
        "launch-template",
    )
    assert view == View(
        {"cpu": 2000, "memory": 1024 * MIB},
        {"a": "x", "b": "2"},
        (Taint("k", "", "NoExecute"),),
        "launch-template",
    )
    assert view.to_object() == {
        "source": "launch-template",
        "allocatable": {"cpu": "2", "memory": "1Gi"},
        "labels": {"a": "x", "b": "2"},
        "taints": [{"key": "k", "effect": "NoExecute"}],
    }
    assert list(view.to_object()["labels"]) == ["a", "b"]
    assert view.to_object(with_source=False) == {
        "allocatable": {"cpu": "2", "memory": "1Gi"},
        "labels": {"a": "x", "b": "2"},
        "taints": [{"key": "k", "effect": "NoExecute"}],
    }
    named = View.from_object({"source": "manual", "labels": None, "taints": None}, "f", "tags")
    assert named == View({}, {}, (), "manual")


@pytest.mark.parametrize(
    ("raw", "error", "message"),
    [
        ({"taints": {"key": "k"}}, TypeError, "spec.x.taints: expected a list"),
        ({"labels": ["a"]}, TypeError, "spec.x.labels: expected a map"),
        (
            {"allocatable": ["1"]},
            TypeError,
            "spec.x.allocatable: expected a map of resource quantities, got list",
        ),
    ],
)
def test_a_bad_view_says_which_field(raw: dict, error: type, message: str) -> None:
    """A view's malformed taints, labels or allocatable raise with the whole field path."""
    with pytest.raises(error) as raised:
        View.from_object(raw, "spec.x", "manual")
    assert str(raised.value) == message


def test_autoscaler_memory_parses_and_renders_whole() -> None:
    """A remembered node parses into every field (its view's source is live-node) and renders
    back to the same map, without a source."""
    memory = AutoscalerMemory.from_object(MEMORY_SPEC, "spec.autoscalerMemory")
    assert memory == AutoscalerMemory(
        remembers=True,
        reason="a node of the group was seen 5m ago",
        view=View({"cpu": 1930, "pods": 29000}, {"zone": "a"}, (Taint("dedicated", "batch"),), "live-node"),
        last_seen="2026-11-30T12:00:00Z",
        autoscaler="kube-system/cluster-autoscaler-0",
        started="2026-11-30T11:00:00+00:00",
        expires="2026-11-30T12:10:00Z",
    )
    assert memory.to_object() == {
        "remembers": True,
        "reason": "a node of the group was seen 5m ago",
        "allocatable": {"cpu": "1930m", "pods": "29"},
        "labels": {"zone": "a"},
        "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
        "lastSeen": "2026-11-30T12:00:00Z",
        "autoscaler": "kube-system/cluster-autoscaler-0",
        "started": "2026-11-30T11:00:00+00:00",
        "expires": "2026-11-30T12:10:00Z",
    }
    forgotten = AutoscalerMemory.from_object({"reason": "restarted"}, "m")
    assert forgotten == AutoscalerMemory(False, "restarted", None, "", "", "", "")
    assert forgotten.to_object() == {"remembers": False, "reason": "restarted"}
    assert AutoscalerMemory.from_object({}, "m").to_object() == {"remembers": False, "reason": ""}


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"remembers": "yes"}, TypeError, "spec.m.remembers: expected a boolean"),
        ({"reason": 5}, TypeError, "spec.m.reason: expected a string"),
        ({"lastSeen": 5}, TypeError, "spec.m.lastSeen: expected a string"),
        ({"autoscaler": ["a"]}, TypeError, "spec.m.autoscaler: expected a string"),
        ({"started": 1.5}, TypeError, "spec.m.started: expected a string"),
        ({"expires": True}, TypeError, "spec.m.expires: expected a string"),
        (
            {"lastSeen": "yesterday"},
            ValueError,
            "spec.m.lastSeen: expected an RFC 3339 time, got 'yesterday'",
        ),
        (
            {"started": "2026-11-30T11:00:00"},
            ValueError,
            "spec.m.started: expected an RFC 3339 time, got '2026-11-30T11:00:00'",
        ),
        ({"expires": "soon"}, ValueError, "spec.m.expires: expected an RFC 3339 time, got 'soon'"),
        # a lowercase z, which capacity.autoscaler_memory's parser (it reads lastSeen back) rejects too
        (
            {"lastSeen": "2026-11-30T12:00:00z"},
            ValueError,
            "spec.m.lastSeen: expected an RFC 3339 time, got '2026-11-30T12:00:00z'",
        ),
        (
            {"allocatable": {"cpu": "x"}},
            ValueError,
            "spec.m.allocatable.cpu: invalid quantity 'x' (" + FORMAT_WRONG + ")",
        ),
        ({"taints": "none"}, TypeError, "spec.m.taints: expected a list"),
        (
            {"lastSeen": ""},
            ValueError,
            "spec.m: remembers a template it does not carry (allocatable, lastSeen)",
        ),
        (
            {"allocatable": None},
            ValueError,
            "spec.m: remembers a template it does not carry (allocatable, lastSeen)",
        ),
    ],
)
def test_a_bad_autoscaler_memory_says_which_field(change: dict, error: type, message: str) -> None:
    """Each malformed field of spec.autoscalerMemory raises with its whole path and reason; a
    memory that remembers must carry the node (allocatable) and when it was seen."""
    with pytest.raises(error) as raised:
        AutoscalerMemory.from_object({**MEMORY_SPEC, **change}, "spec.m")
    assert str(raised.value) == message


def test_a_template_that_is_not_remembering_may_omit_the_node() -> None:
    """remembers false needs neither allocatable nor lastSeen; times with an offset are accepted."""
    memory = AutoscalerMemory.from_object({"remembers": False, "expires": "2026-11-30T12:10:00-05:00"}, "m")
    assert memory == AutoscalerMemory(False, "", None, "", "", "", "2026-11-30T12:10:00-05:00")


def _remembering(**spec_changes: object) -> NodeGroupTemplate:
    spec = {
        **OBJECT["spec"],
        "autoscalerMemory": {**MEMORY_SPEC, "allocatable": {"cpu": "1930m", "memory": "7220Mi"}},
        **spec_changes,
    }
    return NodeGroupTemplate.from_object({**OBJECT, "spec": spec})


def test_a_remembered_node_is_judged_with_the_tag_resources_it_lacks() -> None:
    """While cluster-autoscaler remembers a live node, a group with no node is judged on that node
    (its values win), plus each resource of the tag-built view it lacks; without the memory, or
    once it forgets, the tag-built view is judged; a manual group has no remembered node."""
    t = _remembering()
    remembered = View(
        {"cpu": 1930, "memory": 7220 * MIB, "pods": 110000},
        {"zone": "a"},
        (Taint("dedicated", "batch"),),
        "autoscaler-memory",
    )
    assert t.remembered == remembered
    assert t.judged_view() == (remembered, "no nodes: cluster-autoscaler remembers a live node of the group")
    assert t.judged_view(with_memory=False) == (
        t.autoscaler,
        "no nodes: cluster-autoscaler builds the node from tags",
    )
    assert t.overhead_of(t.remembered) == ({"cpu": 200, "memory": 300 * MIB}, 3)
    no_tags = _remembering(autoscaler=None)
    assert no_tags.remembered == View(
        {"cpu": 1930, "memory": 7220 * MIB},
        {"zone": "a"},
        (Taint("dedicated", "batch"),),
        "autoscaler-memory",
    )
    assert _remembering(provider="manual").remembered is None
    forgot = _remembering(autoscalerMemory={"remembers": False, "allocatable": {"cpu": "1"}})
    assert forgot.remembered is None
    assert forgot.judged_view() == (
        forgot.autoscaler,
        "no nodes: cluster-autoscaler builds the node from tags",
    )
    assert NodeGroupTemplate.from_object(OBJECT).remembered is None


def test_judged_view_names_each_reason_whole() -> None:
    """Each branch of judged_view returns its view and its whole reason: live nodes win even at
    max size 0, fitguard's own scale-from-zero and a group with no autoscaler view use the actual
    view, and max size 0 with no node serves nothing."""
    spec = OBJECT["spec"]
    t = NodeGroupTemplate.from_object
    live = t({**OBJECT, "spec": {**spec, "nodes": 1, "maxSize": 0}})
    assert live.judged_view() == (live.actual, "live nodes")
    ours = _remembering(scaleFromZero="fitguard")
    assert ours.judged_view() == (ours.actual, "fitguard scales it from zero")
    untagged = t({**OBJECT, "spec": {**spec, "autoscaler": None}})
    assert untagged.judged_view() == (untagged.actual, "no autoscaler view")
    manual = t({**OBJECT, "spec": {**spec, "provider": "manual"}})
    assert manual.judged_view() == (manual.actual, "no autoscaler view")
    one = t({**OBJECT, "spec": {**spec, "maxSize": 1}})
    assert one.judged_view() == (one.autoscaler, "no nodes: cluster-autoscaler builds the node from tags")
    negative = t({**OBJECT, "spec": {**spec, "maxSize": -1}})
    assert negative.judged_view() == (None, "max size is 0")


def test_overhead_of_hands_out_the_template_pods_for_the_autoscaler_view_only() -> None:
    """The autoscaler view (that very object) gets cluster-autoscaler's template pods; an equal view
    that is another object, the actual view and no view get the DaemonSet pods."""
    t = NodeGroupTemplate.from_object(OBJECT)
    assert t.autoscaler is not None
    daemonsets = ({"cpu": 200, "memory": 300 * MIB}, 3)
    assert t.overhead_of(t.autoscaler) == ({"cpu": 300, "memory": 300 * MIB}, 4)
    assert t.overhead_of(None) == daemonsets
    assert t.overhead_of(t.actual) == daemonsets
    twin = View(dict(t.autoscaler.allocatable), dict(t.autoscaler.labels), t.autoscaler.taints, "tags")
    assert twin == t.autoscaler
    assert t.overhead_of(twin) == daemonsets
    bare = NodeGroupTemplate("g", autoscaler=View({}), autoscaler_overhead={}, autoscaler_overhead_pods=0)
    assert bare.overhead_of(bare.autoscaler) == ({}, 0)


def test_a_template_renders_to_the_whole_object() -> None:
    """to_object writes every field in API form: the autoscaler view without a source, DaemonSet
    pods only when there are any, the template pods always, the memory when present, and the
    actual view's allocatable as a person reads it (`display`, what kubectl's columns show),
    which from_object does not read back."""
    t = _remembering(instanceTypes=["m5.large", "m5a.large"], minSize=1, desiredSize=2, nodes=0)
    assert t.instance_type == "m5.large"
    assert t.to_object() == {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-batch"},
        "spec": {
            "provider": "aws-asg",
            "instanceTypes": ["m5.large", "m5a.large"],
            "minSize": 1,
            "maxSize": 10,
            "desiredSize": 2,
            "nodes": 0,
            "actual": {
                "source": "launch-template",
                "allocatable": {
                    "cpu": "1930m",
                    "ephemeral-storage": "19136439364",
                    "memory": "7220Mi",
                    "pods": "29",
                    "vpc.amazonaws.com/pod-eni": "9",
                },
                "labels": {"node.kubernetes.io/instance-type": "m5.large"},
                "taints": [],
            },
            # what kubectl get ngt prints: one unit for every group, never more than there is
            "display": {
                "cpu": "1930m",
                "ephemeral-storage": "17.8Gi",
                "memory": "7Gi",
                "pods": "29",
                "vpc.amazonaws.com/pod-eni": "9",
            },
            "autoscaler": {
                "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                "labels": {"node.kubernetes.io/instance-type": "m5.large"},
                "taints": [],
            },
            "daemonSetOverhead": {"cpu": "200m", "memory": "300Mi", "pods": "3"},
            "autoscalerOverhead": {"cpu": "300m", "memory": "300Mi", "pods": "4"},
            "scaleFromZero": "autoscaler",
            "autoscalerMemory": {
                "remembers": True,
                "reason": "a node of the group was seen 5m ago",
                "allocatable": {"cpu": "1930m", "memory": "7220Mi"},
                "labels": {"zone": "a"},
                "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
                "lastSeen": "2026-11-30T12:00:00Z",
                "autoscaler": "kube-system/cluster-autoscaler-0",
                "started": "2026-11-30T11:00:00+00:00",
                "expires": "2026-11-30T12:10:00Z",
            },
        },
    }
    assert NodeGroupTemplate.from_object(t.to_object()) == t
    assert NodeGroupTemplate("bare").to_object() == {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "bare"},
        "spec": {
            "provider": "manual",
            "instanceTypes": [],
            "minSize": 0,
            "maxSize": 0,
            "desiredSize": 0,
            "nodes": 0,
            "daemonSetOverhead": {},
            "autoscalerOverhead": {"cpu": "100m", "pods": "1"},
            "scaleFromZero": "autoscaler",
        },
    }
    assert NodeGroupTemplate("bare").instance_type == ""


def test_a_sparse_object_parses_to_the_defaults() -> None:
    """Only a name: a manual group of size 0 with no views, no DaemonSets, the kube-proxy pod on the
    autoscaler's template node, no memory; sizes given as strings are read as integers."""
    bare = NodeGroupTemplate.from_object({"metadata": {"name": "g"}})
    assert bare == NodeGroupTemplate(
        "g", "manual", (), 0, 0, 0, 0, None, None, {}, 0, "autoscaler", {"cpu": 100}, 1, None
    )
    texts = NodeGroupTemplate.from_object(
        {
            "metadata": {"name": "g"},
            "spec": {"minSize": "1", "maxSize": "3", "desiredSize": "2", "nodes": "0"},
        }
    )
    assert (texts.min_size, texts.max_size, texts.desired_size, texts.nodes) == (1, 3, 2, 0)
    given = NodeGroupTemplate.from_object(
        {
            "metadata": {"name": "g"},
            "spec": {"autoscalerOverhead": {"cpu": "50m"}, "daemonSetOverhead": {"pods": 2}},
        }
    )
    assert (given.autoscaler_overhead, given.autoscaler_overhead_pods) == ({"cpu": 50}, 0)
    assert (given.daemonset_overhead, given.daemonset_pods) == ({}, 2)
    unsourced = NodeGroupTemplate.from_object(
        {
            "metadata": {"name": "g"},
            "spec": {"actual": {"allocatable": {"cpu": "1"}}, "autoscalerOverhead": "none"},
        }
    )
    assert unsourced.actual == View({"cpu": 1000}, {}, (), "manual")
    assert (unsourced.autoscaler_overhead, unsourced.autoscaler_overhead_pods) == ({"cpu": 100}, 1)


def test_a_template_node_with_no_pods_renders_zero_pods() -> None:
    """An autoscaler overhead of no pods renders as pods "0" (not left out, not the kube-proxy 1)."""
    empty = NodeGroupTemplate("g", autoscaler_overhead={}, autoscaler_overhead_pods=0)
    assert empty.to_object()["spec"]["autoscalerOverhead"] == {"pods": "0"}
    assert NodeGroupTemplate.from_object(empty.to_object()) == empty


@pytest.mark.parametrize(
    ("obj", "error", "message"),
    [
        ({"metadata": ["g"], "spec": {}}, TypeError, "metadata and spec must be maps"),
        ({"metadata": {"name": "g"}, "spec": "x"}, TypeError, "metadata and spec must be maps"),
        ({"metadata": {"name": 7}}, ValueError, "metadata.name: required"),
        ({"metadata": {"name": ""}}, ValueError, "metadata.name: required"),
        (
            {"metadata": {"name": "g"}, "spec": {"autoscalerMemory": []}},
            TypeError,
            "spec.autoscalerMemory: expected a map",
        ),
        (
            {"metadata": {"name": "g"}, "spec": {"minSize": True}},
            TypeError,
            "spec.minSize: expected an integer",
        ),
        ({"metadata": {"name": "g"}, "spec": {"nodes": 1.0}}, TypeError, "spec.nodes: expected an integer"),
        (
            {"metadata": {"name": "g"}, "spec": {"desiredSize": None}},
            TypeError,
            "spec.desiredSize: expected an integer",
        ),
        (
            {"metadata": {"name": "g"}, "spec": {"maxSize": "ten"}},
            ValueError,
            "spec.maxSize: expected an integer, got 'ten'",
        ),
        (
            {"metadata": {"name": "g"}, "spec": {"autoscalerMemory": {"remembers": 1}}},
            TypeError,
            "spec.autoscalerMemory.remembers: expected a boolean",
        ),
        (
            {"metadata": {"name": "g"}, "spec": {"autoscaler": {"allocatable": {"cpu": "x"}}}},
            ValueError,
            "spec.autoscaler.allocatable.cpu: invalid quantity 'x' (" + FORMAT_WRONG + ")",
        ),
        (
            {"metadata": {"name": "g"}, "spec": {"daemonSetOverhead": {"cpu": "x"}}},
            ValueError,
            "spec.daemonSetOverhead.cpu: invalid quantity 'x' (" + FORMAT_WRONG + ")",
        ),
        (
            {"metadata": {"name": "g"}, "spec": {"autoscalerOverhead": {"cpu": "x"}}},
            ValueError,
            "spec.autoscalerOverhead.cpu: invalid quantity 'x' (" + FORMAT_WRONG + ")",
        ),
    ],
)
def test_a_bad_template_object_gets_a_whole_message(obj: dict, error: type, message: str) -> None:
    """Each malformed part of a NodeGroupTemplate object raises with its whole message."""
    with pytest.raises(error) as raised:
        NodeGroupTemplate.from_object(obj)
    assert str(raised.value) == message


def test_the_template_pods_are_taken_whole_or_computed() -> None:
    """An autoscaler overhead given without its pod count (or a count without the overhead) is
    not half kept: both come from the DaemonSets plus cluster-autoscaler's kube-proxy pod."""
    tags = View({"cpu": 2000}, {}, (), "tags")
    for partial in (
        NodeGroupTemplate(
            "g",
            autoscaler=tags,
            daemonset_overhead={"cpu": 200},
            daemonset_pods=2,
            autoscaler_overhead={"cpu": 50},
        ),
        NodeGroupTemplate(
            "g",
            autoscaler=tags,
            daemonset_overhead={"cpu": 200},
            daemonset_pods=2,
            autoscaler_overhead_pods=7,
        ),
    ):
        assert (partial.autoscaler_overhead, partial.autoscaler_overhead_pods) == ({"cpu": 300}, 3)
        assert partial.overhead_of(tags) == ({"cpu": 300}, 3)


@pytest.mark.parametrize("names", ["ip-1", [1, 2], {"a": "b"}, ["ip-1", None]])
def test_node_names_that_are_not_a_list_of_names_are_refused(names: object) -> None:
    """spec.nodeNames (the group's live nodes, which tell a known group's node from unmodelled
    capacity) must be a list of strings: anything else refuses the template, naming the field."""
    obj = {"metadata": {"name": "ng"}, "spec": {"nodeNames": names}}
    with pytest.raises(TypeError, match=r"^spec\.nodeNames: expected a list of names$"):
        NodeGroupTemplate.from_object(obj)


def test_node_names_round_trip_and_are_left_out_when_there_are_none() -> None:
    """Parsed as written and written back; a template without live nodes publishes no key."""
    listed = NodeGroupTemplate.from_object({"metadata": {"name": "ng"}, "spec": {"nodeNames": ["a", "b"]}})
    assert listed.node_names == ("a", "b")
    assert listed.to_object()["spec"]["nodeNames"] == ["a", "b"]
    assert "nodeNames" not in NodeGroupTemplate.from_object({"metadata": {"name": "ng"}}).to_object()["spec"]
