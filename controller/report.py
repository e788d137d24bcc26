"""What one discovery cycle reports, typed: the templates it built, the tag changes planned or
written, the scale-ups, the errors by group, and, when they ran, the scaling plan, rescue and the
EC2 verification. `to_json()` is the contract `fitguard controller --once -o json` prints and
/snapshotz serves as `lastCycle` (docs/design.md, Contracts): its keys and their order never change.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from capacity.template import NodeGroupTemplate
from controller.discovery import GroupOutcome
from controller.publish import desired_objects
from controller.tagsync import TagChange


class TagWrite(enum.Enum):
    PLANNED = "planned"  # --sync-autoscaler-tags=plan, or a dry run: logged, not written
    APPLIED = "applied"
    FAILED = "failed"


@dataclass(frozen=True)
class TagSyncLine:
    """One planned tag change and what became of it (the error when it could not be written)."""

    change: TagChange
    write: TagWrite = TagWrite.PLANNED
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            **self.change.to_json(),
            "current": self.change.current,
            "applied": self.write is TagWrite.APPLIED,
        }
        if self.error:
            line["error"] = self.error
        return line


@dataclass(frozen=True)
class CycleReport:
    """One cycle: each group's outcome (its template, fresh or kept, and why kept), the tag sync,
    the scaling, and what failed: the whole discovery (`discovery_error`) or one group."""

    outcomes: tuple[GroupOutcome, ...] = ()
    tag_sync: tuple[TagSyncLine, ...] = ()
    discovery_error: str = ""
    scale_ups: tuple[Mapping[str, Any], ...] = ()  # each scale-up of the plan with its outcome
    scaling: Mapping[str, Any] | None = None  # the whole plan with its reasons, when scaling ran
    rescue: tuple[Mapping[str, Any], ...] | None = None  # the loop's rescue and reclaim, when it ran
    ec2: Mapping[str, Any] | None = None  # the loop's EC2 verification, when it ran
    # why a NodePool has no template, or is not Ready, by `nodepool/<name>` (controller/nodepools.py)
    nodepool_errors: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def node_groups(self) -> tuple[dict[str, Any], ...]:
        """The NodeGroupTemplate objects as published (built once per cycle)."""
        return tuple(desired_objects(self.outcomes))

    @property
    def templates(self) -> tuple[NodeGroupTemplate, ...]:
        return tuple(o.template for o in self.outcomes if o.template is not None)

    @property
    def errors(self) -> dict[str, str]:
        """Why each group was kept, and the whole discovery's failure under the key "" (the JSON
        contract's `errors`)."""
        reasons = {**{o.name: o.reason for o in self.outcomes if o.reason}, **self.nodepool_errors}
        return {**reasons, "": self.discovery_error} if self.discovery_error else reasons

    def to_json(self) -> dict[str, Any]:
        report: dict[str, Any] = {
            "nodeGroups": list(self.node_groups),
            "tagSync": [line.to_json() for line in self.tag_sync],
            "scaleUps": list(self.scale_ups),
            "errors": self.errors,
        }
        if self.scaling is not None:
            report["scaling"] = self.scaling
        if self.rescue is not None:
            report["rescue"] = list(self.rescue)
        if self.ec2 is not None:
            report["ec2"] = self.ec2
        return report
