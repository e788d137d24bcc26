"""EKS Auto Mode NodePools judged end to end, through the commands a user runs (the helpers of
tests/e2e/test_karpenter_once.py): `fitguard controller --once --dry-run --state FILE -o json`
publishes a NodeGroupTemplate for a NodePool whose nodeClassRef names an `eks.amazonaws.com`
NodeClass, and `fitguard check --state` judges pods by it: ephemeral-storage from the NodeClass's
`ephemeralStorage.size` (80Gi when not given), max pods min(110, the ENI limit), and no branch ENI
on any type (the VPC resource controller manages no Auto Mode node, docs/upstream.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.awsfixtures import AwsEnvironment
from tests.e2e.test_karpenter_once import check, controller_once, nodepool, once

# m5.large under Auto Mode: Karpenter's AL2023 figures with 29 pods (min(110, 29)), the 80Gi
# default volume less 1Gi kube-reserved and the 10% eviction threshold, and no branch ENI
M5_LARGE_AUTO = {
    "cpu": "1930m",
    "memory": "6903Mi",
    "ephemeral-storage": "71Gi",
    "pods": "29",
    "vpc.amazonaws.com/pod-eni": "0",
}


def automode_pool(name: str, types: list[str], nodeclass_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A NodePool of `types` whose class is the Auto Mode NodeClass `name`, and that NodeClass."""
    pool, _ = nodepool(name, types)
    pool["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "eks.amazonaws.com",
        "kind": "NodeClass",
        "name": name,
    }
    nodeclass = {"apiVersion": "eks.amazonaws.com/v1", "kind": "NodeClass", "metadata": {"name": name}}
    return [pool, {**nodeclass, "spec": nodeclass_spec}]


def test_an_automode_nodepool_is_published_and_judged_by_its_nodeclass(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """The Auto Mode NodePool gets a template (provider karpenter, its class kind NodeClass) with
    m5.large's Auto Mode allocatable and no error; a pod asking the 71Gi it offers is admitted, one
    asking a Gi more is denied naming the NodePool and the NodeClass's ephemeralStorage.size."""
    report, state = once(tmp_path, automode_pool("auto", ["m5.large"], {"role": "AutoNodeRole"}))
    assert report["errors"] == {}
    [template] = report["nodeGroups"]
    assert (template["metadata"]["name"], template["spec"]["provider"]) == ("auto", "karpenter")
    karpenter = template["spec"]["karpenter"]
    assert (karpenter["nodeClass"], karpenter["nodeClassKind"]) == ("auto", "NodeClass")
    [offer] = karpenter["instanceTypes"]
    assert offer["name"] == "m5.large"
    assert {k: offer["allocatable"].get(k, "0") for k in M5_LARGE_AUTO} == M5_LARGE_AUTO
    code, result = check(tmp_path, state, {"ephemeral-storage": "71Gi"}, "under")
    assert (code, result["verdict"]) == (0, "admitted"), result
    code, result = check(tmp_path, state, {"ephemeral-storage": "72Gi"}, "over")
    assert (code, result["verdict"]) == (1, "denied"), result
    assert "NodePool auto: no allowed instance type offers enough ephemeral-storage" in json.dumps(result)
    assert "change NodeClass spec.ephemeralStorage.size" in json.dumps(result)


def test_a_branch_eni_pod_only_automode_could_serve_is_unjudged_unless_it_fails_on_something_else(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """Only an Auto Mode NodePool could run it. Asking one branch ENI, with what else it asks
    fitting, it is admitted unjudged: security groups for pods on Auto Mode are documented as
    unsupported, but the guide's `auto-sgp` page (Kubernetes 1.36+) gives them there by a mechanism
    fitguard does not model. Asking more ephemeral-storage than any type offers, it is denied on
    that alone, naming the NodePool and the NodeClass field."""
    _, state = once(tmp_path, automode_pool("auto", ["m5.large"], {"ephemeralStorage": {"size": "100Gi"}}))
    code, result = check(tmp_path, state, {"vpc.amazonaws.com/pod-eni": "1"})
    assert (code, result["verdict"], result["abstained"]) == (0, "unjudged", "karpenter-nodepools"), result
    big = {"vpc.amazonaws.com/pod-eni": "1", "ephemeral-storage": "200Gi"}
    code, result = check(tmp_path, state, big, "big")
    assert (code, result["verdict"]) == (1, "denied"), result
    [line] = [m for m in result["message"].splitlines() if m.strip().startswith("NodePool auto")]
    assert line.strip() == (
        "NodePool auto: no allowed instance type offers enough ephemeral-storage (ephemeral-storage:"
        " needs 200Gi with the DaemonSets, the allowed types offer at most 89Gi): change NodeClass"
        " spec.ephemeralStorage.size"
    )


def test_an_automode_nodepool_without_its_nodeclass_says_which_class_is_missing(
    aws: AwsEnvironment, tmp_path: Path
) -> None:
    """The NodePool names a NodeClass that is not there (an EC2NodeClass of that name does not
    stand in for it): no template, and the report names the NodeClass."""
    pool, _ = automode_pool("auto", ["m5.large"], {})
    ec2 = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "auto"},
        "spec": {},
    }
    report = json.loads(controller_once(tmp_path, [pool, ec2]).stdout)
    assert report["nodeGroups"] == []
    assert report["errors"] == {
        "nodepool/auto": "NodeClass 'auto' (spec.template.spec.nodeClassRef) not found"
    }
