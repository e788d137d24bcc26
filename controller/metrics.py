"""The controller's own metrics beside the books' and the scaling driver's: build, leadership,
cache sync, discovery and tag-sync errors, and per node group whether cluster-autoscaler is blind
and whether it remembers a live node of the group.

Node group series are read at scrape time from the last cycle's report, so a group that is gone
leaves no stale series. AWS errors by operation are counted where they are described
(controller/aws/clients.py, fitguard_aws_errors_total).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from capacity.view_match import COMPARED_RESOURCES, autoscaler_scales_from_zero, missing_resources
from controller.cache import ClusterCache
from controller.report import CycleReport

log = logging.getLogger(__name__)


class Leadership(Protocol):
    def is_leader(self) -> bool: ...


class ControllerMetrics:
    def __init__(
        self,
        leadership: Leadership,
        cache: ClusterCache,
        last_cycle: Callable[[], CycleReport | None],
        registry: CollectorRegistry | None = None,
    ) -> None:
        from cmdline import __version__

        self.registry = registry or CollectorRegistry()
        build = Gauge(
            "fitguard_build_info",
            "Always 1: the component and the version it runs.",
            ["component", "version"],
            registry=self.registry,
        )
        build.labels("controller", __version__).set(1)
        self.discovery_errors = Counter(
            "fitguard_discovery_errors",
            "Node groups not read completely from AWS in a cycle (node_group empty: the whole discovery).",
            ["node_group"],
            registry=self.registry,
        )
        self.tag_sync_errors = Counter(
            "fitguard_tag_sync_errors",
            "cluster-autoscaler tags that could not be written, by node group.",
            ["node_group"],
            registry=self.registry,
        )
        self.cycles = Counter(
            "fitguard_controller_cycles",
            "Discovery cycles the leader ran, by result (ok, failed: an exception ended it).",
            ["result"],
            registry=self.registry,
        )
        self.last_success = Gauge(
            "fitguard_controller_last_cycle_timestamp_seconds",
            "When the last cycle that did not fail ended (Unix time).",
            registry=self.registry,
        )
        self.registry.register(_StateCollector(leadership, cache, last_cycle))

    def cycle_done(self, report: CycleReport, now: float) -> None:
        self.cycles.labels("ok").inc()
        self.last_success.set(now)
        for group in report.errors:  # "" is the whole discovery
            self.discovery_errors.labels(group).inc()
        for line in report.tag_sync:
            if line.error:
                self.tag_sync_errors.labels(line.change.node_group).inc()

    def cycle_failed(self) -> None:
        self.cycles.labels("failed").inc()


class _StateCollector(Collector):
    """Leadership, cache sync and the node groups of the last cycle, read at scrape time."""

    def __init__(
        self, leadership: Leadership, cache: ClusterCache, last_cycle: Callable[[], CycleReport | None]
    ) -> None:
        self.leadership = leadership
        self.cache = cache
        self.last_cycle = last_cycle

    def collect(self) -> Iterator[GaugeMetricFamily]:
        leads = 1.0 if self.leadership.is_leader() else 0.0
        synced = self.cache.pods.synced and self.cache.nodes.synced
        yield GaugeMetricFamily("fitguard_leader", "1 when this replica leads", leads)
        yield GaugeMetricFamily(
            "fitguard_books_synced",
            "1 once the pod and node caches have listed completely",
            1.0 if synced else 0.0,
        )
        blind = GaugeMetricFamily(
            "fitguard_node_group_blind",
            "1 when cluster-autoscaler's template offers less of the resource than a real node does",
            labels=["node_group", "resource"],
        )
        from_zero = GaugeMetricFamily(
            "fitguard_node_group_autoscaler_scales_from_zero",
            "1 when cluster-autoscaler's template offers what a real node does (max size above 0)",
            labels=["node_group"],
        )
        remembers = GaugeMetricFamily(
            "fitguard_node_group_autoscaler_remembers",
            "1 while the running cluster-autoscaler keeps a live node of the group as its template "
            "(spec.autoscalerMemory); 0 when it does not; no series before the memory is observed",
            labels=["node_group"],
        )
        nodes = GaugeMetricFamily("fitguard_node_group_nodes", "Nodes of the group", labels=["node_group"])
        last = self.last_cycle()
        for template in last.templates if last is not None else ():
            nodes.add_metric([template.name], float(template.nodes))
            if template.memory is not None:
                remembers.add_metric([template.name], 1.0 if template.memory.remembers else 0.0)
            if template.actual is None or template.autoscaler is None:
                continue
            from_zero.add_metric([template.name], 1.0 if autoscaler_scales_from_zero(template) else 0.0)
            missing = {m.resource for m in missing_resources(template) or []}
            for resource in COMPARED_RESOURCES:
                if template.actual.allocatable.get(resource, 0) > 0:  # else nothing to be blind to
                    blind.add_metric([template.name, resource], 1.0 if resource in missing else 0.0)
        yield blind
        yield from_zero
        yield remembers
        yield nodes
