"""Publishing NodeGroupTemplates against the fake API server: created, written only when changed,
deleted with their group, and a person's (manual) objects never touched."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from capacity.names import MANAGED_BY_LABEL, TEMPLATE_MANAGER
from capacity.template import NodeGroupTemplate, View
from controller.cycle import previous_templates
from controller.discovery import GroupOutcome
from controller.publish import publish
from kube.client import KubeClient

PATH = "/apis/fitguard.io/v1alpha1/nodegrouptemplates"
NOW = 1_800_000_000.0  # status carries the discovery time: a fixed one keeps a second cycle identical


def template(name: str, eph_gib: int = 44, nodes: int = 0) -> NodeGroupTemplate:
    actual = View(
        allocatable={"cpu": 1930, "ephemeral-storage": eph_gib * 2**30 * 1000},
        labels={"node.kubernetes.io/instance-type": "m5.large"},
        source="launch-template",
    )
    return NodeGroupTemplate(
        name=name, provider="aws-asg", instance_types=("m5.large",), max_size=10, nodes=nodes, actual=actual
    )


def writes(fake_kube: Any) -> list[Any]:
    return [r for r in fake_kube.requests.find(path=PATH) if r.method in ("POST", "PUT", "PATCH", "DELETE")]


def test_templates_created_then_untouched_when_unchanged(fake_kube: Any) -> None:
    """First cycle creates one object per group; an identical second cycle writes nothing."""
    api = KubeClient(fake_kube.api_client())
    outcomes = [GroupOutcome("ng-a", template("ng-a")), GroupOutcome("ng-b", template("ng-b"))]
    result = publish(api, outcomes, now=NOW)
    assert sorted(result.created) == ["ng-a", "ng-b"]
    stored = fake_kube.get("NodeGroupTemplate", "ng-a", api_version="fitguard.io/v1alpha1")
    assert stored["metadata"]["labels"][MANAGED_BY_LABEL] == TEMPLATE_MANAGER
    assert NodeGroupTemplate.from_object(stored) == template("ng-a")

    fake_kube.requests.clear()
    again = publish(api, outcomes, now=NOW)
    assert again.unchanged == 2 and not again.created and not again.updated
    assert writes(fake_kube) == []


def test_changed_template_is_replaced_and_gone_group_deleted(fake_kube: Any) -> None:
    """A changed view is written (one PUT); a group no longer discovered loses its object; the
    changed one's status follows its new generation (one PATCH of the status subresource)."""
    api = KubeClient(fake_kube.api_client())
    publish(api, [GroupOutcome("ng-a", template("ng-a")), GroupOutcome("ng-b", template("ng-b"))], now=NOW)
    fake_kube.requests.clear()
    result = publish(api, [GroupOutcome("ng-a", template("ng-a", eph_gib=90, nodes=1))], now=NOW)
    assert result.updated == ["ng-a"] and result.deleted == ["ng-b"]
    assert [(r.method, r.path) for r in writes(fake_kube)] == [
        ("PUT", f"{PATH}/ng-a"),
        ("DELETE", f"{PATH}/ng-b"),
        ("PATCH", f"{PATH}/ng-a/status"),
    ]
    names = [
        o["metadata"]["name"]
        for o in fake_kube.objects("NodeGroupTemplate", api_version="fitguard.io/v1alpha1")
    ]
    assert names == ["ng-a"]
    stored = fake_kube.get("NodeGroupTemplate", "ng-a", api_version="fitguard.io/v1alpha1")
    assert stored["spec"]["nodes"] == 1


def test_manual_templates_are_never_touched(fake_kube: Any) -> None:
    """provider: manual (or the fitguard.io/manual mark) keeps the object a person's, even when a
    discovered group has the same name, and it is never deleted as a vanished group."""
    manual = template("ng-manual").to_object()
    manual["spec"]["provider"] = "manual"
    marked = template("ng-marked").to_object()
    marked["metadata"]["annotations"] = {"fitguard.io/manual": "true"}
    fake_kube.create(manual)
    fake_kube.create(marked)
    api = KubeClient(fake_kube.api_client())
    result = publish(api, [GroupOutcome("ng-marked", template("ng-marked", eph_gib=1))])
    assert not result.created and not result.updated and not result.deleted
    assert writes(fake_kube) == []
    stored = fake_kube.get("NodeGroupTemplate", "ng-marked", api_version="fitguard.io/v1alpha1")
    assert NodeGroupTemplate.from_object(stored) == template("ng-marked")


def test_stale_template_carries_its_reason(fake_kube: Any) -> None:
    """A template kept from before says why in spec.staleReason."""
    api = KubeClient(fake_kube.api_client())
    publish(api, [GroupOutcome("ng-a", template("ng-a"), "DescribeLaunchTemplateVersions: AccessDenied")])
    stored = fake_kube.get("NodeGroupTemplate", "ng-a", api_version="fitguard.io/v1alpha1")
    assert "AccessDenied" in stored["spec"]["staleReason"]


def test_the_templates_published_before_are_read_back_but_manual_and_unreadable_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """controller/cycle.py previous_templates: the listed NodeGroupTemplates fitguard published,
    by name, read back whole; a manual one (its provider, or the manual mark) is not ours to keep
    or replace; an unreadable one is logged by name with why and skipped."""
    ours = NodeGroupTemplate("ng-a", provider="aws-asg", max_size=3).to_object()
    manual = NodeGroupTemplate("ng-m", provider="manual", max_size=1).to_object()
    unreadable = {"metadata": {"name": "ng-bad"}, "spec": {"provider": "aws-asg", "maxSize": "many"}}
    with caplog.at_level(logging.WARNING, logger="controller.cycle"):
        found = previous_templates([unreadable, manual, ours])
    assert found == {"ng-a": NodeGroupTemplate.from_object(ours)}
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "controller.cycle"]
    with pytest.raises((TypeError, ValueError)) as why:
        NodeGroupTemplate.from_object(unreadable)
    assert said == [("WARNING", f"NodeGroupTemplate ng-bad unreadable: {why.value}")]
