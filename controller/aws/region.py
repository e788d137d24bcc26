"""Which AWS region the controller works in, and where that came from (logged at start).

As cluster-autoscaler's AWS provider does (cloudprovider/aws/aws_sdk_provider.go, getRegion: the
AWS_REGION variable, else the EC2 instance metadata service), plus what the boto3 environment
offers: `--region` first, then AWS_REGION (set by IRSA and EKS Pod Identity), AWS_DEFAULT_REGION
and the shared config file's profile, and last the instance metadata service (IMDSv2 with v1
fallback, one attempt of 1 s unless AWS_METADATA_SERVICE_TIMEOUT / _NUM_ATTEMPTS say otherwise;
AWS_EC2_METADATA_DISABLED=true skips it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import botocore.session
from botocore.exceptions import BotoCoreError
from botocore.utils import IMDSRegionProvider

NO_REGION = "no AWS region: pass --region or set AWS_REGION (the instance metadata service gave none either)"


class NoRegion(ValueError):
    """No source named a region."""


@dataclass(frozen=True)
class Region:
    name: str
    source: str  # "--region", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS config", "instance metadata"


def resolve_region(flag: str = "") -> Region:
    """The region to use, or NoRegion with what to do about it (the environment: os.environ)."""
    env = os.environ
    if flag:
        return Region(flag, "--region")
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if env.get(variable):
            return Region(env[variable], variable)
    session = botocore.session.Session()
    try:
        configured = session.get_config_variable("region")
    except BotoCoreError:  # a broken shared config file: the metadata service may still answer
        configured = None
    if configured:
        return Region(str(configured), "AWS config")
    try:
        found = IMDSRegionProvider(session).provide()
    except BotoCoreError:
        found = None
    if found:
        return Region(str(found), "instance metadata")
    raise NoRegion(NO_REGION)
