"""The long-running controller's settings, one nested object as kopf's `OperatorSettings` is: what
each part of the process reads is its own section, built once from the command line
(controller/cli.py) and handed down; no constructor takes a dozen loose parameters."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field

from capacity.autoscaler_memory import DEFAULT_SELECTOR
from capacity.autoscaler_specs import default_discovery_tags, parse_auto_discovery_spec, parse_nodes_spec
from capacity.branch_eni import COOLDOWN, DEFAULT_WAITING_GRACE
from capacity.guard import DEFAULT_GRACE
from controller.aws.records import DiscoverySelection
from controller.cache import CacheSettings
from controller.scaling_cli import RescueOptions
from controller.scaling_options import ScalingOptions

DEFAULT_NAMESPACE = "fitguard-system"  # the manifests' namespace, when POD_NAMESPACE is not set
DEFAULT_STATUS_BIND = "0.0.0.0:8080"  # --metrics-bind of both components
LEASE_NAME = "fitguard-controller"  # RBAC grants the controller this Lease only (manifests/)


class TagSyncMode(enum.StrEnum):
    """--sync-autoscaler-tags: what becomes of the cluster-autoscaler tags a template calls for."""

    PLAN = "plan"  # logged and reported, not written
    APPLY = "apply"
    OFF = "off"


@dataclass(frozen=True)
class ControllerOptions:
    """What a discovery cycle reads and writes: the `--once` path's whole configuration."""

    state: str = ""  # a state file instead of the API
    dry_run: bool = False  # write nothing: neither objects nor tags
    sync_autoscaler_tags: TagSyncMode = TagSyncMode.PLAN
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
    page_size: int = 100  # node groups per AWS page
    branch_eni_release: str = COOLDOWN  # the books' release model (--branch-eni-release)

    def __post_init__(self) -> None:
        # the command line gives the mode as its word
        object.__setattr__(self, "sync_autoscaler_tags", TagSyncMode(self.sync_autoscaler_tags))

    def selection(self) -> DiscoverySelection:
        """Explicit ASGs and tag filters; none given means CA's documented default tags."""
        names = tuple(parse_nodes_spec(spec).name for spec in self.nodes)
        filters = tuple(parse_auto_discovery_spec(spec) for spec in self.auto_discovery)
        if not names and not filters:
            filters = (default_discovery_tags(self.cluster_name),)
        return DiscoverySelection(names=names, tag_filters=filters)

    def cache(self) -> CacheSettings:
        return CacheSettings(
            autoscaler_selector=self.autoscaler_selector, autoscaler_namespace=self.autoscaler_namespace
        )

    def books(self) -> BooksSettings:
        return BooksSettings(release=self.branch_eni_release, dry_run=self.dry_run)


@dataclass(frozen=True)
class BooksSettings:
    release: str = COOLDOWN  # the release model (--branch-eni-release)
    window: float | None = None  # a fixed release window; None: read from the VPC CNI ConfigMap
    waiting_grace: float = DEFAULT_WAITING_GRACE
    reconcile_interval: float = 5.0  # seconds between the leader's passes over the books
    window_refresh: float = 300.0  # seconds between reads of the VPC CNI ConfigMap
    guard_grace: float = DEFAULT_GRACE  # seconds a blind group waits before the guard steps aside
    label_rate: float = 5.0  # label writes per second, sustained
    label_burst: float = 10.0
    rewrite_after: float = 60.0  # a label write the watch has not shown is written again after this
    dry_run: bool = False  # decide and log, write nothing


@dataclass(frozen=True)
class LeadershipSettings:
    enabled: bool = False  # --leader-elect; off: this replica always leads
    namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE", DEFAULT_NAMESPACE))
    lease_name: str = LEASE_NAME
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def valid(self) -> bool:
        """client-go's rule: lease duration > renew deadline > retry period > 0."""
        return self.lease_duration > self.renew_deadline > self.retry_period > 0


@dataclass(frozen=True)
class ServingSettings:
    bind: str = DEFAULT_STATUS_BIND  # /healthz, /readyz, /metrics (and /snapshotz)
    snapshotz: bool = False  # serve GET /snapshotz (cmdline/statushttp.py says why it is off by default)


@dataclass(frozen=True)
class ControllerSettings:
    discovery: ControllerOptions = field(default_factory=ControllerOptions)
    interval: float = 60.0  # seconds between discovery cycles
    books: BooksSettings = field(default_factory=BooksSettings)
    leadership: LeadershipSettings = field(default_factory=LeadershipSettings)
    serving: ServingSettings = field(default_factory=ServingSettings)
    scaling: ScalingOptions | None = None  # None or mode off: no scaling driver
    rescue: RescueOptions = field(default_factory=RescueOptions)
    verify_with_ec2: bool = False
    manage_certificates: bool = False
