"""Synthetic cluster objects for the benchmarks: pods as the API returns them (4 to 20 KB with env,
volumes, probes, managed fields), Deployments, SecurityGroupPolicies, node group templates, nodes.

Everything is seeded, so two runs measure the same objects. Sizes are deliberately close to what a
real EKS cluster serves: most of a pod's bytes are env, volume mounts and managedFields.
"""

from __future__ import annotations

import json
import random
from typing import Any

Obj = dict[str, Any]

NAMESPACES = 20
POLICIES_PER_NAMESPACE = 10
APPS = 15  # app labels per namespace; policies select the first 10, so about 2 in 3 pods match
TEAMS = 50  # node groups carry workload=team-NN; some pods select on it
# (instance type, cpu, memory, pods, branch ENIs): allocatable of a live node of that type
TYPES = (
    ("m5.large", "1930m", "7220Mi", "29", "9"),
    ("m5.xlarge", "3920m", "15022Mi", "58", "18"),
    ("m5.2xlarge", "7910m", "30482Mi", "58", "38"),
    ("c5.2xlarge", "7910m", "14200Mi", "58", "38"),
    ("r5.xlarge", "3920m", "30000Mi", "58", "18"),
    ("t3.large", "1930m", "7220Mi", "35", "0"),
)
TIMESTAMP = "2024-05-01T12:00:00Z"
REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"


def namespace_name(i: int) -> str:
    return f"team-{i:02d}"


def group_name(i: int) -> str:
    return f"ng-{i:03d}"


def node_group_template(i: int) -> Obj:
    """Group i: a type, team label, every 7th tainted; every 3rd judged by its autoscaler view."""
    kind, cpu, memory, pods, enis = TYPES[i % len(TYPES)]
    name = group_name(i)
    labels = {
        "eks.amazonaws.com/nodegroup": name,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": kind,
        "topology.kubernetes.io/zone": f"us-east-1{'abc'[i % 3]}",
        "workload": f"team-{i % TEAMS:02d}",
    }
    taints = (
        [{"key": "dedicated", "value": f"team-{i % TEAMS:02d}", "effect": "NoSchedule"}] if i % 7 == 0 else []
    )
    actual_alloc = {"cpu": cpu, "memory": memory, "pods": pods, "ephemeral-storage": "44Gi"}
    if enis != "0":
        actual_alloc["vpc.amazonaws.com/pod-eni"] = enis
    return {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "fitguard-controller"}},
        "spec": {
            "provider": "eks-managed" if i % 2 else "aws-asg",
            "instanceTypes": [kind],
            "minSize": 0,
            "maxSize": 50,
            "desiredSize": i % 4,
            "nodes": i % 4,
            "actual": {
                "source": "live-node" if i % 4 else "launch-template",
                "allocatable": actual_alloc,
                "labels": labels,
                "taints": taints,
            },
            "autoscaler": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "labels": {**labels, "cluster-autoscaler.kubernetes.io/template-node": "true"},
                "taints": taints,
            },
            "daemonSetOverhead": {"cpu": "200m", "memory": "300Mi", "pods": "3"},
            "scaleFromZero": "autoscaler" if i % 3 == 0 else "fitguard",
        },
    }


def security_group_policy(namespace: str, j: int) -> Obj:
    spec: Obj = {
        "podSelector": {"matchLabels": {"app": f"app-{j:02d}"}},
        "securityGroups": {"groupIds": [f"sg-0{j:016x}", "sg-0aaaaaaaaaaaaaaaa"]},
    }
    if j % 4 == 3:  # some policies also need the pod's service account to carry a role
        spec["serviceAccountSelector"] = {"matchExpressions": [{"key": "role", "operator": "Exists"}]}
    return {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"name": f"sgp-{j:02d}", "namespace": namespace},
        "spec": spec,
    }


def state_objects(templates: int = 500) -> list[Obj]:
    """What the webhook loads: 20 namespaces with service accounts, 200 policies, the VPC CNI
    ConfigMap and `templates` node group templates."""
    objects: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
            "data": {"branch-eni-cooldown": "60", "enable-windows-ipam": "false"},
        }
    ]
    for n in range(NAMESPACES):
        ns = namespace_name(n)
        objects.append(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": ns}}}
        )
        for account, labels in (("default", {}), ("api", {"role": "api"})):
            meta = {"name": account, "namespace": ns, "labels": labels}
            objects.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
        objects += [security_group_policy(ns, j) for j in range(POLICIES_PER_NAMESPACE)]
    objects += [node_group_template(i) for i in range(templates)]
    return objects


def _env(rng: random.Random, count: int) -> list[Obj]:
    env: list[Obj] = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
    ]
    for k in range(count):
        value = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789-./:", k=rng.randint(20, 90)))
        env.append({"name": f"APP_SETTING_{k:03d}", "value": value})
    return env


def _container(rng: random.Random, name: str, env_count: int, requests: Obj) -> Obj:
    return {
        "name": name,
        "image": f"{REGISTRY}/{name}:v1.{rng.randint(0, 99)}.{rng.randint(0, 9)}",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": _env(rng, env_count),
        "resources": {"requests": dict(requests), "limits": {"memory": requests.get("memory", "256Mi")}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTP"},
            "periodSeconds": 5,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "runAsNonRoot": True,
            "readOnlyRootFilesystem": True,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def pod_spec(rng: random.Random, target_bytes: int, app: str) -> Obj:
    """A pod spec of roughly `target_bytes` of JSON (the env is what grows)."""
    requests = {
        "cpu": rng.choice(("100m", "250m", "500m", "1", "1500m")),
        "memory": rng.choice(("128Mi", "256Mi", "512Mi", "1Gi", "2Gi")),
    }
    spec: Obj = {
        "containers": [],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                    ],
                },
            },
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "api" if rng.random() < 0.3 else "default",
        "securityContext": {"fsGroup": 2000},
        "schedulerName": "default-scheduler",
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
    }
    roll = rng.random()
    team = f"team-{rng.randrange(TEAMS):02d}"
    if roll < 0.3:  # pinned to one team's groups
        spec["nodeSelector"] = {"workload": team}
    elif roll < 0.4:
        term = {
            "matchExpressions": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["m5.xlarge", "m5.2xlarge"],
                }
            ]
        }
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    if rng.random() < 0.15:
        spec["tolerations"].append(
            {"key": "dedicated", "operator": "Equal", "value": team, "effect": "NoSchedule"}
        )
    if rng.random() < 0.05:  # does not fit anywhere: a denial with 500 explanations
        requests["ephemeral-storage"] = "200Gi"
    sidecar = rng.random() < 0.4
    spec["containers"].append(_container(rng, app, 0, requests))
    if sidecar:
        spec["containers"].append(_container(rng, "envoy", 4, {"cpu": "50m", "memory": "64Mi"}))
    # grow the main container's env until the spec reaches the size asked for
    main = spec["containers"][0]
    while len(json.dumps(spec)) < target_bytes:
        main["env"].extend(_env(rng, 8)[2:])
    return spec


def pod_metadata(rng: random.Random, namespace: str, app: str, name: str) -> Obj:
    suffix = f"{rng.getrandbits(40):010x}"
    return {
        "name": name,
        "generateName": f"{app}-{suffix[:10]}-",
        "namespace": namespace,
        "labels": {
            "app": app,
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/part-of": namespace,
            "pod-template-hash": suffix[:10],
            "version": "v1",
        },
        "annotations": {
            "kubectl.kubernetes.io/restartedAt": TIMESTAMP,
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "8080",
        },
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"{app}-{suffix[:10]}",
                "uid": f"{rng.getrandbits(128):032x}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


def admission_pod(rng: random.Random, target_bytes: int) -> tuple[str, Obj]:
    """(namespace, pod) as a CREATE AdmissionReview carries it: no uid, no status."""
    namespace = namespace_name(rng.randrange(NAMESPACES))
    app = f"app-{rng.randrange(APPS):02d}"
    name = f"{app}-{rng.getrandbits(24):06x}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_metadata(rng, namespace, app, name),
        "spec": pod_spec(rng, target_bytes, app),
    }
    return namespace, pod


def deployment(rng: random.Random, target_bytes: int) -> tuple[str, Obj]:
    namespace, pod = admission_pod(rng, target_bytes)
    app = pod["metadata"]["labels"]["app"]
    template_meta = {
        "labels": {k: v for k, v in pod["metadata"]["labels"].items() if k != "pod-template-hash"}
    }
    return namespace, {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app, "namespace": namespace, "labels": {"app": app}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": app}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {"metadata": template_meta, "spec": pod["spec"]},
        },
    }


def admission_review(rng: random.Random, namespace: str, obj: Obj) -> bytes:
    kind = obj["kind"]
    group, _, version = obj["apiVersion"].rpartition("/")
    plural = {"Pod": "pods", "Deployment": "deployments"}[kind]
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": f"{rng.getrandbits(128):032x}",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": plural},
            "name": obj["metadata"].get("name", ""),
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {
                "username": "system:serviceaccount:kube-system:replicaset-controller",
                "uid": "6a9c1a7e-7e47-4b8e-9a4c-3f0d8f3e2a11",
                "groups": [
                    "system:serviceaccounts",
                    "system:serviceaccounts:kube-system",
                    "system:authenticated",
                ],
            },
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
    return json.dumps(review, separators=(",", ":")).encode()


def review_bodies(count: int, seed: int, deployments: float) -> list[bytes]:
    """`count` AdmissionReviews: pods of 4 to 20 KB, a fraction of them Deployments instead."""
    rng = random.Random(seed)
    bodies = []
    for _ in range(count):
        size = rng.randint(4_000, 20_000)
        if rng.random() < deployments:
            namespace, obj = deployment(rng, size)
        else:
            namespace, obj = admission_pod(rng, size)
        bodies.append(admission_review(rng, namespace, obj))
    return bodies


def pending_pods(count: int, shapes: int, seed: int) -> list[Obj]:
    """Unschedulable pods: `shapes` Deployments' worth, each with count/shapes replicas."""
    rng = random.Random(seed)
    pods = []
    per_shape = max(1, count // shapes)
    for s in range(shapes):
        _, template = admission_pod(rng, 4_000)
        for r in range(per_shape):
            meta = dict(
                template["metadata"], name=f"{template['metadata']['name']}-{r:04d}", uid=f"{s:08x}-{r:08x}"
            )
            status = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/5000 nodes are available: 5000 Insufficient cpu.",
                        "lastTransitionTime": TIMESTAMP,
                    }
                ],
            }
            pods.append({**template, "metadata": meta, "status": status})
    return pods
