"""kube/connection.py and kube/client.py's Connection: the library's loaders, configuration and
connection pool without the rest of the library, and requests written as its ApiClient writes them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kube.client import USER_AGENT, Connection, KubeClient, load_api_client, query_string, request_target
from kube.connection import Configuration
from tests.fakekube import FakeKubeServer

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_client_loads_neither_the_library_s_subpackages_nor_its_models_until_asked(
    tmp_path: Path,
) -> None:
    """In a fresh interpreter, `import kube.client` leaves out pydantic, the ApiClient module, the
    models and the subpackages the library's `__init__` imports; code that then asks for the whole
    library (`from kubernetes import client, watch`) gets it whole: the real ApiClient class, the
    watch module, and kube_config's new_client_from_config building a real ApiClient."""
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t0"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    found = _run(
        f"""
        import json, sys
        import kube.client
        heavy = ["pydantic", "kubernetes.client.api_client", "kubernetes.client.models",
                 "kubernetes.dynamic", "kubernetes.watch", "kubernetes.stream",
                 "kubernetes.leaderelection", "kubernetes.informer", "kubernetes.utils.create_from_yaml"]
        before = [m for m in heavy if m in sys.modules]
        from kubernetes import client, watch
        from kubernetes.config import new_client_from_config
        made = new_client_from_config(config_file={str(config)!r})
        print(json.dumps({{
            "before": before,
            "api_client": client.ApiClient.__module__ + "." + client.ApiClient.__name__,
            "made": type(made) is client.ApiClient,
            "watch": hasattr(watch, "Watch"),
            "version": __import__("kubernetes").__version__ != "",
        }}))
        """
    )
    assert found == {
        "before": [],
        "api_client": "kubernetes.client.api_client.ApiClient",
        "made": True,
        "watch": True,
        "version": True,
    }


@pytest.mark.parametrize(
    ("params", "prefix"),
    [
        ([], None),
        (
            [("limit", 500), ("continue", "a b/c+=&?"), ("watch", True), ("allowWatchBookmarks", False)],
            "Bearer",
        ),
        ([("labelSelector", "app in (a,b),tier!=x"), ("fieldSelector", "spec.nodeName=")], None),
    ],
)
def test_a_request_is_written_as_the_library_s_api_client_writes_it(
    params: list[tuple[str, Any]], prefix: str | None
) -> None:
    """Differential: the URL and headers of request_target equal the library's
    ApiClient.param_serialize for the same path, query and headers (booleans in lower case, values
    quoted, the bearer token with its prefix, the user agent); the configuration's refresh hook runs
    for each request, so a rotated token is sent."""
    from kubernetes.client import ApiClient

    configuration = Configuration(host="https://api.example:6443")
    configuration.api_key = {"authorization": "t1"}
    if prefix:
        configuration.api_key_prefix = {"authorization": prefix}
    current = ["t1"]
    refreshes: list[str] = []

    def refresh(c: Any) -> None:  # as the in-cluster loader's hook: the token file read again
        refreshes.append(current[0])
        c.api_key["authorization"] = current[0]

    configuration.refresh_api_key_hook = refresh
    library = ApiClient(configuration)
    library.user_agent = USER_AGENT
    ours = Connection(configuration)
    for token in ("t1", "t2"):
        current[0] = token
        headers = {"Accept": "application/json"}
        url = request_target(ours, "/api/v1/pods", list(params), headers)
        _, want_url, want_headers, _, _ = library.param_serialize(
            "GET",
            "/api/v1/pods",
            query_params=list(params),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        assert (url, headers) == (want_url, want_headers)
        assert headers["authorization"] == (f"{prefix} {token}" if prefix else token)
        assert headers["User-Agent"] == USER_AGENT
    assert refreshes[0] == "t1" and refreshes[-1] == "t2"
    library.close()
    ours.close()


def test_a_query_string_lower_cases_booleans_and_quotes_values() -> None:
    """`true`/`false`, numbers as text, reserved characters percent-quoted (slash kept)."""
    assert query_string([("watch", True), ("x", False), ("limit", 5), ("s", "a=b&c d/e")]) == (
        "watch=true&x=false&limit=5&s=a%3Db%26c%20d/e"
    )


def test_a_connection_from_a_kubeconfig_reads_and_writes_the_api(tmp_path: Path) -> None:
    """load_api_client gives a Connection (not the library's ApiClient) through which KubeClient
    creates and reads an object on the fake API server."""
    server = FakeKubeServer()
    server.start()
    try:
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        connection = load_api_client(str(path))
        assert isinstance(connection, Connection)
        client = KubeClient(connection)
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n1"}}
        client.request("POST", "/api/v1/namespaces", body=body)
        assert client.get("/api/v1/namespaces/n1")["metadata"]["name"] == "n1"
        connection.close()
    finally:
        server.stop()
