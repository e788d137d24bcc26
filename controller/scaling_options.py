"""The scaling settings (`--scaling`, `--scaling-scope` and the planner's flags), light enough for
`fitguard controller --help`: the driver that acts on them is controller/scaling.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from capacity.demand import ALL, BLIND
from capacity.planner import PlannerOptions

OFF, PLAN, ON = "off", "plan", "on"
MODES = (OFF, PLAN, ON)


@dataclass(frozen=True)
class ScalingOptions:
    mode: str = PLAN
    scope: str = BLIND
    planner: PlannerOptions = field(default_factory=PlannerOptions)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"--scaling must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.scope not in (BLIND, ALL):
            raise ValueError(f"--scaling-scope must be blind or all, not {self.scope!r}")
