"""Fixtures every test may use: the fake Kubernetes API server, moto in server mode, TLS files."""

import os

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
