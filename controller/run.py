"""One controller cycle: read nodes and DaemonSets, discover node groups in AWS, build the templates,
sync cluster-autoscaler's tags, publish. `run_once` is what the long-running loop calls each cycle."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from capacity.autoscaler_memory import DEFAULT_SELECTOR
from capacity.autoscaler_specs import default_discovery_tags, parse_auto_discovery_spec, parse_nodes_spec
from capacity.expander import PRIORITY, PRIORITY_KEY, parse_priorities
from capacity.template import NodeGroupTemplate
from capacity.template_taints import DEFAULT_TAINT_CONFIG
from controller.aws.clients import AwsClients
from controller.aws.discovery import AwsDiscovery, DiscoveryError
from controller.aws.records import AwsNodeGroup, DiscoverySelection
from controller.compose import aws_clients, cluster_source
from controller.discovery import GroupOutcome, build_templates
from controller.memory import remember
from controller.publish import desired_objects, is_manual, publish, write_statuses
from controller.report import CycleReport, TagSyncLine
from controller.scaling import ScalingDriver, groups_to_mark, scale_ups_json
from controller.scaling_options import ScalingOptions
from controller.source import (
    ClusterObjects,
    ClusterSource,
    ConfigMapUnreadable,
    pending_pods,
    pod_records,
    true_free,
)
from controller.tagsync import TagChange, apply_tag_sync, log_plan, plan_tag_sync

if TYPE_CHECKING:
    from kube.client import ApiLike

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerOptions:
    state: str = ""  # a state file instead of the API
    dry_run: bool = False  # write nothing: neither objects nor tags
    sync_autoscaler_tags: str = "plan"  # plan | apply | off
    sync_label_tags: bool = False  # also label/* and taint/* from live nodes (self-managed ASGs)
    cluster_name: str = ""
    auto_discovery: tuple[str, ...] = ()  # cluster-autoscaler's --node-group-auto-discovery specs
    nodes: tuple[str, ...] = ()  # cluster-autoscaler's --nodes specs (<min>:<max>:<asg name>)
    node_group_label: str = ""
    region: str = ""
    # cluster-autoscaler's pods (its memory of groups at zero); "" looks for none
    autoscaler_selector: str = DEFAULT_SELECTOR
    autoscaler_namespace: str = ""  # "" = all namespaces
    kubeconfig: str | None = None
    context: str | None = None  # the kubeconfig's context (None: its current one)
    page_size: int = 100
    branch_eni_release: str = "cooldown"  # the books' release model (--branch-eni-release)

    def selection(self) -> DiscoverySelection:
        """Explicit ASGs and tag filters; none given means CA's documented default tags."""
        names = tuple(parse_nodes_spec(spec).name for spec in self.nodes)
        filters = tuple(parse_auto_discovery_spec(spec) for spec in self.auto_discovery)
        if not names and not filters:
            filters = (default_discovery_tags(self.cluster_name),)
        return DiscoverySelection(names=names, tag_filters=filters)


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


def run_once(
    options: ControllerOptions,
    *,
    clients: AwsClients | None = None,
    api: ApiLike | None = None,
    source: ClusterSource | None = None,
    facts: Callable[[str], Any] | None = None,
    note: Callable[[TagChange, str], None] | None = None,
    scaling: ScalingInputs | None = None,
) -> CycleReport:
    """One cycle: its report, with the scaling plan and its scale-ups when `scaling` is given.
    `clients` and `source` are the process's (controller/compose.py); left None, they are built for
    this one cycle."""
    if facts is None:
        from capacity.instances import lookup as facts
    source = source if source is not None else cluster_source(options, api)
    objects = source.objects()
    writer = source.api if not options.dry_run else None  # None: this cycle writes no object
    previous = previous_templates(objects.templates)
    clients = clients or aws_clients(options.region)
    discovery = AwsDiscovery(clients, options.selection(), options.cluster_name, facts, options.page_size)
    try:
        groups = discovery.node_groups()
    except DiscoveryError as err:
        log.error("node group discovery failed, every template kept as it was: %s", err)
        outcomes = [GroupOutcome(name, t, str(err)) for name, t in sorted(previous.items())]
        if writer is not None:
            stored = {str(o["metadata"]["name"]): o for o in objects.templates}
            write_statuses(writer, outcomes, stored)  # Discovered False, with the error, on every kept one
        return _report(outcomes, [], {}, {"": str(err)})
    outcomes = _templates(options, source, objects, groups, previous=previous, facts=facts)
    if scaling is not None:
        outcomes = _mark_scaled_from_zero(outcomes, scaling.driver.config)
    changes, written = _sync_tags(options, clients, groups, outcomes, note)
    if writer is not None:
        result = publish(
            writer,
            outcomes,
            autoscaling_groups={g.name: g.asg_name for g in groups},
            existing=objects.templates,
        )
        log.info(
            "NodeGroupTemplates: %d created, %d updated, %d deleted, %d unchanged",
            len(result.created),
            len(result.updated),
            len(result.deleted),
            result.unchanged,
        )
    report = _report(outcomes, changes, written, {})
    if scaling is not None:
        report = _scale(
            options, scaling, source, objects=objects, groups=groups, outcomes=outcomes, report=report
        )
    return report


def _scale(
    options: ControllerOptions,
    scaling: ScalingInputs,
    source: ClusterSource,
    *,
    objects: ClusterObjects,
    groups: list[AwsNodeGroup],
    outcomes: list[GroupOutcome],
    report: CycleReport,
) -> CycleReport:
    """The scaling plan from this cycle's templates (and the books' pods when the loop has them),
    carried out as the mode says; the report with its scale-ups and plan."""
    _load_priorities(scaling.driver, source)
    cycle = scaling.driver.plan_cycle(
        [o.template for o in outcomes if o.template is not None],
        scaling.pending if scaling.pending is not None else pending_pods(source),
        objects.nodes,
        scaling.records if scaling.records is not None else pod_records(source),
        now=time.time(),
        true_free_pod_eni=(
            scaling.true_free
            if scaling.true_free is not None
            else true_free(source, objects.nodes, options.branch_eni_release)
        ),
        asg_names={g.name: g.asg_name for g in groups},
    )
    scale_ups = scaling.driver.act(cycle, now=time.time(), leader=scaling.leader())
    return dataclasses.replace(report, scale_ups=tuple(scale_ups), scaling=scale_ups_json(cycle))


@dataclass
class ScalingInputs:
    """The scaling driver and, in the long-running loop, what the live books already hold; left
    None, the pods are read from the state file or listed from the API."""

    driver: ScalingDriver
    pending: list[dict[str, Any]] | None = None  # raw unscheduled pods
    records: list[Any] | None = None  # PodRecords of every pod
    true_free: dict[str, int | None] | None = None  # node -> truly free branch ENIs (the books)
    leader: Callable[[], bool] = lambda: True


def _templates(
    options: ControllerOptions,
    source: ClusterSource,
    objects: ClusterObjects,
    groups: list[AwsNodeGroup],
    *,
    previous: Mapping[str, NodeGroupTemplate],
    facts: Callable[[str], Any],
) -> list[GroupOutcome]:
    """Each group's template and its record of cluster-autoscaler's memory. The running
    cluster-autoscaler is found first: its flags say which taints its templates leave out
    (capacity/template_taints.py), its start whether it still remembers a group's last node
    (controller/memory.py)."""
    process, sought = source.autoscaler(options.autoscaler_selector, options.autoscaler_namespace)
    outcomes = build_templates(
        groups,
        objects.nodes,
        objects.daemonsets,
        previous,
        facts=facts,
        group_label=options.node_group_label,
        taint_options=process.taint_options if process is not None else DEFAULT_TAINT_CONFIG,
    )
    return remember(
        outcomes,
        groups,
        objects.nodes,
        previous,
        process=process,
        sought=sought,
        now=time.time(),
        facts=facts,
        group_label=options.node_group_label,
    )


def _mark_scaled_from_zero(outcomes: list[GroupOutcome], config: ScalingOptions) -> list[GroupOutcome]:
    """Groups fitguard scales from zero itself are judged by the webhook by their actual view."""
    templates = [o.template for o in outcomes if o.template is not None]
    marked = groups_to_mark(templates, config)
    return [
        dataclasses.replace(o, template=dataclasses.replace(o.template, scale_from_zero="fitguard"))
        if o.template is not None and o.name in marked
        else o
        for o in outcomes
    ]


PRIORITY_CONFIGMAP = ("kube-system", "cluster-autoscaler-priority-expander")  # as cluster-autoscaler's


def _load_priorities(driver: ScalingDriver, source: ClusterSource) -> None:
    """The priority expander reads cluster-autoscaler's own ConfigMap, fresh every cycle. From the
    API, one that cannot be read (absent too) keeps the priorities; a state file without it has none."""
    planner = driver.config.planner
    if PRIORITY not in planner.expanders:
        return
    namespace, name = PRIORITY_CONFIGMAP
    try:
        found = source.config_map(namespace, name)
    except ConfigMapUnreadable as err:
        log.warning("priority expander: ConfigMap %s/%s unreadable: %s", namespace, name, err)
        return
    if found is None and source.api is not None:
        log.warning("priority expander: ConfigMap %s/%s unreadable: not found", namespace, name)
        return
    try:
        priorities = parse_priorities(((found or {}).get("data") or {}).get(PRIORITY_KEY))
    except ValueError as err:
        log.warning("priority expander: ConfigMap %s/%s refused, priorities kept: %s", namespace, name, err)
        return
    planner = dataclasses.replace(planner, priorities=priorities)
    driver.config = dataclasses.replace(driver.config, planner=planner)


def _sync_tags(
    options: ControllerOptions,
    clients: AwsClients,
    groups: list[AwsNodeGroup],
    outcomes: list[GroupOutcome],
    note: Callable[[TagChange, str], None] | None,
) -> tuple[list[TagChange], dict[TagChange, str]]:
    """The planned changes, and for each one written: "" when it was, or why it was not."""
    if options.sync_autoscaler_tags == "off":
        return [], {}
    templates = {o.name: o.template for o in outcomes if o.template is not None and not o.stale}
    changes = plan_tag_sync(groups, templates, options.sync_label_tags)
    if options.sync_autoscaler_tags != "apply" or options.dry_run:
        log_plan(changes)
        return changes, {}
    failed = dict(apply_tag_sync(clients, changes, note))
    return changes, {c: failed.get(c, "") for c in changes}


def _report(
    outcomes: list[GroupOutcome],
    changes: list[TagChange],
    written: Mapping[TagChange, str],
    errors: Mapping[str, str],
) -> CycleReport:
    """`written`: for each change written, "" when it was, or why it was not."""
    tag_sync = tuple(
        TagSyncLine(change, applied=written.get(change) == "", error=written.get(change) or "")
        for change in changes
    )
    reasons = {o.name: o.reason for o in outcomes if o.reason}
    return CycleReport(tuple(desired_objects(outcomes)), tag_sync, {**reasons, **errors})
