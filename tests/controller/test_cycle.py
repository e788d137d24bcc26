"""controller/cycle.py's DiscoveryReconciler in process, built as controller/run.py builds it (the
cache filled from objects as from a state file, the books listening, the AWS clients given as a
callable) with AWS from moto in server mode (boto3 over HTTP, tests/awsfixtures.py). Each test
asserts the whole CycleReport: its published templates, its errors map, its tag sync lines, and
what covered() then says."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime
from typing import Any

from capacity.autoscaler_view import LABEL_PREFIX, TAINT_PREFIX
from capacity.expander import PRIORITY
from capacity.instances import lookup
from capacity.plan_types import PlannerOptions
from capacity.template import NodeGroupTemplate
from controller.aws.clients import AwsClients
from controller.books import Books
from controller.cache import ClusterCache
from controller.cycle import DiscoveryReconciler
from controller.discovery import GroupOutcome
from controller.report import CycleReport, TagSyncLine, TagWrite
from controller.run import ControllerOptions
from controller.scaling_cli import build_driver
from controller.scaling_options import ScalingOptions
from controller.settings import TagSyncMode
from controller.tagsync import TagChange
from fitguard.demo_seed import seed_moto
from kube.client import KubeClient
from tests.awsfixtures import AwsEnvironment, inject_errors
from tests.controller.test_discovery_aws import ENABLED, ENI_TAG, EPH_TAG, asg, launch_template, scratch_pod
from tests.controller.test_nodepools_automode import AUTO_CLASS, AUTO_REF, EC2_CLASS, EC2_REF, _pool
from tests.controller.test_report import EXAMPLES, GOLDEN, LAST_SEEN, demo_report
from tests.objects import node, pod, rfc3339

Kinds = dict[str, list[dict[str, Any]]]
CA_MEMORY = {
    "remembers": False,
    "reason": "no running cluster-autoscaler found (pods app.kubernetes.io/name=aws-cluster-autoscaler "
    "in all namespaces): judged by its tags",
}
# ng-batch's published spec: an m5.large at zero nodes with a 50 GiB root volume, both views
BATCH_SPEC = {
    "provider": "aws-asg",
    "instanceTypes": ["m5.large"],
    "minSize": 0,
    "maxSize": 10,
    "desiredSize": 0,
    "nodes": 0,
    "actual": {
        "source": "launch-template",
        "allocatable": {
            "cpu": "1930m",
            "ephemeral-storage": "44Gi",
            "memory": "7518Mi",
            "pods": "29",
            "vpc.amazonaws.com/pod-eni": "9",
        },
        "capacity": {"cpu": "2", "memory": "8Gi"},
        "labels": {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/instance-type": "m5.large",
            "beta.kubernetes.io/os": "linux",
            "failure-domain.beta.kubernetes.io/region": "us-east-1",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m5.large",
            "topology.kubernetes.io/region": "us-east-1",
        },
        "taints": [],
    },
    "display": {
        "cpu": "1930m",
        "ephemeral-storage": "44Gi",
        "memory": "7.3Gi",
        "pods": "29",
        "vpc.amazonaws.com/pod-eni": "9",
    },
    "autoscaler": {
        "allocatable": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "0", "pods": "110"},
        "labels": {
            "beta.kubernetes.io/instance-type": "m5.large",
            "cluster-autoscaler.kubernetes.io/template-node": "true",
            "failure-domain.beta.kubernetes.io/region": "us-east-1",
            "failure-domain.beta.kubernetes.io/zone": "us-east-1a",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m5.large",
            "topology.ebs.csi.aws.com/zone": "us-east-1a",
            "topology.kubernetes.io/region": "us-east-1",
            "topology.kubernetes.io/zone": "us-east-1a",
        },
        "taints": [],
    },
    "daemonSetOverhead": {},
    "autoscalerOverhead": {"cpu": "100m", "pods": "1"},
    "scaleFromZero": "autoscaler",
    "autoscalerMemory": CA_MEMORY,
}
MANAGED = {"app.kubernetes.io/managed-by": "fitguard-controller"}


def reconciler(options: ControllerOptions, kinds: Kinds, **kwargs: Any) -> DiscoveryReconciler:
    """As controller/run.py's run_once: the books listen before the cache is filled; the clients are
    built once and handed over by a callable."""
    cache = ClusterCache(options.cache())
    books = Books(cache, options.books())
    cache.fill(kinds)
    clients = AwsClients.from_environment()
    return DiscoveryReconciler(cache, books, options, lambda: clients, facts=lookup, **kwargs)


def seed_batch(clients: AwsClients, name: str = "ng-batch", root_gib: int = 50) -> None:
    launch_template(clients.ec2, name, "m5.large", root_gib)
    asg(clients.autoscaling, name, {**ENABLED, "team": "batch"})


def planned(group: str, current: str | None = None, eph: str = "44Gi") -> tuple[TagChange, TagChange]:
    return (
        TagChange(group, "asg", group, EPH_TAG, eph, current),
        TagChange(group, "asg", group, ENI_TAG, "9", current),
    )


def test_an_asg_with_its_launch_template_is_one_whole_template_and_its_tag_plan(aws: AwsEnvironment) -> None:
    """One ASG with its launch template and tags: one fresh outcome whose published object is the
    whole template below, no error, both resources/* tags planned (not written), and covered() None
    before the first cycle and empty after (scaling off: cluster-autoscaler scales it from zero)."""
    seed_batch(AwsClients.from_environment())
    cycle = reconciler(ControllerOptions(), {})
    assert cycle.covered() is None and cycle.last is None
    report = cycle.reconcile()
    assert report.node_groups == (
        {
            "apiVersion": "fitguard.io/v1alpha1",
            "kind": "NodeGroupTemplate",
            "metadata": {"name": "ng-batch", "labels": MANAGED},
            "spec": BATCH_SPEC,
        },
    )
    assert [(o.name, o.reason) for o in report.outcomes] == [("ng-batch", "")]
    assert report.tag_sync == tuple(TagSyncLine(c) for c in planned("ng-batch"))
    assert report.errors == {} and report.discovery_error == ""
    assert (report.scale_ups, report.scaling, report.nodepool_errors) == ((), None, {})
    assert cycle.last is report and cycle.covered() == frozenset()
    tags = {t["Key"] for t in AwsClients.from_environment().autoscaling.describe_tags()["Tags"]}
    assert tags == {*ENABLED, "team"}


def test_tag_sync_off_plans_nothing_and_apply_writes_and_tells(aws: AwsEnvironment) -> None:
    """`off`: no lines. `apply`: each change written to the ASG and told to `note` with its message,
    each line APPLIED; a dry run with `apply` only plans."""
    clients = AwsClients.from_environment()
    seed_batch(clients)
    assert reconciler(ControllerOptions(sync_autoscaler_tags=TagSyncMode.OFF), {}).reconcile().tag_sync == ()
    dry = reconciler(ControllerOptions(sync_autoscaler_tags=TagSyncMode.APPLY, dry_run=True), {}).reconcile()
    assert dry.tag_sync == tuple(TagSyncLine(c) for c in planned("ng-batch"))
    told: list[tuple[TagChange, str]] = []
    options = ControllerOptions(sync_autoscaler_tags=TagSyncMode.APPLY)
    report = reconciler(options, {}, note=lambda c, m: told.append((c, m))).reconcile()
    changes = planned("ng-batch")
    assert report.tag_sync == tuple(TagSyncLine(c, TagWrite.APPLIED) for c in changes)
    assert told == [(c, "wrote " + c.explain()) for c in changes]
    written = {t["Key"]: t["Value"] for t in clients.autoscaling.describe_tags()["Tags"]}
    assert written == {**ENABLED, "team": "batch", EPH_TAG: "44Gi", ENI_TAG: "9"}


def test_a_tag_write_refused_is_a_failed_line_with_its_reason(aws: AwsEnvironment) -> None:
    """`apply` with CreateOrUpdateTags denied: the first change FAILED with the reason, the second
    APPLIED; `note` hears only of the one written."""
    clients = AwsClients.from_environment()
    seed_batch(clients)
    cycle = reconciler(ControllerOptions(sync_autoscaler_tags=TagSyncMode.APPLY), {})
    cycle.clients = lambda: clients
    inject_errors(clients.autoscaling, "CreateOrUpdateTags", code="AccessDenied", status=403, message="no")
    told: list[TagChange] = []
    cycle.note = lambda c, _: told.append(c)
    report = cycle.reconcile()
    eph, eni = planned("ng-batch")
    reason = "CreateOrUpdateTags: AccessDenied (the controller's IAM role lacks this permission): no"
    assert report.tag_sync == (TagSyncLine(eph, TagWrite.FAILED, reason), TagSyncLine(eni, TagWrite.APPLIED))
    assert told == [eni]


def previous_of(report: CycleReport) -> Kinds:
    """What the cluster holds after a cycle published its templates."""
    return {"NodeGroupTemplate": [dict(o) for o in report.node_groups]}


def test_discovery_throttled_past_its_retries_keeps_every_template_and_says_why(
    aws: AwsEnvironment, monkeypatch: Any, caplog: Any
) -> None:
    """DescribeAutoScalingGroups throttled on every attempt (AWS_MAX_ATTEMPTS=2): the report keeps
    each previously published template (a manual one is not ours and is left out) with the error as
    its reason, the whole error under "", no tag sync; covered() is None again."""
    seed_batch(AwsClients.from_environment())
    first = reconciler(ControllerOptions(), {}).reconcile()
    manual = {"metadata": {"name": "ng-manual", "annotations": {"fitguard.io/manual": "true"}}}
    kinds = {"NodeGroupTemplate": [*previous_of(first)["NodeGroupTemplate"], manual]}
    cycle = reconciler(ControllerOptions(), kinds)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    clients = AwsClients.from_environment()
    cycle.clients = lambda: clients
    cycle.reconcile()
    assert cycle.covered() == frozenset()
    throttled = inject_errors(clients.autoscaling, "DescribeAutoScalingGroups", times=2)
    caplog.clear()
    report = cycle.reconcile()
    error = "DescribeAutoScalingGroups: Throttling: Rate exceeded"
    assert throttled.injected == 2 and len(throttled.calls) == 2
    assert report == CycleReport(
        (GroupOutcome("ng-batch", first.templates[0], error),), discovery_error=error
    )
    assert report.errors == {"ng-batch": error, "": error}
    assert report.node_groups[0]["spec"] == {
        **BATCH_SPEC,
        "staleReason": "kept from an earlier discovery: " + error,
    }
    assert cycle.last is report and cycle.covered() is None
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "controller.cycle"] == [
        ("ERROR", "node group discovery failed, every template kept as it was: " + error)
    ]


def test_aws_unreachable_is_the_discovery_error(aws: AwsEnvironment, monkeypatch: Any) -> None:
    """AWS_ENDPOINT_URL on a closed loopback port: the connection error, after botocore's retries,
    is the report's discovery error; with nothing published before, no outcome."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    report = reconciler(ControllerOptions(), {}).reconcile()
    error = 'DescribeAutoScalingGroups: Could not connect to the endpoint URL: "http://127.0.0.1:9/"'
    assert report == CycleReport((), discovery_error=error)
    assert report.errors == {"": error}


def test_a_group_that_fails_keeps_its_previous_template_and_plans_no_tags(aws: AwsEnvironment) -> None:
    """AccessDenied reading ng-a's launch template: ng-a's outcome is its previous template with the
    reason, ng-b is rebuilt (its new max size); only the fresh ng-b gets tag lines."""
    clients = AwsClients.from_environment()
    seed_batch(clients, "ng-a")
    seed_batch(clients, "ng-b", 20)
    first = reconciler(ControllerOptions(), {}).reconcile()
    for name in ("ng-a", "ng-b"):
        clients.autoscaling.update_auto_scaling_group(AutoScalingGroupName=name, MaxSize=3)
    cycle = reconciler(ControllerOptions(), previous_of(first))
    cycle.clients = lambda: clients
    inject_errors(
        clients.ec2, "DescribeLaunchTemplateVersions", code="AccessDenied", status=403, message="no"
    )
    report = cycle.reconcile()
    reason = (
        "DescribeLaunchTemplateVersions: AccessDenied (the controller's IAM role lacks this permission): no"
    )
    kept, fresh = report.outcomes
    assert kept == GroupOutcome("ng-a", first.templates[0], reason)
    assert fresh.name == "ng-b" and fresh.reason == "" and fresh.template is not None
    assert fresh.template == NodeGroupTemplate.from_object(report.node_groups[1])
    assert report.node_groups[1]["spec"]["maxSize"] == 3
    assert report.errors == {"ng-a": reason}
    assert report.tag_sync == tuple(TagSyncLine(c) for c in planned("ng-b", eph="17Gi"))


UNREADABLE_KARPENTER = (
    "Karpenter controller settings unreadable, its defaults used: --reserved-enis 'lots' is not an integer"
)


def karpenter_pod(args: list[str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "karpenter-0",
            "namespace": "karpenter",
            "labels": {"app.kubernetes.io/name": "karpenter"},
        },
        "spec": {"containers": [{"name": "controller", "args": args}]},
    }


def test_nodepools_beside_asgs(aws: AwsEnvironment, caplog: Any) -> None:
    """A NodePool gets a template after the ASGs'; one named as an ASG is left out and said; one not
    Ready is published with the reason; unreadable Karpenter settings are the `karpenter` error
    (its defaults used)."""
    seed_batch(AwsClients.from_environment())
    not_ready = {**_pool("pool-b", EC2_REF), "status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    kinds = {
        "NodePool": [_pool("pool-a", EC2_REF), not_ready, _pool("ng-batch", EC2_REF)],
        "EC2NodeClass": [EC2_CLASS],
        "Pod": [karpenter_pod(["--reserved-enis", "lots"])],
    }
    report = reconciler(ControllerOptions(), kinds).reconcile()
    assert [r.getMessage() for r in caplog.records if r.name == "controller.cycle"] == [UNREADABLE_KARPENTER]
    assert [(o.name, o.reason) for o in report.outcomes] == [("ng-batch", ""), ("pool-a", ""), ("pool-b", "")]
    pools = [t for t in report.templates if t.karpenter is not None]
    assert [(t.name, t.provider, t.instance_types, t.nodes) for t in pools] == [
        ("pool-a", "karpenter", ("m5.large",), 0),
        ("pool-b", "karpenter", ("m5.large",), 0),
    ]
    assert report.errors == {
        "nodepool/ng-batch": "a node group is named ng-batch too: its template is the node group's",
        "nodepool/pool-b": "not Ready: Karpenter launches no node for it until it is",
        "karpenter": UNREADABLE_KARPENTER,
    }
    assert report.tag_sync == tuple(TagSyncLine(c) for c in planned("ng-batch"))
    readable = reconciler(ControllerOptions(), {**kinds, "Pod": [karpenter_pod([])]}).reconcile()
    assert "karpenter" not in readable.errors and list(readable.errors) == [
        "nodepool/ng-batch",
        "nodepool/pool-b",
    ]


def priorities(text: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "kube-system", "name": "cluster-autoscaler-priority-expander"},
        "data": {"priorities": text},
    }


def test_the_priority_configmap_decides_which_groups_fitguard_scales_from_the_next_cycle(
    aws: AwsEnvironment,
) -> None:
    """Scaling on with the priority expander: a group is fitguard's (covered, spec.scaleFromZero
    fitguard) while the priorities as last read admit it. The ConfigMap is read after marking, so a
    change shows in the next cycle; one refused keeps the last priorities; a state file without it
    has none (every group usable)."""
    clients = AwsClients.from_environment()
    seed_batch(clients, "ng-a")
    seed_batch(clients, "ng-b", 20)
    config = ScalingOptions(mode="on", planner=PlannerOptions(expanders=(PRIORITY,)))
    driver = build_driver(config, clients.autoscaling)
    only_b = {"ConfigMap": [priorities("10: [ng-b]")]}
    cycle = reconciler(ControllerOptions(), only_b, driver=driver)
    cycle.clients = lambda: clients
    first = cycle.reconcile()
    assert cycle.covered() == frozenset({"ng-a", "ng-b"})  # nothing read yet: every group usable
    assert [t.scale_from_zero for t in first.templates] == ["fitguard", "fitguard"]
    assert first.scale_ups == () and first.scaling is not None
    assert cycle.reconcile().node_groups[0]["spec"]["scaleFromZero"] == "autoscaler"
    assert cycle.covered() == frozenset({"ng-b"})
    cycle.cache.fill({"ConfigMap": [priorities("10: [")]})
    cycle.reconcile()
    assert cycle.covered() == frozenset({"ng-b"})  # refused: the last priorities kept
    cycle.cache.fill({})
    cycle.reconcile()
    assert cycle.covered() == frozenset({"ng-b"})  # marked with the last; read: none in the file
    cycle.reconcile()
    assert cycle.covered() == frozenset({"ng-a", "ng-b"})


def test_without_the_priority_expander_the_configmap_is_not_read(aws: AwsEnvironment) -> None:
    """Scaling on, least-waste only: the priorities stay None whatever the ConfigMap says."""
    clients = AwsClients.from_environment()
    seed_batch(clients, "ng-a")
    driver = build_driver(ScalingOptions(mode="on"), clients.autoscaling)
    cycle = reconciler(ControllerOptions(), {"ConfigMap": [priorities("10: [ng-b]")]}, driver=driver)
    cycle.reconcile()
    cycle.reconcile()
    assert cycle.priorities is None and cycle.covered() == frozenset({"ng-a"})


def conditions(fake_kube: Any, name: str) -> dict[str, tuple[str, str]]:
    stored = fake_kube.get("NodeGroupTemplate", name, api_version="fitguard.io/v1alpha1")
    return {c["type"]: (c["status"], c.get("message", "")) for c in stored["status"]["conditions"]}


def test_from_the_api_a_cycle_publishes_and_a_failed_discovery_marks_the_templates(
    aws: AwsEnvironment, fake_kube: Any, monkeypatch: Any, caplog: Any
) -> None:
    """`--once` from the API (the fake API server): the cycle creates the template as the report
    publishes it and patches its status Discovered; a dry run writes nothing; after DescribeAutoScaling
    Groups fails, the next cycle patches Discovered False with the error and keeps the spec."""
    seed_batch(AwsClients.from_environment())
    options = ControllerOptions(autoscaler_selector="", karpenter_selector="")

    def cycle_of(options: ControllerOptions) -> DiscoveryReconciler:
        cache = ClusterCache(options.cache())
        cache.list_from(KubeClient(fake_kube.api_client()))
        clients = AwsClients.from_environment()
        return DiscoveryReconciler(
            cache, Books(cache, options.books()), options, lambda: clients, facts=lookup
        )

    cycle_of(ControllerOptions(autoscaler_selector="", karpenter_selector="", dry_run=True)).reconcile()
    assert fake_kube.objects("NodeGroupTemplate", api_version="fitguard.io/v1alpha1") == []
    caplog.set_level(logging.INFO, logger="controller.cycle")
    report = cycle_of(options).reconcile()
    assert [r.getMessage() for r in caplog.records if r.name == "controller.cycle"] == [
        "NodeGroupTemplates: 1 created, 0 updated, 0 deleted, 0 unchanged"
    ]
    [stored] = fake_kube.objects("NodeGroupTemplate", api_version="fitguard.io/v1alpha1")
    assert stored["spec"] == report.node_groups[0]["spec"]
    assert conditions(fake_kube, "ng-batch")["Discovered"][0] == "True"
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    failing = cycle_of(options)
    inject_errors(failing.clients().autoscaling, "DescribeAutoScalingGroups")
    failed = failing.reconcile()
    error = "DescribeAutoScalingGroups: Throttling: Rate exceeded"
    assert failed.errors == {"ng-batch": error, "": error}
    assert conditions(fake_kube, "ng-batch")["Discovered"] == ("False", error)
    after = fake_kube.get("NodeGroupTemplate", "ng-batch", api_version="fitguard.io/v1alpha1")
    assert after["spec"] == stored["spec"]


def test_scaling_on_plans_from_the_cycles_templates_and_carries_it_out(aws: AwsEnvironment) -> None:
    """Scaling on, a pending pod asking 30Gi of ephemeral storage: the plan (from the ASG's template
    only, never a NodePool's) scales ng-batch 0->1 in moto; the report carries the scale-up with its
    outcome and the whole plan."""
    clients = AwsClients.from_environment()
    seed_batch(clients)
    driver = build_driver(ScalingOptions(mode="on"), clients.autoscaling)
    kinds = {"Pod": [scratch_pod()], "NodePool": [_pool("pool-a", EC2_REF)], "EC2NodeClass": [EC2_CLASS]}
    cycle = reconciler(ControllerOptions(), kinds, driver=driver)
    cycle.clients = lambda: clients
    report = cycle.reconcile()
    planned_up = {"nodeGroup": "ng-batch", "from": 0, "to": 1, "maxSize": 10, "pods": ["default/scratch"]}
    assert report.scale_ups == ({**planned_up, "reasons": ["pods"], "outcome": "scaled 0->1"},)
    assert report.scaling == {
        "scaleUps": [{**planned_up, "reasons": ["pods"]}],
        "onExistingNodes": {},
        "onNodesOnTheirWay": {},
        "notTriggerScaleUp": [],
        "skippedGroups": {},
        "headroom": [],
        "unschedulablePods": 1,
        "demandPods": 1,
        "notDemand": [],
        "outcomes": {"ng-batch": "scaled 0->1"},
        "errors": {},
    }
    [group] = clients.autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    assert group["DesiredCapacity"] == 1
    assert [t.name for t in report.templates] == ["ng-batch", "pool-a"]


def test_from_the_api_the_priorities_configmap_absent_or_unreadable_keeps_the_last(
    aws: AwsEnvironment, fake_kube: Any, caplog: Any
) -> None:
    """From the API (the fake API server), with the priority expander: the ConfigMap's priorities
    decide from the next cycle; deleted, or its read failing (500), the last priorities are kept and
    each is one warning naming the ConfigMap."""
    clients = AwsClients.from_environment()
    seed_batch(clients, "ng-a")
    seed_batch(clients, "ng-b", 20)
    fake_kube.create({"apiVersion": "v1", "kind": "ConfigMap", **priorities("10: [ng-b]")})
    options = ControllerOptions(autoscaler_selector="", karpenter_selector="", dry_run=True)
    cache = ClusterCache(options.cache()).list_from(KubeClient(fake_kube.api_client()))
    config = ScalingOptions(mode="on", planner=PlannerOptions(expanders=(PRIORITY,)))
    driver = build_driver(config, clients.autoscaling)
    cycle = DiscoveryReconciler(
        cache, Books(cache, options.books()), options, lambda: clients, facts=lookup, driver=driver
    )
    cycle.reconcile()
    cycle.reconcile()
    assert cycle.covered() == frozenset({"ng-b"})
    fake_kube.delete("ConfigMap", "cluster-autoscaler-priority-expander", "kube-system")
    caplog.clear()
    cycle.reconcile()
    fake_kube.faults.fail(500, method="GET", path="configmaps")
    cycle.reconcile()
    assert cycle.covered() == frozenset({"ng-b"})
    warnings = [r.getMessage() for r in caplog.records if r.name == "controller.cycle"]
    assert warnings[0] == (
        "priority expander: ConfigMap kube-system/cluster-autoscaler-priority-expander unreadable: not found"
    )
    assert (
        warnings[1].startswith(
            "priority expander: ConfigMap kube-system/cluster-autoscaler-priority-expander unreadable: "
        )
        and "500" in warnings[1]
    )
    assert len(warnings) == 2


def test_the_demo_clusters_whole_report_with_autoscaler_memory_is_the_golden_one(aws: AwsEnvironment) -> None:
    """The demo cluster (examples/cluster.yaml: a running cluster-autoscaler with its flags, nodes of
    the groups, DaemonSets; its ASGs in moto) through run_once in process: the whole report is
    tests/golden/controller_once_demo.json, cluster-autoscaler's memory records included (their
    lastSeen times masked), as tests/controller/test_report.py checks outside mutmut's selection."""
    seed_moto(EXAMPLES / "aws-seed.yaml")
    printed = json.dumps(demo_report().to_json(), indent=2) + "\n"
    assert len(LAST_SEEN.findall(printed)) == 2
    masked = LAST_SEEN.sub('"lastSeen": "<the cycle\'s time>"', printed)
    assert masked == GOLDEN.read_text(encoding="utf-8")


GROUP_LABEL = "example.com/node-group"  # --node-group-label: the only thing tying the node to ng-batch
WARMING = "example.com/warming"  # the ASG's template taint, a startup taint by --ignore-taint
DEGRADED = "example.com/degraded"  # the live node's taint, a status taint by --status-taint
HOUR = 3600.0


def autoscaler_pod(started: float, *flags: str) -> dict[str, Any]:
    """cluster-autoscaler's pod as the Helm chart runs it, its container running since `started`."""
    running = pod(
        "cluster-autoscaler-0",
        namespace="kube-system",
        container="aws-cluster-autoscaler",
        labels={"app.kubernetes.io/name": "aws-cluster-autoscaler"},
        phase="Running",
        started=started,
    )
    running["spec"]["containers"][0]["command"] = ["./cluster-autoscaler", *flags]
    return running


def daemonset(name: str, uid: str, cpu: str) -> dict[str, Any]:
    container = {"name": name, "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"namespace": "kube-system", "name": name, "uid": uid},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def live_batch_node() -> dict[str, Any]:
    """A Ready m5.large of ng-batch that only --node-group-label names (no EKS label, no providerID)."""
    labels = {GROUP_LABEL: "ng-batch", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    found = node(
        "ip-10-0-1-1",
        {"cpu": "1930m", "memory": "7220Mi", "pods": "29", "ephemeral-storage": "44Gi"},
        instance_type="m5.large",
        labels=labels,
        taints=[{"key": DEGRADED, "value": "disk", "effect": "NoSchedule"}],
    )
    found["status"]["capacity"] = {"cpu": "2", "memory": "8Gi"}
    return found


def daemonset_pod(name: str, owner: str, uid: str, cpu: str, node_name: str) -> dict[str, Any]:
    controller = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "uid": uid, "controller": True}
    return pod(
        name,
        {"cpu": cpu},
        namespace="kube-system",
        node=node_name,
        meta={"ownerReferences": [controller]},
        phase="Running",
    )


# ng-batch's live node as both views and the memory see it once cluster-autoscaler's flags drop
# its taint: the tags' taint and the node's are gone from every view
LIVE_LABELS = {
    GROUP_LABEL: "ng-batch",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": "m5.large",
}
LIVE_ALLOCATABLE = {"cpu": "1930m", "ephemeral-storage": "44Gi", "memory": "7220Mi", "pods": "29"}


def test_cluster_autoscalers_taint_flags_and_the_node_group_label_shape_the_published_template(
    aws: AwsEnvironment,
) -> None:
    """cluster-autoscaler runs with --ignore-taint (the ASG's template taint), --status-taint (the
    live node's taint), --force-ds and a 1h memory; the node is ng-batch's only by --node-group-label.
    The whole published template: the actual view is the live node's without its taint, the
    autoscaler view the tags' without theirs, both DaemonSets run on each (two pods, 75m), the memory
    names the process, keeps the node as cluster-autoscaler caches it (its DaemonSet pod listed on
    the node, the missing DaemonSet forced in) until an hour after it was seen; the label is planned
    as a label/* tag, the dropped taint is not."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", {**ENABLED, TAINT_PREFIX + WARMING: "true:NoSchedule"})
    started = float(int(time.time()) - 86400)
    flags = (f"--ignore-taint={WARMING}", f"--status-taint={DEGRADED}", "--force-ds=true")
    kinds = {
        "Pod": [
            autoscaler_pod(started, *flags, "--node-info-cache-expire-time=1h"),
            daemonset_pod("node-agent-x1", "node-agent", "ds-agent", "50m", "ip-10-0-1-1"),
            pod("app", {"cpu": "1"}, node="ip-10-0-1-1", phase="Running"),  # not copied to a template
        ],
        "Node": [live_batch_node()],
        "DaemonSet": [daemonset("node-agent", "ds-agent", "50m"), daemonset("log-shipper", "ds-log", "25m")],
    }
    options = ControllerOptions(node_group_label=GROUP_LABEL, sync_label_tags=True)
    report = reconciler(options, kinds).reconcile()
    [published] = report.node_groups
    seen = published["spec"]["autoscalerMemory"]["lastSeen"]  # this cycle's time, whole seconds
    expires = rfc3339(datetime.fromisoformat(seen).timestamp() + HOUR)
    assert published == {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-batch", "labels": MANAGED},
        "spec": {
            **BATCH_SPEC,
            "nodes": 1,
            "nodeNames": ["ip-10-0-1-1"],
            "actual": {
                "source": "live-node",
                "allocatable": LIVE_ALLOCATABLE,
                "capacity": {"cpu": "2", "memory": "8Gi"},
                "labels": LIVE_LABELS,
                "taints": [],
            },
            "display": {"cpu": "1930m", "ephemeral-storage": "44Gi", "memory": "7Gi", "pods": "29"},
            "daemonSetOverhead": {"cpu": "75m", "pods": "2"},
            "autoscalerOverhead": {"cpu": "175m", "pods": "3"},
            "autoscalerMemory": {
                "remembers": True,
                "reason": f"cluster-autoscaler kube-system/cluster-autoscaler-0 (started {rfc3339(started)}) "
                f"saw a live node of the group at {seen} and builds the group's next node from it until "
                f"it restarts or until {expires}",
                "allocatable": LIVE_ALLOCATABLE,
                "labels": {**LIVE_LABELS, "cluster-autoscaler.kubernetes.io/template-node": "true"},
                "taints": [],
                "lastSeen": seen,
                "autoscaler": "kube-system/cluster-autoscaler-0",
                "started": rfc3339(started),
                "expires": expires,
                "nodePods": {"cpu": "50m", "pods": "1"},
                "runningDaemonSets": [{"namespace": "kube-system", "name": "node-agent", "uid": "ds-agent"}],
                "overhead": {"cpu": "75m", "pods": "2"},
            },
        },
    }
    label = TagChange("ng-batch", "asg", "ng-batch", LABEL_PREFIX + GROUP_LABEL, "ng-batch", None)
    assert report.tag_sync == (TagSyncLine(label), TagSyncLine(planned("ng-batch")[0]))
    assert report.errors == {}


ZERO_DEVICES = dict.fromkeys(
    (
        "amd.com/gpu",
        "aws.amazon.com/neuron",
        "aws.amazon.com/neuroncore",
        "habana.ai/gaudi",
        "nvidia.com/gpu",
        "vpc.amazonaws.com/efa",
        "vpc.amazonaws.com/pod-eni",
    ),
    "0",
)


KARPENTER_DEFAULTS = {"reservedENIs": 0, "vmMemoryOverheadPercent": "0.075", "nodeClassCEL": False}


def test_an_eks_auto_mode_nodepool_is_published_from_its_nodeclass(aws: AwsEnvironment) -> None:
    """A NodePool whose nodeClassRef is EKS Auto Mode's NodeClass `shared`, beside an EC2NodeClass of
    the same name: the cycle publishes the whole template built from the NodeClass (its 100Gi volume:
    89Gi allocatable, where the EC2NodeClass would give 17Gi), Karpenter's defaults, no error."""
    kinds = {"NodePool": [_pool("auto", AUTO_REF)], "NodeClass": [AUTO_CLASS], "EC2NodeClass": [EC2_CLASS]}
    report = reconciler(ControllerOptions(), kinds).reconcile()
    offer = {"cpu": "1930m", "ephemeral-storage": "89Gi", "memory": "6903Mi", "pods": "29"}
    assert report.node_groups == (
        {
            "apiVersion": "fitguard.io/v1alpha1",
            "kind": "NodeGroupTemplate",
            "metadata": {"name": "auto", "labels": MANAGED},
            "spec": {
                "provider": "karpenter",
                "instanceTypes": ["m5.large"],
                "minSize": 0,
                "maxSize": 0,
                "desiredSize": 0,
                "nodes": 0,
                "display": {**offer, "memory": "6.7Gi"},
                "daemonSetOverhead": {},
                "autoscalerOverhead": {"cpu": "100m", "pods": "1"},
                "scaleFromZero": "autoscaler",
                "karpenter": {
                    "nodePool": "auto",
                    "nodeClass": "shared",
                    "nodeClassKind": "NodeClass",
                    "ready": True,
                    "settings": KARPENTER_DEFAULTS,
                    "discoveredMemory": {},
                    "template": _pool("auto", AUTO_REF)["spec"]["template"],
                    "nodeClassSpec": AUTO_CLASS["spec"],
                    "daemonSetOverhead": {},
                    "instanceTypes": [{"name": "m5.large", "allocatable": {**ZERO_DEVICES, **offer}}],
                },
            },
        },
    )
    assert (report.errors, report.tag_sync) == ({}, ())


TEMPLATES_PATH = "/apis/fitguard.io/v1alpha1/nodegrouptemplates"
VIEW_MISSING = (
    "cluster-autoscaler's template lacks ephemeral-storage (a real node offers 44Gi, cluster-autoscaler's "
    "template 0): tag k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage=44Gi fixes it; "
    "vpc.amazonaws.com/pod-eni (a real node offers 9, cluster-autoscaler's template 0): tag "
    "k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/pod-eni=9 fixes it"
)
NOT_LOOKED_FOR = (
    "no running cluster-autoscaler found (--autoscaler-selector is empty: not looked for): judged by its tags"
)


def batch_status(group: str, generation: int, at: str) -> dict[str, Any]:
    """The status a cycle writes on an m5.large ASG's template discovered at `at`."""
    conditions = [
        ("AutoscalerRemembers", "False", "NotRemembered", NOT_LOOKED_FOR),
        ("AutoscalerViewMatches", "False", "ResourcesMissing", VIEW_MISSING),
        ("Discovered", "True", "Discovered", "node group read completely from AWS this cycle"),
    ]
    return {
        "observedGeneration": generation,
        "conditions": [
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "observedGeneration": generation,
                "lastTransitionTime": at,
            }
            for kind, status, reason, message in conditions
        ],
        "autoscalerScalesFromZero": False,
        "autoscalingGroup": group,
        "lastDiscoveryTime": at,
    }


def test_a_cycle_publishes_against_its_own_reading_creating_updating_and_deleting(
    aws: AwsEnvironment, fake_kube: Any, monkeypatch: Any, caplog: Any
) -> None:
    """From the API: ng-batch's template is out of date, ng-new has none, ng-gone's group is gone
    and ng-manual is a person's. The cycle updates ng-batch, creates ng-new, deletes ng-gone (with
    its uid as precondition), leaves ng-manual, and writes each of its two templates' whole status
    with its ASG; it compares with the templates its cache read, listing none again. A later cycle
    whose discovery fails patches only the two statuses, still from its own reading."""
    clients = AwsClients.from_environment()
    seed_batch(clients)
    seed_batch(clients, "ng-new")
    options = ControllerOptions(autoscaler_selector="", karpenter_selector="")
    [batch, new] = reconciler(options, {}).reconcile().node_groups  # as published: what each should hold
    kind = {"apiVersion": "fitguard.io/v1alpha1", "kind": "NodeGroupTemplate"}
    outdated = {**kind, **batch, "spec": {**batch["spec"], "maxSize": 3}}
    gone = {**outdated, "metadata": {"name": "ng-gone", "labels": MANAGED}}
    manual = {**outdated, "metadata": {"name": "ng-manual", "annotations": {"fitguard.io/manual": "true"}}}
    created = [fake_kube.create(obj) for obj in (outdated, gone, manual)]
    uid = {obj["metadata"]["name"]: obj["metadata"]["uid"] for obj in created}

    def cycle(clients: AwsClients) -> CycleReport:
        cache = ClusterCache(options.cache()).list_from(KubeClient(fake_kube.api_client()))
        books = Books(cache, options.books())
        reconciler = DiscoveryReconciler(cache, books, options, lambda: clients, facts=lookup)
        fake_kube.requests.clear()
        return reconciler.reconcile()

    caplog.set_level(logging.INFO, logger="controller.cycle")
    report = cycle(clients)
    assert report.node_groups == (batch, new)
    requests = fake_kube.requests.find()
    assert [(r.method, r.path, r.body if r.method == "DELETE" else None) for r in requests] == [
        ("GET", f"{TEMPLATES_PATH}/ng-batch", None),
        ("PUT", f"{TEMPLATES_PATH}/ng-batch", None),
        ("GET", f"{TEMPLATES_PATH}/ng-new", None),
        ("POST", TEMPLATES_PATH, None),
        (
            "DELETE",
            f"{TEMPLATES_PATH}/ng-gone",
            {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid["ng-gone"]}},
        ),
        ("PATCH", f"{TEMPLATES_PATH}/ng-batch/status", None),
        ("PATCH", f"{TEMPLATES_PATH}/ng-new/status", None),
    ]
    listed = fake_kube.objects("NodeGroupTemplate", api_version=kind["apiVersion"])
    stored = {o["metadata"]["name"]: o for o in listed}
    at = stored["ng-new"]["status"]["lastDiscoveryTime"]  # the cycle's time, the same for each
    assert {name: (o["spec"], o.get("status")) for name, o in stored.items()} == {
        "ng-batch": (batch["spec"], batch_status("ng-batch", 2, at)),
        "ng-manual": (manual["spec"], None),
        "ng-new": (new["spec"], batch_status("ng-new", 1, at)),
    }
    assert [r.getMessage() for r in caplog.records if r.name == "controller.cycle"] == [
        "NodeGroupTemplates: 1 created, 1 updated, 1 deleted, 0 unchanged"
    ]
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    failing = AwsClients.from_environment()
    inject_errors(failing.autoscaling, "DescribeAutoScalingGroups")
    assert cycle(failing).discovery_error == "DescribeAutoScalingGroups: Throttling: Rate exceeded"
    assert [(r.method, r.path) for r in fake_kube.requests.find()] == [
        ("PATCH", f"{TEMPLATES_PATH}/ng-batch/status"),
        ("PATCH", f"{TEMPLATES_PATH}/ng-new/status"),
    ]


def seed_managed_general(clients: AwsClients, eks: Any, tags: dict[str, str]) -> str:
    """EKS managed node group ng-general (m5.xlarge, label workload=general) of cluster demo, its ASG
    tagged `tags` and eks:nodegroup-name but not eks:cluster-name; its ARN."""
    launch_template(clients.ec2, "eks-ng-general", "m5.xlarge", 20)
    template = {"LaunchTemplateName": "eks-ng-general", "Version": "$Latest"}
    managed = {**tags, "eks:nodegroup-name": "ng-general"}
    asg(clients.autoscaling, "eks-ng-general-demo", managed, LaunchTemplate=template)
    role = "arn:aws:iam::123456789012:role/fitguard-demo"
    vpc = clients.ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = clients.ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20")["Subnet"]["SubnetId"]
    eks.create_cluster(name="demo", roleArn=role, resourcesVpcConfig={"subnetIds": [subnet]})
    return str(
        eks.create_nodegroup(
            clusterName="demo",
            nodegroupName="ng-general",
            nodeRole=role,
            subnets=[subnet],
            instanceTypes=["m5.xlarge"],
            labels={"workload": "general"},
            scalingConfig={"minSize": 0, "maxSize": 4, "desiredSize": 0},
        )["nodegroup"]["nodegroupArn"]
    )


def test_discovery_reads_with_the_options_page_size_cluster_name_and_fitguards_instance_facts(
    aws: AwsEnvironment,
) -> None:
    """--cluster-name demo, --page-size 1, DescribeInstanceTypes denied: both groups (each tagged for
    demo) are found in two pages; ng-batch's template is built from fitguard's instance facts (the
    same whole template as from EC2); the managed ng-general, whose ASG has no eks:cluster-name tag,
    is described in cluster demo: its actual view carries the node group's labels, its tags are
    planned on the node group itself."""
    clients = AwsClients.from_environment()
    demo = {**ENABLED, "k8s.io/cluster-autoscaler/demo": "owned"}
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", demo)
    arn = seed_managed_general(clients, aws.client("eks"), demo)
    inject_errors(clients.ec2, "DescribeInstanceTypes", code="AccessDenied", status=403, times=9)
    pages = inject_errors(clients.autoscaling, "DescribeAutoScalingGroups", times=0)
    cycle = reconciler(ControllerOptions(cluster_name="demo", page_size=1), {})
    cycle.clients = lambda: clients
    report = cycle.reconcile()
    assert len(pages.calls) == 2
    batch, general = report.node_groups
    assert batch == {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-batch", "labels": MANAGED},
        "spec": {**BATCH_SPEC, "autoscalerMemory": CA_MEMORY},
    }
    assert (general["metadata"]["name"], general["spec"]["provider"]) == ("ng-general", "eks-managed")
    assert general["spec"]["actual"] == {
        "source": "launch-template",
        "allocatable": {
            "cpu": "3920m",
            "ephemeral-storage": "17Gi",
            "memory": "15391Mi",
            "pods": "58",
            "vpc.amazonaws.com/pod-eni": "18",
        },
        "capacity": {"cpu": "4", "memory": "16Gi"},
        "labels": {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/instance-type": "m5.xlarge",
            "beta.kubernetes.io/os": "linux",
            "eks.amazonaws.com/capacityType": "ON_DEMAND",
            "eks.amazonaws.com/nodegroup": "ng-general",
            "failure-domain.beta.kubernetes.io/region": "us-east-1",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m5.xlarge",
            "topology.kubernetes.io/region": "us-east-1",
            "workload": "general",
        },
        "taints": [],
    }
    assert report.tag_sync == (
        *(TagSyncLine(c) for c in planned("ng-batch")),
        TagSyncLine(TagChange("ng-general", "eks-nodegroup", arn, EPH_TAG, "17Gi", None)),
        TagSyncLine(TagChange("ng-general", "eks-nodegroup", arn, ENI_TAG, "18", None)),
    )
    assert report.errors == {}


def test_a_template_kept_for_an_unreadable_live_node_plans_no_tags(aws: AwsEnvironment) -> None:
    """ng-batch read completely from AWS, but its only live node's allocatable is unreadable: the
    previous template is kept with the reason, and no tag is planned from it (a kept template may
    describe nodes the group no longer makes), even though the group itself carries no error."""
    clients = AwsClients.from_environment()
    seed_batch(clients)
    first = reconciler(ControllerOptions(), {}).reconcile()
    broken = node("ip-10-0-1-1", {"cpu": "lots"}, group="ng-batch", instance_type="m5.large")
    report = reconciler(ControllerOptions(), {**previous_of(first), "Node": [broken]}).reconcile()
    reason = (
        "live node unreadable: status.allocatable.cpu: invalid quantity 'lots' (quantities must match "
        "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"
    )
    assert report.outcomes == (GroupOutcome("ng-batch", first.templates[0], reason),)
    assert (report.tag_sync, report.errors) == ((), {"ng-batch": reason})
