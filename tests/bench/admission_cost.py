"""What one review costs beyond the empty handler, measured in-process and load-independently: the
benchmark's own review bodies are passed through each Flask app's WSGI callable (no socket, no TLS,
no gunicorn: those are the same for both apps), metrics in prometheus multiprocess mode as served.

    python -m tests.bench.admission_cost [--app fitguard|empty|both] [--reviews N] [--profile]

Prints the process CPU time per review of each app (and their difference, measured in the same
run); with `--repeat N` the two apps alternate N times and each one's least disturbed run counts.
For instruction counts, which do not move with the machine's load, run one app at a time under
callgrind, once with `--reviews 0` and once with N; the difference divided by N is one review:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python -m tests.bench.admission_cost --app fitguard --endpoint validate --reviews 2000
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Environ = dict[str, Any]
ENDPOINTS = ("mutate", "validate")


def environ(path: str, body: bytes) -> Environ:
    """A WSGI environ of the POST gunicorn hands to the app (HTTP/1.1, keep-alive, TLS)."""
    return {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8443",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_HOST": "127.0.0.1:8443",
        "HTTP_CONNECTION": "keep-alive",
        "wsgi.url_scheme": "https",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def _start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
    if not status.startswith("200"):
        raise RuntimeError(f"the benchmark's review was answered {status}")


def drive(app: Callable[..., Iterable[bytes]], path: str, bodies: list[bytes], count: int) -> int:
    """`count` reviews through the WSGI callable, cycling through `bodies`; the bytes answered."""
    answered = 0
    for i in range(count):
        body = bodies[i % len(bodies)]
        for chunk in app(environ(path, body), _start_response):
            answered += len(chunk)
    return answered


def build(name: str, workdir: Path) -> Any:
    if name == "empty":
        from tests.bench.emptyapp import create_empty_app

        return create_empty_app()
    from tests.bench.admission import write_state
    from webhook import cluster
    from webhook.app import create_app
    from webhook.review import WebhookOptions

    view = cluster.from_state_file(write_state(workdir / "state.json"))
    return create_app(view, WebhookOptions())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.admission_cost")
    parser.add_argument("--app", choices=("fitguard", "empty", "both"), default="both")
    parser.add_argument("--endpoint", choices=("mutate", "validate", "both"), default="both")
    parser.add_argument("--reviews", type=int, default=3000, help="reviews per app and endpoint")
    parser.add_argument("--profile", action="store_true", help="cProfile fitguard's reviews")
    parser.add_argument(
        "--repeat", type=int, default=1, help="timed runs per app, alternating; the best counts"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    workdir = Path(tempfile.mkdtemp(prefix="fitguard-cost-"))
    # as webhook.server.serve does before anything imports prometheus_client
    from webhook.server import prepare_metrics_dir

    prepare_metrics_dir(workdir / "metrics")
    from tests.bench import synth

    bodies = {
        "mutate": synth.review_bodies(64, seed=1, deployments=0.0),
        "validate": synth.review_bodies(64, seed=2, deployments=0.3),
    }
    apps = ("fitguard", "empty") if args.app == "both" else (args.app,)
    endpoints = ENDPOINTS if args.endpoint == "both" else (args.endpoint,)
    built = {name: build(name, workdir) for name in apps}
    for app in built.values():  # warm: memo, lazy imports, first-request setup (both endpoints,
        for endpoint in ENDPOINTS:  # so that one `--reviews 0` run is the baseline of either)
            drive(app, f"/{endpoint}", bodies[endpoint], len(bodies[endpoint]))
    if args.reviews == 0:
        return 0
    cpu: dict[tuple[str, str], float] = {}
    for endpoint in endpoints:
        for name, app in built.items():
            if args.profile and name == "fitguard":
                profiler = cProfile.Profile()
                profiler.runcall(drive, app, f"/{endpoint}", bodies[endpoint], args.reviews)
                out = io.StringIO()
                stats = pstats.Stats(profiler, stream=out).sort_stats("tottime")
                stats.print_stats(35)
                print(f"== cProfile, fitguard /{endpoint}, {args.reviews} reviews\n{out.getvalue()}")
        timed = {name: app for name, app in built.items() if not (args.profile and name == "fitguard")}
        runs: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(args.repeat):  # the apps alternate, so that a burst of load hits both alike
            for name, app in timed.items():
                started = time.process_time()
                drive(app, f"/{endpoint}", bodies[endpoint], args.reviews)
                runs[name].append((time.process_time() - started) / args.reviews)
        for name, seconds in runs.items():
            cpu[name, endpoint] = min(seconds)  # the run least disturbed by other processes
            per_review = cpu[name, endpoint] * 1e6
            print(f"{name} /{endpoint}: {per_review:.1f} us CPU per review (best of {args.repeat})")
        if ("fitguard", endpoint) in cpu and ("empty", endpoint) in cpu:
            extra = cpu["fitguard", endpoint] - cpu["empty", endpoint]
            print(f"/{endpoint}: fitguard costs {extra * 1e6:.1f} us more per review than the empty app")
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
