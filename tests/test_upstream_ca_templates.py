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
