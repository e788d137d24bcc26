"""The branch ENI books' metrics: the guard's lifts and the reconcile time, counted as they happen,
and the per-node and per-group books read at scrape time, so a deleted node leaves no stale series."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from capacity.names import EXHAUSTED_LABEL

if TYPE_CHECKING:
    from controller.books import Books
    from controller.books_reconciler import BooksReconciler


class BooksMetrics:
    """The books' counters in `registry`, and their scrape-time collector."""

    def __init__(self, books: Books, reconciler: BooksReconciler, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.guard_lifts = Counter(
            "fitguard_branch_eni_guard_lifts",
            "Times the exhausted-node guard stepped aside for cluster-autoscaler, per node group",
            ["node_group"],
            registry=registry,
        )
        self.reconcile_seconds = Histogram(
            "fitguard_branch_eni_reconcile_duration_seconds",
            "Time one reconcile of the branch ENI books took",
            registry=registry,
        )
        registry.register(BooksCollector(books, reconciler))


class BooksCollector(Collector):
    """Metrics read from the books at scrape time, so a deleted node leaves no stale series."""

    def __init__(self, books: Books, reconciler: BooksReconciler) -> None:
        self.books = books
        self.reconciler = reconciler

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self.books.clock()
        rows = self.books.snapshot(now)
        names = ("capacity", "in_use", "held", "true_free")
        per_node = {
            name: GaugeMetricFamily(
                f"fitguard_branch_eni_node_{name}",
                f"Branch ENIs per node: {name}",
                labels=["node", "node_group"],
            )
            for name in names
        }
        per_group = {
            name: GaugeMetricFamily(
                f"fitguard_branch_eni_group_{name}",
                f"Branch ENIs per node group: {name}",
                labels=["node_group"],
            )
            for name in names
        }
        totals: dict[str, dict[str, int]] = {}
        waiting = 0
        for row in rows:
            waiting += row.waiting
            values = {
                "capacity": row.capacity,
                "in_use": row.in_use,
                "held": row.held,
                "true_free": row.true_free,
            }
            group = totals.setdefault(row.node_group, dict.fromkeys(names, 0))
            for name, value in values.items():
                per_node[name].add_metric([row.name, row.node_group], float(value or 0))
                group[name] += value or 0
        for group_name, values in totals.items():
            for name, value in values.items():
                per_group[name].add_metric([group_name], float(value))
        yield from per_node.values()
        yield from per_group.values()
        labelled = GaugeMetricFamily(
            "fitguard_branch_eni_node_exhausted",
            f"1 when the node carries the {EXHAUSTED_LABEL}=true label (as the informer sees it)",
            labels=["node", "node_group"],
        )
        for row in rows:
            node = self.books.cache.nodes.get("", row.name)
            if node is not None:
                labelled.add_metric([row.name, row.node_group], 1.0 if node.exhausted else 0.0)
        yield labelled
        yield GaugeMetricFamily(
            "fitguard_branch_eni_waiting_pods", "Pods bound without their branch ENI", waiting
        )
        yield from self._guard()
        age = now - self.books.last_event if self.books.last_event else 0.0
        yield GaugeMetricFamily(
            "fitguard_branch_eni_books_age_seconds", "Seconds since the books last changed", age
        )

    def _guard(self) -> Iterator[GaugeMetricFamily]:
        labelled = GaugeMetricFamily(
            "fitguard_branch_eni_guard_labelled_nodes",
            f"Nodes carrying {EXHAUSTED_LABEL}=true now, per node group",
            labels=["node_group"],
        )
        counts: dict[str, int] = {}
        for node in self.books.cache.nodes.items():
            counts[node.node_group] = counts.get(node.node_group, 0) + (1 if node.exhausted else 0)
        for group, count in sorted(counts.items()):
            labelled.add_metric([group], float(count))
        yield labelled
        lifted = GaugeMetricFamily(
            "fitguard_branch_eni_guard_lifted_groups",
            "Node groups the guard has stepped aside from so that cluster-autoscaler can scale them",
            labels=["node_group"],
        )
        for group in sorted(self.reconciler.guard_state.lifted):
            lifted.add_metric([group], 1.0)
        yield lifted
