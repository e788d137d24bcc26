"""fitguard's vocabulary on the wire, defined once: the labels, annotations, tags, API group and kind it
writes or reads, the upstream ConfigMap it reads, and the pod phases it treats as finished.

Every package imports these names from here (capacity/ is the bottom layer), so the label the
controller writes and the one the webhook's guard names are the same object by construction.
"""

from __future__ import annotations

# The NodeGroupTemplate custom resource (manifests/crd.yaml).
GROUP = "fitguard.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
TEMPLATE_KIND = "NodeGroupTemplate"
SGP_KIND = "SecurityGroupPolicy"  # the VPC resource controller's CRD (vpcresources.k8s.aws)
TEMPLATE_PLURAL = "nodegrouptemplates"

# Node label: branch ENIs of the node are exhausted (the controller writes it, the webhook's guard
# keeps pods off nodes that carry it).
EXHAUSTED_LABEL = "fitguard.io/branch-eni-exhausted"
# Namespace (and, when allowed, object) label "true": fitguard leaves the object alone.
IGNORE_LABEL = "fitguard.io/ignore"
# Namespace label: the webhook's mode for that namespace.
MODE_LABEL = "fitguard.io/mode"
# Pod label "true": never deleted by rescue or reclaim.
KEEP_LABEL = "fitguard.io/keep"
# NodeGroupTemplate label or annotation "true": a person owns this template.
MANUAL_MARK = "fitguard.io/manual"
# Who manages an object fitguard created, and the two values it writes (templates, certificates).
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
TEMPLATE_MANAGER = "fitguard-controller"
CERTIFICATE_MANAGER = "fitguard"

# Auto Scaling group tag: `<target>@<epoch>` of the last scale-up fitguard asked for.
LAST_SCALE_UP_TAG = "fitguard.io/last-scale-up"

# Annotations on a captured or exported List's metadata.
CAPTURED_AT = "fitguard.io/captured-at"
EXPORTED_AT = "fitguard.io/exported-at"
EXPORTED_CLUSTER = "fitguard.io/cluster"
EXPORTED_SERVER = "fitguard.io/server"
EXPORTED_CONTEXT = "fitguard.io/context"
EXPORTED_FROM = "fitguard.io/exported-from"  # a state made from something other than a cluster

# The reportingController of the Events each component writes.
CONTROLLER_REPORTER = "fitguard.io/controller"
WEBHOOK_REPORTER = "fitguard.io/webhook"

# The VPC CNI's ConfigMap, which holds the branch ENI cooldown (capacity/branch_eni.py).
VPC_CNI_CONFIG_NAMESPACE = "kube-system"
VPC_CNI_CONFIG_NAME = "amazon-vpc-cni"

# Pod phases after which a pod runs no more containers.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
