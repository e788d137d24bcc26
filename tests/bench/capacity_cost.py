"""Pure capacity costs, in process: the fit check of one pod against 500 node group templates (the
bare check and the verdicts /validate builds), and the planner for 10,000 pending pods."""

from __future__ import annotations

import json
import random
import time
from typing import Any

from capacity.demand import pending_shapes
from capacity.fit import PodNeeds, check_fit
from capacity.serve import judge_all
from capacity.template import NodeGroupTemplate
from tests.bench import synth


def templates(count: int) -> list[NodeGroupTemplate]:
    return [NodeGroupTemplate.from_object(synth.node_group_template(i)) for i in range(count)]


def _best_of(runs: int, work: Any) -> float:
    """The fastest of `runs` timings: the least disturbed by the rest of the machine."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def fit_cost(template_count: int = 500, pods: int = 300, runs: int = 3) -> dict[str, Any]:
    """ms per pod: compiling its needs, check_fit against every template's judged view, and the
    full verdicts with explanations (judge_all)."""
    groups = templates(template_count)
    rng = random.Random(7)
    specs = [synth.pod_spec(rng, rng.randint(4_000, 20_000), f"app-{i % 15:02d}") for i in range(pods)]
    needs = [PodNeeds.from_spec(spec) for spec in specs]
    views = [(t.judged_view()[0], t) for t in groups]

    def compile_all() -> None:
        for spec in specs:
            PodNeeds.from_spec(spec)

    def check_all() -> None:
        for n in needs:
            for view, t in views:
                if view is not None:
                    check_fit(n, view, t.daemonset_overhead, t.daemonset_pods)

    def judge_every() -> None:
        for n in needs:
            judge_all(n, groups)

    fitting = sum(
        1
        for n in needs
        if any(not check_fit(n, v, t.daemonset_overhead, t.daemonset_pods) for v, t in views if v)
    )
    return {
        "templates": template_count,
        "pods": pods,
        "podsFittingSomeGroup": fitting,
        "compileMsPerPod": _best_of(runs, compile_all) * 1000 / pods,
        "checkFitMsPerPod": _best_of(runs, check_all) * 1000 / pods,
        "judgeAllMsPerPod": _best_of(runs, judge_every) * 1000 / pods,
    }


def planner_cost(
    pending: int = 10_000, shapes: int = 200, template_count: int = 500, runs: int = 3
) -> dict[str, Any]:
    """Seconds to group the pending pods into shapes and to plan them over `template_count` groups."""
    from capacity.planner import plan

    groups = templates(template_count)
    pods = synth.pending_pods(pending, shapes, seed=11)
    found: dict[str, Any] = {}

    def group_pods() -> None:
        found["shapes"], found["malformed"] = pending_shapes(pods)

    def make_plan() -> None:
        found["plan"] = plan(found["shapes"], groups, now=1_714_564_800.0)

    shape_seconds = _best_of(runs, group_pods)
    plan_seconds = _best_of(runs, make_plan)
    result = found["plan"]
    placed = sum(len(s.pods) for s in result.scale_ups)
    not_helped = sum(len(n.pods) for n in result.not_helped)
    return {
        "pendingPods": len(pods),
        "shapes": len(found["shapes"]),
        "templates": template_count,
        "shapeSeconds": shape_seconds,
        "planSeconds": plan_seconds,
        "totalSeconds": shape_seconds + plan_seconds,
        "scaleUps": len(result.scale_ups),
        "podsPlaced": placed,
        "podsNotHelped": not_helped,
        "planJsonBytes": len(json.dumps(result.to_json())),
    }
