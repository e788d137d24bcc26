"""Leader failover with real processes: two `fitguard controller --leader-elect --scaling=on`
against the fake API server and moto (behind a recording proxy on loopback). The leader is
SIGKILLed while its SetDesiredCapacity is in flight (AWS has done it, the leader never hears back
and never tags the group); the other replica takes the Lease once it has expired, and the
call log shows SetDesiredCapacity sent once for that demand, however many cycles follow."""

from __future__ import annotations

import http.client
import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from capacity.defaults import LEASE_NAME
from controller.aws.clients import AwsClients
from tests.awsfixtures import AwsEnvironment
from tests.controller.test_discovery_aws import ENABLED, asg, launch_template, scratch_pod
from tests.fakekube.server import FakeKubeServer
from tests.waiting import eventually as wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "fitguard-system"
LEASE = {"duration": 3.0, "renew": 2.0, "retry": 0.5}
HOLD_SECONDS = 30.0  # the proxy sits on the scale-up's answer; the leader is killed meanwhile


@dataclass
class AwsCall:
    action: str
    params: dict[str, str]
    at: float  # time.monotonic() when it reached the proxy


@dataclass
class RecordingProxy:
    """Forwards every request to moto and records each AWS action server-side (query protocol:
    the form's Action). The first SetDesiredCapacity is done by moto, then its answer withheld."""

    upstream: str
    port: int = 0  # where the proxy listens
    calls: list[AwsCall] = field(default_factory=list)
    scale_up_done: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, body: bytes) -> AwsCall:
        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        call = AwsCall(form.get("Action", ""), form, time.monotonic())
        with self._lock:
            self.calls.append(call)
        return call

    def actions(self, name: str, since: float = 0.0) -> list[AwsCall]:
        with self._lock:
            return [c for c in self.calls if c.action == name and c.at >= since]


def serve_proxy(proxy: RecordingProxy) -> http.server.ThreadingHTTPServer:
    target = urlsplit(proxy.upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            call = proxy.record(body)
            upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            upstream.request("POST", self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
            upstream.close()
            if call.action == "SetDesiredCapacity" and not proxy.scale_up_done.is_set():
                proxy.scale_up_done.set()
                proxy.release.wait(HOLD_SECONDS)
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def micro_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.fixture
def proxy(aws: AwsEnvironment) -> Iterator[RecordingProxy]:
    recording = RecordingProxy(aws.url)
    server = serve_proxy(recording)
    recording.port = server.server_address[1]
    yield recording
    recording.release.set()
    server.shutdown()
    server.server_close()


def start_controller(name: str, kubeconfig: Path, proxy_port: int) -> subprocess.Popen[bytes]:
    command = [
        str(Path(sys.executable).with_name("fitguard")), "controller",  # the installed console script
        "--leader-elect", "--scaling=on", "--interval", "1",
        "--metrics-bind", "127.0.0.1:0", "--kubeconfig", str(kubeconfig), "--log-level", "warning",
        "--node-group-auto-discovery", "asg:tag=k8s.io/cluster-autoscaler/enabled",
        "--leader-elect-lease-duration", str(LEASE["duration"]),
        "--leader-elect-renew-deadline", str(LEASE["renew"]),
        "--leader-elect-retry-period", str(LEASE["retry"]),
    ]  # fmt: skip
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{proxy_port}",
        "POD_NAME": name,
        "POD_NAMESPACE": NAMESPACE,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def holder(fake_kube: FakeKubeServer) -> dict[str, Any] | None:
    try:
        spec = fake_kube.get("Lease", LEASE_NAME, NAMESPACE, api_version="coordination.k8s.io/v1")["spec"]
    except Exception:  # not created yet: the fake raises its NotFound
        return None
    return spec if spec.get("holderIdentity") else None


def test_a_leader_killed_mid_scale_up_is_replaced_and_nothing_is_done_twice(
    aws: AwsEnvironment, fake_kube: FakeKubeServer, proxy: RecordingProxy, tmp_path: Path
) -> None:
    clients = AwsClients.from_environment()
    for name, root in (("ng-a", 50), ("ng-b", 20)):
        launch_template(clients.ec2, name, "m5.large", root)
        asg(clients.autoscaling, name, ENABLED)
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    fake_kube.create(scratch_pod())
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    processes = {name: start_controller(name, kubeconfig, proxy.port) for name in ("replica-0", "replica-1")}
    try:
        assert proxy.scale_up_done.wait(60), "no scale-up was ever sent"
        first = wait_for(lambda: holder(fake_kube), "a leader")
        leader = first["holderIdentity"].rsplit("_", 1)[0]
        processes[leader].send_signal(signal.SIGKILL)
        processes[leader].wait()
        killed_at = time.monotonic()
        proxy.release.set()
        second = wait_for(
            lambda: (h := holder(fake_kube)) and h["holderIdentity"] != first["holderIdentity"] and h,
            "the other replica leads",
        )
        assert second["holderIdentity"].rsplit("_", 1)[0] != leader
        # the takeover is the event waited for (its deadline only bounds a hang); what must hold
        # whatever the load: the lease was not taken before it expired, a lease duration after the
        # dead leader's last renewal the test saw (the replicas share this machine's clock)
        gap = (micro_time(second["acquireTime"]) - micro_time(first["renewTime"])).total_seconds()
        assert gap >= LEASE["duration"], f"taken over {gap:.2f}s after the last renewal, before it expired"
        assert second["leaseTransitions"] == first["leaseTransitions"] + 1
        # several full cycles of the new leader: each reads the ASGs for discovery and for the plan
        wait_for(
            lambda: len(proxy.actions("DescribeAutoScalingGroups", killed_at)) >= 8,
            "4 new cycles",
            timeout=120.0,
        )
        assert len(proxy.actions("SetDesiredCapacity")) == 1, "the scale-up was sent twice"
        groups = aws.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
        assert {g["AutoScalingGroupName"]: g["DesiredCapacity"] for g in groups} == {"ng-a": 1, "ng-b": 0}
        survivor = next(p for name, p in processes.items() if name != leader)
        assert survivor.poll() is None, "the new leader exited"
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
