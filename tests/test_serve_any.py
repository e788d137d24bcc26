"""`refusals` (the /validate path) agrees with `judge_all` on every pod, over the benchmark's 500
node group templates: None exactly when some group serves, and otherwise the very same verdicts."""

from __future__ import annotations

import random

from capacity.fit import PodNeeds
from capacity.serve import judge_all, refusals
from capacity.template import NodeGroupTemplate
from tests.bench import synth


def test_refusals_is_judge_all_unless_a_group_serves() -> None:
    templates = [NodeGroupTemplate.from_object(synth.node_group_template(i)) for i in range(500)]
    rng = random.Random(3)
    outcomes = set()
    for i in range(120):
        needs = PodNeeds.from_spec(synth.pod_spec(rng, 2_000, f"app-{i:02d}"))
        verdicts = judge_all(needs, templates)
        served = any(v.serves for v in verdicts)
        assert refusals(needs, templates) == (None if served else verdicts)
        outcomes.add(served)
    assert outcomes == {True, False}  # both branches were exercised


def test_no_templates_refuse_with_no_verdicts() -> None:
    needs = PodNeeds.from_spec({"containers": [{"name": "c"}]})
    assert refusals(needs, []) == []
