"""cluster-autoscaler's AWS template, case by case, restated from its source.

Sources: kubernetes/autoscaler at 55c37cd5 (2026-08-22), cluster-autoscaler/cloudprovider/aws
(aws_manager.go, aws_wrapper.go, auto_scaling_groups.go, aws_cloud_provider.go, and their tests), and
kubernetes-sigs/cluster-autoscaler at 33c3f97b (2026-08-21), where the core now lives
(pkg/utils/labels/labels.go, pkg/utils/taints/taints.go, pkg/simulator/node_info_utils.go,
pkg/cloudprovider/utils.go). `upstream` names the file and function each case restates; `test`, when
present, the upstream test it follows.

Every expected value is whole: the complete capacity map, label set and taint list.
Quantities are Kubernetes quantity strings; taints are [key, value, effect].
"""

from __future__ import annotations

from typing import Any

AWS = "kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/"
CORE = "kubernetes-sigs/cluster-autoscaler "
LABEL = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
RES = "k8s.io/cluster-autoscaler/node-template/resources/"

C5_XLARGE = {"type": "c5.xlarge", "vcpu": 4, "memory_mib": 8192, "gpu": 0, "arch": "amd64"}
M6G_LARGE = {"type": "m6g.large", "vcpu": 2, "memory_mib": 8192, "gpu": 0, "arch": "arm64"}
G4DN = {"type": "g4dn.xlarge", "vcpu": 4, "memory_mib": 16384, "gpu": 1, "arch": "amd64"}

C5_CAPACITY = {"pods": "110", "cpu": "4", "nvidia.com/gpu": "0", "memory": "8Gi"}


def generic(instance: dict[str, Any], region: str, zone: str, hostname: str) -> dict[str, str]:
    """buildGenericLabels written out (aws_manager.go): seven labels, nothing else."""
    return {
        "kubernetes.io/arch": instance["arch"],
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance["type"],
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "topology.ebs.csi.aws.com/zone": zone,
        "kubernetes.io/hostname": hostname,
    }


# buildNodeFromTemplate: the node before any sanitising (hostname is the node's own name).
BUILD_NODE: list[dict[str, Any]] = [
    {
        "id": "generic-labels-only",
        "upstream": AWS + "aws_manager.go buildNodeFromTemplate, buildGenericLabels",
        "test": "aws_manager_test.go TestBuildGenericLabels",
        "input": {"instance": C5_XLARGE, "region": "us-east-1", "zone": "us-east-1a", "tags": []},
        "expected": {
            "capacity": C5_CAPACITY,
            "labels": generic(C5_XLARGE, "us-east-1", "us-east-1a", "node"),
            "taints": [],
        },
    },
    {
        "id": "label-tag-overrides-generic-label",
        "upstream": AWS + "aws_manager.go buildNodeFromTemplate (JoinStringMaps: tags after generic)",
        "input": {
            "instance": M6G_LARGE,
            "region": "eu-west-1",
            "zone": "eu-west-1b",
            "tags": [[LABEL + "kubernetes.io/arch", "amd64"], [LABEL + "team", "ml"]],
        },
        "expected": {
            "capacity": {"pods": "110", "cpu": "2", "nvidia.com/gpu": "0", "memory": "8Gi"},
            "labels": {
                **generic(M6G_LARGE, "eu-west-1", "eu-west-1b", "node"),
                "kubernetes.io/arch": "amd64",
                "team": "ml",
            },
            "taints": [],
        },
    },
    {
        "id": "eks-tags-become-labels",
        "upstream": AWS + "aws_manager.go extractLabelsFromAsg (strings.Split on 'eks:')",
        "test": "aws_manager_test.go TestExtractLabelsFromAsg",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [["eks:nodegroup-name", "ng-1"], ["aws:eks:cluster-name", "prod"], [LABEL, "empty"]],
        },
        "expected": {
            "capacity": C5_CAPACITY,
            "labels": {
                **generic(C5_XLARGE, "us-east-1", "us-east-1a", "node"),
                "nodegroup-name": "ng-1",
                "cluster-name": "prod",
            },
            "taints": [],
        },
    },
    {
        "id": "resource-tags-over-instance-capacity",
        "upstream": AWS + "aws_manager.go buildNodeFromTemplate, extractAllocatableResourcesFromAsg",
        "test": "aws_manager_test.go TestExtractAllocatableResourcesFromAsg",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [
                [RES + "cpu", "3920m"],
                [RES + "ephemeral-storage", "44Gi"],
                [RES + "vpc.amazonaws.com/pod-eni", "18"],
                [RES + "memory", "not-a-quantity"],
                [RES, "5"],
            ],
        },
        "expected": {
            "capacity": {
                "pods": "110",
                "cpu": "3920m",
                "nvidia.com/gpu": "0",
                "memory": "8Gi",
                "ephemeral-storage": "44Gi",
                "vpc.amazonaws.com/pod-eni": "18",
            },
            "labels": generic(C5_XLARGE, "us-east-1", "us-east-1a", "node"),
            "taints": [],
        },
    },
    {
        "id": "taint-tags-unanchored-regex-first-colon",
        "upstream": AWS + "aws_manager.go extractTaintsFromAsg",
        "test": "aws_manager_test.go TestExtractTaintsFromAsg",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [
                [TAINT + "dedicated", "gpu:NoSchedule"],
                [TAINT + "odd", "a:b:NoExecute"],
                [TAINT + "bad", "value:Sometimes"],
                [TAINT + "empty", ":PreferNoSchedule"],
            ],
        },
        "expected": {
            "capacity": C5_CAPACITY,
            "labels": generic(C5_XLARGE, "us-east-1", "us-east-1a", "node"),
            "taints": [
                ["dedicated", "gpu", "NoSchedule"],
                ["odd", "a", "b:NoExecute"],
                ["empty", "", "PreferNoSchedule"],
            ],
        },
    },
    {
        "id": "managed-nodegroup-labels-win-taints-appended-tags-override",
        "upstream": AWS
        + "aws_manager.go buildNodeFromTemplate, joinNodeLabelsChoosingUserValuesOverAPIValues",
        "test": "aws_manager_test.go TestBuildNodeFromTemplateWithManagedNodegroup",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [
                ["eks:nodegroup-name", "nodegroup-1"],
                ["eks:cluster-name", "cluster-1"],
                [LABEL + "labelKey 2", "testValue 3"],
                [TAINT + "asg", "x:NoSchedule"],
                [RES + "ephemeral-storage", "20Gi"],
            ],
            "managed": {
                "labels": {"labelKey 1": "testValue 1", "labelKey 2": "testValue 2"},
                "taints": [["key 1", "value 1", "effect 1"], ["key 2", "value 2", "effect 2"]],
                "tags": {RES + "ephemeral-storage": "80Gi"},
            },
        },
        "expected": {
            "capacity": {**C5_CAPACITY, "ephemeral-storage": "80Gi"},
            "labels": {
                **generic(C5_XLARGE, "us-east-1", "us-east-1a", "node"),
                "nodegroup-name": "nodegroup-1",
                "cluster-name": "cluster-1",
                "labelKey 1": "testValue 1",
                "labelKey 2": "testValue 2",
            },
            "taints": [
                ["asg", "x", "NoSchedule"],
                ["key 1", "value 1", "effect 1"],
                ["key 2", "value 2", "effect 2"],
            ],
        },
    },
    {
        "id": "managed-data-needs-both-eks-labels",
        "upstream": AWS + "aws_manager.go buildNodeFromTemplate (nodegroup-name and cluster-name both set)",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [["eks:nodegroup-name", "nodegroup-1"]],
            "managed": {"labels": {"team": "a"}, "taints": [], "tags": {RES + "ephemeral-storage": "80Gi"}},
        },
        "expected": {
            "capacity": C5_CAPACITY,
            "labels": {
                **generic(C5_XLARGE, "us-east-1", "us-east-1a", "node"),
                "nodegroup-name": "nodegroup-1",
            },
            "taints": [],
        },
    },
    {
        "id": "requirements-minimums-over-instance-capacity",
        "upstream": AWS + "aws_manager.go updateCapacityWithRequirementsOverrides",
        "input": {
            "instance": G4DN,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [[RES + "memory", "20Gi"]],
            "requirements": {"vcpu_min": 2, "memory_mib_min": 4096, "nvidia_gpu_min": 2},
        },
        "expected": {
            "capacity": {"pods": "110", "cpu": "2", "nvidia.com/gpu": "2", "memory": "20Gi"},
            "labels": generic(G4DN, "us-east-1", "us-east-1a", "node"),
            "taints": [],
        },
    },
]

# SanitizedTemplateNodeInfoFromNodeGroup over buildNodeFromTemplate: the autoscaler view itself
# (no hostname: it is random per template node, so fitguard leaves it out).
TEMPLATE: list[dict[str, Any]] = [
    {
        "id": "deprecated-labels-are-only-instance-type-region-zone",
        "upstream": CORE + "pkg/utils/labels/labels.go UpdateDeprecatedLabels; "
        "pkg/simulator/node_info_utils.go SanitizedTemplateNodeInfoFromNodeInfo (template-node label)",
        "input": {"instance": C5_XLARGE, "region": "us-east-1", "zone": "us-east-1a", "tags": []},
        "expected": {
            "allocatable": C5_CAPACITY,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "c5.xlarge",
                "beta.kubernetes.io/instance-type": "c5.xlarge",
                "topology.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": "us-east-1a",
                "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
                "topology.ebs.csi.aws.com/zone": "us-east-1a",
                "cluster-autoscaler.kubernetes.io/template-node": "true",
            },
            "taints": [],
        },
    },
    {
        "id": "deprecated-twin-follows-the-tag-value",
        "upstream": CORE + "pkg/utils/labels/labels.go UpdateDeprecatedLabels (after the tags are joined)",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [
                [LABEL + "node.kubernetes.io/instance-type", "custom"],
                [LABEL + "beta.kubernetes.io/os", "x"],
            ],
        },
        "expected": {
            "allocatable": C5_CAPACITY,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "beta.kubernetes.io/os": "x",
                "node.kubernetes.io/instance-type": "custom",
                "beta.kubernetes.io/instance-type": "custom",
                "topology.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": "us-east-1a",
                "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
                "topology.ebs.csi.aws.com/zone": "us-east-1a",
                "cluster-autoscaler.kubernetes.io/template-node": "true",
            },
            "taints": [],
        },
    },
    {
        "id": "template-taints-are-sanitised",
        "upstream": CORE + "pkg/simulator/node_info_utils.go createSanitizedNode; "
        "pkg/utils/taints/taints.go SanitizeTaints",
        "input": {
            "instance": C5_XLARGE,
            "region": "us-east-1",
            "zone": "us-east-1a",
            "tags": [
                [TAINT + "node.kubernetes.io/out-of-service", "nodeshutdown:NoExecute"],
                [TAINT + "NodeWithImpairedVolumes", "true:NoSchedule"],
                [TAINT + "ignore-taint.cluster-autoscaler.kubernetes.io/cilium", "x:NoSchedule"],
                [TAINT + "dedicated", "gpu:NoSchedule"],
            ],
        },
        "expected": {
            "allocatable": C5_CAPACITY,
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "c5.xlarge",
                "beta.kubernetes.io/instance-type": "c5.xlarge",
                "topology.kubernetes.io/region": "us-east-1",
                "failure-domain.beta.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": "us-east-1a",
                "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
                "topology.ebs.csi.aws.com/zone": "us-east-1a",
                "cluster-autoscaler.kubernetes.io/template-node": "true",
            },
            "taints": [
                ["node.kubernetes.io/out-of-service", "nodeshutdown", "NoExecute"],
                ["dedicated", "gpu", "NoSchedule"],
            ],
        },
    },
]

# SanitizeTaints with NewTaintConfig's built-in prefixes (and, where given, flag values).
SANITIZE_TAINTS: list[dict[str, Any]] = [
    {
        "id": "upstream-sanitize-taints",
        "upstream": CORE + "pkg/utils/taints/taints.go SanitizeTaints, NewTaintConfig",
        "test": "taints_test.go TestSanitizeTaints (NewTaintConfig's status prefix: status-taint.* goes too)",
        "input": {
            "config": {"startup_taints": ["ignore-me"], "status_taints": ["status-me"]},
            "taints": [
                ["ignore-taint.cluster-autoscaler.kubernetes.io/another-taint", "myValue", "NoSchedule"],
                ["status-taint.cluster-autoscaler.kubernetes.io/some-taint", "myValue", "NoSchedule"],
                ["startup-taint.cluster-autoscaler.kubernetes.io/some-taint", "myValue", "NoSchedule"],
                ["test-taint", "test2", "NoSchedule"],
                ["ToBeDeletedByClusterAutoscaler", "1", "NoSchedule"],
                ["ignore-me", "1", "NoSchedule"],
                ["status-me", "1", "NoSchedule"],
                ["node.kubernetes.io/memory-pressure", "1", "NoSchedule"],
            ],
        },
        "expected": [["test-taint", "test2", "NoSchedule"]],
    },
    {
        "id": "node-condition-taints-dropped-others-kept",
        "upstream": CORE + "pkg/utils/taints/taints.go NodeConditionTaints, SanitizeTaints",
        "input": {
            "config": {},
            "taints": [
                ["node.kubernetes.io/not-ready", "", "NoExecute"],
                ["node.kubernetes.io/unreachable", "", "NoExecute"],
                ["node.kubernetes.io/unschedulable", "", "NoSchedule"],
                ["node.kubernetes.io/memory-pressure", "", "NoSchedule"],
                ["node.kubernetes.io/disk-pressure", "", "NoSchedule"],
                ["node.kubernetes.io/network-unavailable", "", "NoSchedule"],
                ["node.kubernetes.io/pid-pressure", "", "NoSchedule"],
                ["node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"],
                ["node.cloudprovider.kubernetes.io/shutdown", "", "NoSchedule"],
                ["cloud.google.com/impending-node-termination", "", "NoSchedule"],
                ["NodeWithImpairedVolumes", "true", "NoSchedule"],
                ["DeletionCandidateOfClusterAutoscaler", "1", "PreferNoSchedule"],
                ["node.kubernetes.io/out-of-service", "nodeshutdown", "NoExecute"],
                ["node.kubernetes.io/custom", "", "NoSchedule"],
                ["nodewithimpairedvolumes", "", "NoSchedule"],
            ],
        },
        "expected": [
            ["node.kubernetes.io/out-of-service", "nodeshutdown", "NoExecute"],
            ["node.kubernetes.io/custom", "", "NoSchedule"],
            ["nodewithimpairedvolumes", "", "NoSchedule"],
        ],
    },
    {
        "id": "custom-startup-prefix",
        "upstream": CORE + "pkg/utils/taints/taints.go NewTaintConfig, IsStartupTaint",
        "test": "taints_test.go TestNewTaintConfigWithCustomPrefixes",
        "input": {
            "config": {"startup_taint_prefixes": ["readiness.k8s.io/"]},
            "taints": [
                ["readiness.k8s.io/not-ready", "", "NoSchedule"],
                ["other.io/my-taint", "", "NoSchedule"],
                ["startup-taint.cluster-autoscaler.kubernetes.io/some-taint", "", "NoSchedule"],
            ],
        },
        "expected": [["other.io/my-taint", "", "NoSchedule"]],
    },
]

# The pods on the template node before a pending pod is tried there.
TEMPLATE_PODS: list[dict[str, Any]] = [
    {
        "id": "kube-proxy-alone",
        "upstream": AWS
        + "aws_cloud_provider.go AwsNodeGroup.TemplateNodeInfo; "
        + CORE
        + "pkg/cloudprovider/utils.go BuildKubeProxy (KubeProxyCpuRequestMillis)",
        "input": {"daemonsets": {}, "daemonset_pods": 0},
        "expected": {"requests": {"cpu": "100m"}, "pods": 1},
    },
    {
        "id": "kube-proxy-and-daemonsets",
        "upstream": CORE + "pkg/simulator/node_info_utils.go podsExpectedOnFreshNode (mirror pod kept, "
        "DaemonSets forced)",
        "input": {"daemonsets": {"cpu": "250m", "memory": "300Mi"}, "daemonset_pods": 3},
        "expected": {"requests": {"cpu": "350m", "memory": "300Mi"}, "pods": 4},
    },
]

# Where the instance type comes from (getInstanceTypesForAsgs), as (kind, name, version) or an error.
INSTANCE_TYPE_SOURCE: list[dict[str, Any]] = [
    {
        "id": "launch-configuration-first",
        "upstream": AWS + "aws_wrapper.go getInstanceTypesForAsgs",
        "input": {"LaunchConfigurationName": "lc", "LaunchTemplate": {"LaunchTemplateName": "lt"}},
        "expected": ["launch-configuration", "lc", ""],
    },
    {
        "id": "launch-template-default-version",
        "upstream": AWS + "aws_wrapper.go buildLaunchTemplateFromSpec (nil Version is $Default)",
        "input": {"LaunchTemplate": {"LaunchTemplateName": "lt"}},
        "expected": ["launch-template", "lt", "$Default"],
    },
    {
        "id": "first-type-override",
        "upstream": AWS + "aws_wrapper.go getInstanceTypesForAsgs (instanceTypesOverrides[0])",
        "input": {
            "MixedInstancesPolicy": {
                "LaunchTemplate": {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": "lt", "Version": "1"},
                    "Overrides": [{"InstanceType": "m5.xlarge"}, {"InstanceType": "m5.large"}],
                }
            }
        },
        "expected": ["override", "m5.xlarge", ""],
    },
    {
        "id": "single-requirements-override",
        "upstream": AWS
        + "auto_scaling_groups.go buildAsgFromAWS (getInstanceTypeRequirements: one override)",
        "input": {
            "MixedInstancesPolicy": {
                "LaunchTemplate": {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": "lt", "Version": "2"},
                    "Overrides": [
                        {"InstanceRequirements": {"VCpuCount": {"Min": 2}, "MemoryMiB": {"Min": 4096}}}
                    ],
                }
            }
        },
        "expected": ["requirements", "lt", "2"],
    },
    {
        "id": "two-requirements-overrides-fall-back-to-the-launch-template",
        "upstream": AWS + "auto_scaling_groups.go buildAsgFromAWS (len(overrides) == 1 only)",
        "input": {
            "MixedInstancesPolicy": {
                "LaunchTemplate": {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": "lt"},
                    "Overrides": [
                        {"InstanceRequirements": {"VCpuCount": {"Min": 2}, "MemoryMiB": {"Min": 4096}}},
                        {"InstanceRequirements": {"VCpuCount": {"Min": 4}, "MemoryMiB": {"Min": 8192}}},
                    ],
                }
            }
        },
        "expected": ["launch-template", "lt", "$Default"],
    },
    {
        "id": "type-and-requirements-override-refused",
        "upstream": AWS + "auto_scaling_groups.go buildAsgFromAWS (invalid setup of both)",
        "input": {
            "MixedInstancesPolicy": {
                "LaunchTemplate": {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": "lt"},
                    "Overrides": [
                        {"InstanceType": "m5.large", "InstanceRequirements": {"VCpuCount": {"Min": 2}}}
                    ],
                }
            }
        },
        "expected": "error",
    },
]

# updateCapacityWithRequirementsOverrides' input: (policy, launch template data) -> minimums or None.
CAPACITY_REQUIREMENTS: list[dict[str, Any]] = [
    {
        "id": "no-policy",
        "upstream": AWS + "aws_manager.go updateCapacityWithRequirementsOverrides (policy == nil)",
        "input": {"policy": None, "template_data": {"InstanceRequirements": {"VCpuCount": {"Min": 8}}}},
        "expected": None,
    },
    {
        "id": "type-overrides-win",
        "upstream": AWS + "aws_manager.go updateCapacityWithRequirementsOverrides (instanceTypesOverrides)",
        "input": {
            "policy": {"LaunchTemplate": {"Overrides": [{"InstanceType": "m5.large"}]}},
            "template_data": {"InstanceRequirements": {"VCpuCount": {"Min": 8}}},
        },
        "expected": None,
    },
    {
        "id": "override-requirements-with-nvidia-gpu",
        "upstream": AWS + "aws_manager.go updateCapacityWithRequirementsOverrides; "
        "auto_scaling_groups.go getInstanceRequirementsFromMixedInstancesPolicy",
        "input": {
            "policy": {
                "LaunchTemplate": {
                    "Overrides": [
                        {
                            "InstanceRequirements": {
                                "VCpuCount": {"Min": 4, "Max": 8},
                                "MemoryMiB": {"Min": 16384},
                                "AcceleratorManufacturers": ["nvidia"],
                                "AcceleratorTypes": ["gpu"],
                                "AcceleratorCount": {"Min": 1},
                            }
                        }
                    ]
                }
            },
            "template_data": {"InstanceRequirements": {"VCpuCount": {"Min": 64}}},
        },
        "expected": {"vcpu_min": 4, "memory_mib_min": 16384, "nvidia_gpu_min": 1},
    },
    {
        "id": "amd-gpu-leaves-gpu-alone",
        "upstream": AWS + "aws_manager.go updateCapacityWithRequirementsOverrides (nvidia and gpu only)",
        "input": {
            "policy": {
                "LaunchTemplate": {
                    "Overrides": [
                        {
                            "InstanceRequirements": {
                                "VCpuCount": {"Min": 4},
                                "MemoryMiB": {"Min": 1024},
                                "AcceleratorManufacturers": ["amd"],
                                "AcceleratorTypes": ["gpu"],
                                "AcceleratorCount": {"Min": 1},
                            }
                        }
                    ]
                }
            },
            "template_data": {},
        },
        "expected": {"vcpu_min": 4, "memory_mib_min": 1024, "nvidia_gpu_min": None},
    },
    {
        "id": "launch-template-requirements",
        "upstream": AWS + "auto_scaling_groups.go getInstanceRequirementsFromMixedInstancesPolicy "
        "(no override: the launch template's)",
        "input": {
            "policy": {"LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateName": "lt"}}},
            "template_data": {"InstanceRequirements": {"VCpuCount": {"Min": 8}, "MemoryMiB": {"Min": 32768}}},
        },
        "expected": {"vcpu_min": 8, "memory_mib_min": 32768, "nvidia_gpu_min": None},
    },
]
