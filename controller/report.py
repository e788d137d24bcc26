"""What one discovery cycle reports, typed: the templates it built, the tag changes planned or
written, the scale-ups, the errors by group, and, when they ran, the scaling plan, rescue and the
EC2 verification. `to_json()` is the contract `fitguard controller --once -o json` prints and
/snapshotz serves as `lastCycle` (docs/design.md, Contracts): its keys and their order never change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.tagsync import TagChange


@dataclass(frozen=True)
class TagSyncLine:
    """One planned tag change and what became of it: applied, or the error that kept it unwritten
    (neither: only planned)."""

    change: TagChange
    applied: bool = False
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            **self.change.to_json(),
            "current": self.change.current,
            "applied": self.applied,
        }
        if self.error:
            line["error"] = self.error
        return line


@dataclass(frozen=True)
class CycleReport:
    """One cycle. `errors` by node group; the key "" is a discovery that failed as a whole."""

    node_groups: tuple[Mapping[str, Any], ...] = ()  # the NodeGroupTemplate objects, as published
    tag_sync: tuple[TagSyncLine, ...] = ()
    errors: Mapping[str, str] = field(default_factory=dict)
    scale_ups: tuple[Mapping[str, Any], ...] = ()  # each scale-up of the plan with its outcome
    scaling: Mapping[str, Any] | None = None  # the whole plan with its reasons, when scaling ran
    rescue: tuple[Mapping[str, Any], ...] | None = None  # the loop's rescue and reclaim, when it ran
    ec2: Mapping[str, Any] | None = None  # the loop's EC2 verification, when it ran

    @property
    def discovery_error(self) -> str:
        """Why discovery failed as a whole ("" when it did not)."""
        return self.errors.get("", "")

    def to_json(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "nodeGroups": list(self.node_groups),
            "tagSync": [line.to_json() for line in self.tag_sync],
            "scaleUps": list(self.scale_ups),
            "errors": dict(self.errors),
        }
        if self.scaling is not None:
            report["scaling"] = self.scaling
        if self.rescue is not None:
            report["rescue"] = list(self.rescue)
        if self.ec2 is not None:
            report["ec2"] = self.ec2
        return report
