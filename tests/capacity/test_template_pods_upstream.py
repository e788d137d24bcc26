"""The case tables of tests/upstream/cluster_autoscaler_templates.py (restated from cluster-autoscaler's
source, each case citing file and function) run through fitguard's own functions, whole values
compared: these run on any clone; ../shared/conformance is only an extra cross-check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from capacity import autoscaler_specs as specs
from capacity import autoscaler_view as av
from capacity.quantity import parse_quantity
from capacity.taints import Taint
from capacity.template_pods import template_node_pods
from capacity.template_taints import TaintOptions, sanitize_taints
from tests.upstream import cluster_autoscaler_templates as table


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for c in cases]


def _quantities(raw: Mapping[str, str]) -> dict[str, int]:
    return {name: parse_quantity(value) for name, value in raw.items()}


def _taints(raw: list[list[str]]) -> list[Taint]:
    return [Taint(k, v, e) for k, v, e in raw]


def _build(inp: Mapping[str, Any]) -> av.View:
    instance = inp["instance"]
    shape = av.InstanceShape(
        instance["type"], instance["vcpu"], instance["memory_mib"], instance["gpu"], instance["arch"]
    )
    managed = inp.get("managed")
    return av.build_autoscaler_view(
        shape,
        [(k, v) for k, v in inp["tags"]],
        region=inp["region"],
        zone=inp["zone"],
        node_name="node",
        managed=(
            av.ManagedNodegroupInfo(
                labels=managed["labels"], taints=tuple(_taints(managed["taints"])), tags=managed["tags"]
            )
            if managed
            else None
        ),
        requirements=av.InstanceRequirements(**inp["requirements"]) if "requirements" in inp else None,
    )


@pytest.mark.parametrize("case", table.BUILD_NODE, ids=_ids(table.BUILD_NODE))
def test_build_node_from_template(case: dict[str, Any]) -> None:
    """buildNodeFromTemplate's node: the whole capacity (= allocatable), label set and taint list."""
    view = _build(case["input"])
    assert view.allocatable == _quantities(case["expected"]["capacity"])
    assert dict(view.labels) == case["expected"]["labels"]
    assert list(view.taints) == _taints(case["expected"]["taints"])


@pytest.mark.parametrize("case", table.TEMPLATE, ids=_ids(table.TEMPLATE))
def test_sanitized_template(case: dict[str, Any]) -> None:
    """The autoscaler view: the template node as cluster-autoscaler's scheduler simulation sees it."""
    view = av.sanitized_template(_build(case["input"]))
    assert view.allocatable == _quantities(case["expected"]["allocatable"])
    assert dict(view.labels) == case["expected"]["labels"]
    assert list(view.taints) == _taints(case["expected"]["taints"])


@pytest.mark.parametrize("case", table.SANITIZE_TAINTS, ids=_ids(table.SANITIZE_TAINTS))
def test_sanitize_taints(case: dict[str, Any]) -> None:
    """SanitizeTaints keeps exactly these taints, in order."""
    raw = case["input"]["config"]
    config = TaintOptions(
        startup_taints=frozenset(raw.get("startup_taints", ())),
        startup_taint_prefixes=tuple(raw.get("startup_taint_prefixes", ())),
        status_taints=frozenset(raw.get("status_taints", ())),
    )
    kept = sanitize_taints(_taints(case["input"]["taints"]), config)
    assert list(kept) == _taints(case["expected"])


@pytest.mark.parametrize("case", table.TEMPLATE_PODS, ids=_ids(table.TEMPLATE_PODS))
def test_template_pods(case: dict[str, Any]) -> None:
    """The requests and number of the pods already on a template node: kube-proxy plus DaemonSets."""
    requests, pods = template_node_pods(
        _quantities(case["input"]["daemonsets"]), case["input"]["daemonset_pods"]
    )
    assert (requests, pods) == (_quantities(case["expected"]["requests"]), case["expected"]["pods"])


@pytest.mark.parametrize("case", table.INSTANCE_TYPE_SOURCE, ids=_ids(table.INSTANCE_TYPE_SOURCE))
def test_instance_type_source(case: dict[str, Any]) -> None:
    """Which launch configuration, template, override or requirements names the type CA assumes."""
    asg = {"AutoScalingGroupName": "asg", **case["input"]}
    if case["expected"] == "error":
        with pytest.raises(ValueError):
            specs.instance_type_source(asg)
        return
    assert specs.instance_type_source(asg) == specs.InstanceTypeSource(*case["expected"])


@pytest.mark.parametrize("case", table.CAPACITY_REQUIREMENTS, ids=_ids(table.CAPACITY_REQUIREMENTS))
def test_capacity_requirements(case: dict[str, Any]) -> None:
    """The instance requirements whose minimums replace the instance type's cpu, memory and GPUs."""
    got = specs.capacity_requirements(case["input"]["policy"], case["input"]["template_data"])
    want = case["expected"]
    assert got == (None if want is None else av.InstanceRequirements(**want))


def test_every_table_case_is_cited() -> None:
    """Each case names the upstream file and function it restates."""
    tables = [
        table.BUILD_NODE,
        table.TEMPLATE,
        table.SANITIZE_TAINTS,
        table.TEMPLATE_PODS,
        table.INSTANCE_TYPE_SOURCE,
        table.CAPACITY_REQUIREMENTS,
    ]
    for case in (c for t in tables for c in t):
        assert ".go " in case["upstream"], case["id"]


# cluster-autoscaler/cloudprovider/aws/aws_wrapper.go getManagedNodegroupInfo, restated: the labels
# it makes of a DescribeNodegroup answer (diskSize, amiType, capacityType, version, nodegroupName,
# then the node group's own labels), its tags, and the taints that carry an effect, a key and a value.
def test_describe_nodegroup_gives_labels_taints_and_tags_whole() -> None:
    """getManagedNodegroupInfo: every field of a full answer; a taint missing its key, value or
    effect is skipped; a label valued null is skipped; a node group label overrides a synthetic one."""
    info = av.managed_nodegroup_info(
        {
            "amiType": "AL2_x86_64",
            "clusterName": "prod",
            "diskSize": 100,
            "labels": {"team": "a", "amiType": "custom", "gone": None},
            "nodegroupName": "ng-1",
            "capacityType": "SPOT",
            "version": "1.30",
            "taints": [
                {"effect": "NO_SCHEDULE", "key": "k1", "value": "v1"},
                {"effect": "NO_EXECUTE", "key": "k2", "value": ""},
                {"effect": "PREFER_NO_SCHEDULE", "key": "k3", "value": "v3"},
                {"effect": "NO_SCHEDULE", "value": "no-key"},
                {"effect": "NO_SCHEDULE", "key": "no-value"},
                {"key": "no-effect", "value": "v"},
                {},
            ],
            "tags": {"k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "20Gi", "n": 1},
        }
    )
    assert info == av.ManagedNodegroupInfo(
        labels={
            "diskSize": "100",
            "amiType": "custom",
            "eks.amazonaws.com/capacityType": "SPOT",
            "k8sVersion": "1.30",
            "eks.amazonaws.com/nodegroup": "ng-1",
            "team": "a",
        },
        taints=(
            Taint("k1", "v1", "NoSchedule"),
            Taint("k2", "", "NoExecute"),
            Taint("k3", "v3", "PreferNoSchedule"),
        ),
        tags={"k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "20Gi", "n": "1"},
    )


def test_describe_nodegroup_with_nothing_set_gives_nothing() -> None:
    """getManagedNodegroupInfo on an answer whose optional fields are null or empty: no labels (an
    empty amiType, capacityType, version or name adds none; a disk size of 0 is still a label)."""
    empty = {
        "amiType": "",
        "capacityType": "",
        "version": "",
        "nodegroupName": "",
        "labels": {},
        "taints": [],
    }
    assert av.managed_nodegroup_info(empty) == av.ManagedNodegroupInfo({}, (), {})
    assert av.managed_nodegroup_info({"diskSize": None, "labels": None, "taints": None, "tags": None}) == (
        av.ManagedNodegroupInfo({}, (), {})
    )
    assert av.managed_nodegroup_info({"diskSize": 0}).labels == {"diskSize": "0"}


@pytest.mark.parametrize(
    ("effect", "want"),
    [("NO_SCHEDULE", "NoSchedule"), ("NO_EXECUTE", "NoExecute"), ("PREFER_NO_SCHEDULE", "PreferNoSchedule")],
)
def test_eks_taint_effects_translate(effect: str, want: str) -> None:
    """aws_wrapper.go taintEksTranslator: EKS's three effects in Kubernetes' spelling."""
    assert av.eks_taint_effect(effect) == want


def test_an_unknown_eks_taint_effect_fails_the_whole_nodegroup() -> None:
    """taintEksTranslator errs on any other effect, and getManagedNodegroupInfo returns that error."""
    with pytest.raises(ValueError) as raised:
        av.eks_taint_effect("NoSchedule")
    assert str(raised.value) == "taint effect 'NoSchedule' is not valid"
    with pytest.raises(ValueError) as raised:
        av.managed_nodegroup_info({"taints": [{"effect": "TAINT_NO_EXISTS", "key": "k", "value": "v"}]})
    assert str(raised.value) == "taint effect 'TAINT_NO_EXISTS' is not valid"


SHAPES = {"t3.micro": av.InstanceShape("t3.micro", 2, 1024, 0, "amd64")}


def test_asg_template_takes_the_first_zone_and_its_region() -> None:
    """aws_manager.go getAsgTemplate: the first availability zone, its region (the zone less its last
    letter) and the instance type's shape; a second zone elsewhere changes nothing."""
    assert av.asg_template("sample", ["us-east-1a", "us-west-1b"], "t3.micro", SHAPES) == av.AsgTemplate(
        SHAPES["t3.micro"], "us-east-1", "us-east-1a"
    )
    assert av.region_and_zone(["eu-west-3c"]) == ("eu-west-3", "eu-west-3c")


def test_asg_template_errors_name_the_group() -> None:
    """getAsgTemplate fails with no zone or with a type missing from the table, naming the ASG."""
    with pytest.raises(ValueError) as raised:
        av.asg_template("sample", [], "t3.micro", SHAPES)
    assert str(raised.value) == "unable to get first AvailabilityZone for ASG 'sample'"
    with pytest.raises(ValueError) as raised:
        av.asg_template("sample", ["us-east-1a"], "nonexistent.xlarge", SHAPES)
    assert str(raised.value) == "ASG 'sample' uses the unknown EC2 instance type 'nonexistent.xlarge'"
    with pytest.raises(ValueError) as raised:
        av.region_and_zone([])
    assert str(raised.value) == "unable to get first AvailabilityZone"


def test_describe_nodegroup_is_consulted_only_with_both_eks_labels() -> None:
    """aws_manager.go buildNodeFromTemplate calls DescribeNodegroup only when the ASG's labels name
    both the node group and the cluster (from `eks:` tags), non-empty."""
    assert av.managed_nodegroup_ref({"nodegroup-name": "ng", "cluster-name": "c"}) == ("ng", "c")
    assert av.managed_nodegroup_ref({"nodegroup-name": "ng"}) is None
    assert av.managed_nodegroup_ref({"cluster-name": "c"}) is None
    assert av.managed_nodegroup_ref({"nodegroup-name": "", "cluster-name": "c"}) is None
    assert av.managed_nodegroup_ref({}) is None


def test_asg_tag_descriptions_and_eks_tag_maps_are_read_in_order() -> None:
    """DescribeAutoScalingGroups' TagDescriptions ({Key, Value}) and an EKS tag map as (key, value)
    pairs, in their order, a missing key or value read as empty."""
    assert av.tag_pairs(
        [{"Key": "a", "Value": "1"}, {"Key": "b"}, {"Value": "2"}, {"Key": 3, "Value": 4}]
    ) == [
        ("a", "1"),
        ("b", ""),
        ("", "2"),
        ("3", "4"),
    ]
    assert av.tag_pairs({"z": "1", "a": 2}) == [("z", "1"), ("a", "2")]


def test_an_unreadable_resource_tag_skips_only_itself() -> None:
    """extractAllocatableResourcesFromAsg: a tag whose quantity does not parse, or whose name is
    empty, is skipped and the tags after it still count."""
    prefix = av.RESOURCES_PREFIX
    tags = [(prefix + "cpu", "lots"), (prefix, "5"), (prefix + "ephemeral-storage", "20Gi"), ("other", "1")]
    assert av.resources_from_tags(tags) == {"ephemeral-storage": parse_quantity("20Gi")}


def test_the_sanitized_template_keeps_the_source_and_applies_the_taint_flags() -> None:
    """SanitizedTemplateNodeInfoFromNodeGroup: allocatable and source unchanged, the deprecated twins
    and the template-node marker added, no hostname, and the taints dropped that cluster-autoscaler's
    --startup-taint and --status-taint flags name."""
    view = av.View(
        {"cpu": 2000},
        {"topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/hostname": "ip-1"},
        (Taint("boot", "", "NoSchedule"), Taint("gpu", "", "NoSchedule"), Taint("health", "", "NoExecute")),
        "tags",
    )
    config = TaintOptions(startup_taints=frozenset({"boot"}), status_taints=frozenset({"health"}))
    assert av.sanitized_template(view, config) == av.View(
        {"cpu": 2000},
        {
            "topology.kubernetes.io/zone": "us-east-1a",
            "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
            "cluster-autoscaler.kubernetes.io/template-node": "true",
        },
        (Taint("gpu", "", "NoSchedule"),),
        "tags",
    )
    assert av.sanitized_template_labels({"node.kubernetes.io/instance-type": "m5.large"}, "template-1") == {
        "node.kubernetes.io/instance-type": "m5.large",
        "beta.kubernetes.io/instance-type": "m5.large",
        "cluster-autoscaler.kubernetes.io/template-node": "true",
        "kubernetes.io/hostname": "template-1",
    }


def test_base_capacity_takes_the_requirement_minimums_over_the_shape() -> None:
    """buildNodeFromTemplate's capacity: 110 pods, the shape's cpu, memory (MiB) and GPUs (the GPU
    entry present even at 0), each replaced by the mixed-instances requirement's minimum if set."""
    gib = 2**30 * 1000
    shape = av.InstanceShape("g4dn.xlarge", 4, 16384, 1, "amd64")
    assert av.base_capacity(shape) == {
        "pods": 110000,
        "cpu": 4000,
        "nvidia.com/gpu": 1000,
        "memory": 16 * gib,
    }
    assert av.base_capacity(shape, av.InstanceRequirements(8, 32768, 2)) == {
        "pods": 110000,
        "cpu": 8000,
        "nvidia.com/gpu": 2000,
        "memory": 32 * gib,
    }
    assert av.base_capacity(shape, av.InstanceRequirements(memory_mib_min=1024)) == {
        "pods": 110000,
        "cpu": 4000,
        "nvidia.com/gpu": 1000,
        "memory": 1 * gib,
    }
    assert av.base_capacity(av.InstanceShape("m5.large", 2, 8192)) == {
        "pods": 110000,
        "cpu": 2000,
        "nvidia.com/gpu": 0,
        "memory": 8 * gib,
    }


def test_a_view_built_with_no_place_has_empty_place_labels() -> None:
    """build_autoscaler_view without region, zone or node name: those labels are empty, the view's
    source is tags, and a tag valued like a taint but not named taint/ is no taint (later ones are)."""
    view = av.build_autoscaler_view(
        av.InstanceShape("m5.large", 2, 8192, 0, "amd64"),
        [("team", "x:NoSchedule"), (av.TAINT_PREFIX + "dedicated", "batch:NoSchedule")],
    )
    assert view == av.View(
        {"pods": 110000, "cpu": 2000, "nvidia.com/gpu": 0, "memory": 8 * 2**30 * 1000},
        {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m5.large",
            "topology.kubernetes.io/region": "",
            "topology.kubernetes.io/zone": "",
            "topology.ebs.csi.aws.com/zone": "",
            "kubernetes.io/hostname": "",
        },
        (Taint("dedicated", "batch", "NoSchedule"),),
        "tags",
    )


def test_each_describe_nodegroup_field_makes_its_own_label() -> None:
    """getManagedNodegroupInfo, one field at a time (no node group label to override it)."""
    for field, value, label in [
        ("amiType", "AL2_x86_64", "amiType"),
        ("capacityType", "ON_DEMAND", "eks.amazonaws.com/capacityType"),
        ("version", "1.31", "k8sVersion"),
        ("nodegroupName", "ng-2", "eks.amazonaws.com/nodegroup"),
        ("diskSize", 20, "diskSize"),
    ]:
        assert av.managed_nodegroup_info({field: value}) == av.ManagedNodegroupInfo(
            {label: str(value)}, (), {}
        )


# cluster-autoscaler/cloudprovider/aws/aws_manager.go parseASGAutoDiscoverySpec and
# cloudprovider/dynamic SpecFromString, restated: the flags cluster-autoscaler refuses at start-up.
@pytest.mark.parametrize(
    ("spec", "tags"),
    [
        ("asg:tag=k8s.io/cluster-autoscaler/enabled", {"k8s.io/cluster-autoscaler/enabled": ""}),
        ("asg:tag=label=value,anothertag", {"label": "value", "anothertag": ""}),
        ("asg:tag=my:label=value,my:other=v=w", {"my:label": "value", "my:other": "v=w"}),
    ],
)
def test_auto_discovery_specs_give_the_tags_an_asg_must_carry(spec: str, tags: dict[str, str]) -> None:
    """parseASGAutoDiscoverySpec: `asg:tag=` then comma-separated keys, each with an optional value
    (split at its first `=`)."""
    assert specs.parse_auto_discovery_spec(spec) == tags


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tag=a", "invalid node group auto discovery spec: tag=a"),
        ("mig:tag=a", "unsupported discoverer: mig"),
        ("asg:tag", "invalid key=value pair 'tag'"),
        ("asg:=tag", "unsupported parameter key '' for discoverer asg; the only one is 'tag'"),
        ("asg:label=a", "unsupported parameter key 'label' for discoverer asg; the only one is 'tag'"),
        ("asg:tag=", "tag value not supplied"),
    ],
)
def test_bad_auto_discovery_specs_are_refused_with_their_reason(spec: str, message: str) -> None:
    """parseASGAutoDiscoverySpec's errors, each a SpecError with its whole message."""
    with pytest.raises(specs.SpecError) as raised:
        specs.parse_auto_discovery_spec(spec)
    assert str(raised.value) == message


def test_discovery_tags_and_their_match() -> None:
    """The tags EKS documents (the cluster's only with a name); an ASG matches when it carries every
    key, with the value where one is wanted."""
    assert specs.default_discovery_tags() == {"k8s.io/cluster-autoscaler/enabled": ""}
    assert specs.default_discovery_tags("prod") == {
        "k8s.io/cluster-autoscaler/enabled": "",
        "k8s.io/cluster-autoscaler/prod": "",
    }
    wanted = {"a": "", "b": "x"}
    assert specs.matches_discovery({"a": "anything", "b": "x"}, wanted)
    assert not specs.matches_discovery({"a": "1", "b": "y"}, wanted)
    assert not specs.matches_discovery({"b": "x"}, wanted)
    assert specs.matches_discovery({}, {})


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("1:5:test-asg", specs.NodesSpec(1, 5, "test-asg")),
        ("0:0:zero", specs.NodesSpec(0, 0, "zero")),
        ("+2:3:a:b", specs.NodesSpec(2, 3, "a:b")),
    ],
)
def test_nodes_specs_give_min_max_and_name(spec: str, parsed: specs.NodesSpec) -> None:
    """SpecFromString: `<min>:<max>:<name>`, the name being the rest (colons included); 0 is a
    valid minimum on AWS and max may equal min."""
    assert specs.parse_nodes_spec(spec) == parsed


@pytest.mark.parametrize("spec", ["a", "1:5", "a:b:c", "1:", "1:2:", "-1:2:n", "3:2:n", "1.5:2:n", " 1:2:n"])
def test_bad_nodes_specs_are_refused(spec: str) -> None:
    """SpecFromString refuses too few parts, non-integers, a negative min, max below min, no name."""
    with pytest.raises(specs.SpecError) as raised:
        specs.parse_nodes_spec(spec)
    assert str(raised.value) == f"wrong nodes configuration: {spec}"


DEFAULT_OPTIONS = specs.AsgOptions(0.5, 0.5, 600.0, 1200.0, False)


def test_asg_options_come_from_their_tags_and_bad_values_keep_the_default() -> None:
    """extractAutoscalingOptionsFromTags and GetAsgOptions: the tag name after the prefix (at the
    start only) picks the option; a value that does not parse leaves the default."""
    prefix = specs.OPTIONS_PREFIX
    tags = {
        prefix + "scaledownutilizationthreshold": "0.42",
        prefix + "scaledowngpuutilizationthreshold": "7e-1",
        prefix + "scaledownunneededtime": "1h",
        prefix + "scaledownunreadytime": "25m",
        prefix + "ignoredaemonsetsutilization": "T",
        "team/" + prefix + "other": "x",
        prefix: "empty name",
    }
    options = specs.options_from_tags(tags)
    assert options == {
        "scaledownutilizationthreshold": "0.42",
        "scaledowngpuutilizationthreshold": "7e-1",
        "scaledownunneededtime": "1h",
        "scaledownunreadytime": "25m",
        "ignoredaemonsetsutilization": "T",
    }
    assert specs.asg_options(options, DEFAULT_OPTIONS) == specs.AsgOptions(0.42, 0.7, 3600.0, 1500.0, True)
    bad = {
        "scaledownutilizationthreshold": "not-a-float",
        "scaledowngpuutilizationthreshold": " 0.3",
        "scaledownunneededtime": "forever",
        "scaledownunreadytime": "1x",
        "ignoredaemonsetsutilization": "yes",
        "unknown": "1",
    }
    assert specs.asg_options(bad, DEFAULT_OPTIONS) == DEFAULT_OPTIONS
    assert specs.asg_options({"scaledownunreadytime": "1m", "x": "y"}, DEFAULT_OPTIONS) == specs.AsgOptions(
        0.5, 0.5, 600.0, 60.0, False
    )


@pytest.mark.parametrize(
    ("text", "value"), [("1", 1.0), ("-.5", -0.5), ("+2.", 2.0), ("1E3", 1000.0), ("Inf", float("inf"))]
)
def test_go_floats(text: str, value: float) -> None:
    """strconv.ParseFloat on decimal text."""
    assert specs.go_parse_float(text) == value


@pytest.mark.parametrize("text", ["", ".", "1_0", "0x10", "1 ", "e3"])
def test_go_refuses_these_floats(text: str) -> None:
    """strconv.ParseFloat refuses these (no underscores or hex here, no spaces)."""
    with pytest.raises(ValueError) as raised:
        specs.go_parse_float(text)
    assert str(raised.value) == f"invalid float {text!r}"


def test_go_bools() -> None:
    """strconv.ParseBool: exactly these spellings, anything else an error."""
    trues, falses = ["1", "t", "T", "TRUE", "true", "True"], ["0", "f", "F", "FALSE", "false", "False"]
    assert [specs.go_parse_bool(t) for t in trues + falses] == [True] * 6 + [False] * 6
    with pytest.raises(ValueError) as raised:
        specs.go_parse_bool("yes")
    assert str(raised.value) == "invalid bool 'yes'"


def test_the_launch_template_of_an_asg_or_of_its_mixed_policy() -> None:
    """aws_manager.go buildAsgFromAWS: the ASG's launch template, else its mixed instances policy's;
    named by name or id; a missing version is $Default; none when there is neither."""
    assert specs.launch_template_spec({"LaunchTemplate": {"LaunchTemplateName": "lt", "Version": "3"}}) == (
        "lt",
        "3",
    )
    mixed = {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": "lt-0abc"}}}
    assert specs.launch_template_spec({"MixedInstancesPolicy": mixed}) == ("lt-0abc", "$Default")
    assert specs.launch_template_spec({"LaunchTemplate": {}}) is None
    assert specs.launch_template_spec({"LaunchConfigurationName": "lc"}) is None
    assert specs.launch_template_spec({"MixedInstancesPolicy": {"LaunchTemplate": {}}}) is None


def test_the_requirements_request_carries_only_the_set_fields() -> None:
    """aws_wrapper.go getRequirementsRequestFromAutoscaling: the fields given (not empty), nothing
    else (AllowedInstanceTypes is not carried)."""
    requirements = {
        "VCpuCount": {"Min": 2, "Max": 4},
        "MemoryMiB": {"Min": 4096},
        "AcceleratorTypes": [],
        "BareMetal": "",
        "BurstablePerformance": None,
        "CpuManufacturers": ["intel"],
        "AllowedInstanceTypes": ["m5.*"],
    }
    assert specs.requirements_request(requirements) == {
        "VCpuCount": {"Min": 2, "Max": 4},
        "MemoryMiB": {"Min": 4096},
        "CpuManufacturers": ["intel"],
    }


def test_instance_type_source_errors_are_whole() -> None:
    """aws_wrapper.go getInstanceTypesForAsgs / auto_scaling_groups.go buildAsgFromAWS: an override
    with both a type and requirements is refused; an ASG naming no source is refused by its name
    (empty when unnamed)."""
    both = {
        "LaunchTemplate": {
            "LaunchTemplateSpecification": {"LaunchTemplateName": "lt"},
            "Overrides": [{"InstanceType": "m5.large", "InstanceRequirements": {"VCpuCount": {"Min": 2}}}],
        }
    }
    with pytest.raises(ValueError) as raised:
        specs.instance_type_source({"AutoScalingGroupName": "asg", "MixedInstancesPolicy": both})
    assert str(raised.value) == "invalid setup of both instance type and instance requirements overrides"
    with pytest.raises(ValueError) as raised:
        specs.instance_type_source({"AutoScalingGroupName": "asg-1"})
    assert str(raised.value) == "ASG 'asg-1' has no launch configuration or template"
    with pytest.raises(ValueError) as raised:
        specs.instance_type_source({})
    assert str(raised.value) == "ASG '' has no launch configuration or template"


def test_options_and_templates_at_the_edges() -> None:
    """A tag that is no option before one that is; a bad option before a good one (each is judged on
    its own); a launch template named by neither name nor id; requirements with only a memory or
    only a cpu minimum."""
    tags = {"Name": "x", specs.OPTIONS_PREFIX + "scaledownunreadytime": "1m"}
    assert specs.options_from_tags(tags) == {"scaledownunreadytime": "1m"}
    options = {"scaledownutilizationthreshold": "bad", "scaledownunreadytime": "1m"}
    assert specs.asg_options(options, DEFAULT_OPTIONS) == specs.AsgOptions(0.5, 0.5, 600.0, 60.0, False)
    assert specs.launch_template_spec({"LaunchTemplate": {"Version": "3"}}) == ("", "3")
    policy = {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateName": "lt"}}}
    memory_only = {"InstanceRequirements": {"MemoryMiB": {"Min": 1024}}}
    assert specs.capacity_requirements(policy, memory_only) == av.InstanceRequirements(None, 1024, None)
    cpu_only = {"InstanceRequirements": {"VCpuCount": {"Min": 4}}}
    assert specs.capacity_requirements(policy, cpu_only) == av.InstanceRequirements(4, None, None)
