"""The options of kube/'s long-running parts, as frozen objects grouped by what they tune: how
reflectors list and watch, how events are de-duplicated and rate-limited, how a leader is elected.

The shape is kopf's (kopf/_cogs/configs/configuration.py `OperatorSettings`: one group of settings
per concern, `watching`, `posting`, `peering`, each with reasonable defaults), frozen here and
named `*Options` as everywhere in fitguard (docs/design.md, "Naming"): a process builds them once
at start-up and hands the same objects to every part, so two reflectors of one process cannot
disagree on a timeout. The defaults and their sources are client-go's unless said otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from capacity.defaults import LEASE_NAME, NAMESPACE
from capacity.names import CONTROLLER_REPORTER


@dataclass(frozen=True)
class WatchOptions:
    """How every reflector of a process lists and watches (kopf's `WatchingSettings`)."""

    page_size: int = 500  # objects per list page (client-go pager.go defaultPageSize)
    # seconds a watch asks the server to keep it open, spread up to twice that (client-go
    # reflector.go minWatchTimeout, 5 minutes)
    watch_timeout: float = 300.0
    connect_timeout: float = 5.0
    # the backoff between failed attempts: from `backoff_base` seconds, doubling up to `backoff_cap`
    # (client-go reflector.go NewReflectorWithOptions: 800 ms initial, 30 s max)
    backoff_base: float = 0.8
    backoff_cap: float = 30.0
    # stream the initial state (None: as KUBE_FEATURE_WatchListClient says, on by default), falling
    # back to paged lists for good when the server does not stream (kube/watchlist.py)
    watch_list: bool | None = None
    initial_events_quiet: float = 30.0  # seconds without a line before a streamed list is given up
    # a watch that ends sooner without an event is relisted (reflector.go VeryShortWatchError)
    very_short_watch: float = 1.0


@dataclass(frozen=True)
class Decoders:
    """How one item of a list body and a watch line become objects: json.loads by default; a store
    that reads a few fields of big objects passes a schema decoder (kube/podwire.py DECODERS)."""

    item: Callable[[bytes], Any] = json.loads
    line: Callable[[bytes], Any] = json.loads
    # a whole `items` array at once (a list page that arrived whole: kube/liststream.py), giving
    # the list `item` gives one by one
    items: Callable[[bytes], list[Any]] = json.loads


@dataclass(frozen=True)
class ReflectorOptions:
    """What one reflector watches (a namespace or all, selectors), what it is called in logs and
    threads, how it decodes, and the process's watch settings."""

    name: str = ""  # empty: reflector-<plural>
    namespace: str | None = None
    label_selector: str = ""
    field_selector: str = ""
    decoders: Decoders = field(default_factory=Decoders)
    watch: WatchOptions = field(default_factory=WatchOptions)


SERIES_WINDOW = 6 * 60.0  # client-go events finishTime
PER_OBJECT_BURST = 25.0  # client-go record defaultSpamBurst
PER_OBJECT_RATE = 1.0 / 300.0  # client-go record defaultSpamQPS


@dataclass(frozen=True)
class EventOptions:
    """Who writes a process's Events and how they are de-duplicated and limited (kopf's
    `PostingSettings`; the rules in kube/events.py)."""

    reporting_controller: str = CONTROLLER_REPORTER
    window: float = SERIES_WINDOW  # a repeat within it continues the Event's series
    per_object_burst: float = PER_OBJECT_BURST
    per_object_rate: float = PER_OBJECT_RATE  # tokens a second
    # the global bucket over every object (fitguard's own: one noisy object is limited by the
    # per-object bucket, a noisy cluster by this one)
    burst: float = 100.0
    rate: float = 10.0
    history: int = 200  # the last writes kept in `EventRecorder.recent` (a dry run's record), sent or not
    timeout: tuple[float, float] = (2.0, 5.0)  # connect, read: recording never waits long


@dataclass(frozen=True)
class LeaderOptions:
    """Which Lease a process campaigns on and how: client-go leaderelection.go
    LeaderElectionConfig's three durations, with controller-runtime's defaults (pkg/manager/manager.go
    defaultLeaseDuration 15 s, defaultRenewDeadline 10 s, defaultRetryPeriod 2 s). `exit_on_loss`:
    a leader that loses the lease ends the process, whatever its threads are doing (kube/leader.py)."""

    name: str = LEASE_NAME
    namespace: str = NAMESPACE
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    exit_on_loss: bool = False

    def __post_init__(self) -> None:
        # client-go leaderelection.go NewLeaderElector refuses a lease no longer than its renew
        # deadline, and a deadline within 1.2 retry periods (JitterFactor); fitguard refuses a
        # deadline within one retry period only
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
