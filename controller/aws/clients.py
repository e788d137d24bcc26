"""boto3 clients built from the standard environment (AWS_ENDPOINT_URL, AWS_REGION, credentials),
with the one retry policy of the controller, and the classification of AWS errors."""

from __future__ import annotations

import os
import threading
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from prometheus_client import Counter

# botocore's standard mode retries throttling and transient errors with exponential backoff and
# jitter (botocore/retries/standard.py); adaptive adds client-side rate limiting on top.
DEFAULT_RETRY_MODE = "standard"
DEFAULT_MAX_ATTEMPTS = 5
ACCESS_DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException"}
)


def retry_config() -> Config:
    """The retry policy, in one place: AWS_RETRY_MODE / AWS_MAX_ATTEMPTS when set, else ours."""
    mode = os.environ.get("AWS_RETRY_MODE") or DEFAULT_RETRY_MODE
    if mode not in ("standard", "adaptive"):
        mode = DEFAULT_RETRY_MODE  # legacy mode does not retry throttling of every service
    try:
        attempts = int(os.environ.get("AWS_MAX_ATTEMPTS") or DEFAULT_MAX_ATTEMPTS)
    except ValueError:
        attempts = DEFAULT_MAX_ATTEMPTS
    return Config(retries={"mode": mode, "total_max_attempts": max(attempts, 1)}, user_agent_extra="fitguard")


SERVICES = ("autoscaling", "ec2", "eks")
_UNSET: Any = object()


class AwsClients:
    """The three clients of one session, each built when first used: a service's model is several
    MB of Python objects (ec2's about 15 MB, the endpoint data shared by all about 8 MB), and a
    controller that never calls a service (EKS without managed node groups, EC2 with every instance
    type in the facts table) never loads it. Built once, a client lives for the process (botocore
    clients are thread-safe; every cycle, the scaling driver and the verifier share them)."""

    def __init__(
        self,
        autoscaling: Any = _UNSET,
        ec2: Any = _UNSET,
        eks: Any = _UNSET,
        *,
        session: Any = None,
    ) -> None:
        self._session = session
        self._lock = threading.Lock()
        self._built: dict[str, Any] = {
            name: client
            for name, client in (("autoscaling", autoscaling), ("ec2", ec2), ("eks", eks))
            if client is not _UNSET
        }

    @classmethod
    def from_environment(cls, region: str | None = None) -> AwsClients:
        """One session; the endpoint and credentials come from the environment."""
        return cls(session=boto3.session.Session(region_name=region or None))

    def _client(self, service: str) -> Any:
        with self._lock:
            if service not in self._built:
                if self._session is None:
                    raise RuntimeError(f"no {service} client and no session to build one")
                self._built[service] = self._session.client(service, config=retry_config())
            return self._built[service]

    @property
    def autoscaling(self) -> Any:
        return self._client("autoscaling")

    @property
    def ec2(self) -> Any:
        return self._client("ec2")

    @property
    def eks(self) -> Any:
        return self._client("eks")

    def built(self) -> tuple[str, ...]:
        """The services whose client exists now."""
        with self._lock:
            return tuple(s for s in SERVICES if s in self._built)


def error_code(err: Exception) -> str:
    if isinstance(err, ClientError):
        return str(err.response.get("Error", {}).get("Code") or "ClientError")
    return type(err).__name__


# Every AWS error the controller acts on passes through describe_error (after botocore's retries).
AWS_ERRORS_TOTAL = Counter(
    "fitguard_aws_errors_total",
    "AWS calls that failed after botocore's retries, by operation and error code.",
    ["operation", "code"],
)


def describe_error(operation: str, err: Exception) -> str:
    """A one-line reason for a group's template: the operation, the AWS code and its message.
    Counts the error in fitguard_aws_errors_total."""
    AWS_ERRORS_TOTAL.labels(operation, error_code(err)).inc()
    if isinstance(err, ClientError):
        message = str(err.response.get("Error", {}).get("Message") or "")
        code = error_code(err)
        hint = " (the controller's IAM role lacks this permission)" if code in ACCESS_DENIED_CODES else ""
        return f"{operation}: {code}{hint}: {message}".rstrip(": ")
    return f"{operation}: {err}"


AWS_ERRORS = (ClientError, BotoCoreError)
