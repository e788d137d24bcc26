"""One controller cycle: read nodes and DaemonSets, discover node groups in AWS, build the templates,
sync cluster-autoscaler's tags, publish. `run_once` is what the long-running loop calls each cycle."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.autoscaler_memory import DEFAULT_SELECTOR
from capacity.autoscaler_specs import default_discovery_tags, parse_auto_discovery_spec, parse_nodes_spec
from capacity.expander import PRIORITY, parse_priorities
from capacity.names import TEMPLATE_KIND
from capacity.template import NodeGroupTemplate
from controller.aws.clients import AwsClients
from controller.aws.discovery import AwsDiscovery, DiscoveryError
from controller.aws.records import AwsNodeGroup, DiscoverySelection
from controller.discovery import GroupOutcome, build_templates
from controller.memory import observe, remember
from controller.publish import desired_objects, is_manual, publish, write_statuses
from controller.scaling import ScalingDriver, ScalingOptions, groups_to_mark, scale_ups_json
from controller.tagsync import TagChange, apply_tag_sync, log_plan, plan_tag_sync

log = logging.getLogger(__name__)
TAG_SYNC_MODES = ("plan", "apply", "off")


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
    page_size: int = 100
    branch_eni_release: str = "cooldown"  # the books' release model (--branch-eni-release)

    def selection(self) -> DiscoverySelection:
        """Explicit ASGs and tag filters; none given means CA's documented default tags."""
        names = tuple(parse_nodes_spec(spec).name for spec in self.nodes)
        filters = tuple(parse_auto_discovery_spec(spec) for spec in self.auto_discovery)
        if not names and not filters:
            filters = (default_discovery_tags(self.cluster_name),)
        return DiscoverySelection(names=names, tag_filters=filters)


@dataclass
class ClusterObjects:
    nodes: list[dict[str, Any]] = field(default_factory=list)
    daemonsets: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)  # from a state file; listed lazily
    config_maps: list[dict[str, Any]] = field(default_factory=list)  # from a state file


def read_state(path: str) -> ClusterObjects:
    from kube.statefile import by_kind, load_state

    kinds = by_kind(load_state(path))
    return ClusterObjects(
        kinds.get("Node", []),
        kinds.get("DaemonSet", []),
        kinds.get(TEMPLATE_KIND, []),
        kinds.get("Pod", []),
        kinds.get("ConfigMap", []),
    )


def read_api(api: Any) -> ClusterObjects:
    from kube.client import DAEMON_SETS, NODE_GROUP_TEMPLATES, NODES, as_kube_client

    client = as_kube_client(api)
    return ClusterObjects(
        nodes=(client.get(NODES.path()) or {}).get("items") or [],
        daemonsets=(client.get(DAEMON_SETS.path()) or {}).get("items") or [],
        templates=(client.get(NODE_GROUP_TEMPLATES.path()) or {}).get("items") or [],
    )


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
    api: Any = None,
    facts: Callable[[str], Any] | None = None,
    note: Callable[[TagChange, str], None] | None = None,
    scaling: ScalingInputs | None = None,
) -> dict[str, Any]:
    """One cycle; returns {"nodeGroups": [...], "tagSync": [...], "scaleUps": [...], "errors": {...}}
    and, with `scaling`, "scaling": the whole plan with its reasons."""
    if facts is None:
        from capacity.instances import lookup as facts
    if options.state:
        objects = read_state(options.state)
    else:
        if api is None:
            from kube.client import KubeClient, load_api_client

            api = KubeClient(load_api_client(options.kubeconfig))
        objects = read_api(api)
    previous = previous_templates(objects.templates)
    clients = clients or AwsClients.from_environment(options.region or None)
    discovery = AwsDiscovery(clients, options.selection(), options.cluster_name, facts, options.page_size)
    try:
        groups = discovery.node_groups()
    except DiscoveryError as err:
        log.error("node group discovery failed, every template kept as it was: %s", err)
        outcomes = [GroupOutcome(name, t, str(err)) for name, t in sorted(previous.items())]
        if not options.dry_run and not options.state:
            write_statuses(api, outcomes)  # Discovered False, with the error, on every kept template
        return _report(outcomes, [], {}, {"": str(err)})
    outcomes = build_templates(
        groups, objects.nodes, objects.daemonsets, previous, facts=facts, group_label=options.node_group_label
    )
    outcomes = _remember(options, objects, api, groups, outcomes, previous=previous, facts=facts)
    if scaling is not None:
        outcomes = _mark_scaled_from_zero(outcomes, scaling.driver.config)
    changes, written = _sync_tags(options, clients, groups, outcomes, note)
    if not options.dry_run and not options.state:
        result = publish(api, outcomes, autoscaling_groups={g.name: g.asg_name for g in groups})
        log.info(
            "NodeGroupTemplates: %d created, %d updated, %d deleted, %d unchanged",
            len(result.created),
            len(result.updated),
            len(result.deleted),
            result.unchanged,
        )
    report = _report(outcomes, changes, written, {})
    if scaling is not None:
        _load_priorities(scaling.driver, options, objects, api)
        cycle = scaling.driver.plan_cycle(
            [o.template for o in outcomes if o.template is not None],
            scaling.pending if scaling.pending is not None else _pending(options, objects, api),
            objects.nodes,
            scaling.records if scaling.records is not None else _records(options, objects, api),
            now=time.time(),
            true_free_pod_eni=(
                scaling.true_free if scaling.true_free is not None else _true_free(options, objects, api)
            ),
            asg_names={g.name: g.asg_name for g in groups},
        )
        report["scaleUps"] = scaling.driver.act(cycle, now=time.time(), leader=scaling.leader())
        report["scaling"] = scale_ups_json(cycle)
    return report


@dataclass
class ScalingInputs:
    """The scaling driver and, in the long-running loop, what the live books already hold; left
    None, the pods are read from the state file or listed from the API."""

    driver: ScalingDriver
    pending: list[dict[str, Any]] | None = None  # raw unscheduled pods
    records: list[Any] | None = None  # PodRecords of every pod
    true_free: dict[str, int | None] | None = None  # node -> truly free branch ENIs (the books)
    leader: Callable[[], bool] = lambda: True


def _remember(
    options: ControllerOptions,
    objects: ClusterObjects,
    api: Any,
    groups: list[AwsNodeGroup],
    outcomes: list[GroupOutcome],
    *,
    previous: Mapping[str, NodeGroupTemplate],
    facts: Callable[[str], Any],
) -> list[GroupOutcome]:
    """Each group's record of cluster-autoscaler's memory (controller/memory.py)."""
    selector, namespace = options.autoscaler_selector, options.autoscaler_namespace
    if options.state:
        process, sought = observe(selector, namespace, state_pods=objects.pods)
    else:
        process, sought = observe(selector, namespace, api=api)
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


def _load_priorities(
    driver: ScalingDriver, options: ControllerOptions, objects: ClusterObjects, api: Any
) -> None:
    """The priority expander reads cluster-autoscaler's own ConfigMap, fresh every cycle."""
    planner = driver.config.planner
    if PRIORITY not in planner.expanders:
        return
    namespace, name = PRIORITY_CONFIGMAP
    data: Mapping[str, Any] = {}
    if options.state:
        for obj in objects.config_maps:
            meta = obj.get("metadata") or {}
            if (meta.get("namespace"), meta.get("name")) == PRIORITY_CONFIGMAP:
                data = obj.get("data") or {}
    else:
        from kube.client import CONFIG_MAPS, KubeError, as_kube_client

        try:
            data = (as_kube_client(api).get(CONFIG_MAPS.path(namespace, name)) or {}).get("data") or {}
        except KubeError as err:
            log.warning("priority expander: ConfigMap %s/%s unreadable: %s", namespace, name, err)
            return
    try:
        priorities = parse_priorities(data.get("priorities"))
    except ValueError as err:
        log.warning("priority expander: ConfigMap %s/%s refused, priorities kept: %s", namespace, name, err)
        return
    planner = dataclasses.replace(planner, priorities=priorities)
    driver.config = dataclasses.replace(driver.config, planner=planner)


def _all_pods(options: ControllerOptions, objects: ClusterObjects, api: Any) -> list[dict[str, Any]]:
    if options.state:
        return objects.pods
    from kube.client import PODS, as_kube_client

    objects.pods = as_kube_client(api).list_all(PODS.path())
    return objects.pods


def _pending(options: ControllerOptions, objects: ClusterObjects, api: Any) -> list[dict[str, Any]]:
    return [p for p in _all_pods(options, objects, api) if not (p.get("spec") or {}).get("nodeName")]


def _records(options: ControllerOptions, objects: ClusterObjects, api: Any) -> list[Any]:
    from controller.records import project_pod

    records = []
    for pod in objects.pods or _all_pods(options, objects, api):
        try:
            records.append(project_pod(pod))
        except (TypeError, ValueError) as err:
            log.warning("pod %s unreadable: %s", (pod.get("metadata") or {}).get("name"), err)
    return records


def _true_free(options: ControllerOptions, objects: ClusterObjects, api: Any) -> dict[str, int]:
    """Truly free branch ENIs per node from books built from this one list (no live books: the
    once path), so that the plan counts held ENIs and advertised capacity as the loop does."""
    from controller.books import books_from_objects

    config_maps = objects.config_maps
    if not options.state:
        from capacity.names import VPC_CNI_CONFIG_NAME, VPC_CNI_CONFIG_NAMESPACE
        from kube.client import CONFIG_MAPS, KubeError, as_kube_client

        try:
            found = as_kube_client(api).get(CONFIG_MAPS.path(VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME))
            config_maps = [{**found, "kind": "ConfigMap"}]
        except KubeError as err:
            if not err.not_found:
                log.warning("VPC CNI ConfigMap unreadable, the default cooldown is used: %s", err)
    pods = [{**pod, "kind": "Pod"} for pod in _all_pods(options, objects, api)]
    nodes = [{**node, "kind": "Node"} for node in objects.nodes]
    now = time.time()
    books, _ = books_from_objects([*pods, *nodes, *config_maps], now, release=options.branch_eni_release)
    return {row.name: row.true_free for row in books.node_summary(now)}


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
) -> dict[str, Any]:
    tag_sync = []
    for change in changes:
        item = {**change.to_json(), "current": change.current, "applied": written.get(change) == ""}
        if written.get(change):
            item["error"] = written[change]
        tag_sync.append(item)
    reasons = {o.name: o.reason for o in outcomes if o.reason}
    return {
        "nodeGroups": desired_objects(outcomes),
        "tagSync": tag_sync,
        "scaleUps": [],
        "errors": {**reasons, **errors},
    }
