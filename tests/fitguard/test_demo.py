"""`fitguard demo` runs end to end on the bundled examples and tells the story it promises: the
zero-node trap denied with its fix, the pod mutated, the Deployment refused at apply time, the
blind scale-up planned, the tags synced and the same pod admitted, the held branch ENIs shown; the
Karpenter NodePool listed and named in each denial it cannot serve."""

import re

import pytest

from fitguard.cli import main


@pytest.mark.slow
def test_the_demo_tells_the_whole_story(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "ng-batch    aws-asg      m5.large                     0" in out
    # the demo's Karpenter NodePool: its row, and the denials it cannot serve either name it
    assert (
        "default     karpenter    c5.large,m5.large,m5.xlarge  0      -            "
        "nodepool, most of any type: cpu=3920m memory=13.8Gi ephemeral-storage=17Gi pod-eni=18"
    ) in out
    assert (
        "NodePool default: no allowed instance type offers enough ephemeral-storage (ephemeral-storage: "
        "needs 30Gi with the DaemonSets, the allowed types offer at most 17Gi): change EC2NodeClass "
        "spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    ) in out
    assert '"path": "/spec/containers/0/resources/requests/vpc.amazonaws.com~1pod-eni"' in out
    assert (
        "an m5.large node would offer 44Gi, but cluster-autoscaler sees none while the group has 0 nodes"
        in out
    )
    assert "Deployment video-transcode does not fit any node group" in out
    assert "t3.large supports no branch ENIs" in out
    # a plan is recorded as ScaleUpPlanned: cluster-autoscaler's TriggeredScaleUp means a scale-up made
    assert "ScaleUpPlanned (planned): [{ng-batch 0->1 (max: 10)}] for default/nightly-build-28f9x" in out
    assert "TriggeredScaleUp" not in out
    # the managed node group's tags are the plan a real cluster gets, not an error of the demo's making
    denials = re.compile(r'Error from server \(Forbidden\): admission webhook ("[a-z.]+" )?denied')
    assert "Error" not in denials.sub("", out)
    assert "NotFoundException" not in out
    assert (
        "plan ng-general: k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage=19136439364 "
        "(not written here: moto, the demo's local AWS, cannot tag EKS managed node groups; on EKS this "
        "is eks:TagResource on the node group)"
    ) in out
    assert "wrote ng-batch: k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage=44Gi" in out
    after_tags = out.split("5. fitguard syncs the autoscaler tags", 1)[1]
    assert "# Pod default/scratch-build\n  admitted" in after_tags
    assert "cluster-autoscaler can serve it with a node of ng-batch" in after_tags
    assert "the scheduler sees 3 free, but those 3 are held: none is free" in out
