"""EKS Auto Mode: NodePools whose class is an `eks.amazonaws.com` NodeClass.

Auto Mode runs Karpenter inside EKS; its capacity code is not published. What the EKS user guide
(awsdocs/amazon-eks-user-guide, `latest/ug/automode/create-node-class.adoc` at
0026c9df3e1fde9368f7832c14bc9b0e6c64285a, `automode-learn-instances.adoc` at
06faff1411463d22284cc02e7602daf4c19f9204, `latest/ug/networking/security-groups-for-pods`) states,
and fitguard therefore models:

- max pods: "EKS limits the maximum number of pods on a node to 110 ... applied after the existing
  max pods calculation": min(110, the ENI-limited pods);
- ephemeral storage: `spec.ephemeralStorage.size` (the specification's example and default, 80Gi);
  where the instance's NVMe store is larger, Auto Mode puts ephemeral data on the NVMe store
  (RAID0 over several drives) instead, so the larger of the two;
- security groups for pods "can't be used with ... EKS Auto Mode": no branch ENIs are offered (the
  VPC resource controller skips a node labelled `eks.amazonaws.com/compute-type: auto`,
  aws/amazon-vpc-resource-controller-k8s `controllers/core/node_controller.go` `Reconcile` at
  b8d425119bdba371202882b808f202c6073a46cc; docs/upstream.md, "EKS Auto Mode: security groups for
  pods", also for the newer Kubernetes 1.36 Auto Mode page fitguard does not model).

Everything else (kube-reserved, eviction, VM overhead) is taken as Karpenter's AL2023 family does:
an assumption, the closest published computation, named here so it can be checked against a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from capacity.karpenter.allocatable import InstanceCapacity, eni_limited_pods, instance_capacity
from capacity.karpenter.amifamily import AmiFamily
from capacity.karpenter.facts import KarpenterFacts
from capacity.karpenter.nodeclass import (
    BlockDevice,
    KarpenterOptions,
    KubeletOptions,
    NodeClassError,
    NodeClassOptions,
    quantity_bytes,
)
from capacity.resources import POD_ENI

GROUP = "eks.amazonaws.com"
KIND = "NodeClass"
AUTO_MODE_MAX_PODS = 110
DEFAULT_EPHEMERAL = "80Gi"


@dataclass(frozen=True, slots=True)
class AutoModeClass:
    ephemeral_bytes: int


def automode_class_from_object(obj: Mapping[str, Any]) -> AutoModeClass:
    """The NodeClass's ephemeral storage size (80Gi when not given); raises NodeClassError."""
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise NodeClassError("spec: expected a map")
    storage = spec.get("ephemeralStorage") or {}
    if not isinstance(storage, Mapping):
        raise NodeClassError("spec.ephemeralStorage: expected a map")
    size = quantity_bytes(storage.get("size") or DEFAULT_EPHEMERAL, "spec.ephemeralStorage.size")
    return AutoModeClass(size or 0)


def automode_capacity(
    facts: KarpenterFacts, nodeclass: AutoModeClass, karpenter: KarpenterOptions | None = None
) -> InstanceCapacity:
    """Karpenter's AL2023 computation with Auto Mode's pods, ephemeral storage and no branch ENIs."""
    nvme = 0 if facts.local_nvme_gb is None else facts.local_nvme_gb * 10**9
    pods = min(AUTO_MODE_MAX_PODS, eni_limited_pods(facts, 0))
    options = NodeClassOptions(
        family=AmiFamily.AL2023,
        block_devices=(BlockDevice("/dev/xvda", max(nodeclass.ephemeral_bytes, nvme), root_volume=True),),
        kubelet=KubeletOptions(max_pods=pods),
    )
    computed = instance_capacity(facts, options, karpenter)
    return replace(computed, capacity={**computed.capacity, POD_ENI: 0})


def is_automode(ref: Mapping[str, Any]) -> bool:
    """A NodePool's nodeClassRef names an Auto Mode NodeClass."""
    return ref.get("group") == GROUP and ref.get("kind") == KIND
