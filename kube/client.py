"""Connecting to the API: a `Connection` from in-cluster config or a kubeconfig (the library's
loaders, configuration and connection pool, kube/connection.py), and raw JSON requests on top of it
(no client model classes: they are slow to build, lossy to round-trip, and their modules alone are
about 15 MB).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import urllib3

from capacity.names import GROUP, TEMPLATE_PLURAL, VERSION
from kube.connection import ConfigException, Configuration, RESTClientObject
from kube.connection import config as k8s_config
from kube.kubeconfig import CONFIG_ERROR, missing_kubeconfig

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# (connect, read) seconds for ordinary requests; watches set their own read timeout.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 30.0)
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

Query = Mapping[str, str | int | bool] | Sequence[tuple[str, str | int | bool]]
Timeout = float | tuple[float, float]
# connection attempts are retried (nothing was sent); reads, statuses and redirects are not
_RETRIES = urllib3.Retry(total=2, connect=2, read=0, status=0, other=0, redirect=0, raise_on_status=False)


class KubeError(Exception):
    """An API call that did not succeed: an HTTP status (0 when the server was not reached)."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str = "",
        retry_after: float | None = None,
        body: Mapping[str, Any] | None = None,
        *,
        refused: bool = False,
    ) -> None:
        # status 0: the server was not reached; a bare 0 in front would only puzzle the reader
        head = f"{status} {reason}" if status else reason
        super().__init__(f"{head}: {message}" if message else head)
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.body = dict(body) if body else {}
        # the server refused the connection (nothing listens): most likely restarting, so a watch
        # is worth opening again where it ended (client-go reflector.go isWatchErrorRetriable)
        self.refused = refused

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def unreachable(self) -> bool:
        return self.status == 0


@dataclass(frozen=True)
class Resource:
    """Which collection: enough to build any resource path (core, grouped, custom, cluster-scoped)."""

    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """`namespace=None` on a namespaced resource means all namespaces (lists and watches only)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        elif self.namespaced and name:
            raise ValueError(f"{self.plural}/{name}: a namespaced object needs its namespace")
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if subresource:
            base += f"/{subresource}"
        return base


PODS = Resource("", "v1", "pods", True)
NODES = Resource("", "v1", "nodes", False)
NAMESPACES = Resource("", "v1", "namespaces", False)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", True)
CONFIG_MAPS = Resource("", "v1", "configmaps", True)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", True)
EVENTS = Resource("events.k8s.io", "v1", "events", True)
SECURITY_GROUP_POLICIES = Resource("vpcresources.k8s.aws", "v1beta1", "securitygrouppolicies", True)
NODE_GROUP_TEMPLATES = Resource(GROUP, VERSION, TEMPLATE_PLURAL, False)
NODE_POOLS = Resource("karpenter.sh", "v1", "nodepools", False)  # served only where Karpenter runs
EC2_NODE_CLASSES = Resource("karpenter.k8s.aws", "v1", "ec2nodeclasses", False)  # Karpenter's AWS provider
AUTO_NODE_CLASSES = Resource("eks.amazonaws.com", "v1", "nodeclasses", False)  # EKS Auto Mode's NodeClass


USER_AGENT = "fitguard/0.1"


class Connection:
    """What KubeClient uses of the library's ApiClient (and reads the same way from one): the
    configuration (server, credentials and their refresh hook), the REST client's connection pool
    (TLS, proxy, keep-alive: kubernetes/client/rest.py RESTClientObject) and the default headers."""

    def __init__(self, configuration: Any) -> None:
        self.configuration = configuration
        self.rest_client = RESTClientObject(configuration)
        self.default_headers = {"User-Agent": USER_AGENT}
        self.cookie = None

    def close(self) -> None:
        self.rest_client.close()


def load_api_client(
    kubeconfig: str | None = None,
    context: str | None = None,
    in_cluster: bool | None = None,
) -> Connection:
    """A Connection: in-cluster when running in a pod (and no kubeconfig is named), else the
    kubeconfig (`kubeconfig`, then $KUBECONFIG, then ~/.kube/config) with the given context."""
    configuration = Configuration()
    use_cluster = in_cluster
    if use_cluster is None:
        use_cluster = kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ
    absent = None if use_cluster else missing_kubeconfig(kubeconfig)
    if absent is not None:
        raise KubeError(0, CONFIG_ERROR, absent)
    try:
        if use_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)
        else:
            # $KUBECONFIG is read now, not at import time as the client's default does
            path = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            k8s_config.load_kube_config(
                config_file=path, context=context, client_configuration=configuration, persist_config=False
            )
    except (ConfigException, OSError) as err:
        raise KubeError(0, "ConfigError", str(err)) from None
    # keep-alive probes notice a silently dropped watch connection (NAT, load balancer)
    configuration.keep_alive = True
    return Connection(configuration)


def _retry_after(headers: Mapping[str, str], body: Mapping[str, Any]) -> float | None:
    value = headers.get("Retry-After")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            return None  # an HTTP date: rare from the apiserver, which sends seconds
    details = body.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("retryAfterSeconds"), int | float):
        return float(details["retryAfterSeconds"])
    return None


def _refused(err: urllib3.exceptions.HTTPError) -> bool:
    """Whether a failed request's connection was refused (ECONNREFUSED), as Go's
    utilnet.IsConnectionRefused tells it: urllib3 wraps the OSError in NewConnectionError, and that
    in MaxRetryError once its connect retries are spent."""
    cause: BaseException | None = err.reason if isinstance(err, urllib3.exceptions.MaxRetryError) else err
    seen = 0
    while cause is not None and seen < 5:  # the chain is short; the bound guards a cycle
        if isinstance(cause, ConnectionRefusedError):
            return True
        cause, seen = cause.__cause__ or cause.__context__, seen + 1
    return False


def error_from_response(status: int, reason: str, headers: Mapping[str, str], data: bytes) -> KubeError:
    """A KubeError from a non-2xx response, reading the apiserver's Status body when there is one."""
    body: dict[str, Any] = {}
    try:
        parsed = json.loads(data) if data else {}
        if isinstance(parsed, dict):
            body = parsed
    except ValueError:
        body = {}
    message = str(body.get("message") or data[:200].decode("utf-8", "replace"))
    return KubeError(status, str(body.get("reason") or reason), message, _retry_after(headers, body), body)


def query_string(params: Sequence[tuple[str, str | int | bool]]) -> str:
    """The query as the library's ApiClient writes it (api_client.py `parameters_to_url_query`):
    booleans in lower case, each value percent-quoted, the names as they are."""
    return "&".join(f"{k}={quote(str(v).lower() if isinstance(v, bool) else str(v))}" for k, v in params)


def request_target(
    api_client: Connection | ApiClient,
    path: str,
    params: list[tuple[str, str | int | bool]],
    headers: dict[str, str],
) -> str:
    """The URL of a request, with the credentials added to `headers` or `params` as the library's
    ApiClient adds them (api_client.py `param_serialize` and `_apply_auth_params`; the token
    refreshed by the configuration's hook, in-cluster and exec credentials alike)."""
    configuration = api_client.configuration
    headers.update(api_client.default_headers)
    if api_client.cookie:
        headers["Cookie"] = api_client.cookie
    auth = configuration.auth_settings().get("BearerToken")
    if auth and auth["in"] == "header":
        headers[auth["key"]] = auth["value"]
    elif auth and auth["in"] == "query":
        params.append((auth["key"], auth["value"]))
    url = configuration.host + path
    return f"{url}?{query_string(params)}" if params else url


class KubeClient:
    """Raw JSON requests through a Connection (or the library's ApiClient): its auth, TLS and
    connection pool, none of its models."""

    def __init__(self, api_client: Connection | ApiClient, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        self.api_client = api_client
        self.timeout = timeout

    def open(
        self,
        method: str,
        path: str,
        query: Query | None = None,
        *,
        body: Any = None,
        content_type: str = JSON,
        timeout: Timeout | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """A response whose body is still unread (for streams); raises KubeError unless 2xx."""
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        params = list(query.items()) if isinstance(query, Mapping) else list(query or [])
        url = request_target(self.api_client, path, params, headers)
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        chosen = timeout or self.timeout
        if isinstance(chosen, tuple):
            limits = urllib3.Timeout(connect=chosen[0], read=chosen[1])
        else:
            limits = urllib3.Timeout(total=chosen)
        try:
            # the rest client's pool directly: its default Retry would sleep through a 429's
            # Retry-After and repeat timed-out reads, which callers must see and decide on
            response = self.api_client.rest_client.pool_manager.request(
                method,
                url,
                body=data,
                headers=headers,
                timeout=limits,
                retries=_RETRIES,
                preload_content=False,
            )
        except urllib3.exceptions.HTTPError as err:
            raise KubeError(0, type(err).__name__, str(err), refused=_refused(err)) from None
        if not 200 <= response.status < 300:
            try:
                data = response.read()
            except urllib3.exceptions.HTTPError:
                data = b""
            finally:
                response.release_conn()
            raise error_from_response(response.status, response.reason or "", response.headers, data)
        return response

    def request(
        self,
        method: str,
        path: str,
        query: Query | None = None,
        *,
        body: Any = None,
        content_type: str = JSON,
        timeout: Timeout | None = None,
        decode: Callable[[bytes], Any] = json.loads,
    ) -> Any:
        """The parsed JSON answer (None when the body is empty); raises KubeError unless 2xx.
        `decode` reads the body (a schema decoder keeps only some fields: kube/podwire.py)."""
        response = self.open(method, path, query, body=body, content_type=content_type, timeout=timeout)
        try:
            data = response.read()
        except urllib3.exceptions.HTTPError as err:
            raise KubeError(0, type(err).__name__, str(err)) from None
        finally:
            response.release_conn()
        if not data:
            return None
        try:
            return decode(data)
        except ValueError as err:
            raise KubeError(response.status, "BadResponse", f"not JSON: {err}") from None

    def get(self, path: str, query: Query | None = None) -> Any:
        return self.request("GET", path, query)

    def list_all(
        self,
        path: str,
        query: Mapping[str, str | int] | None = None,
        page_size: int = 500,
        decode: Callable[[bytes], Any] = json.loads,
    ) -> list[Any]:
        """Every item of a list, page by page (`limit`/`continue`), so no answer is unbounded."""
        items: list[Any] = []
        token = ""
        while True:
            page = self.request(
                "GET",
                path,
                {**(query or {}), "limit": page_size, **({"continue": token} if token else {})},
                decode=decode,
            )
            items.extend((page or {}).get("items") or ())
            token = str(((page or {}).get("metadata") or {}).get("continue") or "")
            if not token:
                return items


# What the typed functions of kube/api.py and the long-lived readers accept: our client, or a
# Connection or the library's ApiClient (wrapped on the way in).
if TYPE_CHECKING:
    ApiLike = KubeClient | Connection | ApiClient
else:
    ApiLike = KubeClient | Connection


def as_kube_client(api: ApiLike) -> KubeClient:
    return api if isinstance(api, KubeClient) else KubeClient(api)
