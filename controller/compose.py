"""The controller's composition root: what one process builds once and hands to every cycle.

- The AWS clients: one boto3 session in the region `--region` resolved (controller/aws/region.py),
  three clients sharing the one botocore Config of controller/aws/clients.py (retry mode and
  attempts); discovery, tag sync, the scaling driver and the EC2 verifier all use these.
- The Kubernetes client: in-cluster, else the kubeconfig.

`fitguard controller` builds these in controller/cli.py (`--once`) or controller/loop.py (the
long-running loop) through the functions here, and nothing else creates a client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.aws.clients import AwsClients
    from kube.client import KubeClient


def aws_clients(region: str) -> AwsClients:
    """The process's AWS clients in `region` ("" lets boto3's environment choose, as before
    controller/aws/region.py resolved it)."""
    from controller.aws.clients import AwsClients

    return AwsClients.from_environment(region or None)


def kube_client(kubeconfig: str | None, context: str | None = None) -> KubeClient:
    """The process's Kubernetes client: in-cluster, else the kubeconfig (at `context`)."""
    from kube.client import KubeClient, load_api_client

    return KubeClient(load_api_client(kubeconfig, context))
