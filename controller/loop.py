"""The long-running controller: every replica keeps warm books; the leader also discovers node
groups, publishes templates, syncs tags, labels nodes, writes events and rotates certificates.

Leadership is a Lease (kube/leader.py). A leader that loses it stops acting at once (the elector
sets the stop event the moment the renew deadline passes) and the process exits, as controllers
built on client-go do, so nothing half-done continues under a new leader.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from capacity.defaults import LEASE_NAME, METRICS_BIND, NAMESPACE
from capacity.guard import DEFAULT_GRACE
from capacity.names import API_VERSION, TEMPLATE_KIND
from controller.aws.clients import AwsClients
from controller.aws.eni_verify import Ec2Verifier
from controller.books import LiveBooks
from controller.compose import aws_clients
from controller.http import ControllerHttp
from controller.metrics import ControllerMetrics
from controller.report import CycleReport
from controller.rescue import carry_out, pods_on_node, reclaim_candidates, rescue_candidates
from controller.run import ControllerOptions, ScalingInputs, run_once
from controller.scaling import ScalingDriver, list_unschedulable_pods
from controller.scaling_cli import RescueOptions, build_driver
from controller.scaling_options import OFF, ON, ScalingOptions
from controller.source import CachedSource
from controller.tagsync import TagChange
from kube.client import KubeClient
from kube.events import EventRecorder, ObjectRef
from kube.leader import LeaderCallbacks, LeaderElector, default_identity
from kube.options import LeaderOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopOptions:
    controller: ControllerOptions = field(default_factory=ControllerOptions)
    interval: float = 60.0  # seconds between discovery cycles
    reconcile_interval: float = 5.0  # seconds between passes over the branch ENI books
    metrics_bind: str = METRICS_BIND
    snapshotz: bool = False  # serve GET /snapshotz (controller/http.py says why it is off by default)
    leader_elect: bool = False
    namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE", NAMESPACE))
    branch_eni_release: str = "cooldown"
    manage_certificates: bool = False
    scaling: ScalingOptions | None = None  # None or mode off: no scaling driver
    rescue: RescueOptions = field(default_factory=RescueOptions)
    verify_with_ec2: bool = False
    guard_grace: float = DEFAULT_GRACE  # seconds a blind group waits before the guard steps aside
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class ControllerLoop:
    def __init__(self, options: LoopOptions, api: KubeClient, clients: AwsClients | None = None) -> None:
        self.options = options
        self.api = api
        self._clients = clients  # the process's, or built at first use (a follower may never need them)
        self.identity = default_identity()
        dry_run = options.controller.dry_run
        self.recorder = EventRecorder(api, self.identity, dry_run=dry_run)
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            leadership = LeaderOptions(
                name=LEASE_NAME,
                namespace=options.namespace,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                exit_on_loss=True,
            )
            self.elector = LeaderElector(
                api, leadership, LeaderCallbacks(on_started_leading=self._lead), identity=self.identity
            )
        self.books = LiveBooks(
            api,
            release=options.branch_eni_release,
            is_leader=self.is_leader,
            recorder=self.recorder,
            dry_run=dry_run,
            guard_grace=options.guard_grace,
            scaled_groups=self._scaled_groups,
            # late-bound: the source is built below, from the books' node watch
            autoscaler_taints=lambda: self.source.autoscaler_taints(),  # noqa: PLW0108
        )
        # the discovery cycle reads list+watch caches, the books' node watch among them
        self.source = CachedSource(api, self.books.node_objects)
        # groups `--scaling=on` grows itself (None: not known before the first cycle)
        self._covered: frozenset[str] | None = None
        self.last_cycle: CycleReport | None = None
        self.scaling = self._driver(options.scaling) if options.scaling else None
        self.verifier = self._verifier() if options.verify_with_ec2 else None
        self.metrics = ControllerMetrics(
            is_leader=self.is_leader,
            synced=lambda: self.books.wait_synced(0),
            last_cycle=lambda: self.last_cycle,
        )
        sources = (self.metrics, self.books, self.scaling, self.verifier)
        self.http = ControllerHttp(
            options.metrics_bind,
            ready=self._waiting,
            snapshot=self.snapshot if options.snapshotz else None,
            registries=tuple(x.registry for x in sources if x is not None),
        )

    @property
    def clients(self) -> AwsClients:
        """The AWS clients, built once per process (controller/compose.py): every cycle, the scaling
        driver and the verifier share them."""
        if self._clients is None:
            self._clients = aws_clients(self.options.controller.region)
        return self._clients

    def _driver(self, config: ScalingOptions) -> ScalingDriver | None:
        if config.mode == OFF:
            return None  # no AWS client needed
        return build_driver(config, self.clients.autoscaling, self.recorder)

    def _verifier(self) -> Ec2Verifier:
        ec2 = self.clients.ec2
        window = self.books.books.window
        return Ec2Verifier(ec2, window, self.options.controller.cluster_name, self.recorder)

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def _scaled_groups(self) -> frozenset[str] | None:
        """For the guard: the groups fitguard scales itself, so it keeps their labels."""
        if self.options.scaling is None or self.options.scaling.mode != ON or self.options.controller.dry_run:
            return frozenset()
        return self._covered

    def _waiting(self) -> str | None:
        """Ready once every cache the controller needs completed its first list."""
        waiting = self.books.waiting_for()
        return f"first list of {', '.join(waiting)}" if waiting else None

    def snapshot(self) -> dict[str, Any]:
        """What `fitguard report -o json` prints, plus the last discovery cycle."""
        return {
            "nodes": [row.to_json() for row in self.books.snapshot()],
            "leader": self.is_leader(),
            "identity": self.identity,
            "guard": self.books.guard_json(),
            "lastCycle": self.last_cycle.to_json() if self.last_cycle is not None else {},
        }

    def start_watches(self) -> None:
        """The books' pod and node watches and the discovery cycle's DaemonSet and template watches."""
        self.books.start()
        self.source.start()

    def run(self, stop: threading.Event) -> None:
        self.http.start()
        self.start_watches()
        books = threading.Thread(
            target=self.books.run, args=(stop, self.options.reconcile_interval), name="books", daemon=True
        )
        books.start()
        try:
            if self.elector is not None:
                self.elector.start()
                stop.wait()
            else:
                self._lead(stop)
        finally:
            if self.elector is not None:
                self.elector.stop()
            self.books.stop()
            self.source.stop()
            self.http.stop()

    def _lead(self, stop: threading.Event) -> None:
        """The leader's work until `stop` (shutdown, or the lease lost)."""
        log.info("leading", extra={"identity": self.identity})
        self.books.wait_synced(60)
        self.source.wait_synced(60)
        if self.options.manage_certificates:
            from controller.certificates import CertificateReconciler

            reconciler = CertificateReconciler(self.api)
            threading.Thread(target=reconciler.run, args=(stop,), name="certificates", daemon=True).start()
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.last_cycle = self.cycle()
                self.metrics.cycle_done(self.last_cycle, time.time())
            except Exception:  # one failed cycle must not end leadership; the next one retries
                log.exception("controller cycle failed")
                self.metrics.cycle_failed()
            stop.wait(max(0.0, self.options.interval - (time.monotonic() - started)))

    def cycle(self) -> CycleReport:
        """Discovery, templates, tags and scaling from the live books; then rescue and reclaim."""
        scaling = None
        rows = self.books.snapshot()
        if self.scaling is not None:
            scaling = ScalingInputs(
                self.scaling,
                pending=list_unschedulable_pods(self.api),
                records=self.books.pods.items(),
                true_free={row.name: row.true_free for row in rows},
                leader=self.is_leader,
            )
        report = run_once(
            self.options.controller,
            clients=self.clients,
            source=self.source,
            note=self._note_tag_change,
            scaling=scaling,
        )
        if not report.discovery_error:
            self._covered = frozenset(
                o["metadata"]["name"]
                for o in report.node_groups
                if o["spec"].get("scaleFromZero") == "fitguard"
            )
        report = dataclasses.replace(
            report, rescue=tuple(self._rescue([row.name for row in rows if row.waiting]))
        )
        if self.verifier is not None:
            pods, nodes = self.books.pods.items(), self.books.nodes.items()
            ec2 = self.verifier.verify(pods, nodes, now=time.time(), window=self.books.books.window)
            report = dataclasses.replace(report, ec2=ec2)
            if "leaked" in ec2:
                leaked: dict[str, int] = {}
                for leak in ec2["leaked"]:
                    leaked[leak["node"]] = leaked.get(leak["node"], 0) + 1
                self.books.leaked = leaked
        return report

    def _rescue(self, nodes_with_waiting_pods: list[str]) -> list[dict[str, Any]]:
        """Rescue and reclaim (both off by default) on the nodes where pods wait for a branch ENI."""
        rescue = self.options.rescue
        if not (rescue.rescue or rescue.reclaim_after is not None) or not self.is_leader():
            return []
        books = self.books.books
        results: list[dict[str, Any]] = []
        for node in nodes_with_waiting_pods:
            pods = pods_on_node(self.api, node)
            now = time.time()
            chosen = rescue_candidates(pods, now=now, window=books.window) if rescue.rescue else []
            if rescue.reclaim_after is not None:
                chosen += reclaim_candidates(
                    pods,
                    now=now,
                    after=rescue.reclaim_after,
                    window=books.window,
                    waiting_grace=books.waiting_grace,
                    release=books.release,
                )
            dry_run = self.options.controller.dry_run
            results += carry_out(self.api, chosen, self.recorder, dry_run=dry_run)
        return results

    def _note_tag_change(self, change: TagChange, message: str) -> None:
        ref = ObjectRef(TEMPLATE_KIND, change.node_group, api_version=API_VERSION)
        self.recorder.normal(ref, "AutoscalerTagSynced", message, action="SyncTags")
