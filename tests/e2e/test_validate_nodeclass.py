"""POST /validate for real (gunicorn over TLS, started as the manifests start it, its caches
reading the fake API server, as tests/e2e/test_validate.py) in a Karpenter-only cluster: an
EC2NodeClass changed after its NodePool's template was published leaves that NodePool unjudged
until the controller publishes again, instead of a denial from the stale template."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capacity.karpenter.published import PROVIDER, published
from capacity.template import NodeGroupTemplate
from tests import objects
from tests.capacity.karpenter.test_published import NODECLASS, POOL, SETTINGS
from tests.e2e.test_validate import Start, message, start, until_allowed, validate  # noqa: F401
from tests.fakekube.server import FakeKubeServer
from tests.webhook_server import metric_sum

pytestmark = pytest.mark.slow

UNCHECKED = "fitguard_admission_unchecked_total"
ROOT_100GI = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}]


def karpenter_only_cluster(fake_kube: FakeKubeServer) -> None:
    """The default namespace's ServiceAccount, the NodePool `general` (m5.large and t3.large, a
    taint), its EC2NodeClass `default` (AL2023, no block device mappings: 17Gi of
    ephemeral-storage) and the template the controller published from them; no node group, no node."""
    record, _ = published(POOL, NODECLASS, SETTINGS, {}, lambda offer: {})
    fake_kube.apply(NodeGroupTemplate("general", provider=PROVIDER, karpenter=record).to_object())
    fake_kube.apply({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **copy.deepcopy(POOL)})
    fake_kube.apply(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": "default"},
            **copy.deepcopy(NODECLASS),
        }
    )
    fake_kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"namespace": "default", "name": "default"},
        }
    )


def scratch_pod() -> dict[str, Any]:
    """A pod asking 50Gi of ephemeral-storage, tolerating the NodePool's taint."""
    tolerations = [{"key": "dedicated", "operator": "Exists"}]
    return objects.pod("scratch", {"ephemeral-storage": "50Gi"}, image="busybox", tolerations=tolerations)


def test_a_changed_ec2nodeclass_leaves_its_nodepool_unjudged_until_republished(
    fake_kube: FakeKubeServer,
    start: Start,  # noqa: F811
) -> None:
    """Denied by the published template (17Gi) naming the NodePool; once the EC2NodeClass is given
    a 100Gi root volume the watch carries it and the same pod is admitted unjudged (audit
    annotation `abstained: karpenter-nodepools`, counted); with the class as it was, denied again."""
    karpenter_only_cluster(fake_kube)
    server = start()
    pod = scratch_pod()
    denied = validate(server, pod)
    assert denied["allowed"] is False
    assert "NodePool general: no allowed instance type offers enough ephemeral-storage" in message(denied)
    [nodeclass] = fake_kube.objects("EC2NodeClass")
    fake_kube.apply({**nodeclass, "spec": {**NODECLASS["spec"], "blockDeviceMappings": ROOT_100GI}})
    unjudged = until_allowed(server, pod, True)
    assert unjudged["auditAnnotations"] == {"abstained": "karpenter-nodepools"}
    assert metric_sum(server, UNCHECKED, 'why="karpenter-nodepools"') == 1
    [nodeclass] = fake_kube.objects("EC2NodeClass")
    fake_kube.apply({**nodeclass, "spec": copy.deepcopy(NODECLASS["spec"])})
    assert "NodePool general" in message(until_allowed(server, pod, False))
