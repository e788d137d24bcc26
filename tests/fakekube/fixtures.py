"""pytest fixtures: a running fake apiserver per test, shut down and checked for fake bugs after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import FakeKubeServer

# Short enough that watch tests see bookmarks quickly; the server default is 1 s.
TEST_BOOKMARK_INTERVAL = 0.2


@pytest.fixture
def fake_kube() -> Iterator[FakeKubeServer]:
    """A FakeKubeServer listening on 127.0.0.1 (`.url`, `.api_client()`, `.write_kubeconfig(path)`)."""
    server = FakeKubeServer(bookmark_interval=TEST_BOOKMARK_INTERVAL).start()
    yield server
    server.stop()
    if server.internal_errors:
        pytest.fail("the fake apiserver hit its own bugs:\n" + "\n".join(server.internal_errors))
