"""Saturation through wrk (when installed): a Lua script cycles through the review bodies, and its
`done` hook prints the figures as one JSON line we read back. wrk does not verify certificates;
it is only the load, our own generator checks the TLS contract."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

MARK = "FITGUARD-BENCH "

_SCRIPT_HEAD = """
local bodies = {}
"""
_SCRIPT_TAIL = """
local requests = {}
local counter = 0
init = function(args)
  for i, body in ipairs(bodies) do
    requests[i] = wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
  end
  counter = math.random(#requests)
end
request = function()
  counter = counter % #requests + 1
  return requests[counter]
end
done = function(summary, latency, requests)
  local bad = summary.errors.status + summary.errors.connect + summary.errors.read
      + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    '%s{"requests":%d,"micros":%d,"errors":%d,"p50":%d,"p99":%d,"p999":%d,"max":%d}\\n',
    "FITGUARD-BENCH ", summary.requests, summary.duration, bad,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def write_script(path: Path, bodies: list[bytes]) -> Path:
    """A Lua script holding the bodies as long strings (JSON never contains `]==]`)."""
    lines = [_SCRIPT_HEAD]
    for body in bodies:
        text = body.decode()
        if "]==]" in text:
            raise ValueError("a body contains the Lua long-string terminator")
        lines.append(f"bodies[#bodies + 1] = [==[{text}]==]\n")
    lines.append(_SCRIPT_TAIL)
    path.write_text("".join(lines))
    return path


def saturate(url: str, script: Path, duration: float, threads: int, connections: int) -> dict[str, Any]:
    """wrk's figures for `duration` seconds of closed-loop load on `connections` connections."""
    command = [
        "wrk",
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, int(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            raw = json.loads(line[len(MARK) :])
            seconds = raw["micros"] / 1e6
            ok = raw["requests"] - raw["errors"]
            return {
                "tool": "wrk",
                "command": " ".join(command),
                "sent": raw["requests"],
                "ok": ok,
                "failed": raw["errors"],
                "seconds": round(seconds, 3),
                "perSecond": round(ok / seconds, 1) if seconds else 0.0,
                "p50Ms": raw["p50"] / 1000,
                "p99Ms": raw["p99"] / 1000,
                "p999Ms": raw["p999"] / 1000,
                "maxMs": raw["max"] / 1000,
            }
    raise RuntimeError(f"wrk printed no figures (exit {done.returncode}): {done.stderr.strip()[:400]}")
