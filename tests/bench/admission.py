"""Admission over TLS on loopback: `python -m webhook` (gunicorn, gthread) loaded with 200
SecurityGroupPolicies and 500 node group templates, and the empty Flask app under the same gunicorn
settings; saturation throughput and fixed-rate latency of /mutate and /validate, from separate
processes.

Two modes. `pinned` (the default where the machine has two CPUs or more): both servers run with one
gunicorn worker, their processes on one CPU and the load generator on the others, and saturation
runs alternate between the empty app and fitguard round after round, so that each round's ratio
compares two runs made under the same conditions; then latency at fixed rates. `unpinned`: the
first round's way, every process free to run anywhere, one saturation run per app.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench import loadgen, synth, wrkload
from tests.tlsfixtures import make_tls_files

ENDPOINTS = ("mutate", "validate")
MODES = ("pinned", "unpinned")


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
    mode: str = "pinned"  # pinned or unpinned; see the module's docstring
    rounds: int = 5  # pinned: alternating saturation rounds (empty, fitguard) per endpoint
    round_duration: float = 4.0  # pinned: seconds of each saturation run of a round


def default_mode() -> str:
    """pinned where the server and the load can each have a CPU of their own."""
    return "pinned" if len(os.sched_getaffinity(0)) >= 2 else "unpinned"


def split_cpus(available: set[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(server CPUs, load CPUs): the server gets one CPU (the highest numbered, which usually takes
    fewer interrupts than CPU 0), the load generator every other one."""
    if len(available) < 2:
        raise ValueError("pinning needs two CPUs or more")
    ordered = sorted(available)
    return (ordered[-1],), tuple(ordered[:-1])


def process_tree_affinity(pid: int) -> dict[str, list[int]]:
    """The CPUs each process of a server may run on (the master and its workers), as the kernel
    has them: proof that the pinning took."""
    found: dict[str, list[int]] = {}
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            found[str(current)] = sorted(os.sched_getaffinity(current))
            with open(f"/proc/{current}/task/{current}/children") as children:
                pending += [int(child) for child in children.read().split()]
        except OSError:
            continue  # gone, or no children file on this kernel
    return found


class Server:
    """A gunicorn server in its own process on an inherited loopback socket (no port race)."""

    def __init__(self, name: str, module_args: list[str], log: Path, cpus: tuple[int, ...] = ()) -> None:
        self.name = name
        self.cpus = cpus
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
        # A child inherits the affinity of its parent, and gunicorn's workers that of the master:
        # this process takes the server's CPUs for as long as it takes to start the master.
        own = os.sched_getaffinity(0)
        if cpus:
            os.sched_setaffinity(0, cpus)
        try:
            self.process = subprocess.Popen(
                self.command, pass_fds=fds, stdout=self._log, stderr=subprocess.STDOUT
            )
        finally:
            os.sched_setaffinity(0, own)

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
    duration: float | None = None,
    load_cpus: tuple[int, ...] = (),
) -> dict[str, Any]:
    seconds = options.duration if duration is None else duration
    if script is not None:
        url = f"https://127.0.0.1:{server.port}/{endpoint}"
        # wrk inherits this process's affinity: the load CPUs when pinned
        threads = min(options.wrk_threads, len(load_cpus)) if load_cpus else options.wrk_threads
        figures = wrkload.saturate(url, script, seconds, threads, options.wrk_connections)
        return {**figures, "cpus": list(load_cpus)} if load_cpus else figures
    target = loadgen.Target("127.0.0.1", server.port, f"/{endpoint}", ca)
    result = loadgen.run(target, bodies, options.processes, seconds, cpus=load_cpus)
    return {"tool": f"python ({options.processes} processes)", **loadgen.summary(result)}


def _fixed(
    server: Server,
    endpoint: str,
    bodies: list[bytes],
    *,
    ca: str,
    rate: int,
    options: AdmissionOptions,
    load_cpus: tuple[int, ...] = (),
) -> dict[str, Any]:
    target = loadgen.Target("127.0.0.1", server.port, f"/{endpoint}", ca)
    processes = max(2, min(options.processes, rate // 60))  # each process stays well under its loop rate
    result = loadgen.run(target, bodies, processes, options.rate_duration, rate=rate, cpus=load_cpus)
    return {"rate": rate, "processes": processes, **loadgen.summary(result)}


@dataclass(frozen=True)
class Setup:
    """What both modes share: certificates, the state file, the bodies and the server commands."""

    ca: str
    bodies: dict[str, list[bytes]]
    scripts: dict[str, Path | None]
    servers: dict[str, list[str]]
    results: dict[str, Any]


def _setup(options: AdmissionOptions, workdir: Path, workers: int) -> Setup:
    tls = make_tls_files(workdir / "tls")
    state = write_state(workdir / "state.json")
    bodies = {
        "mutate": synth.review_bodies(options.bodies, seed=1, deployments=0.0),
        "validate": synth.review_bodies(options.bodies, seed=2, deployments=0.3),
    }
    use_wrk = options.loadgen == "wrk" or (options.loadgen == "auto" and wrkload.available())
    scripts: dict[str, Path | None] = {
        e: wrkload.write_script(workdir / f"{e}.lua", b) if use_wrk else None for e, b in bodies.items()
    }
    common = ["--tls-cert", str(tls.cert_path), "--tls-key", str(tls.key_path), "--workers", str(workers)]
    common += ["--threads", str(options.threads), "--log-level", "warning"]
    servers = {
        "empty": ["tests.bench.emptyapp", *common],
        "fitguard": ["webhook", *common, "--state", str(state)],
    }
    sizes = [len(b) for group in bodies.values() for b in group]
    results: dict[str, Any] = {
        "mode": options.mode,
        "reviewBytes": {"min": min(sizes), "max": max(sizes), "mean": sum(sizes) // len(sizes)},
        "stateObjects": {
            "securityGroupPolicies": 200,
            "namespaces": synth.NAMESPACES,
            "nodeGroupTemplates": 500,
        },
        "workers": workers,
        "threads": options.threads,
        "saturationTool": "wrk" if use_wrk else "python",
    }
    return Setup(str(tls.ca_path), bodies, scripts, servers, results)


def run(options: AdmissionOptions, workdir: Path, say: Any = print) -> dict[str, Any]:
    if options.mode == "pinned":
        return run_pinned(options, workdir, say)
    return run_unpinned(options, workdir, say)


def spread(values: list[float]) -> dict[str, float]:
    """The median of per-round figures with their min and max."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run_pinned(options: AdmissionOptions, workdir: Path, say: Any = print) -> dict[str, Any]:
    """Both servers up at once with one worker each, pinned to one CPU; the load on the others.
    Each round runs the empty app then fitguard on each endpoint, so a round's ratio compares runs
    made seconds apart; the median ratio over the rounds and its spread are reported."""
    server_cpus, load_cpus = split_cpus(os.sched_getaffinity(0))
    setup = _setup(options, workdir, workers=1)
    results = setup.results
    results["serverCpus"], results["loadCpus"] = list(server_cpus), list(load_cpus)
    results["rounds"], results["roundSeconds"] = options.rounds, options.round_duration
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, load_cpus)  # this process and every load generator it starts
    servers: dict[str, Server] = {}
    try:
        for name, args in setup.servers.items():
            servers[name] = Server(name, args, workdir / f"{name}.log", cpus=server_cpus)
        for name, server in servers.items():
            server.wait_ready(setup.ca)
            results[name] = {
                "command": " ".join(["python", "-m", *setup.servers[name], "--bind", "fd://N"]),
                "affinity": process_tree_affinity(server.process.pid),
            }
        per_round: dict[str, dict[str, list[dict[str, Any]]]] = {
            e: {"empty": [], "fitguard": []} for e in ENDPOINTS
        }
        for number in range(1, options.rounds + 1):
            for endpoint in ENDPOINTS:
                for name in ("empty", "fitguard"):
                    figures = _saturate(
                        options,
                        servers[name],
                        endpoint,
                        setup.bodies[endpoint],
                        ca=setup.ca,
                        script=setup.scripts[endpoint],
                        duration=options.round_duration,
                        load_cpus=load_cpus,
                    )
                    per_round[endpoint][name].append(figures)
                ours, empty = (per_round[endpoint][n][-1]["perSecond"] for n in ("fitguard", "empty"))
                say(f"  round {number} /{endpoint}: empty {empty:,.0f}/s, fitguard {ours:,.0f}/s")
        for endpoint in ENDPOINTS:
            rounds = per_round[endpoint]
            ratios = [
                ours["perSecond"] / empty["perSecond"] if empty["perSecond"] else 0.0
                for ours, empty in zip(rounds["fitguard"], rounds["empty"], strict=True)
            ]
            for name in ("empty", "fitguard"):
                results[name][endpoint] = {
                    "rounds": rounds[name],
                    "perSecond": spread([r["perSecond"] for r in rounds[name]]),
                    "fixed": [],
                }
            results["fitguard"][endpoint]["ratioToEmpty"] = {
                **{k: round(v, 3) for k, v in spread(ratios).items()},
                "perRound": [round(r, 3) for r in ratios],
            }
        for endpoint in ENDPOINTS:
            for name in ("empty", "fitguard"):
                rates = options.rates if name == "fitguard" else tuple(r for r in options.rates if r == 500)
                for rate in rates:
                    say(f"  {name} /{endpoint}: {rate}/s for {options.rate_duration:g} s")
                    results[name][endpoint]["fixed"].append(
                        _fixed(
                            servers[name],
                            endpoint,
                            setup.bodies[endpoint],
                            ca=setup.ca,
                            rate=rate,
                            options=options,
                            load_cpus=load_cpus,
                        )
                    )
    finally:
        for server in servers.values():
            server.stop()
        os.sched_setaffinity(0, own)
    return results


def run_unpinned(options: AdmissionOptions, workdir: Path, say: Any = print) -> dict[str, Any]:
    """The first round's way: one server at a time, `options.workers` workers, nothing pinned."""
    setup = _setup(options, workdir, workers=options.workers)
    results, bodies, ca = setup.results, setup.bodies, setup.ca
    for name, args in setup.servers.items():
        server = Server(name, args, workdir / f"{name}.log")
        try:
            server.wait_ready(ca)
            results[name] = {"command": " ".join(["python", "-m", *args, "--bind", "fd://N"])}
            for endpoint in ENDPOINTS:
                say(f"  {name} /{endpoint}: saturation {options.duration:g} s")
                entry: dict[str, Any] = {
                    "saturation": _saturate(
                        options, server, endpoint, bodies[endpoint], ca=ca, script=setup.scripts[endpoint]
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
