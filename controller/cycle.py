"""The discovery reconciler: node groups read from AWS, their templates built from the cache
(controller/cache.py), cluster-autoscaler's memory of each recorded, its tags synced, the templates
published, and, with scaling on, the plan made from the same reading and carried out. One cycle is
`reconcile()`; the long-running controller runs it every interval while it leads, `--once` once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from capacity.expander import PRIORITY, PRIORITY_KEY, Priorities, parse_priorities
from capacity.names import TEMPLATE_KIND
from capacity.template import FITGUARD, NodeGroupTemplate
from capacity.template_taints import DEFAULT_TAINT_CONFIG
from controller.aws.discovery import AwsDiscovery, DiscoveryError
from controller.aws.records import AwsNodeGroup
from controller.books import Books
from controller.cache import ClusterCache, ConfigMapUnreadable
from controller.discovery import FactsLookup, GroupOutcome, build_templates, group_nodes
from controller.memory import Observed, remember
from controller.nodepools import KARPENTER_ERROR, NodePoolOutcomes, karpenter_settings, nodepool_outcomes
from controller.publish import is_manual, publish, write_statuses
from controller.report import CycleReport, TagSyncLine, TagWrite
from controller.scaling import CycleFacts, ScalingDriver, groups_to_mark, scale_ups_json
from controller.settings import ControllerOptions, TagSyncMode
from controller.tagsync import TagChange, apply_tag_sync, log_plan, plan_tag_sync

if TYPE_CHECKING:
    from controller.aws.clients import AwsClients

log = logging.getLogger(__name__)
PRIORITY_CONFIGMAP = ("kube-system", "cluster-autoscaler-priority-expander")  # as cluster-autoscaler's
Note = Callable[[TagChange, str], None]  # told of each tag written (an event on the template)


def previous_templates(objects: list[dict[str, Any]]) -> dict[str, NodeGroupTemplate]:
    """The templates we published before (manual ones are not ours to keep or replace)."""
    previous = {}
    for obj in objects:
        if is_manual(obj):
            continue
        try:
            template = NodeGroupTemplate.from_object(obj)
        except (TypeError, ValueError) as err:
            log.warning("NodeGroupTemplate %s unreadable: %s", (obj.get("metadata") or {}).get("name"), err)
            continue
        previous[template.name] = template
    return previous


class DiscoveryReconciler:
    """Needs the lease: it writes NodeGroupTemplates, tags and desired capacities."""

    name = "discovery"
    needs_leader = True

    def __init__(
        self,
        cache: ClusterCache,
        books: Books,
        options: ControllerOptions,
        clients: Callable[[], AwsClients],
        *,
        facts: FactsLookup,
        driver: ScalingDriver | None = None,
        note: Note | None = None,
    ) -> None:
        self.cache = cache
        self.books = books
        self.options = options
        self.clients = clients  # built at first use: a follower may never need them
        self.facts = facts
        self.driver = driver
        self.note = note
        self.priorities: Priorities | None = None  # the priority expander's, as last read
        self.last: CycleReport | None = None

    def covered(self) -> frozenset[str] | None:
        """The groups fitguard scales from zero itself (the guard keeps their labels); None before
        the first cycle that discovered them."""
        if self.last is None or self.last.discovery_error:
            return None
        return frozenset(t.name for t in self.last.templates if t.scale_from_zero == FITGUARD)

    def reconcile(self) -> CycleReport:
        objects = self.cache.ordered(self.cache.templates)
        previous = previous_templates(objects)
        discovery = AwsDiscovery(
            self.clients(),
            self.options.selection(),
            self.options.cluster_name,
            self.facts,
            self.options.page_size,
        )
        try:
            groups = discovery.node_groups()
        except DiscoveryError as err:
            log.error("node group discovery failed, every template kept as it was: %s", err)
            kept = tuple(GroupOutcome(name, t, str(err)) for name, t in sorted(previous.items()))
            if self._writer() is not None:
                stored = {str(o["metadata"]["name"]): o for o in objects}
                write_statuses(self._writer(), kept, stored)  # Discovered False, with the error
            self.last = CycleReport(kept, discovery_error=str(err))
            return self.last
        outcomes = self._templates(groups, previous)
        if self.driver is not None:
            outcomes = self._mark_scaled_from_zero(outcomes, self.driver)
        pools = self._nodepools(frozenset(g.name for g in groups))
        report = CycleReport(
            (*outcomes, *pools.outcomes), self._sync_tags(groups, outcomes), nodepool_errors=pools.errors
        )
        self._publish(report, groups, objects)
        if self.driver is not None:
            report = self._scale(report, groups)
        self.last = report
        return report

    def _writer(self) -> Any:
        """The client the cycle writes through; None: write nothing (a dry run, a state file)."""
        return None if self.options.dry_run else self.cache.api

    def _templates(
        self, groups: list[AwsNodeGroup], previous: Mapping[str, NodeGroupTemplate]
    ) -> list[GroupOutcome]:
        """Each group's template and its record of cluster-autoscaler's memory. The running
        cluster-autoscaler is found first: its flags say which taints its templates leave out
        (capacity/template_taints.py), its start whether it still remembers a group's last node
        (controller/memory.py)."""
        process, sought = self.cache.autoscaler()
        daemonsets = self.cache.ordered(self.cache.daemonsets)
        nodes = self.cache.ordered(self.cache.node_objects)
        grouped = group_nodes(nodes, groups, self.options.node_group_label)
        outcomes = build_templates(
            groups,
            grouped,
            daemonsets,
            previous,
            facts=self.facts,
            taint_options=process.taint_options if process is not None else DEFAULT_TAINT_CONFIG,
        )
        return remember(
            outcomes,
            groups,
            grouped,
            previous,
            observed=Observed(process, sought, daemonsets, self.cache.pods_on_node),
            now=time.time(),
        )

    def _nodepools(self, taken: frozenset[str]) -> NodePoolOutcomes:
        """A template per Karpenter NodePool (controller/nodepools.py), beside the node groups'."""
        settings, error = karpenter_settings(self.cache.karpenters.items())
        if error:
            log.warning("%s", error)
        pools = nodepool_outcomes(
            self.cache.ordered(self.cache.nodepools),
            self.cache.nodeclasses.items(),
            self.cache.ordered(self.cache.node_objects),
            self.cache.ordered(self.cache.daemonsets),
            settings,
            taken,
            automode_classes=self.cache.automode_classes.items(),
        )
        if not error:
            return pools
        return dataclasses.replace(pools, errors={**pools.errors, KARPENTER_ERROR: error})

    def _mark_scaled_from_zero(
        self, outcomes: list[GroupOutcome], driver: ScalingDriver
    ) -> list[GroupOutcome]:
        """Groups fitguard scales from zero itself are judged by the webhook by their actual view."""
        templates = [o.template for o in outcomes if o.template is not None]
        marked = groups_to_mark(templates, driver.config, self.priorities)
        return [
            dataclasses.replace(o, template=dataclasses.replace(o.template, scale_from_zero=FITGUARD))
            if o.template is not None and o.name in marked
            else o
            for o in outcomes
        ]

    def _sync_tags(self, groups: list[AwsNodeGroup], outcomes: list[GroupOutcome]) -> tuple[TagSyncLine, ...]:
        """Each planned change and what became of it."""
        mode = self.options.sync_autoscaler_tags
        if mode is TagSyncMode.OFF:
            return ()
        templates = {o.name: o.template for o in outcomes if o.template is not None and not o.stale}
        changes = plan_tag_sync(groups, templates, self.options.sync_label_tags)
        if mode is not TagSyncMode.APPLY or self.options.dry_run:
            log_plan(changes)
            return tuple(TagSyncLine(c) for c in changes)
        failed = dict(apply_tag_sync(self.clients(), changes, self.note))
        return tuple(
            TagSyncLine(c, TagWrite.FAILED, failed[c]) if c in failed else TagSyncLine(c, TagWrite.APPLIED)
            for c in changes
        )

    def _publish(
        self, report: CycleReport, groups: list[AwsNodeGroup], existing: list[dict[str, Any]]
    ) -> None:
        writer = self._writer()
        if writer is None:
            return
        result = publish(
            writer,
            report.outcomes,
            desired=report.node_groups,
            autoscaling_groups={g.name: g.asg_name for g in groups},
            existing=existing,
        )
        log.info(
            "%ss: %d created, %d updated, %d deleted, %d unchanged",
            TEMPLATE_KIND,
            len(result.created),
            len(result.updated),
            len(result.deleted),
            result.unchanged,
        )

    def _scale(self, report: CycleReport, groups: list[AwsNodeGroup]) -> CycleReport:
        """The scaling plan from this cycle's templates and the cache's pods and nodes, carried out
        as the mode says; the report with its scale-ups and plan."""
        driver = self.driver
        assert driver is not None
        self._read_priorities(driver)
        cycle = driver.plan_cycle(
            [t for t in report.templates if t.karpenter is None],  # fitguard never scales for Karpenter
            self.cache.pending.items(),
            self.cache.ordered(self.cache.node_objects),
            self.cache.pods.items(),
            now=time.time(),
            facts=CycleFacts(self.books.true_free(), {g.name: g.asg_name for g in groups}, self.priorities),
        )
        scale_ups = driver.act(cycle, now=time.time())
        return dataclasses.replace(report, scale_ups=tuple(scale_ups), scaling=scale_ups_json(cycle))

    def _read_priorities(self, driver: ScalingDriver) -> None:
        """The priority expander reads cluster-autoscaler's own ConfigMap, fresh every cycle. From the
        API, one that cannot be read (absent too) keeps the priorities; a state file without it has none."""
        if PRIORITY not in driver.config.planner.expanders:
            return
        namespace, name = PRIORITY_CONFIGMAP
        try:
            found = self.cache.config_map(namespace, name)
        except ConfigMapUnreadable as err:
            log.warning("priority expander: ConfigMap %s/%s unreadable: %s", namespace, name, err)
            return
        if found is None and not self.cache.from_file:
            log.warning("priority expander: ConfigMap %s/%s unreadable: not found", namespace, name)
            return
        try:
            self.priorities = parse_priorities(((found or {}).get("data") or {}).get(PRIORITY_KEY))
        except ValueError as err:
            log.warning(
                "priority expander: ConfigMap %s/%s refused, priorities kept: %s", namespace, name, err
            )
