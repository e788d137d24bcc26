"""The label keys Karpenter treats specially.

Upstream: kubernetes-sigs/karpenter `pkg/apis/v1/labels.go` (`WellKnownLabels`, `NormalizedLabels`,
`NodePoolLabelKey`, `CapacityTypeLabelKey`, `NodeRegisteredLabelKey`, `NodeInitializedLabelKey`),
extended by aws/karpenter-provider-aws `pkg/apis/v1/labels.go` `init` (its well-known labels,
`LabelNodeClass`).
"""

from __future__ import annotations

AWS = "karpenter.k8s.aws"
NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
NODECLASS = f"{AWS}/ec2nodeclass"  # NodeClassLabelKey of group karpenter.k8s.aws, kind EC2NodeClass

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
ZONE_ID = "topology.k8s.aws/zone-id"

_CORE = frozenset({NODEPOOL, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE, WINDOWS_BUILD})
_AWS_SUFFIXES = (
    "capacity-reservation-id",
    "capacity-reservation-type",
    "capacity-reservation-interruptible",
    "instance-hypervisor",
    "instance-encryption-in-transit-supported",
    "nitro-sandbox",
    "instance-category",
    "instance-capability-flex",
    "instance-family",
    "instance-generation",
    "instance-size",
    "instance-local-nvme",
    "instance-cpu",
    "instance-cpu-manufacturer",
    "instance-cpu-sustained-clock-speed-mhz",
    "instance-memory",
    "instance-ebs-bandwidth",
    "instance-network-bandwidth",
    "instance-gpu-name",
    "instance-gpu-manufacturer",
    "instance-gpu-count",
    "instance-gpu-memory",
    "instance-accelerator-name",
    "instance-accelerator-manufacturer",
    "instance-accelerator-count",
    "instance-tenancy",
    "placement-group-id",
    "placement-group-partition",
)
# A pod may name these without the NodePool defining them; the instance types and offerings decide
WELL_KNOWN_LABELS = _CORE | frozenset(f"{AWS}/{s}" for s in _AWS_SUFFIXES) | {ZONE_ID}

# Deprecated aliases: a pod's requirement on one is read as a requirement on the stable key
NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    "failure-domain.beta.kubernetes.io/region": REGION,
}


def normalized(key: str) -> str:
    return NORMALIZED_LABELS.get(key, key)
