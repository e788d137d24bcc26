"""The controller's options, one nested object for the long-running process as kopf's
`OperatorSettings` is: what each part reads is its own section (discovery, books, leadership,
serving, watching, scaling), built once from the command line (controller/cli.py) and handed down;
no constructor takes a dozen loose parameters. The sections kube/ defines (`WatchOptions`,
`LeaderOptions`) are kube/options.py's."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from capacity.autoscaler_memory import DEFAULT_SELECTOR
from capacity.autoscaler_specs import default_discovery_tags, parse_auto_discovery_spec, parse_nodes_spec
from capacity.branch_eni import COOLDOWN, DEFAULT_WAITING_GRACE
from capacity.defaults import METRICS_BIND
from capacity.guard import DEFAULT_GRACE
from capacity.karpenter.controller_options import KARPENTER_SELECTOR
from controller.aws.records import DiscoverySelection
from controller.cache import CacheOptions
from controller.scaling_cli import RescueOptions
from controller.scaling_options import ScalingOptions
from kube.options import LeaderOptions, WatchOptions


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
    # the Karpenter controller's pods (its RESERVED_ENIS, VM_MEMORY_OVERHEAD_PERCENT); "" looks for none
    karpenter_selector: str = KARPENTER_SELECTOR
    karpenter_namespace: str = ""
    kubeconfig: str | None = None
    context: str | None = None  # the kubeconfig's context (None: its current one)
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

    def cache(self, watch: WatchOptions | None = None) -> CacheOptions:
        return CacheOptions(
            autoscaler_selector=self.autoscaler_selector,
            autoscaler_namespace=self.autoscaler_namespace,
            karpenter_selector=self.karpenter_selector,
            karpenter_namespace=self.karpenter_namespace,
            watch=watch or WatchOptions(),
        )

    def books(self) -> BooksOptions:
        return BooksOptions(release=self.branch_eni_release, dry_run=self.dry_run)


@dataclass(frozen=True)
class BooksOptions:
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
class ServingOptions:
    bind: str = METRICS_BIND  # /healthz, /readyz, /metrics (and /snapshotz)
    snapshotz: bool = False  # serve GET /snapshotz (cmdline/statushttp.py says why it is off by default)


@dataclass(frozen=True)
class LoopOptions:
    """The long-running controller's whole configuration."""

    discovery: ControllerOptions = field(default_factory=ControllerOptions)
    interval: float = 60.0  # seconds between discovery cycles
    books: BooksOptions = field(default_factory=BooksOptions)
    leadership: LeaderOptions | None = None  # None: no election, this replica always leads
    serving: ServingOptions = field(default_factory=ServingOptions)
    watch: WatchOptions = field(default_factory=WatchOptions)  # every reflector of the process
    scaling: ScalingOptions | None = None  # None or mode off: no scaling driver
    rescue: RescueOptions = field(default_factory=RescueOptions)
    verify_with_ec2: bool = False
    manage_certificates: bool = False
