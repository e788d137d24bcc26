"""/validate's decisions: which pods and workload templates are refused, and what the message
tells a person to do. Runs the review function on the demo cluster's state (examples/)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from capacity.fit import Reason
from capacity.serve import GroupVerdict
from capacity.taints import Taint
from capacity.template import NodeGroupTemplate
from kube.statefile import load_state
from kube.store import Store
from tests import user_sees
from tests.capacity.test_autoscaler_memory import group, remembering
from tests.objects import node_groups_only, pod
from webhook.cluster import ClusterView, from_objects
from webhook.denial_fields import (
    MAX_WARNING,
    WARNING_LIMIT,
    field_lines,
    reason_path,
    warnings_for,
    whole_warning,
)
from webhook.review import Verdict, WebhookOptions
from webhook.validate import COLD_START, review

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = node_groups_only(load_state(EXAMPLES / "cluster.yaml"))
WORKLOADS = {obj["metadata"]["name"]: obj for obj in load_state(EXAMPLES / "workloads.yaml")}
ENFORCE = WebhookOptions(mode="enforce")


def cluster(*extra: dict[str, Any], drop: tuple[str, ...] = ()) -> ClusterView:
    """The demo cluster with `extra` objects; a group named in `drop` is replaced by the test's
    own template, so its live nodes go too (they would contradict what the test says the group is)."""
    objects = [
        o
        for o in CLUSTER
        if o["metadata"]["name"] not in drop
        and (o["metadata"].get("labels") or {}).get("eks.amazonaws.com/nodegroup") not in drop
    ]
    return from_objects([*copy.deepcopy(objects), *extra])


def request(
    obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None
) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "uid": "u-1",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "operation": operation,
        "namespace": obj["metadata"].get("namespace", ""),
        "object": obj,
        "oldObject": old,
    }


def ngt(name: str, **spec: Any) -> NodeGroupTemplate:
    base = next(o for o in CLUSTER if o["kind"] == "NodeGroupTemplate" and o["metadata"]["name"] == name)
    return NodeGroupTemplate.from_object({**base, "spec": {**base["spec"], **spec}})


def test_zero_node_group_without_the_tag_is_the_classic_trap_and_says_the_fix() -> None:
    verdict = review(request(WORKLOADS["scratch-build"]), cluster(), ENFORCE)
    assert not verdict.allowed
    lines = verdict.message.splitlines()
    assert lines[0] == "pod does not fit any node group"
    batch = next(line for line in lines if line.startswith("ng-batch:"))
    assert "Insufficient ephemeral-storage: requests 30Gi" in batch
    assert (
        "an m5.large node would offer 44Gi, but cluster-autoscaler sees none while the group has 0 nodes"
        in batch
    )
    assert "tag the ASG k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage" in batch
    assert "or let fitguard sync the tags" in batch
    assert "until it restarts" in lines[-1]
    assert any(line.startswith("ng-burst: Insufficient ephemeral-storage") for line in lines)


def test_the_tag_on_the_asg_makes_the_same_pod_fit() -> None:
    tagged = ngt("ng-batch").to_object()
    tagged["spec"]["autoscaler"]["allocatable"]["ephemeral-storage"] = "47019777424"
    view = cluster(tagged, drop=("ng-batch",))
    assert review(request(WORKLOADS["scratch-build"]), view, ENFORCE).allowed


def test_a_live_node_makes_the_group_judged_by_what_it_really_offers() -> None:
    live = ngt("ng-batch", nodes=1).to_object()
    assert review(request(WORKLOADS["scratch-build"]), cluster(live, drop=("ng-batch",)), ENFORCE).allowed


def test_fitguard_scaled_groups_are_judged_by_the_actual_view() -> None:
    ours = ngt("ng-batch", scaleFromZero="fitguard").to_object()
    assert review(request(WORKLOADS["scratch-build"]), cluster(ours, drop=("ng-batch",)), ENFORCE).allowed


def test_pod_eni_on_t3_only_says_the_type_has_no_branch_enis() -> None:
    selected = pod(
        "eni",
        {"vpc.amazonaws.com/pod-eni": "1"},
        nodeSelector={"node.kubernetes.io/instance-type": "t3.large"},
    )
    verdict = review(request(selected), cluster(), ENFORCE)
    assert not verdict.allowed
    assert "t3.large supports no branch ENIs" in verdict.message
    assert "ng-general: node(s) didn't match Pod's node affinity/selector" in verdict.message


def test_pod_eni_on_the_m5_group_is_allowed() -> None:
    assert review(request(pod("eni", {"vpc.amazonaws.com/pod-eni": "1"})), cluster(), ENFORCE).allowed


def test_a_node_selector_only_a_too_small_group_satisfies() -> None:
    verdict = review(
        request(pod("big", {"cpu": "3"}, nodeSelector={"workload": "general"})), cluster(), ENFORCE
    )
    assert verdict.allowed  # ng-general has 3920m
    verdict = review(
        request(pod("big", {"cpu": "3800m"}, nodeSelector={"workload": "general"})), cluster(), ENFORCE
    )
    assert not verdict.allowed
    assert (
        "ng-general: Insufficient cpu: requests 3800m; an m5.xlarge node offers 3720m after 200m"
        in verdict.message
    )


def test_taints_need_tolerations() -> None:
    tainted = ngt("ng-general").to_object()
    tainted["spec"]["actual"]["taints"] = [{"key": "dedicated", "value": "eni", "effect": "NoSchedule"}]
    view = cluster(tainted, drop=("ng-general",))
    eni = pod("eni", {"vpc.amazonaws.com/pod-eni": "1"})
    verdict = review(request(eni), view, ENFORCE)
    assert (
        "node(s) had untolerated taint {dedicated: eni}: add a toleration for dedicated=eni:NoSchedule"
        in (verdict.message)
    )
    eni["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    assert review(request(eni), view, ENFORCE).allowed


def test_daemonset_overhead_tips_a_pod_over() -> None:
    assert not review(request(pod("x", {"cpu": "3800m"})), cluster(), ENFORCE).allowed
    light = ngt("ng-general", daemonSetOverhead={}).to_object()
    assert review(request(pod("x", {"cpu": "3800m"})), cluster(light, drop=("ng-general",)), ENFORCE).allowed


def test_a_deployment_is_refused_with_the_field_path_in_warn_mode() -> None:
    verdict = review(request(WORKLOADS["video-transcode"]), cluster(), WebhookOptions(mode="warn"))
    assert verdict.allowed
    assert verdict.warnings
    assert all(len(w) <= MAX_WARNING for w in verdict.warnings)
    assert verdict.warnings[0].startswith(
        "spec.template.spec.containers[0].resources.limits.ephemeral-storage:"
    )
    enforced = review(request(WORKLOADS["video-transcode"]), cluster(), ENFORCE)
    assert enforced.message.startswith("Deployment video-transcode does not fit any node group")
    assert "fields to edit: spec.template.spec.containers[0].resources.limits.ephemeral-storage" in (
        enforced.message.splitlines()
    )


def test_warn_mode_gives_one_whole_warning_per_group_when_a_field_line_would_be_cut() -> None:
    """Three groups refuse the same field and do not fit one 120-character line: one warning per
    group, none cut, each naming its reason; the whole denial message is the finding to record."""
    verdict = review(request(WORKLOADS["video-transcode"]), cluster(), WebhookOptions(mode="warn"))
    field = "spec.template.spec.containers[0].resources.limits.ephemeral-storage"
    assert verdict.allowed and verdict.message == ""
    assert verdict.warnings == [
        f"{field}: fits no node group: ng-batch (tags)",
        f"{field}: fits no node group: ng-burst (ephemeral-storage)",
        f"{field}: fits no node group: ng-general (ephemeral-storage)",
    ]
    assert (verdict.finding, verdict.finding_mode) == (
        review(request(WORKLOADS["video-transcode"]), cluster(), ENFORCE).message,
        "warn",
    )


def test_warn_mode_names_twelve_groups_per_field_and_counts_the_rest() -> None:
    """Fifteen groups refusing one field: twelve warnings of one group each, then one counting the
    other three, every one under the apiserver's 256-character cut."""
    general = ngt("ng-general").to_object()
    groups = [
        {**general, "metadata": {**general["metadata"], "name": f"ng-small-{i:02d}"}} for i in range(15)
    ]
    view = cluster(
        *groups, drop=tuple(o["metadata"]["name"] for o in CLUSTER if o["kind"] == "NodeGroupTemplate")
    )
    verdict = review(request(pod("x", {"cpu": "300"})), view, WebhookOptions(mode="warn"))
    field = "spec.containers[0].resources.requests.cpu"
    assert verdict.warnings == [f"{field}: fits no node group: ng-small-{i:02d} (cpu)" for i in range(12)] + [
        f"{field}: and 3 more node groups do not fit"
    ]


def test_a_warning_is_cut_only_past_256_characters_and_then_at_a_word() -> None:
    """Up to 256 characters a warning is kept whole; a longer one ends at the last whole word that
    fits, marked with an ellipsis, so no word is ever cut in half."""
    exact = "x" * WARNING_LIMIT
    assert whole_warning(exact) == exact
    words = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters
    cut = whole_warning(words)
    assert len(cut) <= WARNING_LIMIT and cut.endswith("\u2026")
    assert cut == " ".join(f"word{i:03d}" for i in range(31)) + "\u2026"


def test_job_and_cronjob_templates_are_found() -> None:
    template = {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"ephemeral-storage": "900Gi"}}}]}
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {"template": template},
    }
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"jobTemplate": {"spec": {"template": template}}},
    }
    assert not review(request(job), cluster(), ENFORCE).allowed
    warn = review(request(cron), cluster(), WebhookOptions(mode="warn"))
    assert warn.warnings[0].startswith("spec.jobTemplate.spec.template.spec.containers[0].resources.requests")


def test_a_template_that_matches_a_security_group_policy_is_judged_with_pod_eni() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "payments"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "payments-api"}},
                "spec": {
                    "serviceAccountName": "payments-api",
                    "nodeSelector": {"node.kubernetes.io/instance-type": "t3.large"},
                    "containers": [{"name": "c"}],
                },
            }
        },
    }
    verdict = review(request(deploy), cluster(), ENFORCE)
    assert not verdict.allowed and "supports no branch ENIs" in verdict.message
    deploy["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    assert review(request(deploy), cluster(), ENFORCE).allowed


# what kubectl prints after the webhook's name (tests/e2e/test_kubectl.py sends the same Deployment)
PAYMENTS_WORKER_DENIAL = user_sees.PAYMENTS_WORKER_DENIAL.removeprefix(user_sees.DENIED).removesuffix("\n")


def payments_worker(labels: dict[str, str], requests: dict[str, str] | None = None) -> dict[str, Any]:
    """The payments worker as a Deployment on t3.large nodes (no branch ENIs there)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "payments-worker", "namespace": "payments"},
        "spec": {
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "payments-api",
                    "nodeSelector": {"node.kubernetes.io/instance-type": "t3.large"},
                    "containers": [{"name": "c", "resources": {"requests": requests or {}}}],
                },
            }
        },
    }


def test_fields_to_edit_name_the_security_group_policy_not_the_injected_pod_eni() -> None:
    """Issue 31: a Deployment whose pods match SecurityGroupPolicy payments-db-access is refused for
    the pod-eni /mutate injects: the denial names that policy, never the injected field; the
    group its own node selector excludes (ng-batch) gets no tag advice; the demo's NodePool, whose
    types exclude t3.large, refuses the selector. The whole text, as README shows it."""
    demo = from_objects(load_state(EXAMPLES / "cluster.yaml"))
    verdict = review(request(payments_worker({"app": "payments-api"})), demo, ENFORCE)
    assert (verdict.allowed, verdict.message) == (False, PAYMENTS_WORKER_DENIAL)


def test_a_denial_that_names_a_nodepool_keeps_the_fields_to_edit_and_warns_of_it() -> None:
    """The whole demo cluster (its NodePool included): a Deployment no group and no NodePool
    serves is denied with the NodePool's line and the pod template's field line, as README shows;
    under warn mode the person applying gets each group's field warning and the NodePool's line."""
    demo = from_objects(load_state(EXAMPLES / "cluster.yaml"))
    verdict = review(request(WORKLOADS["video-transcode"]), demo, ENFORCE)
    denial = user_sees.VIDEO_TRANSCODE_DENIAL.removeprefix(user_sees.DENIED).removesuffix("\n")
    assert (verdict.allowed, verdict.message) == (False, denial)
    warned = review(request(WORKLOADS["scratch-build"]), demo, WebhookOptions(mode="warn"))
    assert (warned.allowed, warned.warnings) == (True, list(user_sees.WARN_WARNINGS))


def test_warnings_name_the_security_group_policy_for_an_injected_pod_eni() -> None:
    """Warn mode, a pod as it reaches /validate (already injected): the warnings point at the
    policy, not at spec.containers[0].resources.requests.vpc.amazonaws.com/pod-eni."""
    eni = {"vpc.amazonaws.com/pod-eni": "1"}
    injected = pod(
        "w",
        eni,
        nodeSelector={"node.kubernetes.io/instance-type": "t3.large"},
        serviceAccountName="payments-api",
    )
    injected["metadata"].update(namespace="payments", labels={"app": "payments-api"})
    injected["spec"]["containers"][0]["resources"]["limits"] = dict(eni)
    verdict = review(request(injected), cluster(), WebhookOptions(mode="warn"))
    policy = "SecurityGroupPolicy payments/payments-db-access (it injects vpc.amazonaws.com/pod-eni)"
    selector = "spec.nodeSelector: fits no node group: "
    assert verdict.warnings == [
        f"{selector}ng-batch (node(s) didn't match Pod's node affinity/selector)",
        f"{selector}ng-general (node(s) didn't match Pod's node affinity/selector)",
        f"{policy}: fits no node group: ng-batch (vpc.amazonaws.com/pod-eni)",
        f"{policy}: fits no node group: ng-burst (vpc.amazonaws.com/pod-eni)",
    ]


def test_a_pod_eni_request_no_policy_injects_is_the_manifests_own_field() -> None:
    """No SecurityGroupPolicy matches the template: the pod-eni it asks for is written in the
    manifest, and the field to edit is that field."""
    worker = payments_worker({"app": "other"}, {"vpc.amazonaws.com/pod-eni": "1"})
    verdict = review(request(worker), cluster(), ENFORCE)
    assert verdict.message.splitlines()[-2] == (
        "fields to edit: spec.template.spec.nodeSelector, "
        "spec.template.spec.containers[0].resources.requests.vpc.amazonaws.com/pod-eni"
    )


def test_a_policy_that_injects_nothing_is_not_named() -> None:
    """The template matches the policy but /mutate adds nothing: a second container already
    requests pod-eni (webhook/mutate.py requests_pod_eni_elsewhere), the pods' ServiceAccount does
    not exist (no policy can be matched), or the pods use the host's network. The field is the
    manifest's own."""
    worker = payments_worker({"app": "payments-api"})
    containers = worker["spec"]["template"]["spec"]["containers"]
    containers.append({"name": "sidecar", "resources": {"requests": {"vpc.amazonaws.com/pod-eni": "1"}}})
    verdict = review(request(worker), cluster(), ENFORCE)
    assert verdict.message.splitlines()[-2] == (
        "fields to edit: spec.template.spec.nodeSelector, "
        "spec.template.spec.containers[1].resources.requests.vpc.amazonaws.com/pod-eni"
    )
    ghost = payments_worker({"app": "payments-api"}, {"vpc.amazonaws.com/pod-eni": "1"})
    ghost["spec"]["template"]["spec"]["serviceAccountName"] = "ghost"  # /mutate denies its pods itself
    assert review(request(ghost), cluster(), ENFORCE).message.splitlines()[-2] == (
        "fields to edit: spec.template.spec.nodeSelector, "
        "spec.template.spec.containers[0].resources.requests.vpc.amazonaws.com/pod-eni"
    )
    host = payments_worker({"app": "payments-api"}, {"vpc.amazonaws.com/pod-eni": "1"})
    host["spec"]["template"]["spec"]["hostNetwork"] = True  # /mutate leaves host-network pods alone
    assert review(request(host), cluster(), ENFORCE).message.splitlines()[-2] == (
        "fields to edit: spec.template.spec.nodeSelector, "
        "spec.template.spec.containers[0].resources.requests.vpc.amazonaws.com/pod-eni"
    )


def test_update_is_checked_only_when_the_pod_template_changed() -> None:
    deploy = WORKLOADS["video-transcode"]
    scaled = copy.deepcopy(deploy)
    scaled["spec"]["replicas"] = 5
    assert review(request(scaled, "UPDATE", deploy), cluster(), ENFORCE).allowed
    assert not review(request(deploy, "UPDATE", WORKLOADS["scratch-build"]), cluster(), ENFORCE).allowed


def test_namespace_label_overrides_the_mode() -> None:
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "default", "labels": {"fitguard.io/mode": "audit"}},
    }
    view = cluster(ns, drop=("default",))
    verdict = review(request(WORKLOADS["scratch-build"]), view, ENFORCE)
    assert verdict.allowed and verdict.message.startswith("pod does not fit")


def test_cold_start_allows_with_a_warning() -> None:
    view = from_objects([o for o in CLUSTER if o["kind"] != "NodeGroupTemplate"])
    verdict = review(request(WORKLOADS["scratch-build"]), view, ENFORCE)
    assert verdict.allowed and verdict.warnings == [COLD_START]


def test_a_group_at_max_size_zero_serves_nothing() -> None:
    closed = ngt("ng-general", maxSize=0, nodes=0).to_object()
    verdict = review(
        request(pod("eni", {"vpc.amazonaws.com/pod-eni": "1"})),
        cluster(closed, drop=("ng-general",)),
        ENFORCE,
    )
    assert not verdict.allowed and "ng-general: max size is 0" in verdict.message


@pytest.mark.parametrize("operation", ["DELETE", "CONNECT", None])
def test_other_operations_are_allowed(operation: str) -> None:
    """Only CREATE and UPDATE are judged, of a pod as of a workload."""
    assert review(request(WORKLOADS["scratch-build"], operation), cluster(), ENFORCE) == Verdict()
    assert review(request(_workload("Deployment", name="w"), operation), cluster(), ENFORCE) == Verdict()


def test_a_malformed_quantity_is_not_denied_out_of_confusion() -> None:
    verdict = review(request(pod("bad", {"cpu": "lots"})), cluster(), ENFORCE)
    assert verdict.allowed
    assert "spec.containers[0].resources.requests.cpu" in verdict.warnings[0]


# Table tests of the helpers /validate answers with (written against mutation survivors: each
# expected value is written out whole).


def _workload(kind: str, api_version: str = "apps/v1", **meta: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": "w"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "300"}}}]},
    }
    spec = {"jobTemplate": {"spec": {"template": template}}} if kind == "CronJob" else {"template": template}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"namespace": "default", **meta},
        "spec": spec,
    }


CPU_300_LINES = [
    "ng-batch: Insufficient cpu: requests 300; an m5.large node would offer 1730m, and"
    " cluster-autoscaler sees 1700m while the group has 0 nodes: request less or use a larger type",
    "ng-burst: Insufficient cpu: requests 300; a t3.large node offers 1730m after 200m of DaemonSets:"
    " request less or use a larger type",
    "ng-general: Insufficient cpu: requests 300; an m5.xlarge node offers 3720m after 200m of DaemonSets:"
    " request less or use a larger type",
]
# Every denial ends naming the whole set it judged: the demo cluster's three groups and four nodes.
DEMO_JUDGED = (
    "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 4 live nodes,"
    " no Karpenter NodePools"
)


@pytest.mark.parametrize(
    ("kind", "api_version", "field"),
    [
        ("Deployment", "apps/v1", "spec.template.spec"),
        ("StatefulSet", "apps/v1", "spec.template.spec"),
        ("DaemonSet", "apps/v1", "spec.template.spec"),
        ("ReplicaSet", "apps/v1", "spec.template.spec"),
        ("ReplicationController", "v1", "spec.template.spec"),
        ("Job", "batch/v1", "spec.template.spec"),
        ("CronJob", "batch/v1", "spec.jobTemplate.spec.template.spec"),
    ],
)
def test_every_workload_kind_is_judged_by_its_pod_template(kind: str, api_version: str, field: str) -> None:
    """Each supported kind's template is found at its own path, and the whole denial names the
    kind, the object and the template field to edit."""
    verdict = review(request(_workload(kind, api_version, name="w")), cluster(), ENFORCE)
    assert (verdict.allowed, verdict.code, verdict.reason) == (False, 403, "Forbidden")
    assert verdict.message.splitlines() == [
        f"{kind} w does not fit any node group",
        *CPU_300_LINES,
        f"fields to edit: {field}.containers[0].resources.requests.cpu",
        DEMO_JUDGED,
    ]


def test_a_workload_named_by_generate_name_or_not_at_all_is_still_named_by_its_kind() -> None:
    """The subject of the message is `kind name`, the generateName when there is no name, and the
    kind alone when there is neither."""
    by_prefix = review(request(_workload("Job", "batch/v1", generateName="nightly-")), cluster(), ENFORCE)
    assert by_prefix.message.splitlines()[0] == "Job nightly- does not fit any node group"
    unnamed = review(request(_workload("Job", "batch/v1")), cluster(), ENFORCE)
    assert unnamed.message.splitlines()[0] == "Job does not fit any node group"


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Deployment", "spec": {"template": "not a map"}},
        {"kind": "Deployment", "spec": "not a map"},
        {"kind": "Deployment", "spec": {"template": {"spec": "not a map"}}},
        {"kind": "Deployment", "spec": {"template": {"metadata": "x", "spec": {"containers": []}}}},
        {"kind": "ConfigMap", "spec": {"template": {"spec": {"containers": []}}}},
    ],
)
def test_an_object_without_a_readable_pod_template_is_allowed_untouched(obj: dict[str, Any]) -> None:
    """No template to judge (wrong shapes at any level, or a kind without pods): allowed with no
    message, warning or finding."""
    req = {"uid": "u", "kind": {"kind": obj["kind"]}, "operation": "CREATE", "object": obj}
    assert review(req, cluster(), ENFORCE) == Verdict()


def test_an_update_that_changes_only_the_template_labels_is_checked() -> None:
    """The template's labels are part of what an UPDATE is judged on (they choose the
    SecurityGroupPolicy); a change to them alone is checked again."""
    new = _workload("Deployment", name="w")
    old = copy.deepcopy(new)
    old["spec"]["template"]["metadata"]["labels"] = {"app": "old"}
    assert not review(request(new, "UPDATE", old), cluster(), ENFORCE).allowed
    assert review(request(new, "UPDATE", copy.deepcopy(new)), cluster(), ENFORCE) == Verdict()
    assert not review(request(new, "UPDATE", None), cluster(), ENFORCE).allowed


def test_a_pod_update_is_not_judged_and_a_fargate_pod_never() -> None:
    """Only a pod's CREATE is judged; a Fargate pod runs on no node group and is allowed untouched."""
    big = pod("x", {"cpu": "300"})
    assert review(request(big, "UPDATE", pod("x", {"cpu": "1"})), cluster(), ENFORCE) == Verdict()
    big["metadata"]["labels"] = {"eks.amazonaws.com/fargate-profile": "fp"}
    assert review(request(big), cluster(), ENFORCE) == Verdict()


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("audit", {"allowed": True, "message": "M", "warnings": [], "finding": "M", "finding_mode": "audit"}),
        (
            "warn",
            {
                "allowed": True,
                "message": "",
                "warnings": [
                    "spec.containers[0].resources.requests.cpu: fits no node group:"
                    " ng-batch (cpu), ng-burst (cpu), ng-general (cpu)"
                ],
                "finding": "M",
                "finding_mode": "warn",
            },
        ),
        ("enforce", {"allowed": False, "message": "M", "warnings": [], "finding": "", "finding_mode": ""}),
    ],
)
def test_each_mode_answers_a_pod_that_fits_nowhere_in_its_own_way(
    mode: str, expected: dict[str, Any]
) -> None:
    """enforce denies with the message; warn allows with per-field warnings and records the message
    as a finding; audit allows with the message and the same finding."""
    message = "\n".join(["pod does not fit any node group", *CPU_300_LINES, DEMO_JUDGED])
    verdict = review(request(pod("x", {"cpu": "300"})), cluster(), WebhookOptions(mode=mode))
    got = {k: getattr(verdict, k) for k in ("allowed", "message", "warnings", "finding", "finding_mode")}
    assert got == {k: message if v == "M" else v for k, v in expected.items()}


CPU = Reason("Insufficient cpu", resource="cpu")


@pytest.mark.parametrize(
    ("spec", "reason", "path"),
    [
        ({}, Reason("untolerated taint", taint=Taint("dedicated", "eni")), "B.tolerations"),
        ({"nodeSelector": {"a": "b"}}, Reason("selector"), "B.nodeSelector"),
        ({"nodeSelector": {}}, Reason("selector"), "B.affinity.nodeAffinity"),
        ({}, Reason("selector"), "B.affinity.nodeAffinity"),
        (
            {
                "containers": [
                    {"resources": {"requests": {"memory": "1"}}},
                    {"resources": {"limits": {"cpu": "1"}}},
                ]
            },
            CPU,
            "B.containers[1].resources.limits.cpu",
        ),
        (
            {
                "containers": [{"resources": {}}],
                "initContainers": [{"resources": {"requests": {"cpu": "1"}}}],
            },
            CPU,
            "B.initContainers[0].resources.requests.cpu",
        ),
        (
            {"containers": ["not a map", {"resources": {"requests": {"cpu": "1", "memory": "1"}}}]},
            CPU,
            "B.containers[1].resources.requests.cpu",
        ),
        ({"containers": [{"name": "c"}], "overhead": {"cpu": "250m"}}, CPU, "B.overhead"),
        ({"containers": [{"name": "c"}], "overhead": {"memory": "1"}}, CPU, "B"),
        ({}, CPU, "B"),
    ],
)
def test_a_reason_points_at_the_field_a_person_edits(spec: dict[str, Any], reason: Reason, path: str) -> None:
    """Taints point at tolerations; selection at the nodeSelector when set, else the node affinity;
    a resource at the first container (then init container) requesting or limiting it, else the
    pod overhead, else the spec itself."""
    assert reason_path(spec, "B", reason) == path


def test_warnings_name_trapped_and_closed_groups_and_skip_the_ones_that_serve() -> None:
    """A trapped group's note is `tags`; a refused group without reasons is `max size 0`; a group
    that serves is not named; a short line holds every group of a field."""
    verdicts = [
        GroupVerdict("ng-a", serves=False, reasons=(CPU,), trap=True),
        GroupVerdict("ng-b", serves=False),
        GroupVerdict("ng-c", serves=True),
        GroupVerdict("ng-d", serves=False, reasons=(CPU,)),
    ]
    spec = {"containers": [{"resources": {"requests": {"cpu": "9"}}}]}
    assert warnings_for(verdicts, spec, "s") == [
        "s.containers[0].resources.requests.cpu: fits no node group: ng-a (tags), ng-d (cpu)",
        "s: fits no node group: ng-b (max size 0)",
    ]
    assert field_lines(verdicts, spec, "s") == ["fields to edit: s.containers[0].resources.requests.cpu"]
    assert (
        field_lines([GroupVerdict("ng-b", serves=False), GroupVerdict("ng-c", serves=True)], spec, "s") == []
    )


def test_a_line_of_exactly_120_characters_is_kept_whole() -> None:
    """Two groups on one line of exactly 120 characters: one warning; one character more: one
    warning per group."""
    head = "s: fits no node group: ng-a (cpu), "
    name = "g" * (MAX_WARNING - len(head) - len(" (cpu)"))
    exact = [
        GroupVerdict("ng-a", serves=False, reasons=(CPU,)),
        GroupVerdict(name, serves=False, reasons=(CPU,)),
    ]
    assert warnings_for(exact, {}, "s") == [f"{head}{name} (cpu)"]
    assert len(warnings_for(exact, {}, "s")[0]) == MAX_WARNING
    longer = [exact[0], GroupVerdict(name + "g", serves=False, reasons=(CPU,))]
    assert warnings_for(longer, {}, "s") == [
        "s: fits no node group: ng-a (cpu)",
        f"s: fits no node group: {name}g (cpu)",
    ]


def test_a_field_split_per_group_keeps_the_lines_of_the_fields_before_it() -> None:
    """A short line for one field, then a field that needs a warning per group: all three lines,
    and the denial's field line names both fields."""
    memory = Reason("Insufficient memory", resource="memory")
    long_name = "n" * 90
    verdicts = [
        GroupVerdict("ng-a", serves=False, reasons=(CPU,)),
        GroupVerdict(long_name, serves=False, reasons=(memory,)),
        GroupVerdict("ng-b", serves=False, reasons=(memory,)),
    ]
    spec = {"containers": [{"resources": {"requests": {"cpu": "9", "memory": "9"}}}]}
    field = "s.containers[0].resources.requests"
    assert warnings_for(verdicts, spec, "s") == [
        f"{field}.cpu: fits no node group: ng-a (cpu)",
        f"{field}.memory: fits no node group: {long_name} (memory)",
        f"{field}.memory: fits no node group: ng-b (memory)",
    ]
    assert field_lines(verdicts, spec, "s") == [f"fields to edit: {field}.cpu, {field}.memory"]


def test_an_object_whose_metadata_is_not_a_map_is_named_by_its_kind_alone() -> None:
    """Top-level metadata of the wrong type: the template is still judged; the subject is the kind."""
    deploy = _workload("Deployment")
    deploy["metadata"] = "x"
    req = {
        "uid": "u",
        "kind": {"kind": "Deployment"},
        "operation": "CREATE",
        "namespace": "default",
        "object": deploy,
    }
    verdict = review(req, cluster(), ENFORCE)
    assert verdict.message.splitlines()[0] == "Deployment does not fit any node group"


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ("x" * (WARNING_LIMIT + 1), "x" * (WARNING_LIMIT - 1) + "\u2026"),
        ("a" * 129 + " " + "b" * 200, "a" * 129 + "\u2026"),
        ("a" * 128 + " " + "b" * 200, "a" * 128 + " " + "b" * 126 + "\u2026"),
        ("a" * 128 + "X " + "b" * 200, "a" * 128 + "X\u2026"),
        ("a" * 100 + ", " + "b" * 60 + ": " + "c" * 200, "a" * 100 + ", " + "b" * 60 + "\u2026"),
    ],
)
def test_a_long_warning_is_cut_at_a_word_only_past_half_the_limit(text: str, cut: str) -> None:
    """The cut goes back to the last space only when that space is past 128 characters (else it
    would drop too much), strips trailing punctuation, and ends with an ellipsis."""
    assert whole_warning(text) == cut


def unchecked(why: str) -> float:
    return REGISTRY.get_sample_value("fitguard_admission_unchecked_total", {"why": why}) or 0.0


def test_a_pod_resting_on_cluster_autoscalers_memory_is_allowed_with_the_whole_warning() -> None:
    """Only the node cluster-autoscaler remembers of ng-batch holds 30Gi of scratch: allowed, with
    the three whole lines naming the group, the tag that makes it permanent and the sync command,
    and counted once."""
    remembered = group(remembering()).to_object()
    view = from_objects([*(o for o in CLUSTER if o["kind"] != "NodeGroupTemplate"), remembered])
    counted = REGISTRY.get_sample_value("fitguard_admission_autoscaler_memory_total") or 0.0
    verdict = review(request(pod("s", {"ephemeral-storage": "30Gi"})), view, ENFORCE)
    assert verdict == Verdict(
        warnings=[
            "pod fits only the node cluster-autoscaler remembers of ng-batch: it scales up for it only"
            " until it restarts",
            "to make it permanent, tag the ASG of ng-batch"
            " k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage",
            "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
        ]
    )
    assert REGISTRY.get_sample_value("fitguard_admission_autoscaler_memory_total") == counted + 1
    assert review(request(pod("s", {"cpu": "100m"})), view, ENFORCE) == Verdict()
    assert REGISTRY.get_sample_value("fitguard_admission_autoscaler_memory_total") == counted + 1


class Listing(Store[NodeGroupTemplate]):
    """A templates store that counts how often its items are listed."""

    listed = 0

    def items(self, namespace: str | None = None) -> list[NodeGroupTemplate]:
        self.listed += 1
        return super().items(namespace)


def test_a_pod_resting_on_memory_reviewed_again_is_answered_from_the_memo() -> None:
    """The pod of the test above, reviewed three times in one generation: the same whole warning
    each time, and the templates listed once (both questions' answers stay remembered)."""
    remembered = group(remembering()).to_object()
    view = from_objects([*(o for o in CLUSTER if o["kind"] != "NodeGroupTemplate"), remembered])
    store = Listing("NodeGroupTemplate", NodeGroupTemplate.from_object)
    store.replace([remembered])
    view.templates = store
    answers = [review(request(pod("s", {"ephemeral-storage": "30Gi"})), view, ENFORCE) for _ in range(3)]
    expected = Verdict(
        warnings=[
            "pod fits only the node cluster-autoscaler remembers of ng-batch: it scales up for it"
            " only until it restarts",
            "to make it permanent, tag the ASG of ng-batch"
            " k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage",
            "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
        ]
    )
    assert answers == [expected, expected, expected]
    assert store.listed == 1


def test_unchecked_objects_are_counted_by_why() -> None:
    """No templates yet: the cold-start warning, counted under `no templates`; a malformed
    template: a warning naming the object and the field, counted under `malformed`."""
    cold, bad = unchecked("no templates"), unchecked("malformed")
    view = from_objects([o for o in CLUSTER if o["kind"] != "NodeGroupTemplate"])
    assert review(request(pod("x", {"cpu": "300"})), view, ENFORCE) == Verdict(warnings=[COLD_START])
    assert (unchecked("no templates"), unchecked("malformed")) == (cold + 1, bad)
    deploy = _workload("Deployment", name="w")
    deploy["spec"]["template"]["spec"]["containers"] = "x"
    assert review(request(deploy), cluster(), ENFORCE) == Verdict(
        warnings=[
            "fitguard could not check this Deployment w: spec.template.spec.containers:"
            " expected a list of containers"
        ]
    )
    assert (unchecked("no templates"), unchecked("malformed")) == (cold + 1, bad + 1)


def test_a_workload_whose_service_account_is_missing_is_still_judged_as_written() -> None:
    """/mutate would deny its pods; /validate judges the template as it is (no pod-eni added)."""
    deploy = _workload("Deployment", name="w")
    deploy["metadata"]["namespace"] = "nowhere"
    deploy["spec"]["template"]["metadata"]["labels"] = {"app": "payments-api"}
    verdict = review(request(deploy), cluster(), ENFORCE)
    assert verdict.message.splitlines() == [
        "Deployment w does not fit any node group",
        *CPU_300_LINES,
        "fields to edit: spec.template.spec.containers[0].resources.requests.cpu",
        DEMO_JUDGED,
    ]


def test_a_workload_resting_on_memory_by_its_node_selector_is_told_the_label_tag() -> None:
    """A Deployment whose selector only the remembered node's labels satisfy: the warning names
    the Deployment and the label tag that makes its template permanent."""
    remembered = group(remembering()).to_object()
    view = from_objects([*(o for o in CLUSTER if o["kind"] != "NodeGroupTemplate"), remembered])
    deploy = _workload("Deployment", name="w")
    deploy["spec"]["template"]["spec"] = {"nodeSelector": {"team": "ml"}, "containers": [{"name": "c"}]}
    assert review(request(deploy), view, ENFORCE) == Verdict(
        warnings=[
            "Deployment w fits only the node cluster-autoscaler remembers of ng-batch: it scales up for it"
            " only until it restarts",
            "to make it permanent, tag the ASG of ng-batch"
            " k8s.io/cluster-autoscaler/node-template/label/team",
            "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
        ]
    )
