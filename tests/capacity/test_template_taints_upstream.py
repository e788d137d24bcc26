"""The case tables of tests/upstream/ca_taints.py (cluster-autoscaler's taint flags and SanitizeTaints,
restated from its source and unit tests, each case citing file and function) run through fitguard's
own functions, whole values compared: the options read from a command line, the whole taint list a
template keeps, whether a node can be cached as a template."""

from __future__ import annotations

from typing import Any

import pytest

from capacity import autoscaler_view as av
from capacity.autoscaler_readiness import is_template_candidate
from capacity.taints import Taint
from capacity.template_taints import TaintOptions, sanitize_taints, taint_options_from_argv
from tests.upstream import ca_taints as table

NOW = 1_800_000_000.0
M5_LARGE = av.InstanceShape("m5.large", 2, 8192, 0, "amd64")


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["id"] for c in cases]


def _taints(raw: list[list[str]]) -> list[Taint]:
    return [Taint(k, v, e) for k, v, e in raw]


def _options(raw: dict[str, list[str]]) -> TaintOptions:
    return TaintOptions(
        startup_taints=frozenset(raw["startup_taints"]),
        startup_taint_prefixes=tuple(raw["startup_taint_prefixes"]),
        status_taints=frozenset(raw["status_taints"]),
    )


@pytest.mark.parametrize("case", table.FLAGS, ids=_ids(table.FLAGS))
def test_taint_flags_read_from_the_command_line(case: dict[str, Any]) -> None:
    """The whole taint options a cluster-autoscaler run with this command line builds its
    TaintConfig from: every spelling pflag accepts, repeats, --ignore-taint merged, no comma split."""
    assert taint_options_from_argv(case["input"]) == _options(case["expected"])


@pytest.mark.parametrize("case", table.SANITIZE, ids=_ids(table.SANITIZE))
def test_sanitize_taints_with_the_flags(case: dict[str, Any]) -> None:
    """SanitizeTaints with the TaintConfig of these flags keeps exactly these taints, in order."""
    options = taint_options_from_argv(case["input"]["argv"])
    assert list(sanitize_taints(_taints(case["input"]["taints"]), options)) == _taints(case["expected"])


@pytest.mark.parametrize("case", table.IS_STARTUP, ids=_ids(table.IS_STARTUP))
def test_is_startup_taint(case: dict[str, Any]) -> None:
    """IsStartupTaint with custom prefixes, the built-in ones kept (TestNewTaintConfigWithCustomPrefixes)."""
    options = taint_options_from_argv(case["input"]["argv"])
    assert options.is_startup_taint(case["input"]["key"]) is case["expected"]


@pytest.mark.parametrize("case", table.CANDIDATE, ids=_ids(table.CANDIDATE))
def test_a_node_with_a_startup_taint_is_no_template_candidate(case: dict[str, Any]) -> None:
    """A Ready, stable, schedulable node is cached as its group's template unless it carries a
    startup taint (cluster-autoscaler sees it NotReady); a status taint does not matter."""
    node = {
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": k, "value": v, "effect": e} for k, v, e in case["input"]["taints"]]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]
        },
    }
    options = taint_options_from_argv(case["input"]["argv"])
    assert is_template_candidate(node, NOW, options) is case["expected"]


@pytest.mark.parametrize("case", table.TEMPLATE, ids=_ids(table.TEMPLATE))
def test_a_template_built_from_taint_tags_with_the_flags(case: dict[str, Any]) -> None:
    """buildNodeFromTemplate's taints from the ASG's tags, as SanitizedTemplateNodeInfoFromNodeGroup
    leaves them with the running cluster-autoscaler's flags: the whole taint list."""
    view = av.build_autoscaler_view(
        M5_LARGE, [(k, v) for k, v in case["input"]["tags"]], region="us-east-1", zone="us-east-1a"
    )
    sanitized = av.sanitized_template(view, taint_options_from_argv(case["input"]["argv"]))
    assert list(sanitized.taints) == _taints(case["expected"])


def test_every_case_is_cited_and_named_once() -> None:
    """Each case names the upstream file and function it restates, and no id repeats."""
    cases = [*table.FLAGS, *table.SANITIZE, *table.IS_STARTUP, *table.CANDIDATE, *table.TEMPLATE]
    assert all(c["upstream"] for c in cases)
    assert len({c["id"] for c in cases}) == len(cases)
