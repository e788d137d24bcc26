"""One controller cycle: read nodes and DaemonSets, discover node groups in AWS, build the templates,
sync cluster-autoscaler's tags, publish. `run_once` is what the long-running loop calls each cycle."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.autoscaler_specs import default_discovery_tags, parse_auto_discovery_spec, parse_nodes_spec
from capacity.template import NodeGroupTemplate
from controller.aws.clients import AwsClients
from controller.aws.discovery import AwsDiscovery, DiscoveryError
from controller.aws.records import AwsNodeGroup, DiscoverySelection
from controller.discovery import GroupOutcome, build_templates
from controller.publish import desired_objects, is_manual, publish
from controller.tagsync import TagChange, apply_tag_sync, log_plan, plan_tag_sync

log = logging.getLogger(__name__)
TAG_SYNC_MODES = ("plan", "apply", "off")


@dataclass(frozen=True)
class ControllerOptions:
    state: str = ""  # a state file instead of the API
    dry_run: bool = False  # write nothing: neither objects nor tags
    sync_autoscaler_tags: str = "plan"  # plan | apply | off
    cluster_name: str = ""
    auto_discovery: tuple[str, ...] = ()  # cluster-autoscaler's --node-group-auto-discovery specs
    nodes: tuple[str, ...] = ()  # cluster-autoscaler's --nodes specs (<min>:<max>:<asg name>)
    node_group_label: str = ""
    region: str = ""
    kubeconfig: str | None = None
    page_size: int = 100

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


def read_state(path: str) -> ClusterObjects:
    from kube.statefile import by_kind, load_state

    kinds = by_kind(load_state(path))
    return ClusterObjects(
        kinds.get("Node", []), kinds.get("DaemonSet", []), kinds.get("NodeGroupTemplate", [])
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
) -> dict[str, Any]:
    """One cycle; returns {"nodeGroups": [...], "tagSync": [...], "scaleUps": [], "errors": {...}}."""
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
        return _report(outcomes, [], {}, {"": str(err)})
    outcomes = build_templates(
        groups, objects.nodes, objects.daemonsets, previous, facts=facts, group_label=options.node_group_label
    )
    changes, written = _sync_tags(options, clients, groups, outcomes, note)
    if not options.dry_run and not options.state:
        result = publish(api, outcomes)
        log.info(
            "NodeGroupTemplates: %d created, %d updated, %d deleted, %d unchanged",
            len(result.created),
            len(result.updated),
            len(result.deleted),
            result.unchanged,
        )
    return _report(outcomes, changes, written, {})


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
    changes = plan_tag_sync(groups, templates)
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
