"""AWS faults during whole controller cycles (discovery, publish, scaling) against moto in server
mode and the fake API server: throttling and 5xx are retried with backoff, AccessDenied on one call
is reported, and no decision is taken from partial data: a failed page of DescribeAutoScalingGroups
deletes no template and scales nothing; nothing crashes; the next clean cycle does the work once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse

from controller.aws.asgs import AsgGroups
from controller.aws.clients import AwsClients
from controller.run import ControllerOptions, run_once
from controller.scaling import ON, ScalingDriver, ScalingOptions
from tests.awsfixtures import AwsEnvironment, _RawBody, error_response
from tests.controller.test_discovery_aws import ENABLED, asg, launch_template, scratch_pod
from tests.fakekube.server import FakeKubeServer

GROUPS = {"ng-a": 50, "ng-b": 20, "ng-c": 20}  # root volume GiB: only ng-a holds a 30Gi scratch pod
ATTEMPTS = 3
OPTIONS = ControllerOptions(auto_discovery=("asg:tag=k8s.io/cluster-autoscaler/enabled",), page_size=1)


@dataclass
class Faulty:
    """Fails the attempts of one operation whose 1-based index `fail(index)` picks, with an AWS
    error in the service's own wire format (botocore's before-send hook, as tests/awsfixtures.py)."""

    fail: Callable[[int], bool]
    code: str
    status: int
    protocol: str
    namespace: str
    attempts: list[bool] = field(default_factory=list)  # injected or not, per attempt
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        with self._lock:
            inject = self.fail(len(self.attempts) + 1)
            self.attempts.append(inject)
        if not inject:
            return None
        headers, body = error_response(self.protocol, self.code, "injected", self.status, self.namespace)
        return AWSResponse(request.url, self.status, headers, _RawBody(body))


def faulty(client: Any, operation: str, fail: Callable[[int], bool], code: str, status: int) -> Faulty:
    model = client.meta.service_model
    hook = Faulty(fail, code, status, model.protocol, model.metadata.get("xmlNamespace", ""))
    event = f"before-send.{model.service_id.hyphenize()}.{operation}"
    client.meta.events.register(event, hook, unique_id=f"faulty-{operation}-{id(hook)}")
    return hook


@pytest.fixture
def setup(
    aws: AwsEnvironment, fake_kube: FakeKubeServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[AwsClients, ScalingDriver]:
    """Three ASGs at zero without storage tags, and a pending pod only ng-a's real nodes can hold."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", str(ATTEMPTS))  # fewer throttled sleeps than our default 5
    clients = AwsClients.from_environment()
    for name, root in GROUPS.items():
        launch_template(clients.ec2, name, "m5.large", root)
        asg(clients.autoscaling, name, ENABLED)
    fake_kube.create(scratch_pod())
    return clients, ScalingDriver(ScalingOptions(mode=ON), AsgGroups(clients.autoscaling))


def cycle(fake_kube: FakeKubeServer, clients: AwsClients, driver: ScalingDriver) -> dict[str, Any]:
    report = run_once(OPTIONS, clients=clients, api=fake_kube.api_client(), driver=driver)
    return report.to_json()


def desired(aws: AwsEnvironment) -> dict[str, int]:
    """What moto holds (server side), not what a client was told."""
    groups = aws.model_data()["autoscaling"]["FakeAutoScalingGroup"]
    return {g["name"]: g["desired_capacity"] for g in groups}


def templates(fake_kube: FakeKubeServer) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o["spec"] for o in fake_kube.objects("NodeGroupTemplate")}


def count_sets(clients: AwsClients) -> Faulty:
    return faulty(clients.autoscaling, "SetDesiredCapacity", lambda _: False, "", 200)


@pytest.mark.parametrize(
    ("code", "status"), [("Throttling", 400), ("InternalFailure", 500), ("AccessDenied", 403)]
)
def test_a_failed_second_page_of_asgs_deletes_nothing_and_scales_nothing(
    code: str, status: int, aws: AwsEnvironment, fake_kube: FakeKubeServer, setup: Any
) -> None:
    """Page 2 of DescribeAutoScalingGroups fails on every attempt: the cycle reports the error,
    every published template stays as it was (none deleted for a group missing from page 1), no
    SetDesiredCapacity is sent; the next clean cycle scales ng-a once."""
    clients, driver = setup
    published = cycle(
        fake_kube, clients, ScalingDriver(ScalingOptions(mode="plan"), AsgGroups(clients.autoscaling))
    )
    assert published["errors"] == {} and sorted(templates(fake_kube)) == sorted(GROUPS)
    before = templates(fake_kube)
    sets = count_sets(clients)
    pages = faulty(clients.autoscaling, "DescribeAutoScalingGroups", lambda n: n >= 2, code, status)

    report = cycle(fake_kube, clients, driver)

    assert code in report["errors"][""] and report["scaleUps"] == []
    assert templates(fake_kube) == before
    assert sets.attempts == [] and desired(aws) == dict.fromkeys(GROUPS, 0)
    retried = 1 if code == "AccessDenied" else ATTEMPTS  # AccessDenied is not retried
    assert pages.attempts == [False] + [True] * retried
    pages.fail = lambda _: False
    report = cycle(fake_kube, clients, driver)
    assert [s["outcome"] for s in report["scaleUps"]] == ["scaled 0->1"]
    assert desired(aws) == {"ng-a": 1, "ng-b": 0, "ng-c": 0} and sets.attempts == [False]


@pytest.mark.parametrize(("code", "status"), [("Throttling", 400), ("ServiceUnavailable", 503)])
def test_transient_errors_are_retried_within_the_cycle(
    code: str, status: int, aws: AwsEnvironment, fake_kube: FakeKubeServer, setup: Any
) -> None:
    """Two failed attempts on each of page 2 of the ASGs, a launch template read and the scale-up
    itself: botocore's retries absorb them, the cycle is complete and scales ng-a exactly once."""
    clients, driver = setup
    hooks = [
        faulty(clients.autoscaling, "DescribeAutoScalingGroups", lambda n: n in (2, 3), code, status),
        faulty(clients.ec2, "DescribeLaunchTemplateVersions", lambda n: n <= 2, code, status),
        faulty(clients.autoscaling, "SetDesiredCapacity", lambda n: n <= 2, code, status),
    ]
    report = cycle(fake_kube, clients, driver)
    assert report["errors"] == {}
    assert [s["outcome"] for s in report["scaleUps"]] == ["scaled 0->1"]
    assert desired(aws) == {"ng-a": 1, "ng-b": 0, "ng-c": 0}
    assert [hook.attempts.count(True) for hook in hooks] == [2, 2, 2]
    assert hooks[2].attempts == [True, True, False], "one SetDesiredCapacity reached AWS"


def test_access_denied_on_the_only_fitting_groups_launch_template_scales_nothing(
    aws: AwsEnvironment, fake_kube: FakeKubeServer, setup: Any
) -> None:
    """AccessDenied reading ng-a's launch template (the first read: groups are sorted): ng-a has
    no template, the error names the missing permission, nothing is scaled onto a guess; once the
    permission is back the next cycle scales ng-a once."""
    clients, driver = setup
    denied = faulty(clients.ec2, "DescribeLaunchTemplateVersions", lambda n: n == 1, "AccessDenied", 403)
    sets = count_sets(clients)
    report = cycle(fake_kube, clients, driver)
    assert "AccessDenied" in report["errors"]["ng-a"] and "IAM" in report["errors"]["ng-a"]
    assert "ng-a" not in templates(fake_kube) and report["scaleUps"] == []
    assert sets.attempts == [] and desired(aws) == dict.fromkeys(GROUPS, 0)
    assert denied.attempts[0] is True
    report = cycle(fake_kube, clients, driver)
    assert [s["outcome"] for s in report["scaleUps"]] == ["scaled 0->1"] and sets.attempts == [False]


def test_a_scale_up_that_keeps_failing_is_reported_and_done_once_later(
    aws: AwsEnvironment, fake_kube: FakeKubeServer, setup: Any
) -> None:
    """SetDesiredCapacity answers 500 on every attempt of one cycle: the outcome says so and the
    cycle returns; the next cycle scales once (desired 1, not 2), and a third does nothing more."""
    clients, driver = setup
    failing = faulty(
        clients.autoscaling, "SetDesiredCapacity", lambda n: n <= ATTEMPTS, "InternalFailure", 500
    )
    report = cycle(fake_kube, clients, driver)
    assert report["scaleUps"][0]["outcome"].startswith("failed: SetDesiredCapacity: InternalFailure")
    assert desired(aws)["ng-a"] == 0 and failing.attempts == [True] * ATTEMPTS
    assert cycle(fake_kube, clients, driver)["scaleUps"][0]["outcome"] == "scaled 0->1"
    third = cycle(fake_kube, clients, driver)
    assert all(not s["outcome"].startswith("scaled") for s in third["scaleUps"])
    assert desired(aws)["ng-a"] == 1 and failing.attempts.count(False) == 1
