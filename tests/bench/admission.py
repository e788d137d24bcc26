"""Admission over TLS on loopback: `python -m webhook` (gunicorn, gthread) loaded with 200
SecurityGroupPolicies and 500 node group templates, and the empty Flask app under the same gunicorn
settings; saturation throughput and fixed-rate latency of /mutate and /validate, from separate
processes."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench import loadgen, synth, wrkload
from tests.tlsfixtures import make_tls_files

ENDPOINTS = ("mutate", "validate")


@dataclass(frozen=True)
class AdmissionOptions:
    duration: float = 10.0  # seconds of each saturation run
    rate_duration: float = 10.0  # seconds of each fixed-rate run
    rates: tuple[int, ...] = (100, 500, 1000)
    workers: int = 2
    threads: int = 8
    loadgen: str = "auto"  # auto (wrk when installed), wrk, python
    processes: int = 8  # our generator's processes (one connection each)
    wrk_threads: int = 2
    wrk_connections: int = 16
    bodies: int = 64


class Server:
    """A gunicorn server in its own process on an inherited loopback socket (no port race)."""

    def __init__(self, name: str, module_args: list[str], log: Path) -> None:
        self.name = name
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1024)
        self.port = self.listener.getsockname()[1]
        fd = self.listener.fileno()
        self.command = [sys.executable, "-m", *module_args, "--bind", f"fd://{fd}"]
        fds = [fd]
        # fitguard answers /readyz on its plain-HTTP status port (--metrics-bind), not the TLS one
        self.status: socket.socket | None = None
        if module_args[0] == "webhook":
            self.status = socket.create_server(("127.0.0.1", 0))
            fds.append(self.status.fileno())
            self.command += ["--metrics-bind", f"fd://{self.status.fileno()}"]
        self._log = log.open("w")
        self.process = subprocess.Popen(
            self.command, pass_fds=fds, stdout=self._log, stderr=subprocess.STDOUT
        )

    def wait_ready(self, ca_file: str, timeout: float = 60.0) -> None:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self._log.name}")
            try:
                connection: http.client.HTTPConnection = (
                    http.client.HTTPConnection("127.0.0.1", self.status.getsockname()[1], timeout=5)
                    if self.status is not None
                    else http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=5)
                )
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    connection.close()
                    return
                connection.close()
            except OSError:
                pass  # workers still booting: the listen backlog holds us until they accept
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout} s; see {self._log.name}")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.listener.close()
        self._log.close()


def write_state(path: Path) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": synth.state_objects(500)}))
    return path


def _saturate(
    options: AdmissionOptions,
    server: Server,
    endpoint: str,
    bodies: list[bytes],
    *,
    ca: str,
    script: Path | None,
) -> dict[str, Any]:
    if script is not None:
        url = f"https://127.0.0.1:{server.port}/{endpoint}"
        return wrkload.saturate(url, script, options.duration, options.wrk_threads, options.wrk_connections)
    target = loadgen.Target("127.0.0.1", server.port, f"/{endpoint}", ca)
    result = loadgen.run(target, bodies, options.processes, options.duration)
    return {"tool": f"python ({options.processes} processes)", **loadgen.summary(result)}


def _fixed(
    server: Server, endpoint: str, bodies: list[bytes], *, ca: str, rate: int, options: AdmissionOptions
) -> dict[str, Any]:
    target = loadgen.Target("127.0.0.1", server.port, f"/{endpoint}", ca)
    processes = max(2, min(options.processes, rate // 60))  # each process stays well under its loop rate
    result = loadgen.run(target, bodies, processes, options.rate_duration, rate=rate)
    return {"rate": rate, "processes": processes, **loadgen.summary(result)}


def run(options: AdmissionOptions, workdir: Path, say: Any = print) -> dict[str, Any]:
    tls = make_tls_files(workdir / "tls")
    state = write_state(workdir / "state.json")
    ca = str(tls.ca_path)
    bodies = {
        "mutate": synth.review_bodies(options.bodies, seed=1, deployments=0.0),
        "validate": synth.review_bodies(options.bodies, seed=2, deployments=0.3),
    }
    use_wrk = options.loadgen == "wrk" or (options.loadgen == "auto" and wrkload.available())
    scripts: dict[str, Path | None] = {
        e: wrkload.write_script(workdir / f"{e}.lua", b) if use_wrk else None for e, b in bodies.items()
    }
    common = [
        "--tls-cert",
        str(tls.cert_path),
        "--tls-key",
        str(tls.key_path),
        "--workers",
        str(options.workers),
    ]
    common += ["--threads", str(options.threads), "--log-level", "warning"]
    servers = {
        "empty": ["tests.bench.emptyapp", *common],
        "fitguard": ["webhook", *common, "--state", str(state)],
    }
    sizes = [len(b) for group in bodies.values() for b in group]
    results: dict[str, Any] = {
        "reviewBytes": {"min": min(sizes), "max": max(sizes), "mean": sum(sizes) // len(sizes)},
        "stateObjects": {
            "securityGroupPolicies": 200,
            "namespaces": synth.NAMESPACES,
            "nodeGroupTemplates": 500,
        },
        "workers": options.workers,
        "threads": options.threads,
        "saturationTool": "wrk" if use_wrk else "python",
    }
    for name, args in servers.items():
        server = Server(name, args, workdir / f"{name}.log")
        try:
            server.wait_ready(ca)
            results[name] = {"command": " ".join(["python", "-m", *args, "--bind", "fd://N"])}
            for endpoint in ENDPOINTS:
                say(f"  {name} /{endpoint}: saturation {options.duration:g} s")
                entry: dict[str, Any] = {
                    "saturation": _saturate(
                        options, server, endpoint, bodies[endpoint], ca=ca, script=scripts[endpoint]
                    )
                }
                rates = options.rates if name == "fitguard" else tuple(r for r in options.rates if r == 500)
                entry["fixed"] = []
                for rate in rates:
                    say(f"  {name} /{endpoint}: {rate}/s for {options.rate_duration:g} s")
                    entry["fixed"].append(
                        _fixed(server, endpoint, bodies[endpoint], ca=ca, rate=rate, options=options)
                    )
                results[name][endpoint] = entry
        finally:
            server.stop()
    for endpoint in ENDPOINTS:
        ours = results["fitguard"][endpoint]["saturation"]["perSecond"]
        empty = results["empty"][endpoint]["saturation"]["perSecond"]
        results["fitguard"][endpoint]["ratioToEmpty"] = round(ours / empty, 3) if empty else None
    return results
