"""The fake apiserver's public face: lifecycle, listening faults, direct store helpers, client config."""

from __future__ import annotations

import copy
import json
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from .admission import AdmissionChain
from .faults import Faults, RequestLog
from .handler import KubeHTTPServer
from .listoptions import WatchListSupport
from .patch import merge_patch
from .registry import ResourceType, by_kind
from .store import Store

if TYPE_CHECKING:
    from types import TracebackType

    from kubernetes.client import ApiClient

_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class FakeKubeServer:
    """An in-process Kubernetes API server on 127.0.0.1 speaking the real REST/JSON protocol.

    Tests arm faults on `faults`, read `requests`, and change objects directly with create/apply/
    patch/delete (which emit watch events like API writes, but may also set status).
    """

    def __init__(
        self,
        *,
        history_size: int = 1000,
        bookmark_interval: float = 1.0,
        require_namespaces: bool = False,
        watch_list: WatchListSupport = "supported",
        watch_cache: bool = True,
    ) -> None:
        self.store = Store(history_size)
        self.faults = Faults()
        self.requests = RequestLog()
        self.admission = AdmissionChain(self.store)  # webhooks; `admission.services` resolves Services
        self.bookmark_interval = bookmark_interval  # seconds between BOOKMARKs on watches that allow them
        self.require_namespaces = require_namespaces  # creating in a missing namespace is 404, as upstream
        # how a WatchList request (sendInitialEvents=true) is answered: "supported" (1.27+ with the
        # feature), "old" (before 1.27: 422 for resourceVersionMatch on a watch), "ignored" (both
        # parameters dropped: a plain watch, never an initial-events-end bookmark)
        self.watch_list: WatchListSupport = watch_list
        # a list with resourceVersion "0" is answered from the watch cache, whole, ignoring limit;
        # False: as with the watch cache disabled, every list honours limit
        self.watch_cache = watch_cache
        self.internal_errors: list[str] = []  # tracebacks of bugs in the fake itself
        self._port = 0
        self._httpd: KubeHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._clients: list[ApiClient] = []
        self._watch_started = threading.Condition()
        self._watches_started = 0
        for namespace in _SYSTEM_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> Self:
        self.start_listening()
        return self

    def stop(self) -> None:
        """Stop listening, drop every connection and close the API clients handed out."""
        self.stop_listening()
        for api_client in self._clients:
            api_client.close()
        self._clients.clear()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start_listening(self) -> None:
        """Listen again, on the same port once one was chosen (port 0 the first time)."""
        with self._lock:
            if self._httpd is not None:
                return
            self._httpd = KubeHTTPServer(("127.0.0.1", self._port), self)
            self._port = self._httpd.server_address[1]
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fakekube", daemon=True
            )
            self._thread.start()

    def stop_listening(self) -> None:
        """Refuse connections: close the listening socket and drop open ones (watches included)."""
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
            connections = list(self._connections)
        if httpd is None or thread is None:
            return
        httpd.closing.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                continue  # its handler closed it meanwhile

    def track_connection(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)

    def untrack_connection(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def note_watch_started(self) -> None:
        with self._watch_started:
            self._watches_started += 1
            self._watch_started.notify_all()

    def wait_for_watches(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until `count` watches (since creation) have sent their first events.

        A change made after this reaches those watches as a live event, not in their initial state.
        """
        with self._watch_started:
            return self._watch_started.wait_for(lambda: self._watches_started >= count, timeout)

    # --- clients -----------------------------------------------------------------------------

    def api_client(self) -> ApiClient:
        """A kubernetes ApiClient for this server: no auth, no proxy (closed by stop())."""
        from kubernetes import client

        configuration = client.Configuration(host=self.url)
        configuration.proxy = None  # the setter stops the client taking a proxy from the environment
        api_client = client.ApiClient(configuration)
        self._clients.append(api_client)
        return api_client

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        cluster = {"name": "fakekube", "cluster": {"server": self.url}}
        context = {
            "name": "fakekube",
            "context": {"cluster": "fakekube", "user": "fakekube", "namespace": namespace},
        }
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [cluster],
            "users": [{"name": "fakekube", "user": {}}],
            "contexts": [context],
            "current-context": "fakekube",
        }

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """Write a kubeconfig (JSON, which is YAML) for a subprocess to use through KUBECONFIG.

        The subprocess should also have NO_PROXY=127.0.0.1 if the environment sets a proxy.
        """
        path = Path(path)
        path.write_text(json.dumps(self.kubeconfig(namespace), indent=2))
        return path

    # --- direct store access (no HTTP; watch events as for API writes) -----------------------

    @staticmethod
    def _type(kind: str, api_version: str | None) -> ResourceType:
        return by_kind(kind, api_version)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new object as given, status included; fills uid, creationTimestamp and RV."""
        rt = self._type(obj["kind"], obj.get("apiVersion"))
        obj = {**obj, "apiVersion": rt.api_version}
        if not obj.get("metadata", {}).get("name"):
            raise ValueError("objects created directly need metadata.name")
        return self.store.create(rt, obj)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create the object, or replace the stored one whole (status included): ADDED or MODIFIED."""
        rt = self._type(obj["kind"], obj.get("apiVersion"))
        meta = obj["metadata"]
        if not self.store.exists(rt, meta.get("namespace"), meta["name"]):
            return self.create(obj)
        replacement = {**copy.deepcopy(obj), "apiVersion": rt.api_version}
        return self.store.update(rt, meta.get("namespace"), meta["name"], lambda _: replacement)

    def patch(
        self,
        kind: str,
        name: str,
        patch: dict[str, Any],
        namespace: str | None = None,
        *,
        api_version: str | None = None,
    ) -> dict[str, Any]:
        """JSON-merge-patch a stored object, status included: one MODIFIED event (none if no change)."""
        rt = self._type(kind, api_version)
        return self.store.update(rt, namespace, name, lambda current: merge_patch(current, patch))

    def delete(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> dict[str, Any]:
        """Delete a stored object (only marked while finalizers remain); answers its last state."""
        last, _ = self.store.delete(self._type(kind, api_version), namespace, name)
        return last

    def get(
        self, kind: str, name: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> dict[str, Any]:
        return self.store.get(self._type(kind, api_version), namespace, name)

    def objects(
        self, kind: str, namespace: str | None = None, *, api_version: str | None = None
    ) -> list[dict[str, Any]]:
        """The stored objects of a kind (in one namespace, or all), in key order."""
        items, _ = self.store.list(self._type(kind, api_version))
        return [obj for obj in items if namespace is None or obj["metadata"].get("namespace") == namespace]

    def expire_history(self, kind: str | None = None, *, api_version: str | None = None) -> None:
        """Forget the watch history (of one kind, or all): watching from an older RV now gets 410."""
        self.store.compact(self._type(kind, api_version) if kind else None)
