"""/snapshotz is served only when asked for: without `--snapshotz` the webhook's and the controller's
status ports answer it 404 with one line saying how to turn it on, and the base manifests do not
turn it on; with the flag it is the JSON snapshot. The probes and /metrics answer either way."""

from __future__ import annotations

import http.client
import json
import logging
from pathlib import Path

import pytest
import yaml

from cmdline.statushttp import StatusPort, StatusRoutes
from controller.cli import register as register_controller
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import get_status, manifest_args, running
from webhook import status
from webhook.cluster import from_objects
from webhook.review import WebhookOptions

POLICY = {
    "apiVersion": "vpcresources.k8s.aws/v1beta1",
    "kind": "SecurityGroupPolicy",
    "metadata": {"namespace": "shop", "name": "web"},
    "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "securityGroups": {"groupIds": ["sg-1"]}},
}
OFF = b"/snapshotz is off (start with --snapshotz to serve it)\n"


def test_the_webhook_answers_snapshotz_only_when_asked() -> None:
    """Off (the default): 404 and the one line; on: the policies held. /healthz and /metrics are the
    same either way."""
    view = from_objects([POLICY])
    off, on = WebhookOptions(), WebhookOptions(snapshotz=True)
    assert status.answer("GET", "/snapshotz", view, off, lambda: True) == (404, OFF, "text/plain")
    code, body, kind = status.answer("GET", "/snapshotz", view, on, lambda: True)
    assert (code, kind) == (200, "application/json")
    assert [p["groupIds"] for p in json.loads(body)["securityGroupPolicies"]] == [["sg-1"]]
    for path in ("/healthz", "/metrics"):
        assert status.answer("GET", path, view, off, lambda: True)[0] == 200


def test_the_base_manifests_leave_snapshotz_off() -> None:
    """Neither container in the base is started with --snapshotz."""
    assert not [a for a in manifest_args() if a.startswith("--snapshotz")]
    deployment = Path(__file__).resolve().parents[2] / "manifests" / "base" / "controller-deployment.yaml"
    assert "--snapshotz" not in deployment.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("flag", [False, True])
def test_the_webhook_server_serves_snapshotz_with_the_flag(
    tls_files: TlsFiles, tmp_path: Path, flag: bool
) -> None:
    """`fitguard webhook` as the manifests start it: /snapshotz 404 with the one line; with
    --snapshotz, the policy from its state file. /readyz answers 200 both ways."""
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump(POLICY))
    options = ["--state", str(state), *(["--snapshotz"] if flag else [])]
    with running(tls_files, options, workers=1) as server:
        assert get_status(server, "/readyz")[0] == 200
        code, body = get_status(server, "/snapshotz")
    if flag:
        assert code == 200 and json.loads(body)["securityGroupPolicies"][0]["groupIds"] == ["sg-1"]
    else:
        assert (code, body) == (404, OFF)


def _controller_get(snapshot: bool, path: str) -> tuple[int, bytes]:
    shown = (lambda: {"leader": True}) if snapshot else None
    routes = StatusRoutes(waiting=list, metrics=lambda: (b"", "text/plain"), snapshot=shown)
    http = StatusPort(routes, logging.getLogger("test"), bind="127.0.0.1:0").start()
    try:
        conn = http_client(http.port)
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        http.stop()


def http_client(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=10)


def test_the_controller_answers_snapshotz_only_when_asked() -> None:
    """Without a snapshot (no --snapshotz) 404 and the one line; with one, its JSON; /healthz either way."""
    assert _controller_get(False, "/snapshotz") == (404, OFF)
    assert _controller_get(True, "/snapshotz") == (200, b'{"leader":true}')
    assert _controller_get(False, "/healthz") == (200, b"ok\n")


def test_the_controller_flag_reaches_its_options() -> None:
    """--snapshotz parses to True, its absence to False."""
    import argparse

    parser = argparse.ArgumentParser()
    register_controller(parser.add_subparsers())
    assert parser.parse_args(["controller", "--snapshotz"]).snapshotz is True
    assert parser.parse_args(["controller"]).snapshotz is False
