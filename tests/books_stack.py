"""The books as the controller composes them (controller/loop.py), without the manager: the cache,
the books listening to it, the label writer and the books reconciler, built from one set of
settings. Tests feed the cache's stores as a reflector feeds them (or start its reflectors against
the fake API server) and run passes at chosen times."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from controller.books import Books
from controller.books_reconciler import BooksReconciler
from controller.cache import CacheOptions, ClusterCache
from controller.labels import BooksDecision, LabelWriter
from controller.settings import BooksOptions
from kube.events import EventRecorder
from kube.options import WatchOptions
from kube.store import Store


class BooksStack:
    def __init__(
        self,
        api: Any,
        settings: BooksOptions,
        *,
        clock: Callable[[], float] = time.time,
        recorder: EventRecorder | None = None,
        scaled_groups: Callable[[], frozenset[str] | None] = frozenset,
    ) -> None:
        self.api = api
        self.cache = ClusterCache(CacheOptions(autoscaler_selector="", karpenter_selector=""))
        self.cache.api = api
        self.books = Books(self.cache, settings, clock)
        writer = LabelWriter(api, settings, clock())
        self.reconciler = BooksReconciler(self.books, writer, recorder, scaled_groups, CollectorRegistry())

    # the stores the books listen to
    @property
    def nodes(self) -> Store[Any]:
        return self.cache.nodes

    @property
    def pods(self) -> Store[Any]:
        return self.cache.pods

    @property
    def registry(self) -> CollectorRegistry:
        return self.reconciler.metrics.registry

    def start(self, page_size: int = 500) -> BooksStack:
        self.cache.settings = CacheOptions(
            autoscaler_selector="", karpenter_selector="", watch=WatchOptions(page_size=page_size)
        )
        self.cache.start(self.api)
        return self

    def stop(self) -> None:
        self.cache.stop()

    def waiting_for(self) -> list[str]:
        return [store.kind for store in (self.cache.nodes, self.cache.pods) if not store.synced]

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.waiting_for():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def reconcile(self, now: float | None = None) -> list[BooksDecision]:
        return self.reconciler.reconcile(now)

    def run(self, stop: threading.Event) -> None:
        self.reconciler.run(stop)


def books_stack(api: Any, *, clock: Callable[[], float] = time.time, **options: Any) -> BooksStack:
    """A stack from BooksOptions' fields and the stack's own (recorder, scaled_groups)."""
    own = {k: options.pop(k) for k in ("recorder", "scaled_groups") if k in options}
    return BooksStack(api, BooksOptions(**options), clock=clock, **own)
