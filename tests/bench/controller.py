"""The controller at scale: for each pod count, render the cluster, serve it pre-rendered, and run
the probe (tests/bench/controller_probe.py) in its own spawned process. Also, once, the cost of the
same sync through tests/fakekube at a small size, to show why the big runs do not use it."""

from __future__ import annotations

import gc
import multiprocessing
import time
from typing import Any

from tests.bench import apiserve, baselines, bigcluster
from tests.bench.controller_probe import probe

CONFIG_MAP = (
    b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"amazon-vpc-cni","namespace":"kube-system"},'
    b'"data":{"branch-eni-cooldown":"60"}}'
)
CONFIG_MAP_PATH = "/api/v1/namespaces/kube-system/configmaps/amazon-vpc-cni"


# What a pod's status updates that the books do not read look like (the second batch of watch
# events; the figure is the first): of every four, two readiness flips (Ready and
# ContainersReady turned False, a container not ready), one restart (restartCount, lastState
# terminated, running again since now), one annotation the books do not read.
QUIET_CHANGES = ("readiness", "readiness", "restart", "annotation")


def _quiet_change(pod: dict[str, Any], change: str, now: str) -> None:
    status = pod["status"]
    if change == "readiness":
        for condition in status["conditions"]:
            if condition["type"] in ("Ready", "ContainersReady"):
                condition.update(status="False", lastTransitionTime=now)
        status["containerStatuses"][0]["ready"] = False
    elif change == "restart":
        container = status["containerStatuses"][0]
        container["restartCount"] += 1
        container["lastState"] = {
            "terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": now, "finishedAt": now}
        }
        container["state"] = {"running": {"startedAt": now}}
    else:
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = now


def quiet_events(pods: list[bytes], books_events: list[bytes], count: int, first_rv: int) -> list[bytes]:
    """`count` MODIFIED events of running pods that neither the books' events touch nor each other
    (QUIET_CHANGES in turn): status updates that change nothing a pod record reads."""
    import json
    from datetime import UTC, datetime

    touched = {json.loads(line)["object"]["metadata"]["name"] for line in books_events}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines: list[bytes] = []
    for raw in pods:
        if len(lines) >= count:
            break
        pod = json.loads(raw)
        if pod["status"].get("phase") != "Running" or pod["metadata"]["name"] in touched:
            continue
        _quiet_change(pod, QUIET_CHANGES[len(lines) % len(QUIET_CHANGES)], now)
        pod["metadata"]["resourceVersion"] = str(first_rv + len(lines))
        obj = json.dumps(pod, separators=(",", ":")).encode()
        lines.append(b'{"type":"MODIFIED","object":' + obj + b"}")
    return lines


def _run_probe(
    url: str, events: int, release: Any, watch_list: bool | None = None, quiet: int = 0
) -> dict[str, Any]:
    """The probe in a spawned process; `release()` is called once it has synced."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(
        target=probe,
        args=(url, events, child),
        kwargs={"watch_list": watch_list, "quiet_events": quiet},
        name="bench-controller",
    )
    process.start()
    try:
        if not parent.poll(900):
            raise RuntimeError("the controller probe did not sync within 900 s")
        _, figures = parent.recv()
        release()
        if not parent.poll(900):
            raise RuntimeError("the controller probe did not finish within 900 s")
        _, figures = parent.recv()
        return figures
    finally:
        process.join(30)
        if process.is_alive():
            process.kill()


def at_scale(pods: int, events: int, *, streaming: bool = False) -> dict[str, Any]:
    """One scale, the initial state read as paged lists, or `streaming` (WatchList watches)."""
    started = time.perf_counter()
    rendered = bigcluster.render(pods, events)
    api = apiserve.PrerenderedApi()
    rv = rendered.resource_version
    api.pages["/api/v1/pods"] = apiserve.render_list("PodList", rendered.pods, 500, rv)
    api.pages["/api/v1/nodes"] = apiserve.render_list("NodeList", rendered.nodes, 500, rv)
    api.objects[CONFIG_MAP_PATH] = CONFIG_MAP
    quiet = quiet_events(rendered.pods, rendered.events, events, rendered.resource_version + 2 * events)
    api.watch_lines["/api/v1/pods"] = rendered.events + quiet
    if streaming:
        api.items["/api/v1/pods"] = ("Pod", rendered.pods, rv)
        api.items["/api/v1/nodes"] = ("Node", rendered.nodes, rv)
    render_seconds = time.perf_counter() - started
    pod_bytes, node_count = rendered.pod_bytes, len(rendered.nodes)
    lines = list(rendered.events)  # the server hands its copy out once
    del rendered
    url = api.start()
    try:
        figures = _run_probe(
            url, events, lambda: api.release("/api/v1/pods"), watch_list=streaming, quiet=len(quiet)
        )
    finally:
        api.stop()
    # the yardstick, on the same bytes, once the probe has ended (nothing else runs meanwhile)
    figures.update(baselines.decode_costs(api.pages["/api/v1/pods"], api.pages["/api/v1/nodes"], lines))
    if quiet:
        figures["quietEventJsonLoadsMs"] = baselines.line_cost(quiet)
    figures.update(baselines.ratios(figures))
    figures["quietEventsSent"] = len(quiet)
    figures.update(
        podsRendered=pods,
        nodesRendered=node_count,
        meanPodJsonBytes=pod_bytes // max(1, pods),
        listBytes=pod_bytes,
        eventsSent=events,
        renderSeconds=render_seconds,
        lists="streamed (WatchList)" if streaming else "paged",
        streamsServed=api.streams_served,
        server="pre-rendered (tests/bench/apiserve.py)",
    )
    gc.collect()
    return figures


def through_fakekube(pods: int) -> dict[str, Any]:
    """The same sync against tests/fakekube (no watch events): what the fake costs per page."""
    import json

    from tests.fakekube import FakeKubeServer

    rendered = bigcluster.render(pods, 0)
    server = FakeKubeServer(history_size=10)
    started = time.perf_counter()
    for raw in rendered.nodes:
        server.create(json.loads(raw))
    for raw in rendered.pods:
        server.create(json.loads(raw))
    load_seconds = time.perf_counter() - started
    server.start()
    try:
        figures = _run_probe(server.url, 0, lambda: None)
    finally:
        server.stop()
    pages = -(-pods // 500) + -(-len(rendered.nodes) // 500)
    return {
        "pods": pods,
        "nodes": len(rendered.nodes),
        "loadSeconds": load_seconds,
        "syncSeconds": figures["syncSeconds"],
        "syncCpuSecondsOfController": figures["syncCpuSeconds"],
        "listPages": pages,
        "server": "tests/fakekube FakeKubeServer",
    }
