"""A list+watch reflector for a kind the API may not serve (a CRD of another project, such as
Karpenter's NodePools and EC2NodeClasses), shared by the webhook's and the controller's caches."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from kube.options import ReflectorOptions

if TYPE_CHECKING:
    from kube.client import ApiLike
    from kube.reflector import Reflector
    from kube.store import Store

log = logging.getLogger(__name__)

# How often a process in a cluster without the kind asks again whether it is served.
RECHECK_SECONDS = 60.0
RETRY_SECONDS = 2.0  # after a failed question: the store stays unsynced until it is answered


class WhenServed:
    """A reflector for a kind the API may not serve (a CRD of another project): where the API does
    not serve it the store is empty and synced (for NodePools: no NodePool can launch a node), and
    the question is asked again every `recheck` seconds; once it is served, a reflector keeps the
    store. A failed question is asked again after `retry` seconds and leaves the store as it was
    (unsynced at first: the webhook is not ready rather than blind to NodePools)."""

    def __init__(
        self,
        api: ApiLike,
        kind: str,
        store: Store[Any],
        recheck: float = RECHECK_SECONDS,
        retry: float = RETRY_SECONDS,
        options: ReflectorOptions = ReflectorOptions(),
    ) -> None:
        self._api, self._kind, self._store, self._options = api, kind, store, options
        self._recheck, self._retry = recheck, retry
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.reflector: Reflector | None = None
        self._thread = threading.Thread(target=self._run, name=f"{kind.lower()}-discovery", daemon=True)

    def start(self) -> WhenServed:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            reflector = self.reflector
        if reflector is not None:
            reflector.stop(timeout)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        from kube.api import serves, start_reflector
        from kube.client import KubeError

        while not self._stop.is_set():
            try:
                served = serves(self._api, self._kind)
            except KubeError as err:
                log.warning("cannot tell whether the API serves %ss: %s", self._kind, err)
                self._stop.wait(self._retry)
                continue
            if served:
                with self._lock:
                    if not self._stop.is_set():
                        self.reflector = start_reflector(self._api, self._kind, self._store, self._options)
                return
            if not self._store.synced or len(self._store):
                self._store.replace([])
            self._stop.wait(self._recheck)
