"""controller/tagsync.py's plan, in process (no AWS): which `resources/*`, `label/*` and `taint/*`
tags `--sync-autoscaler-tags` writes for each node group, on which target, with which value and
what it replaces, the sentence each change is explained with, and the writes (a real boto3 client
answered by botocore's Stubber). Whole lists of whole changes."""

from __future__ import annotations

import logging
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from capacity.taints import Taint
from capacity.template import NodeGroupTemplate, View
from controller.aws.clients import AwsClients
from controller.aws.records import AwsNodeGroup
from controller.tagsync import CACHE_NOTE, TagChange, apply_tag_sync, log_plan, plan_tag_sync

GIB = 1024**3 * 1000  # one GiB in milli-units
RES = "k8s.io/cluster-autoscaler/node-template/resources/"
LABEL = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
ARN = "arn:aws:eks:eu-west-1:111122223333:nodegroup/c1/mng/abc"


def template(
    name: str,
    allocatable: dict[str, int],
    *,
    source: str = "live-node",
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    autoscaler: View | None = None,
) -> NodeGroupTemplate:
    actual = View(allocatable=allocatable, labels=labels or {}, taints=taints, source=source)
    return NodeGroupTemplate(name=name, actual=actual, autoscaler=autoscaler or View(allocatable={}))


def asg(name: str, tags: tuple[tuple[str, str], ...] = (), **kw: Any) -> AwsNodeGroup:
    return AwsNodeGroup(name=name, asg_name=f"asg-{name}", provider="aws-asg", tags=tags, **kw)


def test_missing_and_different_resource_tags_are_planned_equal_ones_are_not() -> None:
    """Each synced resource the actual view offers is planned when its tag is missing or says
    another quantity, with the canonical value and the tag's current value; an equal tag (written
    in another form), a resource the view lacks or offers as zero, and an unsynced resource (cpu)
    plan nothing. Groups come out in name order."""
    groups = [
        asg("b", tags=((RES + "ephemeral-storage", "20Gi"), (RES + "vpc.amazonaws.com/pod-eni", "9"))),
        asg("a", tags=(("owner", "team"),)),
        asg("c", tags=((RES + "ephemeral-storage", "21474836480"),)),
        asg("d"),
        asg("e"),
    ]
    templates = {
        "a": template("a", {"ephemeral-storage": 20 * GIB, "vpc.amazonaws.com/pod-eni": 9000, "cpu": 2000}),
        "b": template("b", {"ephemeral-storage": 20 * GIB, "vpc.amazonaws.com/pod-eni": 38000}),
        "c": template("c", {"ephemeral-storage": 20 * GIB, "vpc.amazonaws.com/pod-eni": 0}),
        "d": template("d", {"cpu": 2000}),
        "e": template("e", {"vpc.amazonaws.com/pod-eni": 3000}),
    }
    assert plan_tag_sync(groups, templates) == [
        TagChange("a", "asg", "asg-a", RES + "ephemeral-storage", "20Gi", None),
        TagChange("a", "asg", "asg-a", RES + "vpc.amazonaws.com/pod-eni", "9", None),
        TagChange("b", "asg", "asg-b", RES + "vpc.amazonaws.com/pod-eni", "38", "9"),
        TagChange("e", "asg", "asg-e", RES + "vpc.amazonaws.com/pod-eni", "3", None),
    ]


def test_incomplete_groups_and_groups_without_an_actual_view_plan_nothing() -> None:
    """A group with an error, a managed group EKS did not describe, a group with no template and a
    template with no actual view are all skipped; the one complete group is planned."""
    storage = {"ephemeral-storage": 20 * GIB}
    groups = [
        asg("broken", error="AccessDenied"),
        asg("a-undescribed", nodegroup_error="ResourceNotFound"),
        asg("untemplated"),
        asg("blind"),
        asg("ok"),
    ]
    templates = {
        "broken": template("broken", storage),
        "a-undescribed": template("a-undescribed", storage),
        "blind": NodeGroupTemplate(name="blind"),
        "ok": template("ok", storage),
    }
    assert plan_tag_sync(groups, templates) == [
        TagChange("ok", "asg", "asg-ok", RES + "ephemeral-storage", "20Gi", None)
    ]


def test_a_managed_groups_tag_goes_on_the_node_group_whose_tags_win_over_the_asgs() -> None:
    """For a managed group the target is the EKS node group (its ARN) and the current value is the
    node group's tag; cluster-autoscaler reads node group tags over ASG tags, so an equal node group
    tag plans nothing even when the ASG's tag differs, and a different one is replaced even when
    the ASG's tag is right."""
    groups = [
        asg(
            "m1",
            tags=((RES + "ephemeral-storage", "5Gi"),),
            nodegroup={"nodegroupArn": ARN, "tags": {RES + "ephemeral-storage": "20Gi"}},
        ),
        asg(
            "m2",
            tags=((RES + "ephemeral-storage", "20Gi"),),
            nodegroup={"nodegroupArn": ARN, "tags": {RES + "ephemeral-storage": "5Gi"}},
        ),
    ]
    groups.append(asg("m3", nodegroup={"tags": {}}))
    templates = {n: template(n, {"ephemeral-storage": 20 * GIB}) for n in ("m1", "m2", "m3")}
    assert plan_tag_sync(groups, templates) == [
        TagChange("m2", "eks-nodegroup", ARN, RES + "ephemeral-storage", "20Gi", "5Gi"),
        TagChange("m3", "eks-nodegroup", "", RES + "ephemeral-storage", "20Gi", None),
    ]


def test_labels_and_taints_the_autoscaler_view_lacks_are_planned_only_when_asked() -> None:
    """With `labels_and_taints`, a self-managed group whose actual view comes from a live node gets
    a label/* tag for each label the autoscaler view lacks or says otherwise (never a generated
    label), and a taint/* tag (value:effect) for each taint it lacks; tags already right plan
    nothing, sorted by key. Without the flag, or for a view not from a live node, or for a managed
    group, only resources are planned."""
    autoscaler = View(
        allocatable={},
        labels={"team": "old", "same": "yes"},
        taints=(Taint("known", "x", "NoSchedule"),),
    )
    live_labels = {
        "team": "new",
        "same": "yes",
        "tagged": "right",
        "zone": "a",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "eks.amazonaws.com/nodegroup": "x",
        "vpc.amazonaws.com/has-trunk-attached": "true",
        "fitguard.io/branch-eni-exhausted": "true",
        "k8s.io/cloud-provider-aws": "x",
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/zone": "a",
        "topology.ebs.csi.aws.com/zone": "a",
    }
    taints = (
        Taint("known", "x", "NoSchedule"),
        Taint("known", "y", "NoSchedule"),
        Taint("gpu", "", "NoExecute"),
    )
    tags = ((LABEL + "tagged", "right"), (LABEL + "zone", "b"))

    def make(source: str) -> NodeGroupTemplate:
        return template("g", {}, source=source, labels=live_labels, taints=taints, autoscaler=autoscaler)

    first = template("a", {"ephemeral-storage": 20 * GIB}, source="launch-template")
    both = plan_tag_sync(
        [asg("g", tags=tags), asg("a")], {"g": make("live-node"), "a": first}, labels_and_taints=True
    )
    assert both == [
        TagChange("a", "asg", "asg-a", RES + "ephemeral-storage", "20Gi", None),
        TagChange("g", "asg", "asg-g", LABEL + "team", "new", None),
        TagChange("g", "asg", "asg-g", LABEL + "zone", "a", "b"),
        TagChange("g", "asg", "asg-g", TAINT + "gpu", ":NoExecute", None),
        TagChange("g", "asg", "asg-g", TAINT + "known", "y:NoSchedule", None),
    ]
    assert plan_tag_sync([asg("g", tags=tags)], {"g": make("live-node")}) == []
    assert plan_tag_sync([asg("g", tags=tags)], {"g": make("launch-template")}, labels_and_taints=True) == []
    managed = asg("g", tags=tags, nodegroup={"nodegroupArn": ARN})
    assert plan_tag_sync([managed], {"g": make("live-node")}, labels_and_taints=True) == []
    no_autoscaler = NodeGroupTemplate(name="g", actual=make("live-node").actual)
    assert plan_tag_sync([asg("g")], {"g": no_autoscaler}, labels_and_taints=True) == []


def test_each_change_is_explained_in_one_whole_sentence() -> None:
    """A resource tag and a label tag, missing and present, each get the whole explanation."""
    resource = TagChange("g", "asg", "asg-g", RES + "ephemeral-storage", "20Gi", None)
    label = TagChange("g", "eks-nodegroup", ARN, LABEL + "team", "new", "old")
    assert resource.explain() == (
        f"node group g: tag {RES}ephemeral-storage=20Gi on asg asg-g (now missing): the actual view "
        "offers 20Gi and cluster-autoscaler's template must say so to scale up from zero for pods "
        f"that request it; {CACHE_NOTE}"
    )
    assert label.explain() == (
        f"node group g: tag {LABEL}team=new on eks-nodegroup {ARN} (now 'old'): the group's live "
        "nodes carry it and cluster-autoscaler's template must say so to scale up from zero for pods "
        f"that select or tolerate it; {CACHE_NOTE}"
    )
    assert label.to_json() == {"nodeGroup": "g", "key": LABEL + "team", "value": "new"}


def client(service: str) -> Any:
    return boto3.client(
        service, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )


def test_apply_writes_each_change_on_its_target_and_reports_the_refused_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An ASG change is CreateOrUpdateTags (not propagated at launch), a managed group's is EKS
    TagResource on the node group's ARN, each with its whole parameters (botocore's Stubber answers
    a real boto3 client); each change made is noted with its explanation; a refused write is
    returned with its reason (the operation, code and message), logged as a warning and noted
    nowhere, and the next change is still written."""
    clients = AwsClients(autoscaling=client("autoscaling"), ec2=None, eks=client("eks"))
    on_asg = TagChange("a", "asg", "asg-a", RES + "ephemeral-storage", "20Gi", None)
    refused = TagChange("b", "asg", "asg-b", RES + "ephemeral-storage", "20Gi", "5Gi")
    on_ng = TagChange("m", "eks-nodegroup", ARN, RES + "vpc.amazonaws.com/pod-eni", "9", None)
    denied = TagChange("n", "eks-nodegroup", ARN, LABEL + "team", "x", None)
    noted: list[tuple[TagChange, str]] = []
    with Stubber(clients.autoscaling) as asg, Stubber(clients.eks) as eks:
        tags = {"ResourceType": "auto-scaling-group", "Key": RES + "ephemeral-storage", "Value": "20Gi"}
        asg.add_response(
            "create_or_update_tags",
            {},
            {"Tags": [{"ResourceId": "asg-a", **tags, "PropagateAtLaunch": False}]},
        )
        asg.add_client_error("create_or_update_tags", "ValidationError", "no such group")
        eks.add_response(
            "tag_resource", {}, {"resourceArn": ARN, "tags": {RES + "vpc.amazonaws.com/pod-eni": "9"}}
        )
        eks.add_client_error("tag_resource", "AccessDeniedException", "not allowed")
        with caplog.at_level(logging.INFO, logger="controller.tagsync"):
            failed = apply_tag_sync(
                clients, [on_asg, refused, on_ng, denied], lambda c, m: noted.append((c, m))
            )
        asg.assert_no_pending_responses()
        eks.assert_no_pending_responses()
    assert failed == [
        (refused, "CreateOrUpdateTags: ValidationError: no such group"),
        (
            denied,
            "TagResource: AccessDeniedException (the controller's IAM role lacks this permission): "
            "not allowed",
        ),
    ]
    assert noted == [(on_asg, "wrote " + on_asg.explain()), (on_ng, "wrote " + on_ng.explain())]
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "wrote " + on_asg.explain()),
        (logging.WARNING, "node group b: tag " + RES + "ephemeral-storage not written: " + failed[0][1]),
        (logging.INFO, "wrote " + on_ng.explain()),
        (logging.WARNING, "node group n: tag " + LABEL + "team not written: " + failed[1][1]),
    ]


def test_plan_mode_logs_each_change_with_how_to_write_it(caplog: pytest.LogCaptureFixture) -> None:
    """`--sync-autoscaler-tags=plan` logs one whole line per change, at INFO, saying how to apply."""
    changes = [
        TagChange("a", "asg", "asg-a", RES + "ephemeral-storage", "20Gi", None),
        TagChange("b", "asg", "asg-b", LABEL + "team", "x", "y"),
    ]
    with caplog.at_level(logging.INFO, logger="controller.tagsync"):
        log_plan(changes)
    head = "plan (use --sync-autoscaler-tags=apply to write): node group"
    tail = "cluster-autoscaler's template must say so to scale up from zero for pods that"
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.INFO,
            f"{head} a: tag {RES}ephemeral-storage=20Gi on asg asg-a (now missing): the actual view "
            f"offers 20Gi and {tail} request it; {CACHE_NOTE}",
        ),
        (
            logging.INFO,
            f"{head} b: tag {LABEL}team=x on asg asg-b (now 'y'): the group's live nodes carry it and "
            f"{tail} select or tolerate it; {CACHE_NOTE}",
        ),
    ]
