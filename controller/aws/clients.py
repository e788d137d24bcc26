"""boto3 clients built from the standard environment (AWS_ENDPOINT_URL, AWS_REGION, credentials),
with the one retry policy of the controller, and the classification of AWS errors."""

from __future__ import annotations

import os
from dataclasses import dataclass
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


@dataclass(frozen=True)
class AwsClients:
    autoscaling: Any
    ec2: Any
    eks: Any

    @classmethod
    def from_environment(cls, region: str | None = None) -> AwsClients:
        """One session, three clients; the endpoint and credentials come from the environment."""
        session = boto3.session.Session(region_name=region or None)
        config = retry_config()
        return cls(
            autoscaling=session.client("autoscaling", config=config),
            ec2=session.client("ec2", config=config),
            eks=session.client("eks", config=config),
        )


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
