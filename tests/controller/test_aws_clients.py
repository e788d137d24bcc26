"""controller/aws/clients.py: the three clients of one session, each built when first used, against
moto in server mode."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from controller.aws.clients import DEFAULT_MAX_ATTEMPTS, AwsClients
from tests.awsfixtures import AwsEnvironment


def test_a_client_is_built_at_its_first_use_once_with_the_retry_policy(aws: AwsEnvironment) -> None:
    """From the environment no client exists yet; asking for one service builds that one only, and
    asking again (from several threads at once) gives the same client; each carries the retry
    policy and answers moto."""
    clients = AwsClients.from_environment()
    assert clients.built() == ()
    autoscaling = clients.autoscaling
    assert clients.built() == ("autoscaling",)
    assert autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"] == []
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(clients.ec2)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(seen) == 4 and all(c is seen[0] for c in seen)
    assert clients.built() == ("autoscaling", "ec2")
    assert clients.autoscaling is autoscaling
    assert clients.eks.list_clusters()["clusters"] == []
    assert clients.built() == ("autoscaling", "ec2", "eks")
    assert autoscaling.meta.config.retries["mode"] == "standard"
    assert autoscaling.meta.config.retries["total_max_attempts"] == DEFAULT_MAX_ATTEMPTS


def test_given_clients_are_used_as_they_are_and_a_missing_one_is_an_error() -> None:
    """Clients passed in (tests, a caller's own) are returned as given, None included; with no
    session, a service not given cannot be built and says which."""
    marker = object()
    clients = AwsClients(autoscaling=marker, ec2=None)
    assert (clients.autoscaling, clients.ec2, clients.built()) == (marker, None, ("autoscaling", "ec2"))
    with pytest.raises(RuntimeError, match=r"^no eks client and no session to build one$"):
        _ = clients.eks
