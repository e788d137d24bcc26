"""The pods cluster-autoscaler puts on the node it builds for a group with no node, before it tries
a pending pod there: a kube-proxy mirror pod and the DaemonSet pods that would run on that node.

Restated from kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/aws_cloud_provider.go
(AwsNodeGroup.TemplateNodeInfo: every AWS template gets cloudprovider.BuildKubeProxy, unconditionally)
and sigs.k8s.io/cluster-autoscaler pkg/cloudprovider/utils.go (BuildKubeProxy: one container
requesting KubeProxyCpuRequestMillis = 100m cpu, nothing else; a mirror pod, so
pkg/simulator/node_info_utils.go podsExpectedOnFreshNode keeps it). podsExpectedOnFreshNode then adds
a pod for each DaemonSet not already running there (forceDaemonSets on a template from tags), judged
on the sanitised node before the template-node marker and the deprecated labels are added
(capacity/fresh_node.py). The kube-proxy mirror pod has no DaemonSet owner, so on EKS, where
kube-proxy is a DaemonSet, both are counted.
"""

from __future__ import annotations

from collections.abc import Mapping

from capacity.resources import CPU, Resources, add

KUBE_PROXY_REQUESTS: Resources = {CPU: 100}  # milli-units
KUBE_PROXY_PODS = 1


def template_node_pods(daemonset_requests: Mapping[str, int], daemonset_pods: int) -> tuple[Resources, int]:
    """The requests and the count of the pods already on cluster-autoscaler's template node."""
    return add(dict(daemonset_requests), KUBE_PROXY_REQUESTS), daemonset_pods + KUBE_PROXY_PODS
