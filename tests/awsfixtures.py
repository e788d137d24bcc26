"""AWS for tests: moto in server mode on loopback, reached by boto3 over HTTP via AWS_ENDPOINT_URL.

- `moto_server` (session): a ThreadedMotoServer on 127.0.0.1, a free port; yields its URL.
- `aws` (function): the boto3 environment pointed at that server, moto's state reset first; gives
  `.url`, `.client(service)` and `.model_data()`.
- `inject_errors(client, operation, code=..., status=..., times=N)`: the first N calls of one
  operation on one client get a real AWS error response, later calls reach moto.

Why the injector exists: moto never throttles, ignores SetDesiredCapacity's HonorCooldown and does
not check the desired capacity against the group's min/max size (moto/autoscaling/models.py,
FakeAutoScalingGroup.set_desired_capacity). Tests reach our handling of Throttling,
ScalingActivityInProgress and ValidationError through this injector, which works on botocore's own
event system (`before-send`), so our code and botocore's retries run unchanged.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
# urllib without proxies: the moto server is on loopback and must be reached directly.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """Start moto on 127.0.0.1 (port 0: the OS picks a free port); yield its URL, stop it after."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@dataclass(frozen=True)
class AwsEnvironment:
    url: str
    region: str = REGION

    def client(self, service: str, **kwargs: Any) -> Any:
        """A boto3 client configured only by the environment, as the controller builds its own."""
        # A new Session each time: boto3's default session would cache credentials across tests.
        return boto3.session.Session().client(service, **kwargs)

    def model_data(self) -> dict[str, Any]:
        """moto's view of its backends (GET /moto-api/data.json): what the server really holds."""
        with _DIRECT.open(f"{self.url}/moto-api/data.json", timeout=30) as response:
            return json.load(response)

    def reset(self) -> None:
        reset_moto(self.url)


def reset_moto(url: str) -> None:
    request = urllib.request.Request(f"{url}/moto-api/reset", method="POST")
    with _DIRECT.open(request, timeout=30) as response:
        response.read()


@pytest.fixture
def aws(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> AwsEnvironment:
    """The standard boto3 environment pointed at moto, with moto's state reset before the test."""
    # Nothing of the developer's own AWS setup (profiles, config files, per-service endpoints) leaks in.
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    # Standard mode: 3 attempts in all, Throttling among the retried errors (botocore/retries/standard.py).
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    reset_moto(moto_server)
    return AwsEnvironment(url=moto_server)


@dataclass(frozen=True)
class SeenCall:
    """One attempt the injector saw: which operation, where it was going, and whether it failed it."""

    operation: str
    url: str
    injected: bool


@dataclass
class ErrorInjection:
    """Fails the first `times` attempts of one operation with an AWS error, then lets calls through."""

    operation_name: str
    code: str
    status: int
    times: int
    message: str
    protocol: str
    xml_namespace: str
    calls: list[SeenCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def injected(self) -> int:
        return sum(call.injected for call in self.calls)

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
        with self._lock:
            inject = self.injected < self.times
            self.calls.append(SeenCall(self.operation_name, request.url, inject))
        if not inject:
            return None  # botocore sends the request to moto
        headers, body = error_response(
            self.protocol, self.code, self.message, self.status, self.xml_namespace
        )
        return AWSResponse(request.url, self.status, headers, _RawBody(body))


def inject_errors(
    client: Any,
    operation_name: str,
    *,
    code: str = "Throttling",
    status: int = 400,
    times: int = 1,
    message: str = "Rate exceeded",
) -> ErrorInjection:
    """Make the next `times` attempts of `operation_name` on `client` fail with `code` and `status`.

    Each retry of botocore is an attempt of its own, so `times=2` with standard retries (3 attempts)
    still succeeds; `injection.calls` records every attempt, injected or not.
    """
    model = client.meta.service_model
    if operation_name not in model.operation_names:
        raise ValueError(f"{model.service_name} has no operation {operation_name!r}")
    injection = ErrorInjection(
        operation_name=operation_name,
        code=code,
        status=status,
        times=times,
        message=message,
        protocol=model.protocol,
        xml_namespace=model.metadata.get("xmlNamespace", ""),
    )
    # botocore emits before-send.<service id, hyphenized>.<Operation> for every attempt and sends
    # the first non-None response instead of the request (botocore/endpoint.py, _do_get_response).
    event = f"before-send.{model.service_id.hyphenize()}.{operation_name}"
    client.meta.events.register(event, injection, unique_id=f"fitguard-inject-{uuid.uuid4()}")
    return injection


def error_response(
    protocol: str, code: str, message: str, status: int, xml_namespace: str = ""
) -> tuple[dict[str, str], bytes]:
    """Headers and body of an AWS error as the service would send them in its wire protocol."""
    request_id = str(uuid.uuid4())
    fault = "Sender" if status < 500 else "Receiver"
    if protocol == "query":
        # awsQuery errors: https://smithy.io/2.0/aws/protocols/aws-query-protocol.html
        body = (
            f'<ErrorResponse xmlns="{escape(xml_namespace)}"><Error><Type>{fault}</Type>'
            f"<Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error>"
            f"<RequestId>{request_id}</RequestId></ErrorResponse>"
        )
        return {"Content-Type": "text/xml", "x-amzn-RequestId": request_id}, body.encode()
    if protocol == "ec2":
        # ec2Query errors: https://smithy.io/2.0/aws/protocols/aws-ec2-query-protocol.html
        body = (
            f"<Response><Errors><Error><Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
            f"</Error></Errors><RequestID>{request_id}</RequestID></Response>"
        )
        return {"Content-Type": "text/xml;charset=UTF-8"}, body.encode()
    if protocol == "rest-json":
        # restJson1 errors carry the code in X-Amzn-Errortype:
        # https://smithy.io/2.0/aws/protocols/aws-restjson1-protocol.html
        headers = {
            "Content-Type": "application/json",
            "x-amzn-ErrorType": code,
            "x-amzn-RequestId": request_id,
        }
        return headers, json.dumps({"message": message}).encode()
    if protocol == "json":
        # awsJson1_x errors carry the code in __type: https://smithy.io/2.0/aws/protocols/aws-json-1_1-protocol.html
        headers = {"Content-Type": "application/x-amz-json-1.1", "x-amzn-RequestId": request_id}
        return headers, json.dumps({"__type": code, "message": message}).encode()
    raise ValueError(f"error injection does not speak the {protocol!r} protocol")


class _RawBody:
    """The raw stream AWSResponse reads its content from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


@dataclass
class InstanceRequirementsFake:
    """EC2 GetInstanceTypesFromInstanceRequirements, which moto does not implement, answered on the
    wire (botocore's `before-send`, as `inject_errors` does) from a fixed catalogue: the types whose
    vCPUs and memory lie in the requested ranges and whose architecture was asked for, in catalogue
    order. `requests` keeps each request's form parameters, as EC2 would have received them."""

    catalogue: list[tuple[str, int, int, str]]  # (type, vCPUs, MiB, architecture)
    requests: list[dict[str, str]] = field(default_factory=list)

    def __call__(self, request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
        params = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
        self.requests.append(params)
        architectures = {v for k, v in params.items() if k.startswith("ArchitectureType.")}

        def within(value: int, name: str) -> bool:
            low = int(params.get(f"InstanceRequirements.{name}.Min", "0"))
            high = params.get(f"InstanceRequirements.{name}.Max")
            return value >= low and (high is None or value <= int(high))

        chosen = [
            name
            for name, vcpu, mib, arch in self.catalogue
            if within(vcpu, "VCpuCount")
            and within(mib, "MemoryMiB")
            and (not architectures or arch in architectures)
        ]
        items = "".join(f"<item><instanceType>{escape(t)}</instanceType></item>" for t in chosen)
        xml = (
            '<GetInstanceTypesFromInstanceRequirementsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
            f"<requestId>{uuid.uuid4()}</requestId><instanceTypeSet>{items}</instanceTypeSet>"
            "</GetInstanceTypesFromInstanceRequirementsResponse>"
        )
        return AWSResponse(
            request.url, 200, {"Content-Type": "text/xml;charset=UTF-8"}, _RawBody(xml.encode())
        )


def fake_instance_requirements(
    ec2: Any, catalogue: list[tuple[str, int, int, str]]
) -> InstanceRequirementsFake:
    """Answer `ec2`'s GetInstanceTypesFromInstanceRequirements calls from `catalogue`."""
    fake = InstanceRequirementsFake(catalogue)
    event = "before-send.ec2.GetInstanceTypesFromInstanceRequirements"
    ec2.meta.events.register(event, fake, unique_id=f"fitguard-requirements-{uuid.uuid4()}")
    return fake
