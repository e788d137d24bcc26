"""POST /validate for real: `python -m webhook` (gunicorn, TLS, a client that verifies the CA) whose
list+watch caches read the demo cluster (examples/cluster.yaml) from the fake apiserver, and whose
audit findings become events.k8s.io Events there. One test per "Done when" item of issue 4.

The webhook runs one worker here: /readyz then speaks for the only set of caches, so a test's first
answer never comes from a worker still listing (which would allow out of ignorance, by design)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from capacity.names import IGNORE_LABEL, MODE_LABEL, WEBHOOK_REPORTER
from kube.statefile import load_state
from tests import objects
from tests.fakekube.server import FakeKubeServer
from tests.objects import node_groups_only
from tests.tlsfixtures import TlsFiles
from tests.waiting import eventually
from tests.webhook_server import Server, admission_review, metric_sum, post, running
from webhook.audit import REASON
from webhook.cluster import WATCHES
from webhook.denial_fields import MAX_WARNING
from webhook.validate import COLD_START

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WATCHED = {kind for kind, _, _ in WATCHES}
CLUSTER = [obj for obj in node_groups_only(load_state(EXAMPLES / "cluster.yaml")) if obj["kind"] in WATCHED]
WORKLOADS = {obj["metadata"]["name"]: obj for obj in load_state(EXAMPLES / "workloads.yaml")}
NGT = "NodeGroupTemplate"
EVENTS_API = "events.k8s.io/v1"
WAIT_SECONDS = 30.0  # bounds a hung wait for a change or an Event; no test asserts how long one took
FIX = (
    "an m5.large node would offer 44Gi, but cluster-autoscaler sees none while the group has 0 nodes: "
    "tag the ASG k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage, "
    "or let fitguard sync the tags"
)
POD_ENI = "vpc.amazonaws.com/pod-eni"
FINDINGS = "fitguard_admission_audit_findings_total"

Start = Callable[..., Server]


@pytest.fixture
def start(fake_kube: FakeKubeServer, tls_files: TlsFiles, tmp_path: Path) -> Iterator[Start]:
    """start(*flags): a ready webhook reading the fake apiserver; stopped before the apiserver is."""
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    with ExitStack() as stack:

        def started(*flags: str) -> Server:
            options = ["--kubeconfig", str(kubeconfig), *flags]
            return stack.enter_context(
                running(tls_files, options, workers=1, metrics_dir=tmp_path / "metrics")
            )

        yield started


def seed(fake_kube: FakeKubeServer, *extra: dict[str, Any], templates: bool = True) -> None:
    """The demo cluster's watched objects, then `extra` (which replace demo objects of that name)."""
    for obj in CLUSTER:
        if templates or obj["kind"] != NGT:
            fake_kube.apply(copy.deepcopy(obj))  # apply: the fake apiserver starts with some of them
    for obj in extra:
        fake_kube.apply(obj)


def template(name: str, **spec: Any) -> dict[str, Any]:
    """A demo NodeGroupTemplate with some spec fields replaced."""
    base = next(o for o in CLUSTER if o["kind"] == NGT and o["metadata"]["name"] == name)
    changed = copy.deepcopy(base)
    changed["spec"].update(copy.deepcopy(spec))
    return changed


def namespace(name: str, mode: str) -> list[dict[str, Any]]:
    """A namespace whose label sets the mode, and its default ServiceAccount."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {MODE_LABEL: mode}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": name, "name": "default"}},
    ]


def pod(name: str, requests: dict[str, str], ns: str = "default", **spec: Any) -> dict[str, Any]:
    """A pod that also limits the branch ENI it asks for, as the VPC resource controller requires."""
    limits = {POD_ENI: "1"} if POD_ENI in requests else {}
    return objects.pod(name, requests, namespace=ns, image="busybox", limits=limits, **spec)


def workload(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    """A demo workload moved to another namespace."""
    moved = copy.deepcopy(obj)
    moved["metadata"]["namespace"] = ns
    return moved


def validate(server: Server, obj: dict[str, Any], uid: str = "v-1", **request: Any) -> dict[str, Any]:
    """The AdmissionResponse of /validate for `obj`, after checking the HTTP contract."""
    conn = server.connect()
    status, body = post(conn, admission_review(obj, uid, **request), "/validate")
    conn.close()
    assert status == 200 and body["apiVersion"] == "admission.k8s.io/v1"
    assert body["response"]["uid"] == uid
    return body["response"]


def message(response: dict[str, Any]) -> str:
    return str(response.get("status", {}).get("message", ""))


def line_of(response: dict[str, Any], group: str) -> str:
    """The denial's line about one node group."""
    return next(line for line in message(response).splitlines() if line.startswith(f"{group}: "))


def until_allowed(server: Server, obj: dict[str, Any], allowed: bool) -> dict[str, Any]:
    """Asks again until the answer turns (the watch carries the change); the deadline only bounds
    a hang, no time is asserted."""

    def turned() -> dict[str, Any] | None:
        response = validate(server, obj)
        return response if response["allowed"] is allowed else None

    return eventually(turned, f"the answer turns to allowed={allowed}", timeout=WAIT_SECONDS)


def events_about(fake_kube: FakeKubeServer, ns: str, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in fake_kube.objects("Event", ns, api_version=EVENTS_API)
        if e.get("regarding", {}).get("name") == name
    ]


def test_zero_node_group_without_the_tag_is_denied_with_the_fix_until_the_template_gets_the_tag(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """The classic trap: ng-batch (ASG at 0, 44Gi root volume, no ephemeral-storage tag) is the only
    group whose real node has 30Gi; the pod is denied with the tag to set and the cache note, dryRun
    gets the same answer, and once the template on the API carries the tag the pod is allowed."""
    seed(fake_kube)
    server = start()
    scratch = WORKLOADS["scratch-build"]
    denied = validate(server, scratch)
    assert denied["allowed"] is False and denied["status"]["code"] == 403
    lines = message(denied).splitlines()
    assert lines[0] == "pod does not fit any node group"
    assert line_of(denied, "ng-batch") == f"ng-batch: Insufficient ephemeral-storage: requests 30Gi; {FIX}"
    assert line_of(denied, "ng-burst").startswith("ng-burst: Insufficient ephemeral-storage: requests 30Gi")
    assert (
        lines[-1].startswith("note: cluster-autoscaler may still scale it")
        and "until it restarts" in lines[-1]
    )
    assert validate(server, scratch, dryRun=True) == denied

    tag = {"spec": {"autoscaler": {"allocatable": {"ephemeral-storage": "44Gi"}}}}
    fake_kube.patch(NGT, "ng-batch", tag, api_version="fitguard.io/v1alpha1")
    allowed = until_allowed(server, scratch, True)
    assert "status" not in allowed and "warnings" not in allowed


def test_a_live_node_in_the_group_makes_the_same_pod_fit(fake_kube: FakeKubeServer, start: Start) -> None:
    """With a live node ng-batch is judged by what its node really offers: allowed without the tag;
    when the group scales back to 0 the autoscaler view is used again and the pod is denied."""
    live = template("ng-batch", nodes=1, desiredSize=1)
    live["spec"]["actual"]["source"] = "live-node"
    seed(fake_kube, live)
    server = start()
    scratch = WORKLOADS["scratch-build"]
    assert validate(server, scratch)["allowed"] is True
    fake_kube.patch(
        NGT, "ng-batch", {"spec": {"nodes": 0, "desiredSize": 0}}, api_version="fitguard.io/v1alpha1"
    )
    denied = until_allowed(server, scratch, False)
    assert FIX in line_of(denied, "ng-batch")


def test_pod_eni_is_denied_on_the_t3_group_and_allowed_on_the_m5_group(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """A pod that gained pod-eni from /mutate, pinned to t3.large, is told that t3 has no branch ENIs;
    pinned to the m5.xlarge group it is allowed. A Deployment whose template matches the demo's
    SecurityGroupPolicy (read from the API) is judged with the pod-eni its pods will get."""
    seed(fake_kube)
    server = start()
    t3 = {"node.kubernetes.io/instance-type": "t3.large"}
    m5 = {"node.kubernetes.io/instance-type": "m5.xlarge"}
    denied = validate(server, pod("eni", {"cpu": "250m", POD_ENI: "1"}, "payments", nodeSelector=t3))
    assert denied["allowed"] is False
    assert line_of(denied, "ng-burst").startswith(
        "ng-burst: Insufficient vpc.amazonaws.com/pod-eni: requests 1; t3.large supports no branch ENIs"
    )
    assert validate(server, pod("eni", {"cpu": "250m", POD_ENI: "1"}, "payments", nodeSelector=m5))["allowed"]

    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "payments-worker", "namespace": "payments"},
        "spec": {
            "selector": {"matchLabels": {"app": "payments-api"}},
            "template": {
                "metadata": {"labels": {"app": "payments-api"}},
                "spec": {
                    "serviceAccountName": "payments-api",
                    "nodeSelector": t3,
                    "containers": [
                        {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "250m"}}}
                    ],
                },
            },
        },
    }
    refused = validate(server, deploy)
    assert refused["allowed"] is False and "t3.large supports no branch ENIs" in line_of(refused, "ng-burst")


def test_a_node_selector_that_only_a_too_small_group_satisfies_is_denied(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """3 CPUs fit ng-general, but the selector allows only t3.large nodes (1930m): denied, with the
    other groups failing on the selector; without the selector the same pod is allowed."""
    seed(fake_kube)
    server = start()
    t3 = {"node.kubernetes.io/instance-type": "t3.large"}
    denied = validate(server, pod("big", {"cpu": "3"}, nodeSelector=t3))
    assert denied["allowed"] is False
    assert line_of(denied, "ng-burst") == (
        "ng-burst: Insufficient cpu: requests 3; a t3.large node offers 1730m after 200m of DaemonSets: "
        "request less or use a larger type"
    )
    assert line_of(denied, "ng-general") == (
        "ng-general: node(s) didn't match Pod's node affinity/selector: "
        "its nodes have node.kubernetes.io/instance-type=m5.xlarge"
    )
    assert validate(server, pod("big", {"cpu": "3"}))["allowed"] is True


def test_a_taint_without_a_toleration_is_denied_and_the_toleration_admits(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """ng-general, the only live group with branch ENIs, is tainted dedicated=eni:NoSchedule: a pod-eni
    pod is told which toleration to add, and the pod with that toleration is allowed."""
    taint = {"key": "dedicated", "value": "eni", "effect": "NoSchedule"}
    tainted = template("ng-general")
    tainted["spec"]["actual"]["taints"] = [taint]
    # its live nodes carry the taint too: otherwise they would take the pod
    nodes = [copy.deepcopy(o) for o in CLUSTER if o["kind"] == "Node" and "ng-general" in str(o["metadata"])]
    for node in nodes:
        node["spec"]["taints"] = [taint]
    seed(fake_kube, tainted, *nodes)
    server = start()
    denied = validate(server, pod("eni", {"cpu": "250m", POD_ENI: "1"}))
    assert denied["allowed"] is False
    assert line_of(denied, "ng-general") == (
        "ng-general: node(s) had untolerated taint {dedicated: eni}: "
        "add a toleration for dedicated=eni:NoSchedule"
    )
    tolerates = [{"key": "dedicated", "operator": "Equal", "value": "eni", "effect": "NoSchedule"}]
    assert validate(server, pod("eni", {"cpu": "250m", POD_ENI: "1"}, tolerations=tolerates))["allowed"]


def test_daemonset_overhead_tips_a_pod_over(fake_kube: FakeKubeServer, start: Start) -> None:
    """ng-general nodes have 3920m, 200m of it taken by DaemonSets on every new node: 3700m fits,
    3800m (below allocatable) does not, and the message names the DaemonSets."""
    seed(fake_kube)
    server = start()
    assert validate(server, pod("fits", {"cpu": "3700m"}))["allowed"] is True
    denied = validate(server, pod("tipped", {"cpu": "3800m"}))
    assert denied["allowed"] is False
    assert line_of(denied, "ng-general").startswith(
        "ng-general: Insufficient cpu: requests 3800m; "
        "an m5.xlarge node offers 3720m after 200m of DaemonSets"
    )


def test_a_deployment_a_job_and_a_cronjob_are_denied_with_the_field_path(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """Workloads are refused at apply time, their message naming the kind, the name and the field of
    the pod template to edit (where each kind keeps its template)."""
    seed(fake_kube)
    server = start()
    template_spec = {
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"ephemeral-storage": "900Gi"}}}
        ]
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "reindex", "namespace": "default"},
        "spec": {"template": {"spec": {**template_spec, "restartPolicy": "Never"}}},
    }
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": copy.deepcopy(job["spec"])}},
    }
    cases = [
        (WORKLOADS["video-transcode"], "Deployment video-transcode",
         "spec.template.spec.containers[0].resources.limits.ephemeral-storage"),
        (job, "Job reindex", "spec.template.spec.containers[0].resources.requests.ephemeral-storage"),
        (cron, "CronJob nightly",
         "spec.jobTemplate.spec.template.spec.containers[0].resources.requests.ephemeral-storage"),
    ]  # fmt: skip
    for obj, subject, path in cases:
        denied = validate(server, obj)
        assert denied["allowed"] is False
        assert message(denied).startswith(f"{subject} does not fit any node group\n")
        assert f"fields to edit: {path}" in message(denied).splitlines(), message(denied)


def test_warn_mode_allows_with_short_path_warnings_and_a_namespace_label_can_enforce(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """With --mode warn the Deployment is allowed with AdmissionResponse warnings of at most 120
    characters, each `path: message`; in a namespace labelled fitguard.io/mode=enforce it is denied."""
    seed(fake_kube, *namespace("strict", "enforce"))
    server = start("--mode", "warn")
    deploy = WORKLOADS["video-transcode"]
    warned = validate(server, deploy)
    assert warned["allowed"] is True and "status" not in warned
    warnings = warned["warnings"]
    assert warnings and all(len(w) <= MAX_WARNING for w in warnings)
    assert all(re.fullmatch(r"spec\.template\.spec(\.[\w./\[\]-]+)?: \S.*", w) for w in warnings), warnings
    assert warnings[0].startswith(
        "spec.template.spec.containers[0].resources.limits.ephemeral-storage: "
        "fits no node group: ng-batch (tags)"
    )
    assert validate(server, workload(deploy, "strict"))["allowed"] is False


def test_audit_mode_from_the_namespace_label_allows_and_records_an_event_and_a_metric(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """In a namespace labelled fitguard.io/mode=audit the pod is allowed; a NoNodeGroupFits Event
    about it appears on the API and the findings metric counts it. A dryRun review gets the same
    answer and writes no Event (it was sent first, and events leave in order)."""
    seed(fake_kube, *namespace("audited", "audit"))
    server = start()
    scratch = copy.deepcopy(WORKLOADS["scratch-build"])
    scratch["metadata"]["namespace"] = "audited"
    dry = copy.deepcopy(scratch)
    dry["metadata"]["name"] = "scratch-dry"
    dry_answer = validate(server, dry, dryRun=True)
    findings = metric_sum(server, FINDINGS)
    answer = validate(server, scratch)
    assert answer["allowed"] is True and "warnings" not in answer
    assert message(answer).startswith("pod does not fit any node group")
    assert dry_answer == answer

    (event,) = eventually(
        lambda: events_about(fake_kube, "audited", "scratch-build"), "the audit Event", timeout=WAIT_SECONDS
    )
    assert event["reason"] == REASON and event["type"] == "Warning"
    assert event["regarding"]["kind"] == "Pod"
    assert event["reportingController"] == WEBHOOK_REPORTER  # the webhook reports as itself
    assert event["note"].startswith(
        "pod does not fit any node group\nng-batch: Insufficient ephemeral-storage"
    )
    assert events_about(fake_kube, "audited", "scratch-dry") == []
    assert metric_sum(server, FINDINGS) == findings + 1
    assert metric_sum(server, FINDINGS, 'verdict="audit"') == findings + 1


def test_warn_findings_are_counted_by_verdict_and_recorded_as_events_like_audit(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """In warn mode the pod is allowed with its warnings, and the finding is treated as an audit
    finding: counted with verdict="warn" and recorded as a NoNodeGroupFits Event carrying the whole
    denial message (the warnings alone would lose the fixes)."""
    seed(fake_kube, *namespace("warned", "warn"))
    server = start()
    scratch = workload(WORKLOADS["scratch-build"], "warned")
    answer = validate(server, scratch)
    assert answer["allowed"] is True and answer["warnings"] and "status" not in answer
    assert metric_sum(server, FINDINGS, 'verdict="warn"') == 1
    assert metric_sum(server, FINDINGS, 'verdict="audit"') == 0
    (event,) = eventually(lambda: events_about(fake_kube, "warned", "scratch-build"), "the warn event")
    assert (event["reason"], event["type"], event["regarding"]["kind"]) == (REASON, "Warning", "Pod")
    assert event["note"] == message(validate(server, workload(scratch, "default")))


def test_an_object_ignore_label_is_honoured_only_with_allow_object_ignore(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """A pod author's own fitguard.io/ignore=true label is no opt-out: the pod is still judged and
    denied in an ordinary namespace. The namespace label is (the administrator's decision), and the
    object label is too once the webhook runs with --allow-object-ignore."""
    seed(
        fake_kube,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "opted", "labels": {IGNORE_LABEL: "true"}},
        },
    )
    scratch = copy.deepcopy(WORKLOADS["scratch-build"])
    scratch["metadata"].setdefault("labels", {})[IGNORE_LABEL] = "true"
    strict = start()
    denied = validate(strict, scratch)
    assert denied["allowed"] is False
    assert message(denied).startswith("pod does not fit any node group")
    opted = validate(strict, workload(scratch, "opted"))
    assert (opted["allowed"], message(opted)) == (True, f"namespace opted has {IGNORE_LABEL}=true")
    lenient = start("--allow-object-ignore")
    allowed = validate(lenient, scratch)
    assert (allowed["allowed"], message(allowed)) == (True, f"object has {IGNORE_LABEL}=true")


def test_cold_start_allows_with_a_warning_until_templates_arrive(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """With no NodeGroupTemplate on the API the webhook never denies out of ignorance: allowed, with
    the cold-start warning, counted; once the controller publishes templates the pod is denied."""
    seed(fake_kube, templates=False)
    server = start()
    scratch = WORKLOADS["scratch-build"]
    answer = validate(server, scratch)
    assert answer["allowed"] is True and answer["warnings"] == [COLD_START]
    assert metric_sum(server, "fitguard_admission_unchecked_total", 'why="no templates"') == 1
    for obj in CLUSTER:
        if obj["kind"] == NGT:
            fake_kube.create(copy.deepcopy(obj))
    assert line_of(until_allowed(server, scratch, False), "ng-batch").endswith(FIX)


def test_a_karpenter_node_of_a_judged_nodepool_is_known_capacity(
    fake_kube: FakeKubeServer, start: Start
) -> None:
    """NodePool kp (m5.large only) with the template the controller publishes for it, and one
    m5.large node Karpenter launched for it: a 6-cpu pod fits no group, not that node, not the
    NodePool, so it is denied naming the NodePool and counting the node among the places judged
    (its NodePool's node is known capacity, not a reason to abstain). Once an m5.2xlarge of kp
    (launched before kp was narrowed) joins, the watch carries it and the same pod is allowed."""
    from capacity.karpenter.nodeclass import KarpenterOptions
    from capacity.karpenter.published import PROVIDER, published
    from capacity.template import NodeGroupTemplate

    requirement = {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "kp"}
    pool = {
        "metadata": {"name": "kp"},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": [requirement]}}},
    }
    nodeclass = {"spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r"}}
    record, _ = published(pool, nodeclass, KarpenterOptions(), {}, lambda offer: {})
    ngt = NodeGroupTemplate("kp", provider=PROVIDER, karpenter=record).to_object()

    def karpenter_node(name: str, instance_type: str, cpu: str) -> dict[str, Any]:
        labels = {"karpenter.sh/nodepool": "kp", "kubernetes.io/hostname": name}
        allocatable = {"cpu": cpu, "memory": "7Gi", "pods": "29", "ephemeral-storage": "17Gi"}
        return objects.node(name, allocatable, instance_type=instance_type, labels=labels)

    seed(
        fake_kube,
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **pool},
        ngt,
        karpenter_node("kp-1", "m5.large", "1930m"),
    )
    server = start()
    big = pod("big", {"cpu": "6"})
    denied = validate(server, big)
    assert denied["allowed"] is False, denied
    assert line_of(denied, "NodePool kp").startswith("NodePool kp: no allowed instance type offers enough")
    assert message(denied).splitlines()[-1] == (
        "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 5 live nodes,"
        " 1 Karpenter NodePool"
    )
    fake_kube.apply(karpenter_node("kp-2", "m5.2xlarge", "7910m"))
    allowed = until_allowed(server, big, True)
    assert "status" not in allowed and "warnings" not in allowed
