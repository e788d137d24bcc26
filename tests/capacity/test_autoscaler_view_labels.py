"""cluster-autoscaler's label precedence in the template node of an ASG at zero, pinned in the
repository (not only by the shared conformance cases, which a clone may lack).

Upstream: cluster-autoscaler/cloudprovider/aws/aws_manager.go, (*AwsManager).buildNodeFromTemplate
joins buildGenericLabels first and extractLabelsFromAsg (the `node-template/label/` and `eks:` tags)
after it with cloudprovider.JoinStringMaps, whose later map wins: a tag overrides a generic label of
the same name. The managed node group's labels from DescribeNodegroup are joined last
(joinNodeLabelsChoosingUserValuesOverAPIValues, whose API value wins despite its name)."""

from __future__ import annotations

from capacity import autoscaler_view as av

SHAPE = av.InstanceShape("m5.large", 2, 8192, 0, "amd64")
LABEL = av.LABEL_PREFIX


def test_a_label_tag_overrides_the_generic_label_of_the_same_name() -> None:
    """Tags naming arch, OS, instance type and zone replace the generic values; the other generic
    labels stay; the whole label set is compared."""
    tags = [
        (LABEL + "kubernetes.io/arch", "arm64"),
        (LABEL + "kubernetes.io/os", "windows"),
        (LABEL + "node.kubernetes.io/instance-type", "custom"),
        (LABEL + "topology.kubernetes.io/zone", "us-east-1z"),
        (LABEL + "team", "web"),
    ]
    view = av.build_autoscaler_view(SHAPE, tags, region="us-east-1", zone="us-east-1a", node_name="tmpl-1")
    assert view.labels == {
        "kubernetes.io/arch": "arm64",
        "kubernetes.io/os": "windows",
        "node.kubernetes.io/instance-type": "custom",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1z",
        "topology.ebs.csi.aws.com/zone": "us-east-1a",
        "kubernetes.io/hostname": "tmpl-1",
        "team": "web",
    }


def test_without_tags_the_generic_labels_are_the_whole_set() -> None:
    """No label tags: exactly the generic labels, from the instance type and the first zone."""
    view = av.build_autoscaler_view(SHAPE, [], region="eu-west-1", zone="eu-west-1b", node_name="n")
    assert view.labels == {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": "eu-west-1b",
        "topology.ebs.csi.aws.com/zone": "eu-west-1b",
        "kubernetes.io/hostname": "n",
    }


def test_the_managed_node_groups_labels_override_the_tags() -> None:
    """With both `eks:` tags, DescribeNodegroup's labels are joined last and win over a tag."""
    tags = [("eks:nodegroup-name", "ng"), ("eks:cluster-name", "c"), (LABEL + "team", "from-tag")]
    managed = av.ManagedNodegroupInfo(labels={"team": "from-eks", "tier": "a"})
    view = av.build_autoscaler_view(SHAPE, tags, region="r", zone="r1", node_name="n", managed=managed)
    assert view.labels == {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/region": "r",
        "topology.kubernetes.io/zone": "r1",
        "topology.ebs.csi.aws.com/zone": "r1",
        "kubernetes.io/hostname": "n",
        "nodegroup-name": "ng",
        "cluster-name": "c",
        "team": "from-eks",
        "tier": "a",
    }
