"""Fixtures every test may use: the fake Kubernetes API server, moto in server mode, TLS files."""

import logging
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.awsfixtures import aws, moto_server  # noqa: F401
from tests.fakekube.fixtures import fake_kube  # noqa: F401
from tests.tlsfixtures import tls_files  # noqa: F401

# `make fuzz` runs the property tests for as many examples as FUZZ_EXAMPLES asks.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "fuzz",
    deadline=None,
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100000")),
    suppress_health_check=list(HealthCheck),
)
# `make mutation` runs each mutant's tests many times over: fewer examples per property there.
settings.register_profile(
    "mutation", deadline=None, max_examples=20, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A command run in-process (`fitguard.cli.main`) replaces the root logger's handlers with one on
    the sys.stderr of that moment, which pytest closes after the test; restoring them keeps a later
    test's threads from logging into a closed stream."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def paged_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches read with paged lists, through client-go's switch (KUBE_FEATURE_WatchListClient): for
    tests that count, or arm faults on, the list requests of the paged path (a page held, page two
    failing, a 429 on a list, the relist after a 410). The same guarantees of streamed lists are
    tests/kube/test_reflector_stream.py's."""
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "false")
