"""Karpenter NodePools judged end to end, through the commands a user runs: `fitguard controller
--once --dry-run --state FILE -o json` (AWS in moto: no ASG for a Karpenter-only cluster, one for a
mixed one) publishes a NodeGroupTemplate per NodePool under `nodeGroups`, `fitguard state
from-controller` makes it a state, and `fitguard check --state` admits a pod one unit under what
the NodePool's instance type offers and denies one a unit over, naming the NodePool and the field
to change. The anchor is the issue's: m5.large on AL2023 (no block device mappings) offers 1930m
cpu, 6903Mi memory, 17Gi ephemeral-storage, 29 pods and 9 branch ENIs, as karpenter-provider-aws
computes it (tests/upstream/karpenter_instancetype.py holds its own cases)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.aws.clients import AwsClients
from controller.cycle_table import cycle_table
from tests.awsfixtures import AwsEnvironment
from tests.controller.test_discovery_aws import ENABLED, EPH_TAG, asg, launch_template

ROOT = Path(__file__).resolve().parents[2]
M5_LARGE = {
    "cpu": "1930m",
    "memory": "6903Mi",
    "ephemeral-storage": "17Gi",
    "pods": "29",
    "vpc.amazonaws.com/pod-eni": "9",
}
# one unit of each resource, as a request is written
UNIT = {
    "cpu": "1m",
    "memory": "1Mi",
    "ephemeral-storage": "1Gi",
    "pods": "1",
    "vpc.amazonaws.com/pod-eni": "1",
}


def fitguard(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitguard", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=120,
    )


def nodepool(name: str, types: list[str], **spec: Any) -> list[dict[str, Any]]:
    """A NodePool of `types` on AL2023 and its EC2NodeClass (no block device mappings)."""
    return [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "spec": {
                        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
                        "requirements": [
                            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
                        ],
                        **spec,
                    }
                }
            },
        },
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": name},
            "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "KarpenterNodeRole"},
        },
    ]


def controller_once(
    tmp_path: Path, objects: list[dict[str, Any]], *flags: str
) -> subprocess.CompletedProcess[str]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "absent"), "HOME": str(tmp_path)}
    run = fitguard(
        "controller",
        "--once",
        "--dry-run",
        "--state",
        str(cluster),
        "-o",
        "json",
        "--log-level",
        "error",
        *flags,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    return run


def once(tmp_path: Path, objects: list[dict[str, Any]]) -> tuple[dict[str, Any], Path]:
    """The controller's report of a cluster of `objects`, and the state `check` reads made from it."""
    run = controller_once(tmp_path, objects)
    env = {**os.environ, "HOME": str(tmp_path)}
    (tmp_path / "groups.json").write_text(run.stdout)
    state = tmp_path / "state.yaml"
    made = fitguard("state", "from-controller", str(tmp_path / "groups.json"), "-o", str(state), env=env)
    assert made.returncode == 0, made.stderr
    return json.loads(run.stdout), state


def check(
    tmp_path: Path, state: Path, requests: dict[str, str], name: str = "p"
) -> tuple[int, dict[str, Any]]:
    manifest = tmp_path / f"{name}.yaml"
    container = {"name": "c", "image": "x", "resources": {"requests": requests, "limits": requests}}
    manifest.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [container]},
            }
        )
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    run = fitguard("check", "-f", str(manifest), "--state", str(state), "-o", "json", env=env)
    [result] = json.loads(run.stdout)["results"]
    return run.returncode, result


def minus(quantity: str, unit: str, sign: int) -> str:
    """`quantity` one `unit` more (sign 1) or less (-1), in the unit's suffix."""
    from capacity.quantity import parse_quantity

    value = parse_quantity(quantity) + sign * parse_quantity(unit)
    suffix = "".join(c for c in unit if not c.isdigit())
    step = parse_quantity(unit)
    return f"{value // step}{suffix}"


def boundary_pods(tmp_path: Path, state: Path, pool: str) -> None:
    """For each resource, a pod one unit under the NodePool's m5.large is admitted and one a unit
    over is denied naming the NodePool (a pod counts one `pods` itself: its `pods` request is left
    out, and the boundary of pods is the NodePool's 29 with nothing else on the node)."""
    for resource, offered in M5_LARGE.items():
        if resource == "pods":
            continue
        under, over = minus(offered, UNIT[resource], -1), minus(offered, UNIT[resource], 1)
        code, result = check(tmp_path, state, {resource: under}, "under")
        assert (code, result["verdict"]) == (0, "admitted"), (resource, result)
        code, result = check(tmp_path, state, {resource: over}, "over")
        assert (code, result["verdict"]) == (1, "denied"), (resource, result)
        message = json.dumps(result)
        assert f"NodePool {pool}:" in message, message
        assert f"{resource}: needs {over}" in message, message


@pytest.mark.slow
def test_a_karpenter_only_cluster_gets_a_template_per_nodepool_and_boundary_pods_are_judged(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """No ASG in AWS, one NodePool of m5.large: `controller --once -o json` lists its template
    (provider karpenter) with the allocatable Karpenter computes, and `check --state` judges each
    resource's boundary by it, naming the NodePool."""
    report, state = once(tmp_path, nodepool("general", ["m5.large"]))
    [template] = report["nodeGroups"]
    assert template["metadata"]["name"] == "general"
    assert template["spec"]["provider"] == "karpenter"
    [offer] = template["spec"]["karpenter"]["instanceTypes"]
    assert offer["name"] == "m5.large"
    assert {k: offer["allocatable"][k] for k in M5_LARGE} == M5_LARGE
    assert report["errors"] == {}
    boundary_pods(tmp_path, state, "general")


def test_the_ephemeral_storage_denial_names_the_root_volume_to_change(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """A pod asking more ephemeral-storage than any allowed type offers is denied with the
    EC2NodeClass field that would give it room."""
    _, state = once(tmp_path, nodepool("general", ["m5.large"]))
    code, result = check(tmp_path, state, {"ephemeral-storage": "18Gi"})
    assert code == 1
    assert "EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize" in json.dumps(result)


def test_a_nodepool_taint_the_pod_does_not_tolerate_is_named(aws: AwsEnvironment, tmp_path: Path) -> None:
    """A NodePool whose nodes carry a NoSchedule taint refuses a pod without the toleration, saying
    which taint; its startup taints are not counted."""
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    startup = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}
    _, state = once(tmp_path, nodepool("tainted", ["m5.large"], taints=[taint], startupTaints=[startup]))
    code, result = check(tmp_path, state, {"cpu": "100m"})
    assert code == 1
    assert "NodePool tainted: taint not tolerated (dedicated=gpu:NoSchedule)" in json.dumps(result)


def test_a_nodepool_without_its_nodeclass_has_no_template_and_the_report_says_why(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """A NodePool whose EC2NodeClass is missing is kept out of nodeGroups and said in errors by
    `nodepool/<name>`, and the run still succeeds."""
    pool, _ = nodepool("orphan", ["m5.large"])
    report = json.loads(controller_once(tmp_path, [pool]).stdout)
    assert report["nodeGroups"] == []
    assert report["errors"] == {
        "nodepool/orphan": "EC2NodeClass 'orphan' (spec.template.spec.nodeClassRef) not found"
    }


@pytest.mark.slow
def test_in_a_mixed_cluster_a_pod_no_group_serves_is_judged_by_the_nodepool(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """An ASG at zero (m5.large, 44Gi ephemeral-storage tagged) beside a NodePool of m5.large:
    both templates are listed; a pod the ASG cannot serve (more cpu than it offers) but the
    NodePool can is admitted; one a unit over the NodePool's is denied naming both the node group
    and the NodePool."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", {**ENABLED, EPH_TAG: "44Gi"})
    report, state = once(tmp_path, nodepool("general", ["m5.large"]))
    assert sorted((t["metadata"]["name"], t["spec"]["provider"]) for t in report["nodeGroups"]) == [
        ("general", "karpenter"),
        ("ng-batch", "aws-asg"),
    ]
    # the ASG's template offers 1900m after kube-proxy: 1920m is the NodePool's alone
    code, result = check(tmp_path, state, {"cpu": "1920m"})
    assert (code, result["verdict"]) == (0, "admitted"), result
    code, result = check(tmp_path, state, {"cpu": "1931m"})
    assert (code, result["verdict"]) == (1, "denied"), result
    message = json.dumps(result)
    assert "ng-batch" in message and "NodePool general: " in message
    assert "1 node group (ng-batch), 0 live nodes, 1 Karpenter NodePool" in message


def test_a_nodepool_not_ready_is_said_and_never_denies(aws: AwsEnvironment, tmp_path: Path) -> None:
    """A NodePool whose Ready condition is False is published and said in errors; Karpenter
    launches nothing for it until it is Ready, which is transient: a pod over its allocatable is
    admitted unjudged, with the warning that names it."""
    pool, nodeclass = nodepool("waiting", ["m5.large"])
    pool["status"] = {"conditions": [{"type": "Ready", "status": "False", "reason": "NodeClassNotReady"}]}
    report, state = once(tmp_path, [pool, nodeclass])
    not_ready = "not Ready: Karpenter launches no node for it until it is"
    assert report["errors"] == {"nodepool/waiting": not_ready}
    assert report["nodeGroups"][0]["spec"]["karpenter"]["ready"] is False
    code, result = check(tmp_path, state, {"cpu": "1931m"})
    assert (code, result["verdict"]) == (0, "unjudged"), result
    assert "waiting" in json.dumps(result)


UNTRUNKED_WARNING = (
    "NodePool general may launch i4i.large for this pod: Karpenter counts their branch ENIs, the VPC "
    "resource controller does not trunk them (the pod would wait); exclude them in "
    "spec.template.spec.requirements"
)


def test_a_pod_needing_a_branch_eni_is_warned_of_a_type_the_resource_controller_does_not_trunk(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """A NodePool of m5.large, i4i.large and t3.large: a pod requesting one pod-eni is admitted by
    `check --state`, warned (JSON and the text a person reads) of i4i.large, which Karpenter gives 9
    branch ENIs and the VPC resource controller does not trunk (verdict `warned`: admitted, with
    warnings); t3.large, which Karpenter itself never launches for such a pod, is not named; a pod
    without pod-eni gets no warning."""
    _, state = once(tmp_path, nodepool("general", ["m5.large", "i4i.large", "t3.large"]))
    code, result = check(tmp_path, state, {"vpc.amazonaws.com/pod-eni": "1"})
    assert (code, result["verdict"], result["warnings"]) == (0, "warned", [UNTRUNKED_WARNING])
    text = fitguard("check", "-f", str(tmp_path / "p.yaml"), "--state", str(state), env=dict(os.environ))
    assert f"  Warning: {UNTRUNKED_WARNING}\n" in text.stdout, text.stdout
    code, result = check(tmp_path, state, {"cpu": "1"})
    assert (code, result["verdict"], result["warnings"]) == (0, "admitted", [])


HASHES = {"karpenter.k8s.aws/ec2nodeclass-hash": "42", "karpenter.k8s.aws/ec2nodeclass-hash-version": "v6"}


def karpenter_node(storage: str, annotations: dict[str, str]) -> dict[str, Any]:
    """A live node Karpenter launched for NodePool general as an m5.large, offering `storage`."""
    labels = {
        "karpenter.sh/nodepool": "general",
        "karpenter.k8s.aws/ec2nodeclass": "general",
        "node.kubernetes.io/instance-type": "m5.large",
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    allocatable = {"cpu": "1930m", "memory": "6903Mi", "ephemeral-storage": storage, "pods": "29"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ip-10-0-9-9.ec2.internal", "labels": labels, "annotations": annotations},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def with_objects(state: Path, objects: list[dict[str, Any]]) -> Path:
    """The state `check` reads, with `objects` beside the templates (the live node the webhook sees)."""
    document = yaml.safe_load(state.read_text())
    document["items"] = [*document["items"], *objects]
    state.write_text(yaml.safe_dump(document))
    return state


@pytest.mark.slow
def test_live_nodes_below_the_estimate_are_published_and_judged_by(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """A live m5.large of the NodePool, launched under the EC2NodeClass as it is (equal hash
    annotations), offers 16Gi of ephemeral-storage where Karpenter plans 17Gi: the template shows
    both numbers; a pod of 16Gi + 1Mi, which Karpenter would launch a node for and the scheduler
    would never place there, is denied naming both (the live node does not take it either, and as
    a node of a known NodePool it is no unmodelled capacity); one of 16Gi is admitted. Launched
    under an earlier class spec, the same node only warns."""
    pool, nodeclass = nodepool("general", ["m5.large"])
    nodeclass["metadata"]["annotations"] = dict(HASHES)
    node = karpenter_node("16Gi", dict(HASHES))
    report, state = once(tmp_path, [pool, nodeclass, node])
    [offer] = report["nodeGroups"][0]["spec"]["karpenter"]["instanceTypes"]
    assert (offer["allocatable"]["ephemeral-storage"], offer["live"]) == (
        "17Gi",
        {"allocatable": {"ephemeral-storage": "16Gi"}, "nodes": 1, "sameNodeClass": True},
    )
    # `--once -o table` prints the report the JSON holds, both numbers in the NodePool's NOTE
    header, row = cycle_table(report).splitlines()[:2]
    assert header.split()[-1] == "NOTE"
    assert row.endswith("m5.large: ephemeral-storage Karpenter plans 17Gi, live nodes offer 16Gi"), row
    with_objects(state, [node])
    code, result = check(tmp_path, state, {"ephemeral-storage": "16385Mi"})
    assert (code, result["verdict"]) == (1, "denied"), result
    assert (
        "NodePool general: the NodePool's nodes offer less ephemeral-storage than Karpenter plans with "
        "(ephemeral-storage: needs 16.1Gi with the DaemonSets; Karpenter plans m5.large with 17Gi, its nodes "
        "offer 16Gi): change EC2NodeClass spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    ) in result["message"], result
    code, result = check(tmp_path, state, {"ephemeral-storage": "16Gi"})
    assert (code, result["verdict"], result["warnings"]) == (0, "admitted", [])

    old = karpenter_node("16Gi", {**HASHES, "karpenter.k8s.aws/ec2nodeclass-hash": "41"})
    _, state = once(tmp_path, [pool, nodeclass, old])
    with_objects(state, [old])
    code, result = check(tmp_path, state, {"ephemeral-storage": "16385Mi"})
    assert (code, result["verdict"], result["warnings"]) == (
        0,
        "warned",
        [
            "NodePool general may launch m5.large (Karpenter plans 17Gi, nodes of an earlier EC2NodeClass "
            "offer 16Gi) for this pod, which needs 16.1Gi of ephemeral-storage there: it would not fit"
        ],
    )


def unschedulable(name: str, cpu: str) -> dict[str, Any]:
    """A pod the scheduler could not place (no live node at all)."""
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/0 nodes"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container]},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


def test_fitguard_plans_no_scale_up_for_a_nodepool(aws: AwsEnvironment, tmp_path: Path) -> None:
    """The mixed cluster with scaling planned for every unschedulable pod (`--scaling=plan
    --scaling-scope=all`): a pod the ASG's m5.large serves is planned on ng-batch; one only the
    NodePool's m5.xlarge serves (3 cpu) plans nothing: Karpenter launches its node,
    fitguard never scales for Karpenter, and "general" appears nowhere in the plan."""
    clients = AwsClients.from_environment()
    launch_template(clients.ec2, "ng-batch", "m5.large", 50)
    asg(clients.autoscaling, "ng-batch", {**ENABLED, EPH_TAG: "44Gi"})
    pods = [unschedulable("small", "1"), unschedulable("big", "3")]
    flags = ("--scaling", "plan", "--scaling-scope", "all")
    report = json.loads(
        controller_once(tmp_path, [*nodepool("general", ["m5.xlarge"]), *pods], *flags).stdout
    )
    assert sorted(t["metadata"]["name"] for t in report["nodeGroups"]) == ["general", "ng-batch"]
    assert [(u["nodeGroup"], u["pods"], u["outcome"]) for u in report["scaleUps"]] == [
        ("ng-batch", ["default/small"], "planned")
    ]
    assert report["scaling"]["notTriggerScaleUp"] == [
        {
            "pods": ["default/big"],
            "message": "pod didn't trigger scale-up: 1 Insufficient cpu",
            "reasons": {"ng-batch": ["Insufficient cpu"]},
        }
    ]
    assert (report["scaling"]["outcomes"], report["scaling"]["skippedGroups"]) == (
        {"ng-batch": "planned"},
        {},
    )
    assert "general" not in json.dumps(report["scaling"])
