"""Karpenter's requirement compatibility (capacity/karpenter/requirement.py, requirements.py), the
labels it gives each instance type and which types a NodePool allows (instance_labels.py), and a
NodePool's template requirements (nodepool.py). The Compatible table is kubernetes-sigs/karpenter's
own (tests/upstream/karpenter_requirements.py); the label fleet check is against Karpenter's
published instance-type reference (tests/data/karpenter_instance_types.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from capacity.karpenter.amifamily import AmiFamily
from capacity.karpenter.facts import REFERENCE_BRANCH_TABLE, karpenter_facts
from capacity.karpenter.instance_labels import allowed_types, instance_requirements
from capacity.karpenter.labels import WELL_KNOWN_LABELS
from capacity.karpenter.nodepool import nodepool_template
from capacity.karpenter.requirement import MAX_INT, Operator, Requirement, RequirementError, atoi
from capacity.karpenter.requirements import (
    Refusal,
    Requirements,
    from_labels,
    from_selector_requirements,
    pod_alternatives,
)
from tests.upstream.karpenter_requirements import COMPATIBLE, SETS, ZONE

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "karpenter_instance_types.json"


def _set(name: str) -> Requirements:
    spec = SETS[name]
    if spec is None:
        return Requirements()
    operator, values = spec
    return Requirements([Requirement.of(ZONE, Operator(operator), values)])


@pytest.mark.parametrize(
    ("lhs", "rhs", "allow_undefined", "compatible"),
    COMPATIBLE,
    ids=[f"{i}-{x}-{y}-{'wk' if a else 'strict'}" for i, (x, y, a, _) in enumerate(COMPATIBLE)],
)
def test_upstream_compatible_table(lhs: str, rhs: str, allow_undefined: bool, compatible: bool) -> None:
    """Every line of requirements_test.go's Compatibility context: lhs.Compatible(rhs) succeeds
    exactly when upstream says, with zone well-known (allowed undefined) and strictly."""
    allow = WELL_KNOWN_LABELS if allow_undefined else frozenset()
    assert (_set(lhs).compatible(_set(rhs), allow) is None) is compatible


def test_the_table_is_whole() -> None:
    """225 pairs each way: every set against every set, as upstream writes them."""
    assert len(COMPATIBLE) == 450
    assert {(x, y) for x, y, a, _ in COMPATIBLE if a} == {(x, y) for x in SETS for y in SETS}


def test_aliased_labels_are_normalised() -> None:
    """NormalizedLabels: a beta zone requirement is a requirement on topology.kubernetes.io/zone."""
    raw = [{"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["test"]}]
    requirements = from_selector_requirements(raw, "r")
    assert "failure-domain.beta.kubernetes.io/zone" not in requirements
    assert requirements.get_or_exists(ZONE).has("test")
    assert from_labels({"beta.kubernetes.io/arch": "arm64"}).keys() == {"kubernetes.io/arch"}


NODEPOOL: dict[str, Any] = {
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "shop"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]},
                    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "tier", "operator": "In", "values": ["web", "batch"]},
                ],
                "taints": [{"key": "dedicated", "value": "shop", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}],
            },
        }
    },
}


def _pod(selector: dict[str, str] | None = None, *terms: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": selector or {}}
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                }
            }
        }
    return spec


@pytest.mark.parametrize(
    ("pod", "refusal"),
    [
        (_pod({"app": "x"}), Refusal.UNDEFINED_LABEL),
        (_pod(None, [{"key": "app", "operator": "In", "values": ["x"]}]), Refusal.UNDEFINED_LABEL),
        (_pod(None, [{"key": "app", "operator": "Exists"}]), Refusal.UNDEFINED_LABEL),
        (_pod(None, [{"key": "app", "operator": "NotIn", "values": ["x"]}]), None),
        (_pod(None, [{"key": "app", "operator": "DoesNotExist"}]), None),
        (_pod({"team": "shop"}), None),
        (_pod({"team": "web"}), Refusal.NO_INTERSECTION),
        (_pod({"tier": "batch"}), None),
        (_pod({"tier": "db"}), Refusal.NO_INTERSECTION),
        (_pod({"karpenter.sh/nodepool": "general"}), None),
        (_pod({"karpenter.sh/nodepool": "other"}), Refusal.NO_INTERSECTION),
        (_pod({"karpenter.k8s.aws/instance-family": "r7i"}), None),
        (_pod({"kubernetes.io/arch": "arm64"}), Refusal.NO_INTERSECTION),
        (_pod({"topology.kubernetes.io/zone": "eu-west-1a"}), None),
        (_pod({"karpenter.k8s.aws/ec2nodeclass": "default"}), None),
    ],
    ids=lambda v: repr(v)[:70] if isinstance(v, dict) else str(v),
)
def test_a_pod_against_the_nodepool_template(pod: dict[str, Any], refusal: Refusal | None) -> None:
    """CanAdd's Compatible with AllowUndefinedWellKnownLabels: a custom key the NodePool does not
    define is refused for In and Exists, allowed for NotIn and DoesNotExist; a key the template
    defines (requirement or label) must intersect; a well-known key the NodePool leaves open
    (instance family, zone) is allowed here and left to the instance types."""
    template = nodepool_template(NODEPOOL)
    (alternative,) = pod_alternatives(pod)
    found = template.requirements.pod_compatible(alternative)
    assert (found.refusal if found else None) is refusal


def test_the_template_carries_its_labels_taints_and_not_its_startup_taints() -> None:
    """NewNodeClaimTemplate: the NodePool and EC2NodeClass labels, registered/initialized; the
    startup taint is not among the taints that keep pods off."""
    template = nodepool_template(NODEPOOL)
    assert template.labels == {
        "team": "shop",
        "karpenter.sh/nodepool": "general",
        "karpenter.k8s.aws/ec2nodeclass": "default",
    }
    assert template.requirements["karpenter.sh/initialized"].has("true")
    assert [t.key for t in template.taints] == ["dedicated"]


def test_karpenter_tries_the_next_required_term() -> None:
    """preferences.go removeRequiredNodeAffinityTerm: each term (with the nodeSelector) is an
    alternative; the pod fits when one of them does."""
    pod = _pod(
        {"team": "shop"},
        [{"key": "app", "operator": "In", "values": ["x"]}],
        [{"key": "tier", "operator": "In", "values": ["web"]}],
    )
    template = nodepool_template(NODEPOOL)
    first, second = pod_alternatives(pod)
    assert template.requirements.pod_compatible(first) is not None
    assert template.requirements.pod_compatible(second) is None
    assert "team" in second


def test_bounds_and_atoi_follow_go() -> None:
    """Gt MaxInt matches nothing; Gt/Lt bounds exclude values that are not integers; Atoi takes a
    sign and digits only, within int64."""
    assert Requirement.of("k", Operator.GT, (str(MAX_INT),)).operator() is Operator.DOES_NOT_EXIST
    gt5 = Requirement.of("k", Operator.GT, ("5",))
    assert gt5.has("6") and not gt5.has("5") and not gt5.has("six")
    assert Requirement.of("k", Operator.LT, ("5",)).has("4")
    assert Requirement.of("k", Operator.GTE, ("5",)).has("5")
    assert Requirement.of("k", Operator.LTE, ("5",)).has("5")
    assert (atoi("+7"), atoi("-7"), atoi(" 7"), atoi("7_0"), atoi(str(2**63))) == (7, -7, None, None, None)
    with pytest.raises(RequirementError, match="exactly one integer"):
        Requirement.of("k", Operator.GT, ("a",))
    both_out = Requirements(
        [Requirement.of("k", Operator.NOT_IN, ("a",)), Requirement.of("k", Operator.NOT_IN, ("b",))]
    )
    assert not both_out["k"].has("a") and not both_out["k"].has("b") and both_out["k"].has("c")
    bounded = gt5.intersection(Requirement.of("k", Operator.LT, ("3",)))
    assert bounded.operator() is Operator.DOES_NOT_EXIST


def test_every_type_of_the_reference_has_the_labels_karpenter_gives_it() -> None:
    """For every type of the published reference (AL2023), the single-valued requirements
    computed here are exactly the labels listed there (zone, region, capacity type and the
    multi-valued tenancy are not listed there)."""
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))["types"]
    wrong, checked = [], 0
    for name, listed in reference.items():
        facts = karpenter_facts(name, REFERENCE_BRANCH_TABLE)
        if facts is None:
            continue
        checked += 1
        ours = {
            k: next(iter(r.values))
            for k, r in instance_requirements(facts, AmiFamily.AL2023).items()
            if not r.complement and len(r.values) == 1
        }
        if ours != listed["labels"]:
            wrong.append((name, set(ours.items()) ^ set(listed["labels"].items())))
    assert wrong == []
    assert checked == 1355


def test_which_types_a_nodepool_allows_and_its_min_values() -> None:
    """filterInstanceTypesByRequirements' compatible: c and m of generation 6 and later, amd64 only;
    minValues counts distinct values over the allowed types; unknown names are reported."""
    template = nodepool_template(NODEPOOL)
    names = ["m5.large", "m6i.large", "c7i.xlarge", "c7g.large", "r6i.large", "nosuch.large"]
    allowed = allowed_types(template.requirements, AmiFamily.AL2023, names)
    assert [f.name for f in allowed.types] == ["m6i.large", "c7i.xlarge"]
    assert allowed.unknown == ("nosuch.large",)
    assert allowed.min_values_unmet == {}
    strict = dict(NODEPOOL)
    spec = strict["spec"]["template"]["spec"]
    wide = [
        *spec["requirements"],
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 3},
    ]
    strict = {
        **NODEPOOL,
        "spec": {"template": {**NODEPOOL["spec"]["template"], "spec": {**spec, "requirements": wide}}},
    }
    unmet = allowed_types(nodepool_template(strict).requirements, AmiFamily.AL2023, names).min_values_unmet
    assert unmet == {"node.kubernetes.io/instance-type": 2}
    exact = [
        *spec["requirements"],
        {"key": "node.kubernetes.io/instance-type", "operator": "Exists", "minValues": 2},
    ]
    exact_pool = {
        **NODEPOOL,
        "spec": {"template": {**NODEPOOL["spec"]["template"], "spec": {**spec, "requirements": exact}}},
    }
    assert (
        allowed_types(nodepool_template(exact_pool).requirements, AmiFamily.AL2023, names).min_values_unmet
        == {}
    )


def test_windows_is_only_offered_on_amd64() -> None:
    """getOS: a Windows family offers os windows on amd64 and no OS at all on arm64."""
    m5 = instance_requirements(karpenter_facts("m5.large"), AmiFamily.WINDOWS2022)  # type: ignore[arg-type]
    assert m5["kubernetes.io/os"].has("windows")
    assert m5["node.kubernetes.io/windows-build"].has("10.0.20348")
    graviton = instance_requirements(karpenter_facts("m7g.large"), AmiFamily.WINDOWS2022)  # type: ignore[arg-type]
    assert graviton["kubernetes.io/os"].operator() is Operator.DOES_NOT_EXIST


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"spec": {"template": {"spec": {"requirements": [{"key": "a", "operator": "Near"}]}}}}, "operator"),
        ({"spec": {"template": {"spec": {"requirements": [{"operator": "In"}]}}}}, "with a key"),
        (
            {
                "spec": {
                    "template": {"spec": {"requirements": [{"key": "a", "operator": "In", "values": "x"}]}}
                }
            },
            "values",
        ),
        ({"spec": {"template": {"spec": {"taints": {"key": "a"}}}}}, "taints"),
        (
            {
                "spec": {
                    "template": {
                        "spec": {"requirements": [{"key": "a", "operator": "Exists", "minValues": "2"}]}
                    }
                }
            },
            "minValues",
        ),
    ],
)
def test_a_bad_nodepool_field_is_named(raw: dict[str, Any], message: str) -> None:
    """A NodePool field that cannot be read is refused with its name."""
    with pytest.raises(RequirementError, match=message):
        nodepool_template(raw)
