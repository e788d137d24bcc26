"""The branch ENI books: what each node's branch ENIs are really doing (docs/design.md failure 2).

Per node: capacity (allocatable `vpc.amazonaws.com/pod-eni`, what the scheduler counts; 0 when the
node advertises none, whatever its instance type could offer), in use (pod-eni requested by its
non-terminated pods, as the scheduler counts), held (finished or deleted pods whose branch ENI the
VPC resource controller has not yet released), scheduler-free = capacity - in use, true free =
capacity - in use - held, and waiting pods (bound, requesting pod-eni, still without the annotation
after a grace period).

Facts from aws/amazon-vpc-resource-controller-k8s:
- pkg/node/node.go (UpdateResources) and pkg/provider/branch/provider.go (UpdateResourceCapacity:
  AdvertiseCapacityIfNotSet): pod-eni appears in a node's capacity only once the controller has
  initialised the node's trunk ENI (the branch provider's IsInstanceSupported excludes Windows);
  until then the node advertises none and the scheduler places no pod-eni pod on it;
- pkg/provider/branch/cooldown/cooldown.go: the cooldown is `branch-eni-cooldown` in ConfigMap
  kube-system/amazon-vpc-cni, read with strconv.Atoi as whole seconds
  (GetVpcCniConfigMapCoolDownPeriodOrDefault), 60 s when absent or unparsable at start
  (InitCoolDownPeriod), never below 30 s (GetCoolDownPeriod); controllers/core/configmap_controller.go
  (Reconcile) keeps the current value when the key is later removed or unparsable;
- pkg/provider/branch/provider.go: the cooled-down delete queue is processed every 30 s
  (deleteQueueRequeueRequest), so a branch ENI is free at the latest cooldown + 30 s after release;
- PR #48 (v1.1.0): Succeeded/Failed pods push their branch ENIs to the cooldown queue, stamped
  when the controller processes the terminal phase (pkg/provider/branch/trunk/trunk.go
  PushBranchENIsToCoolDownQueue): dated by the pod's latest status time (pod_status.released_at).

Pure and incremental: every pod event costs O(1); the clock is the caller's `now` (epoch seconds).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from capacity.names import TERMINAL_PHASES

COOLDOWN = "cooldown"
ON_DELETE = "on-delete"
RELEASE_MODELS = (COOLDOWN, ON_DELETE)
COOLDOWN_KEY = "branch-eni-cooldown"
DEFAULT_COOLDOWN = 60.0
MINIMUM_COOLDOWN = 30.0
PROCESSING_PERIOD = 30.0
# The VPC resource controller annotates a pod within seconds of binding; past this it is waiting.
DEFAULT_WAITING_GRACE = 30.0


class PodFacts(Protocol):
    """What the books read from a pod (capacity/records.py PodRecord has these)."""

    uid: str
    namespace: str
    name: str
    node: str
    phase: str
    eni_count: int
    created_at: float | None
    scheduled_at: float | None

    # read-only on the record (capacity/pod_record.py keeps them in shared or optional parts)
    @property
    def pod_eni(self) -> int: ...

    @property
    def finished_at(self) -> float | None: ...


class NodeFacts(Protocol):
    name: str
    node_group: str
    instance_type: str
    pod_eni: int | None


_ATOI = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63
_NANOS = 1_000_000_000


def configured_cooldown(data: Mapping[str, Any] | None) -> float | None:
    """The seconds `branch-eni-cooldown` in the ConfigMap's `data` sets, None when the key is absent
    or not an integer as Go's strconv.Atoi reads one (optional sign, ASCII digits, no spaces or
    underscores, within int64). Upstream multiplies by time.Second in int64, which wraps silently:
    so does this."""
    raw = (data or {}).get(COOLDOWN_KEY)
    if not isinstance(raw, str) or not _ATOI.fullmatch(raw):
        return None
    number = int(raw)
    if not -_INT64 <= number < _INT64:
        return None  # strconv.Atoi: value out of range
    nanos = (number * _NANOS + _INT64) % (1 << 64) - _INT64
    return nanos / _NANOS


@dataclass(frozen=True, slots=True)
class ReleaseWindow:
    """The cooldown the VPC resource controller holds (unclamped, as it stores it) and the seconds
    from release to a surely free branch ENI."""

    cooldown: float
    seconds: float


def release_window_from_configmap(
    data: Mapping[str, Any] | None, current: float | None = None
) -> ReleaseWindow:
    """The one place the window is read from the amazon-vpc-cni ConfigMap (`data`: its data, None
    when it does not exist), for the books and the report alike. `current`: the cooldown held so
    far, None at start. At start an absent or unparsable value means the 60 s default; later it
    leaves the current value in place, as upstream logs and retains it."""
    configured = configured_cooldown(data)
    if configured is not None:
        cooldown = configured
    elif current is not None:
        cooldown = current
    else:
        cooldown = DEFAULT_COOLDOWN
    return ReleaseWindow(cooldown, release_window(cooldown))


def release_window(cooldown: float = DEFAULT_COOLDOWN) -> float:
    """Seconds from release to a free branch ENI, at the latest."""
    return max(cooldown, MINIMUM_COOLDOWN) + PROCESSING_PERIOD


@dataclass(frozen=True, slots=True)
class Held:
    """Branch ENIs a gone or finished pod still holds since `released` (None: until the pod is
    deleted). They are free `window` seconds after it, with the window in force at the time: the
    VPC resource controller compares each queued ENI against the cooldown it holds when it processes
    its delete queue (pkg/provider/branch/trunk/trunk.go DeleteCooledDownENIs), so a changed
    cooldown moves ENIs already waiting as well."""

    pod: str
    count: int
    released: float | None

    def until(self, window: float) -> float | None:
        return None if self.released is None else self.released + window


@dataclass(frozen=True, slots=True)
class Waiting:
    pod: str
    namespace: str
    since: float


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """One node's books at a moment; counts are branch ENIs."""

    name: str
    node_group: str
    instance_type: str
    capacity: int
    in_use: int
    held: int
    waiting: int
    held_by: tuple[str, ...] = ()
    waiting_pods: tuple[Waiting, ...] = ()
    next_release: float | None = None  # seconds until the earliest held ENI is surely free

    @property
    def scheduler_free(self) -> int:
        return self.capacity - self.in_use

    @property
    def true_free(self) -> int:
        return self.capacity - self.in_use - self.held

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "nodeGroup": self.node_group,
            "instanceType": self.instance_type,
            "capacity": self.capacity,
            "inUse": self.in_use,
            "held": self.held,
            "schedulerFree": self.scheduler_free,
            "trueFree": self.true_free,
            "waiting": self.waiting,
            "heldBy": list(self.held_by),
            "waitingPods": [f"{w.namespace}/{w.pod}" for w in self.waiting_pods],
            "nextReleaseSeconds": self.next_release,
        }


@dataclass(slots=True)
class _Ledger:
    """One node's running totals; `held` and `pending` are keyed by pod uid."""

    in_use: int = 0
    held: dict[str, Held] = field(default_factory=dict)
    pending: dict[str, Waiting] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.in_use or self.held or self.pending)


class _Entry:
    """What the books remember of one pod: where its contributions went, to take them back and to
    leave a tombstone when it vanishes."""

    __slots__ = ("eni_count", "finished", "in_use", "name", "node")

    def __init__(self, node: str, name: str, in_use: int, eni_count: int, finished: float | None) -> None:
        self.node = node
        self.name = name
        self.in_use = in_use
        self.eni_count = eni_count
        self.finished = finished


class BranchEniBooks:
    """Not thread-safe: one owner (the controller's event loop) calls it, under its own lock."""

    def __init__(
        self,
        release: str = COOLDOWN,
        window: float = release_window(),
        waiting_grace: float = DEFAULT_WAITING_GRACE,
    ) -> None:
        if release not in RELEASE_MODELS:
            raise ValueError(f"release model must be one of {', '.join(RELEASE_MODELS)}, not {release!r}")
        self.release = release
        self.window = window
        self.waiting_grace = waiting_grace
        self._nodes: dict[str, NodeFacts] = {}
        self._ledgers: dict[str, _Ledger] = {}
        self._pods: dict[str, _Entry] = {}  # only pods that request or got branch ENIs

    # nodes

    def set_node(self, node: NodeFacts) -> None:
        self._nodes[node.name] = node

    def remove_node(self, name: str) -> None:
        self._nodes.pop(name, None)
        self._drop_if_idle(name)

    @staticmethod
    def capacity(node: NodeFacts) -> int:
        """What the node advertises to the scheduler: its allocatable pod-eni, else none. The
        instance type's branch interfaces are not counted: a node without a trunk ENI (Windows, or
        one the VPC resource controller has not initialised yet) offers the scheduler nothing."""
        return node.pod_eni or 0

    # pods

    def _ledger(self, node: str) -> _Ledger:
        ledger = self._ledgers.get(node)
        if ledger is None:
            ledger = self._ledgers[node] = _Ledger()
        return ledger

    def _drop_if_idle(self, node: str) -> None:
        ledger = self._ledgers.get(node)
        if ledger is not None and ledger.empty() and node not in self._nodes:
            del self._ledgers[node]

    def _take_back(self, uid: str) -> _Entry | None:
        entry = self._pods.pop(uid, None)
        if entry is not None:
            ledger = self._ledger(entry.node)
            ledger.in_use -= entry.in_use
            ledger.pending.pop(uid, None)
        return entry

    def update_pod(self, pod: PodFacts, now: float) -> str:
        """An added or changed pod; returns the name of the node whose books moved ('' if none)."""
        previous = self._take_back(pod.uid)
        if not pod.node or not (pod.pod_eni or pod.eni_count):
            return previous.node if previous else ""
        ledger = self._ledger(pod.node)
        if pod.phase in TERMINAL_PHASES:
            # A pod that finished unseen (no timestamps) is dated by when we first saw it finished.
            finished = pod.finished_at
            if finished is None:
                finished = previous.finished if previous and previous.finished is not None else now
            self._pods[pod.uid] = _Entry(pod.node, pod.name, 0, pod.eni_count, finished)
            if pod.eni_count and pod.uid not in ledger.held:
                released = finished if self.release == COOLDOWN else None
                if released is None or released + self.window > now:
                    ledger.held[pod.uid] = Held(pod.name, pod.eni_count, released)
            return pod.node
        self._pods[pod.uid] = _Entry(pod.node, pod.name, pod.pod_eni, pod.eni_count, None)
        ledger.in_use += pod.pod_eni
        if pod.pod_eni and not pod.eni_count:
            since = pod.scheduled_at or pod.created_at or now
            ledger.pending[pod.uid] = Waiting(pod.name, pod.namespace, since)
        return pod.node

    def delete_pod(self, pod: PodFacts, now: float) -> str:
        """A deleted pod (its last known state); returns the node whose books moved."""
        self.update_pod(pod, now)  # a pod may finish and vanish in one event
        return self._forget(pod.uid, now)

    def _forget(self, uid: str, now: float) -> str:
        """The pod is gone: its branch ENIs stay held for the window from now (its tombstone),
        unless it finished earlier and its window already runs from then."""
        entry = self._take_back(uid)
        if entry is None:
            return ""
        ledger = self._ledger(entry.node)
        held = ledger.held.pop(uid, None)
        if held is not None and held.released is not None:
            ledger.held[uid] = held
        elif entry.eni_count and (entry.finished is None or held is not None):
            ledger.held[uid] = Held(entry.name, entry.eni_count, now)
        self._drop_if_idle(entry.node)
        return entry.node

    def expire(self, now: float) -> set[str]:
        """Drops held ENIs whose window ended; returns the nodes whose held count fell."""
        changed: set[str] = set()
        for name, ledger in list(self._ledgers.items()):
            gone = [
                uid
                for uid, h in ledger.held.items()
                if h.released is not None and h.released + self.window <= now
            ]
            for uid in gone:
                del ledger.held[uid]
            if gone:
                changed.add(name)
                self._drop_if_idle(name)
        return changed

    def rebuild(self, pods: Iterable[PodFacts], nodes: Iterable[NodeFacts], now: float) -> None:
        """The books made equal to a full list (a relist): pods missing from it are deleted now
        (tombstones), the others updated; deleted pods' tombstones survive, as no list shows them."""
        pods = list(pods)
        present = {pod.uid for pod in pods}
        for uid in [uid for uid in self._pods if uid not in present]:
            self._forget(uid, now)
        self._nodes = {node.name: node for node in nodes}
        for pod in pods:
            self.update_pod(pod, now)
        self.expire(now)

    def tracked(self) -> int:
        """How many pods the books follow (those that request or got branch ENIs)."""
        return len(self._pods)

    # reading

    def summary(self, name: str, now: float) -> NodeSummary | None:
        node = self._nodes.get(name)
        if node is None:
            return None
        ledger = self._ledgers.get(name) or _Ledger()
        live = sorted(
            (h for h in ledger.held.values() if h.released is None or h.released + self.window > now),
            key=lambda h: (h.released is None, h.released or 0.0, h.pod),
        )
        waiting = tuple(
            sorted(
                (w for w in ledger.pending.values() if w.since + self.waiting_grace <= now),
                key=lambda w: (w.since, w.namespace, w.pod),
            )
        )
        timed = [h.released + self.window for h in live if h.released is not None]
        return NodeSummary(
            name=node.name,
            node_group=node.node_group,
            instance_type=node.instance_type,
            capacity=self.capacity(node),
            in_use=ledger.in_use,
            held=sum(h.count for h in live),
            waiting=len(waiting),
            held_by=tuple(h.pod for h in live),
            waiting_pods=waiting,
            next_release=max(min(timed) - now, 0.0) if timed else None,
        )

    def node_summary(self, now: float) -> list[NodeSummary]:
        """Every known node's books, by node group then name."""
        rows = [self.summary(name, now) for name in self._nodes]
        return sorted((r for r in rows if r is not None), key=lambda r: (r.node_group, r.name))
