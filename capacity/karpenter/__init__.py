"""Karpenter's view of capacity, restated from aws/karpenter-provider-aws and kubernetes-sigs/karpenter.

Pure: no I/O, no clock. Each module does one job:

- `facts`: the instance facts Karpenter computes with (fitguard's, plus `data/karpenter_facts.json`).
- `amifamily`: each AMI family's defaults (block devices, which one pods write to, feature flags).
- `nodeclass`: the EC2NodeClass fields and controller settings that change capacity, as options.
- `controller_options`: those settings read from the Karpenter controller's container.
- `allocatable`: capacity, overhead and allocatable per instance type, as Karpenter computes them.
- `requirement`, `requirements`: Karpenter's requirement sets and their `Compatible` / `Intersects`.
- `instance_labels`: the labels (requirements) Karpenter gives each instance type, and which types a
  NodePool's requirements allow (with `minValues`).
- `labels`: the well-known and normalised label keys.
- `nodepool`: a NodePool's template requirements, labels and taints.
- `automode`: EKS Auto Mode NodeClasses.
- `discovered`: a joined node's memory in place of the estimate.
- `template`: a NodePool and its class as the instance types it could launch, with allocatable.
- `fit`: whether a pod fits a NodePool, and the typed reasons (the field to change) when not.
"""
