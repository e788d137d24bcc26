"""The long-running controller, composed: the manager (controller/manager.py) with its cache, and the
runnables it runs.

- Every replica: the books (controller/books.py), fed by the cache's listeners, their release
  window read again from time to time; so a follower that takes over acts from warm books.
- The leader only: the books reconciler (labels, events, the guard), the discovery cycle with its
  rescue, reclaim and EC2 verification, and the certificates when the controller manages them.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from capacity.names import API_VERSION, TEMPLATE_KIND
from cmdline.statushttp import StatusPort, StatusRoutes
from controller.aws.clients import AwsClients
from controller.aws.eni_verify import Ec2Verifier
from controller.books import Books
from controller.books_reconciler import BooksReconciler
from controller.cache import ClusterCache
from controller.compose import aws_clients
from controller.cycle import DiscoveryReconciler
from controller.labels import LabelWriter
from controller.manager import Manager
from controller.metrics import ControllerMetrics
from controller.report import CycleReport
from controller.rescue import carry_out, pods_on_node, reclaim_candidates, rescue_candidates
from controller.scaling import ScalingDriver
from controller.scaling_cli import build_driver
from controller.settings import LoopOptions
from controller.tagsync import TagChange
from kube.client import KubeClient
from kube.events import EventRecorder, ObjectRef

log = logging.getLogger(__name__)


class CycleRunner:
    """The leader's discovery cycle every `interval`, then rescue, reclaim and EC2 verification."""

    name = "discovery"
    needs_leader = True

    def __init__(self, controller: ControllerLoop) -> None:
        self.controller = controller

    def run(self, stop: threading.Event) -> None:
        interval = self.controller.settings.interval
        metrics = self.controller.metrics
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.controller.last_cycle = self.controller.cycle()
                metrics.cycle_done(self.controller.last_cycle, time.time())
            except Exception:  # one failed cycle must not end leadership; the next one retries
                log.exception("controller cycle failed")
                metrics.cycle_failed()
            stop.wait(max(0.0, interval - (time.monotonic() - started)))


class CertificateRunner:
    name = "certificates"
    needs_leader = True

    def __init__(self, api: KubeClient) -> None:
        self.api = api

    def run(self, stop: threading.Event) -> None:
        from controller.certificates import CertificateReconciler

        CertificateReconciler(self.api).run(stop)


class ControllerLoop:
    """Builds the manager and its runnables from the settings; `run(stop)` until shutdown."""

    def __init__(self, settings: LoopOptions, api: KubeClient, clients: AwsClients | None = None) -> None:
        self.settings = settings
        self.api = api
        self._clients = clients  # the process's, or built at first use (a follower may never need them)
        options = settings.discovery
        self.cache = ClusterCache(options.cache(settings.watch))
        self.books = Books(self.cache, settings.books)
        self.last_cycle: CycleReport | None = None
        self.manager = Manager(api, self.cache, settings.leadership, self._status())
        self.recorder = EventRecorder(api, self.manager.identity, dry_run=options.dry_run)
        self.scaling = self._driver()
        self.discovery = DiscoveryReconciler(
            self.cache,
            self.books,
            options,
            lambda: self.clients,
            facts=_facts(),
            driver=self.scaling,
            note=self._note_tag_change,
        )
        writer = LabelWriter(api, settings.books, time.time())
        self.reconciler = BooksReconciler(self.books, writer, self.recorder, self._scaled_groups)
        self.verifier = self._verifier() if settings.verify_with_ec2 else None
        self.metrics = ControllerMetrics(self.manager, self.cache, lambda: self.last_cycle)
        self.manager.add(self.books)
        self.manager.add(self.reconciler)
        self.manager.add(CycleRunner(self))
        if settings.manage_certificates:
            self.manager.add(CertificateRunner(api))

    # -- composition ----------------------------------------------------------------------------

    @property
    def clients(self) -> AwsClients:
        """The AWS clients, built once per process (controller/compose.py): every cycle, the scaling
        driver and the verifier share them."""
        if self._clients is None:
            self._clients = aws_clients(self.settings.discovery.region)
        return self._clients

    def _driver(self) -> ScalingDriver | None:
        scaling = self.settings.scaling
        if scaling is None:
            return None
        return (
            build_driver(scaling, self.clients.autoscaling, self.recorder) if scaling.mode != "off" else None
        )

    def _verifier(self) -> Ec2Verifier:
        return Ec2Verifier(
            self.clients.ec2, self.books.window, self.settings.discovery.cluster_name, self.recorder
        )

    def _status(self) -> StatusPort:
        serving = self.settings.serving
        routes = StatusRoutes(
            waiting=self._waiting,
            metrics=self._metrics,
            snapshot=self.snapshot if serving.snapshotz else None,
        )
        return StatusPort(routes, log, bind=serving.bind)

    @property
    def http(self) -> StatusPort:
        return self.manager.status

    @property
    def elector(self) -> Any:
        return self.manager.elector

    @property
    def identity(self) -> str:
        return self.manager.identity

    def is_leader(self) -> bool:
        return self.manager.is_leader()

    def _scaled_groups(self) -> frozenset[str] | None:
        """For the guard: the groups fitguard scales itself, so it keeps their labels."""
        scaling = self.settings.scaling
        if scaling is None or scaling.mode != "on" or self.settings.discovery.dry_run:
            return frozenset()
        return self.discovery.covered()

    def _waiting(self) -> list[str]:
        """Ready once every store the controller reads completed its first list."""
        waiting = self.cache.waiting_for()
        return [f"first list of {', '.join(waiting)}"] if waiting else []

    def _metrics(self) -> tuple[bytes, str]:
        sources: tuple[Any, ...] = (self.metrics, self.reconciler.metrics, self.scaling, self.verifier)
        registries: list[CollectorRegistry] = [REGISTRY, *(s.registry for s in sources if s is not None)]
        return b"".join(generate_latest(r) for r in registries), CONTENT_TYPE_LATEST

    def snapshot(self) -> dict[str, Any]:
        """What `fitguard report -o json` prints, plus the last discovery cycle."""
        return {
            "nodes": [row.to_json() for row in self.books.snapshot()],
            "leader": self.is_leader(),
            "identity": self.manager.identity,
            "guard": self.reconciler.guard_json(),
            "lastCycle": self.last_cycle.to_json() if self.last_cycle is not None else {},
        }

    def run(self, stop: threading.Event) -> None:
        self.manager.run(stop)

    # -- the leader's cycle ---------------------------------------------------------------------

    def cycle(self) -> CycleReport:
        """Discovery, templates, tags and scaling from the cache; then rescue and reclaim."""
        report = self.discovery.reconcile()
        waiting = [row.name for row in self.books.snapshot() if row.waiting]
        report = dataclasses.replace(report, rescue=tuple(self._rescue(waiting)))
        if self.verifier is not None:
            pods, nodes = self.cache.pods.items(), self.cache.nodes.items()
            ec2 = self.verifier.verify(pods, nodes, now=time.time(), window=self.books.window)
            report = dataclasses.replace(report, ec2=ec2)
            if "leaked" in ec2:
                leaked: dict[str, int] = {}
                for leak in ec2["leaked"]:
                    leaked[leak["node"]] = leaked.get(leak["node"], 0) + 1
                self.books.note_leaks(leaked)
        return report

    def _rescue(self, nodes_with_waiting_pods: list[str]) -> list[dict[str, Any]]:
        """Rescue and reclaim (both off by default) on the nodes where pods wait for a branch ENI."""
        rescue = self.settings.rescue
        if not (rescue.rescue or rescue.reclaim_after is not None):
            return []
        model = self.books.model
        results: list[dict[str, Any]] = []
        for node in nodes_with_waiting_pods:
            pods = pods_on_node(self.api, node)
            now = time.time()
            chosen = rescue_candidates(pods, now=now, window=model.window) if rescue.rescue else []
            if rescue.reclaim_after is not None:
                chosen += reclaim_candidates(
                    pods,
                    now=now,
                    after=rescue.reclaim_after,
                    window=model.window,
                    waiting_grace=model.waiting_grace,
                    release=model.release,
                )
            results += carry_out(self.api, chosen, self.recorder, dry_run=self.settings.discovery.dry_run)
        return results

    def _note_tag_change(self, change: TagChange, message: str) -> None:
        ref = ObjectRef(TEMPLATE_KIND, change.node_group, api_version=API_VERSION)
        self.recorder.normal(ref, "AutoscalerTagSynced", message, action="SyncTags")


def _facts() -> Any:
    from capacity.instances import lookup

    return lookup
