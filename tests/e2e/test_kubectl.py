"""What a user sees through `kubectl`: the real kubectl against the fake API server, which runs the
webhook configurations rendered from manifests/ against `fitguard webhook` started as its
Deployment starts it. Every assertion is on what kubectl prints (or on which reviews the API
server sent, where kubectl cannot tell: an exempt namespace must not be reviewed at all).

kubectl runs with --validate=false: the fake serves no OpenAPI documents for client-side schema
validation; what kubectl prints is otherwise the same.
"""

from __future__ import annotations

import copy
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kubectl_cluster import Cluster, kubectl_path, running_cluster, webhook_configurations
from tests.user_sees import (
    BIG_BUILD_DENIAL,
    FAIL_CLOSED_ERROR,
    NGT_HEADER,
    NGT_ROWS,
    PAYMENTS_WORKER_DENIAL,
    SCRATCH_BUILD_DENIAL,
    VIDEO_TRANSCODE_DENIAL,
    WARN_WARNINGS,
    forbidden,
    kubectl_table,
)
from tests.waiting import eventually

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("kubectl"),
    pytest.mark.skipif(kubectl_path() is None, reason="kubectl is not on PATH"),
]

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = {
    obj["metadata"]["name"]: obj
    for obj in yaml.safe_load((ROOT / "examples/workloads.yaml").read_text())["items"]
}
WARN_NAMESPACE = [
    {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-warn", "labels": {"fitguard.io/mode": "warn"}},
    },
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "team-warn"}},
]
APPLY = ("apply", "--validate=false", "-f")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    objects = yaml.safe_load((ROOT / "examples/cluster.yaml").read_text())["items"]
    with running_cluster(tmp_path_factory.mktemp("kubectl"), [*objects, *WARN_NAMESPACE]) as started:
        yield started


@pytest.fixture
def fresh(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster with an empty review log; pods and Deployments a test created are deleted after
    it, and the base configurations routed to the webhook are back."""
    cluster.fake.admission.clear_calls()
    before = {kind: names(cluster, kind) for kind in ("Pod", "Deployment")}
    yield cluster
    for kind, existed in before.items():
        for namespace, name in names(cluster, kind) - existed:
            cluster.fake.delete(kind, name, namespace)
    cluster.register()
    cluster.route_service(cluster.webhook_port)


def names(cluster: Cluster, kind: str) -> set[tuple[str, str]]:
    return {(obj["metadata"]["namespace"], obj["metadata"]["name"]) for obj in cluster.fake.objects(kind)}


def workload(example: str, namespace: str | None = None, **metadata: Any) -> dict[str, Any]:
    """An object of examples/workloads.yaml, in another namespace or with other metadata."""
    obj = copy.deepcopy(WORKLOADS[example])
    if namespace:
        obj["metadata"]["namespace"] = namespace
    obj["metadata"].update(metadata)
    return obj


def pods(cluster: Cluster) -> set[tuple[str, str]]:
    return names(cluster, "Pod")


def test_a_pod_that_fits_no_node_group_is_denied_with_the_webhooks_reasons(fresh: Cluster) -> None:
    """kubectl apply of a pod no template can take prints the API server's denial: the webhook's
    name, then the reason per node group; both webhooks were asked, nothing was stored."""
    path = fresh.write("scratch-build.yaml", workload("scratch-build"))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == forbidden(str(path), SCRATCH_BUILD_DENIAL)
    assert fresh.reviewed() == [
        ("mutate.fitguard.io", "CREATE", "default", "scratch-build", False),
        ("validate.fitguard.io", "CREATE", "default", "scratch-build", False),
    ]
    assert ("default", "scratch-build") not in pods(fresh)


def test_a_deployment_that_fits_no_node_group_is_denied_naming_the_field_to_edit(fresh: Cluster) -> None:
    """A Deployment is judged by its pod template: the denial names the Deployment and the field."""
    path = fresh.write("video-transcode.yaml", workload("video-transcode"))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == forbidden(str(path), VIDEO_TRANSCODE_DENIAL)
    assert fresh.reviewed() == [("validate.fitguard.io", "CREATE", "default", "video-transcode", False)]
    assert fresh.fake.objects("Deployment", "default") == []


def test_a_request_no_real_node_offers_says_both_figures_and_the_root_volume(fresh: Cluster) -> None:
    """Issue 31: 500Gi of ephemeral storage, where ng-batch's launch template gives a node 44Gi and
    its tags none. The whole denial: what a node would offer and what cluster-autoscaler sees
    (never "offers 0"), and for every group the root volume's field, not a larger type."""
    big = workload("scratch-build", name="big-build")
    big["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "500Gi"
    path = fresh.write("big-build.yaml", big)
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        forbidden(str(path), BIG_BUILD_DENIAL),
    )
    assert ("default", "big-build") not in pods(fresh)


def test_a_deployment_refused_for_an_injected_pod_eni_names_the_policy(fresh: Cluster) -> None:
    """Issue 31: a Deployment whose pods match SecurityGroupPolicy payments-db-access, on t3.large
    nodes only. The whole denial: the fields to edit name the policy, not the pod-eni field
    /mutate would inject, and ng-batch, which the node selector excludes, gets no tag advice."""
    worker = workload("video-transcode", name="payments-worker", namespace="payments")
    template = worker["spec"]["template"]
    template["metadata"]["labels"] = {"app": "payments-api"}
    template["spec"] = {
        "serviceAccountName": "payments-api",
        "nodeSelector": {"node.kubernetes.io/instance-type": "t3.large"},
        "containers": [{"name": "worker", "image": "public.ecr.aws/nginx/nginx:1.27"}],
    }
    path = fresh.write("payments-worker.yaml", worker)
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == forbidden(str(path), PAYMENTS_WORKER_DENIAL)
    assert fresh.fake.objects("Deployment", "payments") == []


def test_an_update_that_no_longer_fits_is_denied_and_the_deployment_keeps_its_template(
    fresh: Cluster,
) -> None:
    """A second `kubectl apply` (a PATCH, reviewed as UPDATE with the old object) that makes the
    template unfit is denied; the stored Deployment is the one applied first."""
    fitting = workload("video-transcode")
    fitting["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "500m", "memory": "1Gi"}
    }
    path = fresh.write("video-transcode.yaml", fitting)
    created = fresh.kubectl(*APPLY, str(path))
    assert (created.returncode, created.stdout, created.stderr) == (
        0,
        "deployment.apps/video-transcode created\n",
        "",
    )
    stored = fresh.fake.get("Deployment", "video-transcode", "default")
    unfit = copy.deepcopy(fitting)
    unfit["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"ephemeral-storage": "40Gi"}
    fresh.write("video-transcode.yaml", unfit)
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("Error from server (Forbidden): error when applying patch:\n")
    assert (
        result.stderr.split("\nfor: ", 1)[1]
        == f'"{path}": error when patching "{path}": {VIDEO_TRANSCODE_DENIAL}'
    )
    assert fresh.reviewed() == [
        ("validate.fitguard.io", "CREATE", "default", "video-transcode", False),
        ("validate.fitguard.io", "UPDATE", "default", "video-transcode", False),
    ]
    update = fresh.fake.admission.calls()[1].request
    assert update["oldObject"]["spec"] == stored["spec"]
    assert fresh.fake.get("Deployment", "video-transcode", "default") == stored


def test_in_a_warn_namespace_the_pod_is_created_and_kubectl_prints_warnings(fresh: Cluster) -> None:
    """fitguard.io/mode=warn on the namespace: the same pod is admitted, the reason reaches the user
    as `Warning:` lines (the API server's Warning headers)."""
    path = fresh.write("warn.yaml", workload("scratch-build", "team-warn"))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout) == (0, "pod/scratch-build created\n")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert result.stderr.splitlines() == warnings
    assert warnings == [f"Warning: {warning}" for warning in WARN_WARNINGS]
    assert ("team-warn", "scratch-build") in pods(fresh)


def test_a_pod_matching_a_security_group_policy_gets_pod_eni_and_the_guard(fresh: Cluster) -> None:
    """The mutating webhook's JSON patch is applied before the write: kubectl get shows pod-eni in
    the first container's requests and limits and the exhausted-node guard affinity."""
    path = fresh.write("payments-api.yaml", workload("payments-api-0"))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "pod/payments-api-0 created\n", "")
    got = fresh.kubectl("get", "pod", "-n", "payments", "payments-api-0", "-o", "json")
    spec = json.loads(got.stdout)["spec"]
    assert spec == {
        "serviceAccountName": "payments-api",
        "containers": [
            {
                "name": "api",
                "image": "public.ecr.aws/nginx/nginx:1.27",
                "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi", "vpc.amazonaws.com/pod-eni": "1"},
                    "limits": {"vpc.amazonaws.com/pod-eni": "1"},
                },
            }
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "fitguard.io/branch-eni-exhausted", "operator": "DoesNotExist"}
                            ]
                        }
                    ]
                }
            }
        },
    }


def test_server_dry_run_is_judged_by_both_webhooks_and_writes_nothing(fresh: Cluster) -> None:
    """--dry-run=server: the review says dryRun (the webhooks' sideEffects None allow it), a denial
    is printed as for a real apply, an admitted pod is reported but not stored."""
    denied_path = fresh.write("dry-denied.yaml", workload("scratch-build"))
    denied = fresh.kubectl(*APPLY, str(denied_path), "--dry-run=server")
    assert (denied.returncode, denied.stdout) == (1, "")
    assert denied.stderr == forbidden(str(denied_path), SCRATCH_BUILD_DENIAL)
    admitted = fresh.kubectl(*APPLY, str(fresh.write("dry-web.yaml", workload("web-0"))), "--dry-run=server")
    assert (admitted.returncode, admitted.stdout, admitted.stderr) == (
        0,
        "pod/web-0 created (server dry run)\n",
        "",
    )
    assert fresh.reviewed() == [
        ("mutate.fitguard.io", "CREATE", "default", "scratch-build", True),
        ("validate.fitguard.io", "CREATE", "default", "scratch-build", True),
        ("mutate.fitguard.io", "CREATE", "default", "web-0", True),
        ("validate.fitguard.io", "CREATE", "default", "web-0", True),
    ]
    assert {("default", "scratch-build"), ("default", "web-0")} & pods(fresh) == set()


@pytest.mark.parametrize("namespace", ["kube-system", "fitguard-system"])
def test_kube_system_and_fitguards_own_namespace_are_never_reviewed(fresh: Cluster, namespace: str) -> None:
    """The configurations' namespaceSelector keeps the webhooks out of kube-system and fitguard's own
    namespace: the pod is created and no review is sent (the webhook's own exemption alone would
    not show here, so a selector that lets these namespaces through fails this test)."""
    path = fresh.write(f"{namespace}.yaml", workload("scratch-build", namespace))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "pod/scratch-build created\n", "")
    assert fresh.reviewed() == []


def test_a_mirror_pod_is_not_reviewed(fresh: Cluster) -> None:
    """A static pod's mirror (annotation kubernetes.io/config.mirror) fails the configurations'
    matchCondition: created as it is, no review sent."""
    mirror = workload(
        "scratch-build", name="etcd-mirror", annotations={"kubernetes.io/config.mirror": "abc123"}
    )
    result = fresh.kubectl(*APPLY, str(fresh.write("mirror.yaml", mirror)))
    assert (result.returncode, result.stdout, result.stderr) == (0, "pod/etcd-mirror created\n", "")
    assert fresh.reviewed() == []


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once the socket is closed


def test_webhook_down_with_failure_policy_ignore_admits(fresh: Cluster) -> None:
    """The base configurations fail open: with nothing behind the Service, even a pod that would be
    denied is created, and kubectl prints no error."""
    fresh.route_service(_closed_port())
    path = fresh.write("down.yaml", workload("scratch-build"))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "pod/scratch-build created\n", "")
    assert fresh.reviewed() == [
        ("mutate.fitguard.io", "CREATE", "default", "scratch-build", False),
        ("validate.fitguard.io", "CREATE", "default", "scratch-build", False),
    ]


def test_webhook_down_with_the_fail_closed_overlay_denies(fresh: Cluster) -> None:
    """The fail-closed overlay's configurations: the first webhook that cannot be called fails the
    request with the API server's internal error, naming the webhook and the Service URL."""
    fresh.register("fail-closed")
    port = _closed_port()
    fresh.route_service(port)
    path = fresh.write("down-closed.yaml", workload("web-0"))
    result = fresh.kubectl(*APPLY, str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == FAIL_CLOSED_ERROR.format(path=path, address=f"127.0.0.1:{port}")
    assert ("default", "web-0") not in pods(fresh)


def test_the_fail_closed_overlay_still_exempts_kube_system(fresh: Cluster) -> None:
    """Fail closed and the webhook down: kube-system is still not reviewed, so the cluster can heal."""
    fresh.register("fail-closed")
    fresh.route_service(_closed_port())
    result = fresh.kubectl(*APPLY, str(fresh.write("heal.yaml", workload("web-0", "kube-system"))))
    assert (result.returncode, result.stdout, result.stderr) == (0, "pod/web-0 created\n", "")
    assert fresh.reviewed() == []


def test_kubectl_get_ngt_shows_the_printer_columns(cluster: Cluster) -> None:
    """The CRD's short name and additionalPrinterColumns, as kubectl prints the API server's Table.
    AWS is unreachable here: once the controller has written Discovered False on every template
    (status subresource), CA FROM ZERO shows its judgement and GROUP stays empty (never discovered).
    Issue 31: every group's quantities in one unit (spec.display): a live node's 19136439364 bytes
    of ephemeral storage read 17.8Gi beside the launch template's 44Gi. Issue 27: the demo's
    Karpenter NodePool has its row, the most any allowed type offers, and no CA FROM ZERO
    (cluster-autoscaler never scales a NodePool)."""
    eventually(lambda: all(_discovered(o) == "False" for o in _templates(cluster)), "statuses", timeout=90)
    result = cluster.kubectl("get", "ngt")
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    ages = [line.rsplit(" ", 1)[1] for line in lines[1:]]
    assert all(re.fullmatch(r"\d+(s|m\d*s?|h\d*m?)", age) for age in ages), ages
    assert result.stdout == kubectl_table(
        NGT_HEADER, [(*row, age) for row, age in zip(NGT_ROWS, ages, strict=True)]
    )


def _templates(cluster: Cluster) -> list[dict[str, Any]]:
    return cluster.fake.objects("NodeGroupTemplate", api_version="fitguard.io/v1alpha1")


def _discovered(obj: dict[str, Any]) -> str:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == "Discovered"), "")


def test_the_rendered_configurations_are_what_the_cluster_runs(cluster: Cluster) -> None:
    """The registered configurations are the rendered manifests, only the caBundle added."""
    for configuration in webhook_configurations():
        stored = cluster.fake.get(configuration["kind"], configuration["metadata"]["name"])
        for hook in stored["webhooks"]:
            assert hook["clientConfig"].pop("caBundle")
        assert stored["webhooks"] == configuration["webhooks"]
