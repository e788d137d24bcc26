"""What reading one unpaged pod list body costs (issue 32): the whole body read, then decoded
(the reflector before kube/liststream.py), against the body read in 64 KB chunks with each pod
decoded as it completes. Not part of `make bench`.

    .venv/bin/python -m tests.bench.unpaged_list --pods 150000

The body (the benchmark's pods, `tests/bench/bigcluster.py`, about 5.5 KB each) is written to a
file first; each way runs in a child process that reads that file as the reflector reads a socket,
decodes with kube/podwire.py and projects into the controller's pod records. Printed per way: CPU
seconds (user + system) of the read, decode and projection, MB/s of body, and the child's peak RSS
above what it had before reading (VmHWM), as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

_CHUNK = 64 * 1024


def _write_body(path: str, pods: int) -> int:
    from tests.bench import bigcluster

    sample = bigcluster.render(min(pods, 3000), 0).pods
    with open(path, "wb") as out:
        out.write(b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1000"},"items":[')
        for i in range(pods):
            j = i % len(sample)
            pod = sample[j].replace(b'"name":"pod-%07d"' % j, b'"name":"pod-%07d"' % i, 1)  # the store's key
            out.write(pod if i == 0 else b"," + pod)
        out.write(b"]}")
    return os.path.getsize(path)


def _vm_hwm_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb", buffering=0) as body:
        while chunk := body.read(_CHUNK):
            yield chunk


def _child(way: str, path: str) -> dict[str, Any]:
    from capacity.records import project_pod
    from kube import podwire
    from kube.liststream import ListReader
    from kube.store import Store, project_page

    store: Store[Any] = Store("pods", project_pod)
    fresh: dict[str, dict[str, Any]] = {}
    before = _vm_hwm_kb()
    cpu = time.process_time()
    if way == "whole":
        data = b"".join(_chunks(path))  # response.read(): the whole body, then the whole page
        page = podwire.decode_page(data)
        del data
        project_page(store.project, page.get("items") or (), fresh)
        del page
    else:
        reader = ListReader(_chunks(path), podwire.decode_pod)
        project_page(store.project, reader.items(), fresh)
    cpu = time.process_time() - cpu
    records = sum(len(names) for names in fresh.values())
    return {
        "way": way,
        "cpu_s": round(cpu, 2),
        "peak_rss_mb": round((_vm_hwm_kb() - before) / 1024, 1),
        "records": records,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(*args.child)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pods.json")
        size = _write_body(path, args.pods)
        print(json.dumps({"pods": args.pods, "body_mb": round(size / 1e6, 1)}))
        for way in ("whole", "stream") * args.runs:
            out = subprocess.run(
                [sys.executable, "-m", "tests.bench.unpaged_list", "--child", way, path],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            result = json.loads(out)
            result["mb_per_s"] = round(size / 1e6 / result["cpu_s"], 1)
            print(json.dumps(result))


if __name__ == "__main__":
    main()
