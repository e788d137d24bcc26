"""cluster-autoscaler's memory of a node group's last live node (docs/design.md failure 1: a group that
once had a node "works" until cluster-autoscaler restarts). Pure: objects and times in, verdicts out.

Upstream (sigs.k8s.io/cluster-autoscaler, pkg/processors/nodeinfosprovider, formerly
kubernetes/autoscaler cluster-autoscaler/processors/nodeinfosprovider):
- mixed_nodeinfos_processor.go `MixedTemplateNodeInfoProvider.Process`: each loop, the first good
  template candidate of a group becomes the group's template and is cached with the loop's time;
  a group with no good candidate takes its cached template unless `isCacheItemExpired` (now minus
  the time it was cached is more than the TTL), and only then builds one from the cloud provider
  (the ASG's tags). The cache is a map in the process: a restart forgets everything.
- Which node is a good template candidate: capacity/autoscaler_readiness.py (`GetNodeReadiness`,
  `isNodeGoodTemplateCandidate`, the NotReady copies `obtainNodeLists` makes).
- The node is cached as `SanitizedTemplateNodeInfoFromNodeInfo` made it: taints sanitised with the
  process's own taint options (capacity/template_taints.py), which a process keeps for its life,
  and the pods it chose for it then (capacity/fresh_node.py): the cache keeps those too.
- asg_tag_resource_node_info_provider.go `AsgTagResourceNodeInfoProvider.Process` (what the AWS
  provider installs): resources of the tag-built template that the remembered node lacks are added.
- pkg/config/flags/flags.go: `--node-info-cache-expire-time` (default 87600h) and `--scan-interval`
  (default 10s), `--force-ds` (default false: a template from a live node gets only the missing
  DaemonSets whose pods preempt as system-node-critical, capacity/fresh_node.py); main.go builds
  the autoscaler (and its empty cache) only once the process leads, and its first loop runs a scan
  interval after the cloud provider is built (`first_loop`).
Its flags are read by capacity/autoscaler_flags.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from capacity.autoscaler_flags import bool_flag, flag_value, parse_go_duration
from capacity.node_pods import RememberedPods
from capacity.template import AutoscalerMemory, View
from capacity.template_taints import (
    DEFAULT_TAINT_CONFIG,
    TaintOptions,
    sanitize_taints,
    taint_options_from_argv,
)

DEFAULT_SELECTOR = "app.kubernetes.io/name=aws-cluster-autoscaler"  # the Helm chart's pods, AWS provider
EXPIRE_FLAG = "node-info-cache-expire-time"
SCAN_INTERVAL_FLAG = "scan-interval"
FORCE_DS_FLAG = "force-ds"
DEFAULT_EXPIRE = "87600h"  # flags.go: ten years
DEFAULT_SCAN_INTERVAL = "10s"  # flags.go
AUTOSCALER_BINARY = "cluster-autoscaler"
# What happens between the process's start and its first loop (kubernetes/autoscaler
# cluster-autoscaler/main.go `main`, `run`): with leader election (on by default) it waits for the
# Lease; a predecessor that exits on a signal does not release it, so it can take a lease duration
# plus client-go's jittered retry (k8s.io/client-go tools/leaderelection `acquire`: JitterFactor
# 1.2); then it builds the cloud provider (the AWS one pages through DescribeInstanceTypes and
# reads the ASGs), and only then waits one scan interval before the first loop.
LEADER_ELECT_FLAG = "leader-elect"
LEASE_DURATION_FLAG = "leader-elect-lease-duration"
RETRY_PERIOD_FLAG = "leader-elect-retry-period"
DEFAULT_LEASE_DURATION = "15s"  # main.go defaultLeaseDuration
DEFAULT_RETRY_PERIOD = "2s"  # main.go defaultRetryPeriod
RETRY_JITTER = 1.2  # client-go leaderelection JitterFactor
# Not an upstream figure: a bound fitguard chooses for building the cloud provider, generous so
# that fitguard says "does not remember" when in doubt (a few paged EC2 calls take seconds).
BUILD_ALLOWANCE = 60.0
DEFAULT_STARTUP = (
    parse_go_duration(DEFAULT_LEASE_DURATION)
    + parse_go_duration(DEFAULT_RETRY_PERIOD) * (1 + RETRY_JITTER)
    + BUILD_ALLOWANCE
)


@dataclass(frozen=True, slots=True)
class AutoscalerProcess:
    """The running cluster-autoscaler as fitguard sees it: which pod, when its process started, how
    long it keeps a group's last node (seconds; None with `expire_error` when unreadable), and the
    taints its flags tell it to leave out of templates."""

    pod: str  # namespace/name
    started: float  # epoch seconds
    expire_text: str
    expire_after: float | None
    expire_error: str = ""
    scan_interval: float = 10.0
    taint_options: TaintOptions = DEFAULT_TAINT_CONFIG
    startup: float = DEFAULT_STARTUP  # seconds from the start to the first loop's wait (main.go)
    force_daemonsets: bool = False  # --force-ds

    @property
    def first_loop(self) -> float:
        """The latest time the first loop can be taken to have run by: a node last seen before it
        may have gone before cluster-autoscaler cached it."""
        return self.started + self.startup + self.scan_interval


def _parse_time(value: object) -> float | None:
    """Epoch seconds of an RFC 3339 time; None when absent; ValueError when unreadable."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected an RFC 3339 time, got {value!r}")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"expected an RFC 3339 time with its offset, got {value!r}")
    return parsed.timestamp()


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(math.floor(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> float:
    """An RFC 3339 time as written by `format_time`; ValueError otherwise."""
    parsed = _parse_time(value)
    if parsed is None:
        raise ValueError(f"expected an RFC 3339 time, got {value!r}")
    return parsed


def _argv(container: Mapping[str, Any]) -> list[str]:
    return [str(a) for key in ("command", "args") for a in container.get(key) or []]


def _autoscaler_container(containers: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The container that runs cluster-autoscaler: the one whose command is the binary (the chart's
    `./cluster-autoscaler`), else the first (an image whose entrypoint is the binary)."""
    for container in containers:
        argv = _argv(container)
        if argv and argv[0].rsplit("/", 1)[-1] == AUTOSCALER_BINARY:
            return container
    return containers[0] if containers else None


def process_of(pod: Mapping[str, Any]) -> AutoscalerProcess | None:
    """The cluster-autoscaler process a pod runs now, or None when it runs none (not started,
    waiting in a crash loop, terminated). Its start: the container's `state.running.startedAt` (a
    container restart is a new process), else the pod's `status.startTime` when the container has
    no status yet but the pod runs."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    container = _autoscaler_container(containers)
    if container is None:
        return None
    own = next(
        (
            s
            for s in status.get("containerStatuses") or []
            if isinstance(s, Mapping) and s.get("name") == container.get("name")
        ),
        None,
    )
    try:
        if own is not None:
            started = _parse_time(((own.get("state") or {}).get("running") or {}).get("startedAt"))
        else:
            started = _parse_time(status.get("startTime")) if status.get("phase") == "Running" else None
    except ValueError:
        started = None  # a start nobody can read proves no memory
    if started is None:
        return None
    argv = _argv(container)
    expire_text = flag_value(argv, EXPIRE_FLAG) or DEFAULT_EXPIRE
    scan_text = flag_value(argv, SCAN_INTERVAL_FLAG) or DEFAULT_SCAN_INTERVAL
    try:
        expire_after: float | None = parse_go_duration(expire_text)
        error = ""
    except ValueError as err:
        expire_after, error = None, str(err)
    try:
        scan_interval = max(parse_go_duration(scan_text), 0.0)
    except ValueError:
        scan_interval = parse_go_duration(DEFAULT_SCAN_INTERVAL)
    name = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
    return AutoscalerProcess(
        name,
        started,
        expire_text,
        expire_after,
        error,
        scan_interval,
        taint_options_from_argv(argv),
        startup=startup_allowance(argv),
        force_daemonsets=bool_flag(argv, FORCE_DS_FLAG) is True,
    )


def startup_allowance(argv: Sequence[str]) -> float:
    """Seconds from the process's start to the start of its first scan interval, at most: the
    Lease (unless `--leader-elect=false`) and the cloud provider's build. A value fitguard cannot
    read counts as the default; leader election is taken as on unless plainly turned off."""
    if bool_flag(argv, LEADER_ELECT_FLAG) is False:
        return BUILD_ALLOWANCE
    lease = _duration(argv, LEASE_DURATION_FLAG, DEFAULT_LEASE_DURATION)
    retry = _duration(argv, RETRY_PERIOD_FLAG, DEFAULT_RETRY_PERIOD)
    return lease + retry * (1 + RETRY_JITTER) + BUILD_ALLOWANCE


def _duration(argv: Sequence[str], name: str, default: str) -> float:
    try:
        return max(parse_go_duration(flag_value(argv, name) or default), 0.0)
    except ValueError:
        return parse_go_duration(default)


def running_autoscaler(pods: Iterable[Mapping[str, Any]]) -> AutoscalerProcess | None:
    """Of the cluster-autoscaler pods, the process that started last. With several replicas only
    the leader keeps templates, and it built its (empty) cache on taking the lead, which fitguard
    cannot see; the newest start is at or after the last hand-over of the lead in every case but a
    standby's own restart, so it never claims a memory the leader may lack."""
    processes = [p for p in (process_of(pod) for pod in pods) if p is not None]
    return max(processes, key=lambda p: (p.started, p.pod), default=None)


def refresh_period(process: AutoscalerProcess | None) -> float:
    """How stale the recorded sighting of a live node may grow before it is written again: a quarter
    of the memory's life, between a minute and an hour (each write reaches every webhook)."""
    life = process.expire_after if process is not None and process.expire_after is not None else 3600.0
    return min(max(life / 4, 60.0), 3600.0)


def next_memory(
    previous: AutoscalerMemory | None,
    live: View | None,
    process: AutoscalerProcess | None,
    now: float,
    looked_for: str,
    *,
    live_pods: RememberedPods | None = None,
) -> AutoscalerMemory:
    """The group's memory after this cycle. `live`: the template of a live node cluster-autoscaler
    would take now (None when the group has none), `live_pods` the pods it would cache with it
    (capacity/fresh_node.py); `looked_for`: how cluster-autoscaler was sought. Once the node is
    gone, the view and the pods stay as last seen, as cluster-autoscaler's cache keeps them.

    The sighting is a lower bound of when the last node went away, so every error it carries makes
    fitguard say "forgotten" sooner than cluster-autoscaler forgets, never later."""
    last_seen = _parse_time(previous.last_seen) if previous is not None else None
    view = previous.view if previous is not None else None
    pods = previous.pods if previous is not None else None
    if view is not None and process is not None:
        # A node this process remembers was cached with its taint options: a record written while
        # no cluster-autoscaler was found kept the taints its flags drop.
        kept = sanitize_taints(view.taints, process.taint_options)
        view = View(view.allocatable, view.labels, kept, view.source)
    if live is not None:
        stale = (
            last_seen is None
            or view != live
            or pods != live_pods
            or now - last_seen >= refresh_period(process)
            or (process is not None and last_seen < process.first_loop)
        )
        view, pods = live, live_pods
        if stale:
            last_seen = float(math.floor(now))
    remembers, reason, expires = _judge(view, last_seen, process, now, looked_for)
    return AutoscalerMemory(
        view=view,
        last_seen=format_time(last_seen) if last_seen is not None else "",
        remembers=remembers,
        reason=reason,
        autoscaler=process.pod if process is not None else "",
        started=format_time(process.started) if process is not None else "",
        expires=expires,
        pods=pods,
    )


def _judge(
    view: View | None, last_seen: float | None, process: AutoscalerProcess | None, now: float, looked_for: str
) -> tuple[bool, str, str]:
    """Whether cluster-autoscaler remembers the group now, why, and until when."""
    if process is None:
        return False, f"no running cluster-autoscaler found ({looked_for}): judged by its tags", ""
    if view is None or last_seen is None:
        return False, "fitguard has not seen a live node of the group that cluster-autoscaler keeps", ""
    if process.expire_after is None:
        return False, f"--{EXPIRE_FLAG} unreadable ({process.expire_error}): judged by its tags", ""
    started, seen = format_time(process.started), format_time(last_seen)
    if process.first_loop > last_seen:
        return (
            False,
            f"cluster-autoscaler {process.pod} started at {started}; its first loop may not have run "
            f"before {format_time(process.first_loop)}, too late to be sure it saw the group's last live "
            f"node (seen {seen}): it builds the group's node from its tags",
            "",
        )
    expires = format_time(last_seen + process.expire_after)
    if now - last_seen > process.expire_after:
        return (
            False,
            f"cluster-autoscaler forgot the group's last live node (seen {seen}) at {expires} "
            f"(--{EXPIRE_FLAG}={process.expire_text}): it builds the group's node from its tags",
            expires,
        )
    return (
        True,
        f"cluster-autoscaler {process.pod} (started {started}) saw a live node of the group at {seen} "
        f"and builds the group's next node from it until it restarts or until {expires}",
        expires,
    )
