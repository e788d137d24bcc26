"""A pod's effective requests, as the scheduler computes them.

Upstream: k8s.io/component-helpers/resource PodRequests (Kubernetes 1.29+, sidecar containers):
- regular containers are summed;
- a restartable init container (restartPolicy: Always, a "sidecar") is added to that sum and to
  every init container that starts after it;
- an ordinary init container counts at its own request plus the sidecars started before it;
- the pod needs the maximum of the container sum and every init container's figure;
- `spec.overhead` (RuntimeClass) is added last.
Pod-level `spec.resources.requests` (PodLevelResources) replaces the container figure for the
resources it names. Where a request is missing and a limit is set, the limit stands in for it, as
API defaulting does for pods (workload templates are not defaulted until their pods are created).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capacity.resources import Resources, add, parse_resources, take_max


def container_requests(container: Mapping[str, Any], field: str) -> Resources:
    resources = container.get("resources")
    if resources is None:
        resources = {}
    if not isinstance(resources, Mapping):
        raise TypeError(f"{field}.resources: expected a map")
    requests = parse_resources(resources.get("requests"), f"{field}.resources.requests")
    limits = parse_resources(resources.get("limits"), f"{field}.resources.limits")
    for name, value in limits.items():
        requests.setdefault(name, value)
    for name, value in requests.items():
        if value < 0:
            raise ValueError(f"{field}.resources.requests.{name}: must not be negative")
    return requests


def _containers(spec: Mapping[str, Any], key: str, field: str) -> list[Mapping[str, Any]]:
    items = spec.get(key) or []
    if not isinstance(items, list) or not all(isinstance(c, Mapping) for c in items):
        raise TypeError(f"{field}.{key}: expected a list of containers")
    return items


def pod_requests(spec: Mapping[str, Any], field: str = "spec") -> Resources:
    """The pod's effective requests in milli-units. Raises ValueError/TypeError naming the field."""
    reqs: Resources = {}
    for i, container in enumerate(_containers(spec, "containers", field)):
        add(reqs, container_requests(container, f"{field}.containers[{i}]"))

    init_max: Resources = {}
    sidecars: Resources = {}
    for i, container in enumerate(_containers(spec, "initContainers", field)):
        own = container_requests(container, f"{field}.initContainers[{i}]")
        if container.get("restartPolicy") == "Always":
            add(reqs, own)
            add(sidecars, own)
            figure = dict(sidecars)
        else:
            figure = add(dict(own), sidecars)
        take_max(init_max, figure)
    take_max(reqs, init_max)

    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping) and pod_level.get("requests"):
        level = parse_resources(pod_level.get("requests"), f"{field}.resources.requests")
        for name in ("cpu", "memory"):
            if name in level:
                reqs[name] = level[name]

    add(reqs, parse_resources(spec.get("overhead"), f"{field}.overhead"))
    return reqs
