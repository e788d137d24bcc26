"""Whether cluster-autoscaler's view of a node group can serve what its actual view can: the
resources its template lacks, and the tag that would make it offer each (DESIGN.md, failure 1).

Only the resources fitguard syncs by tag are compared (ephemeral-storage, pod-eni): CA derives
cpu, memory and pods from the instance type itself, so small differences there are estimates, not
blindness. A resource is missing when the actual view offers more of it than CA's view does.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.autoscaler_view import RESOURCES_PREFIX
from capacity.quantity import canonical_quantity
from capacity.resources import EPHEMERAL_STORAGE, POD_ENI
from capacity.template import NodeGroupTemplate

COMPARED_RESOURCES = (EPHEMERAL_STORAGE, POD_ENI)


@dataclass(frozen=True)
class MissingResource:
    resource: str
    actual: int  # milli-units the actual view offers
    autoscaler: int  # milli-units cluster-autoscaler's view offers

    @property
    def tag(self) -> str:
        """The ASG (or managed node group) tag that makes CA's template offer the actual amount."""
        return f"{RESOURCES_PREFIX}{self.resource}={canonical_quantity(self.actual, self.resource)}"


def missing_resources(template: NodeGroupTemplate) -> list[MissingResource] | None:
    """The compared resources CA's view offers less of than the actual view, in a fixed order;
    None when the two cannot be compared (either view unknown)."""
    if template.actual is None or template.autoscaler is None:
        return None
    missing = []
    for resource in COMPARED_RESOURCES:
        actual = template.actual.allocatable.get(resource, 0)
        autoscaler = template.autoscaler.allocatable.get(resource, 0)
        if actual > autoscaler:
            missing.append(MissingResource(resource, actual, autoscaler))
    return missing


def autoscaler_scales_from_zero(template: NodeGroupTemplate) -> bool:
    """Whether cluster-autoscaler, with the group at zero nodes, builds a node that offers what a
    real one does: a max size above zero and nothing missing from its view."""
    return template.max_size > 0 and missing_resources(template) == []
