"""`any_serves` (the /validate fast path) agrees with `judge_all` on every pod: admitted exactly
when some group's full verdict serves, over the benchmark's 500 node group templates."""

from __future__ import annotations

import random

from capacity.fit import PodNeeds
from capacity.serve import any_serves, judge_all, serves
from capacity.template import NodeGroupTemplate
from tests.bench import synth


def test_any_serves_is_the_verdict_of_judge_all_for_fitting_and_unfitting_pods() -> None:
    templates = [NodeGroupTemplate.from_object(synth.node_group_template(i)) for i in range(500)]
    rng = random.Random(3)
    outcomes = set()
    for i in range(120):
        needs = PodNeeds.from_spec(synth.pod_spec(rng, 2_000, f"app-{i:02d}"))
        verdicts = judge_all(needs, templates)
        expected = any(v.serves for v in verdicts)
        assert any_serves(needs, templates) is expected
        assert [serves(needs, t) for t in sorted(templates, key=lambda t: t.name)] == [
            v.serves for v in verdicts
        ]
        outcomes.add(expected)
    assert outcomes == {True, False}  # both branches were exercised


def test_no_templates_serve_nothing() -> None:
    needs = PodNeeds.from_spec({"containers": [{"name": "c"}]})
    assert any_serves(needs, []) is False
