"""What the reflector tests read back from the fake API server: a minimal pod, and every pods
request's whole query with the fault that answered it."""

from __future__ import annotations

from typing import Any

from tests import objects
from tests.fakekube.server import FakeKubeServer

WATCH_TIMEOUT = 30.0  # the reflectors' watch timeout in these tests; client-go asks for 1 to 2 times it


def pod(name: str) -> dict[str, Any]:
    return objects.pod(name, container="app", image="busybox")


def pod_requests(fake: FakeKubeServer) -> list[tuple[dict[str, str], str | None]]:
    """Every pods request's whole query (the random timeoutSeconds checked and left out) and the
    fault that answered it."""
    seen = []
    for request in fake.requests.find("GET", "/api/v1/pods"):
        query = dict(request.query)
        timeout = query.pop("timeoutSeconds", None)
        if request.watch:
            assert timeout is not None and WATCH_TIMEOUT <= int(timeout) <= 2 * WATCH_TIMEOUT
        else:
            assert timeout is None
        seen.append((query, request.fault))
    return seen
