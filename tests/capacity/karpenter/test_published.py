"""A NodePool's NodeGroupTemplate (`spec.karpenter`) survives the round trip the webhook depends on:
the object the controller publishes reads back (NodeGroupTemplate.from_object) to a record that
rebuilds the same KarpenterTemplate and judges a pod as the controller's own would; a malformed
section is refused naming its field, never read as something else."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.karpenter.fit import judge
from capacity.karpenter.nodeclass import KarpenterOptions
from capacity.karpenter.published import PROVIDER, published
from capacity.template import NodeGroupTemplate

POOL: dict[str, Any] = {
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                "requirements": [
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["m5.large", "t3.large"],
                    },
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "Exists", "minValues": 1},
                ],
                "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
            }
        }
    },
}
NODECLASS = {"spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r"}}
SETTINGS = KarpenterOptions(reserved_enis=1, vm_memory_overhead_percent=0.1)


def overhead(offer: Any) -> dict[str, int]:
    """A DaemonSet that runs only on m5 nodes (a per-type overhead), and one everywhere."""
    return {"cpu": 150, "pods": 2000} if offer.name == "m5.large" else {"cpu": 50, "pods": 1000}


def test_the_published_section_reads_back_to_the_same_judgement() -> None:
    """to_object then from_object: the same offers, overheads and settings; the rebuilt template
    judges pods at the m5.large boundary exactly as the controller's."""
    record, built = published(POOL, NODECLASS, SETTINGS, {"m5.large": 7_000 * 2**20 * 1000}, overhead)
    template = NodeGroupTemplate("general", provider=PROVIDER, karpenter=record)
    back = NodeGroupTemplate.from_object(template.to_object()).karpenter
    assert back is not None
    assert back.settings == SETTINGS
    assert (
        back.offers == record.offers
        and back.overheads == record.overheads
        and back.overhead == record.overhead
    )
    rebuilt = back.rebuild()
    assert [o.allocatable for o in rebuilt.offers] == [o.allocatable for o in built.offers]
    m5, t3 = dict(record.offers)["m5.large"], dict(record.offers)["t3.large"]
    assert m5["cpu"] == t3["cpu"]  # two vCPUs each
    spec = {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}
    # the m5's DaemonSets take 150m, the t3's 50m: up to cpu - 150 both, up to cpu - 50 the t3 alone
    cases = (
        (m5["cpu"] - 150, ("m5.large", "t3.large")),
        (m5["cpu"] - 50, ("t3.large",)),
        (m5["cpu"] - 49, ()),
    )
    for cpu, types in cases:
        ours = judge(rebuilt, spec, {"cpu": cpu}, back.overhead_of)
        theirs = judge(built, spec, {"cpu": cpu}, overhead)
        assert ours == theirs
        assert (ours.fits, sorted(ours.instance_types)) == (bool(types), list(types))


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ("nope", "spec.karpenter: expected a map"),
        ({"settings": {"reservedENIs": "2"}}, "spec.karpenter.settings.reservedENIs: expected an integer"),
        ({"instanceTypes": {"m5.large": {}}}, "spec.karpenter.instanceTypes: expected a list"),
        ({"template": []}, "spec.karpenter.template: expected a map"),
        (
            {"instanceTypes": [{"name": "m5.large", "allocatable": {}, "live": "small"}]},
            "spec.karpenter.instanceTypes[0].live: expected a map",
        ),
        (
            {"instanceTypes": [{"name": "m5.large", "allocatable": {}, "live": {"allocatable": {}}}]},
            "spec.karpenter.instanceTypes[0].live.allocatable.ephemeral-storage: missing",
        ),
        (
            {
                "instanceTypes": [
                    {
                        "name": "m5.large",
                        "allocatable": {},
                        "live": {"allocatable": {"ephemeral-storage": "lots"}},
                    }
                ]
            },
            "spec.karpenter.instanceTypes[0].live.allocatable",
        ),
        (
            {
                "instanceTypes": [
                    {
                        "name": "m5.large",
                        "allocatable": {},
                        "live": {"allocatable": {"ephemeral-storage": "10Gi"}, "nodes": True},
                    }
                ]
            },
            "spec.karpenter.instanceTypes[0].live.nodes: expected an integer",
        ),
    ],
)
def test_a_malformed_section_is_refused_naming_the_field(section: object, says: str) -> None:
    obj = {"metadata": {"name": "general"}, "spec": {"provider": PROVIDER, "karpenter": section}}
    with pytest.raises((TypeError, ValueError), match=says.replace("[", r"\[")):
        NodeGroupTemplate.from_object(obj)
