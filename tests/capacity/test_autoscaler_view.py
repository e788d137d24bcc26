"""Every case of ../shared/conformance/cluster-autoscaler-aws-templates.json (38 transcribed from the
upstream tests, 9 derived from its code) reproduced by capacity.autoscaler_view and
capacity.autoscaler_specs: the autoscaler view is cluster-autoscaler's own template, quirks and all."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from capacity import autoscaler_specs as specs
from capacity import autoscaler_view as av
from capacity.autoscaler_flags import parse_go_duration
from capacity.quantity import milli_to_units, parse_quantity
from capacity.taints import Taint

# ../shared/conformance beside the repository; FITGUARD_CONFORMANCE points elsewhere (a git worktree).
CONFORMANCE = Path(
    os.environ.get("FITGUARD_CONFORMANCE") or Path(__file__).resolve().parents[3] / "shared/conformance"
)
CASES_FILE = CONFORMANCE / "cluster-autoscaler-aws-templates.json"


def _load() -> dict[str, Any]:
    if not CASES_FILE.exists():
        return {"cases": [], "derived_cases_not_upstream": [], "instance_types_used": {}}
    return json.loads(CASES_FILE.read_text(encoding="utf-8"))


DATA = _load()
ALL_CASES = DATA["cases"] + DATA["derived_cases_not_upstream"]
pytestmark = pytest.mark.skipif(not CASES_FILE.exists(), reason=f"{CASES_FILE} absent")


def _shape(raw: Mapping[str, Any]) -> av.InstanceShape:
    return av.InstanceShape(
        instance_type=raw["InstanceType"],
        vcpu=raw["VCPU"],
        memory_mib=raw["MemoryMb"],
        gpu=raw.get("GPU", 0),
        architecture=raw.get("Architecture", ""),
    )


def _tags(raw: list[Mapping[str, str]] | None) -> list[tuple[str, str]]:
    return [(t["key"], t["value"]) for t in raw or []]


def _taints(raw: list[Mapping[str, str]]) -> list[Taint]:
    return [Taint(t["key"], t.get("value", ""), t["effect"]) for t in raw]


def _check_quantities(actual: Mapping[str, int], expected: Mapping[str, Mapping[str, Any]]) -> None:
    for name, want in expected.items():
        assert name in actual, f"{name} missing from {sorted(actual)}"
        assert actual[name] == parse_quantity(want["quantity"]), name
        assert milli_to_units(actual[name]) == want["value"], name
        if "milli_value" in want:
            assert actual[name] == want["milli_value"], name


def _check_labels(actual: Mapping[str, str], expected: Mapping[str, str]) -> None:
    for key, want in expected.items():
        assert key in actual, f"label {key} missing"
        # `<rand.Int63()>` and the like stand for CA's random suffixes.
        pattern = ".+".join(re.escape(part) for part in re.split(r"<[^>]*>", want))
        assert re.fullmatch(pattern, actual[key]), f"{key}={actual[key]!r}, want {want!r}"


def _managed(raw: Mapping[str, Any] | None) -> av.ManagedNodegroupInfo | None:
    if raw is None:
        return None
    # The upstream test pre-fills CA's cache: taints are taken as they are, no effect translation.
    return av.ManagedNodegroupInfo(
        labels=dict(raw.get("labels") or {}),
        taints=tuple(_taints(raw.get("taints") or [])),
        tags=dict(raw.get("tags") or {}),
    )


def _requirements(raw: Mapping[str, Any] | None) -> av.InstanceRequirements | None:
    if not raw or raw.get("instanceTypesOverrides") or not raw.get("instanceRequirements"):
        return None
    req = raw["instanceRequirements"]
    nvidia_gpu = "nvidia" in req.get("AcceleratorManufacturers", []) and "gpu" in req.get(
        "AcceleratorTypes", []
    )
    return av.InstanceRequirements(
        vcpu_min=req["VCpuCount"]["Min"],
        memory_mib_min=req["MemoryMiB"]["Min"],
        nvidia_gpu_min=req["AcceleratorCount"]["Min"] if nvidia_gpu else None,
    )


def run_build_node(inp: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    asg_name = inp.get("asg_name", "asg")
    view = av.build_autoscaler_view(
        _shape(inp["instance_type"]),
        _tags(inp.get("tags")),
        region=inp.get("region", ""),
        zone=inp.get("zone", ""),
        node_name=f"{asg_name}-asg-8674665223082153551",
        managed=_managed(inp.get("managed_nodegroup_cache")),
        requirements=_requirements(inp.get("mixed_instances_policy")),
    )
    if "capacity" in expected:
        _check_quantities(view.allocatable, expected["capacity"])
        if isinstance(expected.get("allocatable"), str):
            assert set(view.allocatable) == set(expected["capacity"]), "allocatable is exactly capacity"
    for name in expected.get("capacity_absent", []):
        assert name not in view.allocatable
    for key in ("labels", "labels_also"):
        _check_labels(view.labels, expected.get(key, {}))
    if "labels_added" in expected:
        base = av.generic_labels(_shape(inp["instance_type"]), "", "", f"{asg_name}-asg-8674665223082153551")
        assert {k: v for k, v in view.labels.items() if base.get(k) != v} == expected["labels_added"]
    if "labels_min_count" in expected:
        assert len(view.labels) >= expected["labels_min_count"]
    if "taints" in expected:
        assert list(view.taints) == _taints(expected["taints"])


def case_join_labels(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    assert av.join_managed_labels(inp["extracted_labels"], inp["mng_labels"]) == exp["labels"]


def case_generic_labels(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    labels = av.generic_labels(_shape(inp["instance_type"]), inp["region"], inp["zone"], inp["node_name"])
    assert labels == exp["labels"]


def case_extract_resources(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    tags = inp["tags"]
    pairs = av.tag_pairs(tags) if isinstance(tags, Mapping) else _tags(tags)
    resources = av.resources_from_tags(pairs)
    _check_quantities(resources, exp["resources"])
    assert len(resources) == exp.get("resource_count", len(exp["resources"]))
    for name in exp.get("resources_absent", []):
        assert name not in resources


def case_extract_labels(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    assert av.labels_from_tags(_tags(inp["tags"])) == exp["labels"]


def case_extract_taints(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    taints = av.taints_from_tags(_tags(inp["tags"]))
    assert len(taints) == exp["taint_count"]
    assert set(taints) == set(_taints(exp["taints_unordered"]))


def _options(raw: Mapping[str, Any]) -> specs.AsgOptions:
    return specs.AsgOptions(
        scale_down_utilization_threshold=raw["ScaleDownUtilizationThreshold"],
        scale_down_gpu_utilization_threshold=raw["ScaleDownGpuUtilizationThreshold"],
        scale_down_unneeded_time=parse_go_duration(raw["ScaleDownUnneededTime"]),
        scale_down_unready_time=parse_go_duration(raw["ScaleDownUnreadyTime"]),
        ignore_daemonsets_utilization=raw["IgnoreDaemonSetsUtilization"],
    )


def case_asg_options(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    defaults = _options(inp["defaults"])
    from_tags = specs.options_from_tags({t["key"]: t["value"] for t in inp["as_asg_tags"]})
    assert from_tags == inp["extracted_options"]
    assert specs.asg_options(from_tags, defaults) == _options(exp["options"])


def case_asg_template(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    shapes = {
        name: _shape({"InstanceType": name, **facts})
        for name, facts in DATA["instance_types_used"].items()
        if isinstance(facts, Mapping)
    }
    if exp["error"]:
        with pytest.raises(ValueError):
            av.asg_template(inp["asg_name"], inp["availability_zones"], inp["resolved_instance_type"], shapes)
        return
    template = av.asg_template(
        inp["asg_name"], inp["availability_zones"], inp["resolved_instance_type"], shapes
    )
    assert (template.shape.instance_type, template.region, template.zone) == (
        exp["instance_type"],
        exp["region"],
        exp["zone"],
    )


def case_describe_nodegroup(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    info = av.managed_nodegroup_info(inp["describe_nodegroup_response"])
    assert list(info.taints) == _taints(exp["taints"])
    assert dict(info.labels) == exp["labels"]
    assert len(info.labels) == exp["label_count"]
    assert dict(info.tags) == exp["tags"]


def case_eks_taint_effect(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    for effect, want in zip(inp["effects"], exp["results"], strict=True):
        if isinstance(want, Mapping):
            with pytest.raises(ValueError):
                av.eks_taint_effect(effect)
        else:
            assert av.eks_taint_effect(effect) == want


def case_instance_type_resolution(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    asg: dict[str, Any] = {"AutoScalingGroupName": inp["asg_name"]}
    if inp["launch_configuration_name"]:
        asg["LaunchConfigurationName"] = inp["launch_configuration_name"]
    if inp["launch_template"]:
        lt = inp["launch_template"]
        asg["LaunchTemplate"] = {"LaunchTemplateName": lt["name"], "Version": lt["version"]}
    policy = inp["mixed_instances_policy"]
    if policy:
        lt = policy.get("launchTemplate")
        spec = {"LaunchTemplateName": lt["name"], "Version": lt["version"]} if lt else {}
        overrides = [{"InstanceType": t} for t in policy.get("instanceTypesOverrides", [])]
        asg["MixedInstancesPolicy"] = {
            "LaunchTemplate": {"LaunchTemplateSpecification": spec, "Overrides": overrides}
        }
    mocks = inp["mocks"]
    source = specs.instance_type_source(asg)
    resolved = {
        "launch-configuration": lambda: mocks[f"DescribeLaunchConfigurations({source.name}).InstanceType"],
        "launch-template": lambda: mocks[
            f"DescribeLaunchTemplateVersions({source.name},{source.version}).LaunchTemplateData.InstanceType"
        ],
        "override": lambda: source.name,
    }[source.kind]()
    assert resolved == exp["instance_type"]


def case_auto_discovery(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    if exp["error"]:
        for spec in inp["specs"]:
            with pytest.raises(specs.SpecError):
                specs.parse_auto_discovery_spec(spec)
        return
    assert [specs.parse_auto_discovery_spec(s) for s in inp["specs"]] == exp["tag_filters"]


def case_nodes_spec(inp: Mapping[str, Any], exp: Mapping[str, Any]) -> None:
    for spec, want in zip(inp["specs"], exp["results"], strict=True):
        if want.get("error"):
            with pytest.raises(specs.SpecError):
                specs.parse_nodes_spec(spec)
        else:
            assert specs.parse_nodes_spec(spec) == specs.NodesSpec(
                want["minSize"], want["maxSize"], want["name"]
            )


def case_derived(case: Mapping[str, Any]) -> None:
    inp, exp = case["input"], case["expected"]
    if "labels_added_by_SanitizedTemplateNodeInfoFromNodeGroup" in exp:
        view = av.build_autoscaler_view(
            _shape(inp["instance_type"]), _tags(inp["tags"]), region=inp["region"], zone=inp["zone"]
        )
        labels = av.sanitized_template_labels(view.labels, "template-node-for-ng-1-4242")
        _check_labels(labels, exp["labels_added_by_SanitizedTemplateNodeInfoFromNodeGroup"])
        kube_proxy = exp["pods_on_template"][0]["requests"]
        assert {k: parse_quantity(v) for k, v in kube_proxy.items()} == av.TEMPLATE_KUBE_PROXY_REQUESTS
        return
    instance = inp.get("instance_type", {"InstanceType": "c5.xlarge", "VCPU": 4, "MemoryMb": 8192})
    run_build_node({**inp, "instance_type": instance}, exp)


DISPATCH: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], None]] = {
    "join_labels": case_join_labels,
    "generic_labels": case_generic_labels,
    "extract_resources": case_extract_resources,
    "build_node": lambda inp, exp: run_build_node(inp, {**exp.get("expected_derived", {}), **exp}),
    "extract_labels": case_extract_labels,
    "extract_taints": case_extract_taints,
    "asg_options": case_asg_options,
    "asg_template": case_asg_template,
    "describe_nodegroup": case_describe_nodegroup,
    "eks_taint_effect_translation": case_eks_taint_effect,
    "instance_type_resolution": case_instance_type_resolution,
    "auto_discovery_spec": case_auto_discovery,
    "nodes_spec": case_nodes_spec,
}


@pytest.mark.parametrize("case", ALL_CASES, ids=[c["id"] for c in ALL_CASES])
def test_conformance_case(case: Mapping[str, Any]) -> None:
    """Each upstream or derived case gives cluster-autoscaler's result through our functions."""
    if case["id"].startswith("derived/"):
        case_derived(case)
        return
    family = case["id"].split("/")[0]
    expected = dict(case["expected_asserted"])
    if family == "build_node":
        # Derived values (read off the code) first, asserted values on top where they overlap.
        derived = case.get("expected_derived", {})
        merged = {**derived, **expected}
        merged["capacity"] = {**derived.get("capacity", {}), **expected.get("capacity", {})}
        if not merged["capacity"]:
            del merged["capacity"]
        run_build_node(case["input"], merged)
        return
    DISPATCH[family](case["input"], expected)


def test_every_case_family_is_handled() -> None:
    """A new family of cases in the conformance file must not pass by being silently ignored."""
    families = {c["id"].split("/")[0] for c in DATA["cases"]}
    assert families <= set(DISPATCH)
    assert len(ALL_CASES) >= 47


def test_prefix_found_anywhere_in_the_key() -> None:
    """Go's strings.Split(key, prefix)[1]: a prefix in the middle counts, and a repeat cuts the name."""
    tags = [
        ("team/k8s.io/cluster-autoscaler/node-template/label/tier", "web"),
        (
            "k8s.io/cluster-autoscaler/node-template/label/a/k8s.io/cluster-autoscaler/node-template/label/b",
            "x",
        ),
        ("aws:eks:cluster-name", "prod"),
    ]
    assert av.labels_from_tags(tags) == {"tier": "web", "a/": "x", "cluster-name": "prod"}


def test_managed_tags_only_with_both_eks_labels() -> None:
    """DescribeNodegroup data is applied only when the ASG tags name both node group and cluster."""
    shape = av.InstanceShape("m5.large", 2, 8192, 0, "amd64")
    managed = av.ManagedNodegroupInfo(
        labels={"team": "a"}, tags={av.RESOURCES_PREFIX + "ephemeral-storage": "20Gi"}
    )
    only_name = av.build_autoscaler_view(shape, [("eks:nodegroup-name", "ng")], managed=managed)
    both = av.build_autoscaler_view(
        shape, [("eks:nodegroup-name", "ng"), ("eks:cluster-name", "c")], managed=managed
    )
    assert "ephemeral-storage" not in only_name.allocatable and "team" not in only_name.labels
    assert both.allocatable["ephemeral-storage"] == parse_quantity("20Gi")
    assert both.labels["team"] == "a"
