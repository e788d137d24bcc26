"""The VPC resource controller's pod mutating webhook, as case tables.

Restated from aws/amazon-vpc-resource-controller-k8s at b8d425119bdba371202882b808f202c6073a46cc:
- webhooks/core/pod_webhook.go: Handle (decode, InitializeEmptyFields, WhichPod), WhichPod
  (hostNetwork, then the Fargate label, then a Windows nodeSelector, else Linux), HandleLinuxPod,
  HandleFargatePod, HandleWindowsPod, hasWindowsNodeSelector, GetPatchResponse (the answer is the
  JSON diff of the pod before and after: admission.PatchResponseFromRaw);
- pkg/utils/helper.go: GetMatchingSecurityGroupForPods (the pod's namespace's policies, its
  ServiceAccount read from the cache: a missing one is an error and the pod is denied);
- pkg/condition/conditions.go: IsWindowsIPAMEnabled (`enable-windows-ipam` of ConfigMap
  kube-system/amazon-vpc-cni read with strconv.ParseBool);
- controllers/core/pod_controller.go: getAggregateResources (pod-eni summed over the containers:
  why fitguard adds none when a later container already asks for one, where upstream would).

Each case: the pod as the API server hands it to the webhook, the objects the webhook's caches hold,
whether it is allowed, and the whole pod after the patch (`None`: no patch at all). Only the
admission verdict and the patch are upstream's; fitguard's exhausted-node guard is off here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

POD_ENI = "vpc.amazonaws.com/pod-eni"
PRIVATE_IPV4 = "vpc.amazonaws.com/PrivateIPv4Address"
FARGATE_LABEL = "eks.amazonaws.com/fargate-profile"
POD_SG = "fargate.amazonaws.com/pod-sg"
NAMESPACE = "shop"
WEBHOOK = "webhooks/core/pod_webhook.go"
HELPER = "pkg/utils/helper.go"
CONDITIONS = "pkg/condition/conditions.go"
POD_CONTROLLER = "controllers/core/pod_controller.go"

Obj = dict[str, Any]


@dataclass(frozen=True)
class WebhookCase:
    id: str
    source: str  # upstream file: function
    pod: Obj
    objects: list[Obj]
    allowed: bool
    after: Obj | None  # the whole pod after the patch; None: no patch
    fitguard_only: str = ""  # why fitguard departs from upstream here, when it does
    notes: list[str] = field(default_factory=list)


def pod(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    containers: list[Obj] | None = None,
    **spec: Any,
) -> Obj:
    meta: Obj = {
        "name": "web",
        "namespace": NAMESPACE,
        "labels": labels if labels is not None else {"app": "web"},
    }
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": containers if containers is not None else [container("app")], **spec},
    }


def container(name: str, resources: Obj | None = None) -> Obj:
    c: Obj = {"name": name, "image": "busybox"}
    if resources is not None:
        c["resources"] = resources
    return c


def account(name: str = "default", labels: dict[str, str] | None = None, namespace: str = NAMESPACE) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"namespace": namespace, "name": name, "labels": labels or {}},
    }


def policy(groups: list[str], spec: Obj | None = None, name: str = "sgp", namespace: str = NAMESPACE) -> Obj:
    return {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {
            **(spec if spec is not None else {"podSelector": {}}),
            "securityGroups": {"groupIds": groups},
        },
    }


def vpc_cni(**data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "kube-system", "name": "amazon-vpc-cni"},
        "data": data,
    }


def edited(original: Obj, change: Any) -> Obj:
    """A deep copy of `original` after `change(copy)`: the expected pod, written as the edit."""
    result = copy.deepcopy(original)
    change(result)
    return result


def set_resource(name: str, value: str = "1", index: int = 0) -> Any:
    def change(p: Obj) -> None:
        resources = p["spec"]["containers"][index].setdefault("resources", {})
        resources.setdefault("limits", {})[name] = value
        resources.setdefault("requests", {})[name] = value

    return change


def set_annotation(key: str, value: str | None) -> Any:
    def change(p: Obj) -> None:
        annotations = p["metadata"].setdefault("annotations", {})
        if value is None:
            del annotations[key]
        else:
            annotations[key] = value

    return change


MATCHED = [account(), policy(["sg-1", "sg-2"])]
CPU = {"limits": {"cpu": "100m"}, "requests": {"cpu": "200m"}}
ENI_1 = {"limits": {POD_ENI: "1"}, "requests": {POD_ENI: "1"}}


WINDOWS_POD = {"nodeSelector": {"kubernetes.io/os": "windows"}}
TEAM_A = {"serviceAccountSelector": {"matchLabels": {"team": "a"}}}
WINDOWS_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]}
            ]
        }
    }
}


def _cases() -> list[WebhookCase]:
    cases: list[WebhookCase] = []

    def add(
        case_id: str,
        source: str,
        p: Obj,
        objects: list[Obj],
        *,
        denied: bool = False,
        change: Any = None,
        **kw: Any,
    ) -> None:
        after = None if change is None else edited(p, change)
        cases.append(WebhookCase(case_id, source, p, objects, not denied, after, **kw))

    eni = set_resource(POD_ENI)
    linux = f"{WEBHOOK}: HandleLinuxPod"
    lookup = f"{HELPER}: GetMatchingSecurityGroupForPods"
    add("linux-matched-cpu", linux, pod(containers=[container("app", CPU)]), MATCHED, change=eni)
    empty = pod(containers=[container("app", {})])
    add("linux-matched-empty-resources", f"{linux}, InitializeEmptyFields", empty, MATCHED, change=eni)
    add("linux-matched-no-resources-field", f"{linux}, InitializeEmptyFields", pod(), MATCHED, change=eni)
    two = pod(containers=[container("app"), container("sidecar", CPU)])
    add("linux-matched-first-container-only", linux, two, MATCHED, change=eni)
    other = [account(), policy(["sg-1"], {"podSelector": {"matchLabels": {"app": "db"}}})]
    add("linux-unmatched", linux, pod(), other)
    add("linux-no-policy-at-all", linux, pod(), [account()])
    robot = pod(serviceAccountName="robot")
    add(
        "linux-service-account-missing",
        f"{lookup}; {linux}",
        robot,
        [account(), policy(["sg-1"])],
        denied=True,
    )
    add(
        "linux-default-service-account",
        lookup,
        pod(),
        [account("default", {"team": "a"}), policy(["sg-1"], TEAM_A)],
        change=eni,
    )
    named = [account("default"), account("robot", {"team": "a"}), policy(["sg-1"], TEAM_A)]
    add("linux-named-service-account", lookup, robot, named, change=eni)
    elsewhere = [account("robot", namespace="other"), policy(["sg-1"])]
    add("linux-service-account-of-another-namespace", lookup, robot, elsewhere, denied=True)
    add("linux-policy-of-another-namespace", lookup, pod(), [account(), policy(["sg-1"], namespace="other")])
    two_enis = pod(containers=[container("app", {"limits": {POD_ENI: "2"}, "requests": {POD_ENI: "2"}})])
    add(
        "linux-first-container-pod-eni-2-set-to-1",
        f"{linux} (sets the value, never reads it)",
        two_enis,
        MATCHED,
        change=eni,
    )
    injected = pod(containers=[container("app", ENI_1)])
    add(
        "linux-reinvoked-after-injection",
        f"{linux}; {WEBHOOK}: GetPatchResponse (empty diff)",
        injected,
        MATCHED,
    )
    mesh = pod(containers=[container("mesh-proxy", CPU), container("app", ENI_1)])
    add(
        "linux-mesh-prepended-a-container",
        f"{linux}; {POD_CONTROLLER}: getAggregateResources",
        mesh,
        MATCHED,
        fitguard_only="upstream would add pod-eni to the new first container too; the VPC resource "
        "controller sums pod-eni over the containers and would give the pod two branch ENIs",
    )
    selector_only = f"{WEBHOOK}: hasWindowsNodeSelector (nodeSelector only)"
    add(
        "linux-windows-by-affinity-is-linux",
        selector_only,
        pod(affinity=WINDOWS_AFFINITY),
        MATCHED,
        change=eni,
    )
    linux_selector = pod(nodeSelector={"kubernetes.io/os": "linux"})
    add("linux-os-linux-selector", f"{WEBHOOK}: hasWindowsNodeSelector", linux_selector, MATCHED, change=eni)

    host = f"{WEBHOOK}: WhichPod (HostNetworking first)"
    add("host-network-matched", host, pod(hostNetwork=True), MATCHED)
    add("host-network-without-service-account", host, pod(hostNetwork=True, serviceAccountName="ghost"), [])
    add("host-network-beats-fargate", host, pod(hostNetwork=True, labels={FARGATE_LABEL: "fp"}), MATCHED)

    fargate = f"{WEBHOOK}: HandleFargatePod"
    sgs = set_annotation(POD_SG, "sg-1,sg-2")
    fargate_pod = pod(labels={"app": "web", FARGATE_LABEL: "fp"}, annotations={"existing": "kept"})
    user_set = edited(fargate_pod, set_annotation(POD_SG, "sg-9"))
    add("fargate-matched", fargate, fargate_pod, MATCHED, change=sgs)
    bare = pod(labels={FARGATE_LABEL: "fp"})
    add("fargate-matched-no-annotations", f"{fargate}, InitializeEmptyFields", bare, MATCHED, change=sgs)
    add("fargate-matched-replaces-user-annotation", fargate, user_set, MATCHED, change=sgs)
    removed = set_annotation(POD_SG, None)
    add("fargate-unmatched-removes-user-annotation", fargate, user_set, [account()], change=removed)
    add("fargate-unmatched", fargate, fargate_pod, [account()])
    add("fargate-service-account-missing", fargate, fargate_pod, [policy(["sg-1"])], denied=True)
    both = pod(labels={FARGATE_LABEL: "fp"}, **WINDOWS_POD)
    add("fargate-beats-windows", f"{WEBHOOK}: WhichPod (Fargate before Windows)", both, MATCHED, change=sgs)

    windows = f"{WEBHOOK}: HandleWindowsPod; {CONDITIONS}: IsWindowsIPAMEnabled"
    ipv4 = set_resource(PRIVATE_IPV4)
    on = vpc_cni(**{"enable-windows-ipam": "true"})
    for label in ("kubernetes.io/os", "beta.kubernetes.io/os"):
        short = "beta" if label.startswith("beta") else "ga"
        windows_pod = pod(nodeSelector={label: "windows"}, containers=[container("app", CPU)])
        add(f"windows-{short}-ipam-on", windows, windows_pod, [*MATCHED, on], change=ipv4)
    add("windows-ipam-on-no-resources", windows, pod(**WINDOWS_POD), [on], change=ipv4)
    one = vpc_cni(**{"enable-windows-ipam": "1"})
    add("windows-ipam-parse-bool-1", windows, pod(**WINDOWS_POD), [one], change=ipv4)
    for value in ("false", "yes", "on"):
        off = vpc_cni(**{"enable-windows-ipam": value})
        add(f"windows-ipam-{value}-is-off", windows, pod(**WINDOWS_POD), [*MATCHED, off])
    add("windows-no-configmap", windows, pod(**WINDOWS_POD), MATCHED)
    ghost = pod(serviceAccountName="ghost", **WINDOWS_POD)
    add(
        "windows-without-service-account",
        f"{windows} (no SecurityGroupPolicy lookup)",
        ghost,
        [on],
        change=ipv4,
    )
    return cases


CASES = _cases()
