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


def _run_probe(url: str, events: int, release: Any, watch_list: bool | None = None) -> dict[str, Any]:
    """The probe in a spawned process; `release()` is called once it has synced."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(
        target=probe,
        args=(url, events, child),
        kwargs={"watch_list": watch_list},
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
    api.watch_lines["/api/v1/pods"] = rendered.events
    if streaming:
        api.items["/api/v1/pods"] = ("Pod", rendered.pods, rv)
        api.items["/api/v1/nodes"] = ("Node", rendered.nodes, rv)
    render_seconds = time.perf_counter() - started
    pod_bytes, node_count = rendered.pod_bytes, len(rendered.nodes)
    lines = list(rendered.events)  # the server hands its copy out once
    del rendered
    url = api.start()
    try:
        figures = _run_probe(url, events, lambda: api.release("/api/v1/pods"), watch_list=streaming)
    finally:
        api.stop()
    # the yardstick, on the same bytes, once the probe has ended (nothing else runs meanwhile)
    figures.update(baselines.decode_costs(api.pages["/api/v1/pods"], api.pages["/api/v1/nodes"], lines))
    figures.update(baselines.ratios(figures))
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
