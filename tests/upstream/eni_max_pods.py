"""Max pods per instance type, written from the VPC CNI's table.

Source: aws/amazon-vpc-cni-k8s `misc/eni-max-pods.txt` at commit
b52188387f2e2f10bf289ace929d6a63b176a4fa (last changed by 6152e01c83bb, 2026-08-11), read
2026-12-01. The file is written by `scripts/gen_vpc_ip_limits.go` (printPodLimit on the ENI limit
describeInstanceTypes takes: the default network card's MaximumNetworkInterfaces when a type has
several cards). The multi-card types here are the ones where counting every card would be wrong
(p4d.24xlarge: 60 ENIs on 4 cards, 15 on the default one: 737, not 2942).
"""

from __future__ import annotations

# type: max pods, as the file lists it
ENI_MAX_PODS: dict[str, int] = {
    # one network card
    "a1.medium": 8,
    "c5.18xlarge": 737,
    "c6g.medium": 8,
    "c7gn.16xlarge": 737,
    "g4ad.xlarge": 8,
    "g5.48xlarge": 345,
    "i4i.large": 29,
    "m5.24xlarge": 737,
    "m5.large": 29,
    "m5.metal": 737,
    "m5.xlarge": 58,
    "mac2.metal": 234,
    "t1.micro": 4,
    "t2.medium": 17,
    "t3.large": 35,
    "x2idn.metal": 737,
    # several network cards: the default card only
    "c6in.32xlarge": 394,
    "dl1.24xlarge": 737,
    "m6idn.32xlarge": 394,
    "p4d.24xlarge": 737,
    "p4de.24xlarge": 737,
    "p5.48xlarge": 100,
    "p5en.48xlarge": 198,
    "trn1.32xlarge": 247,
    "trn1n.32xlarge": 247,
}

# Types in the sample above with more than one network card (from the same upstream data:
# aws/amazon-vpc-cni-k8s pkg/vpc/vpc_ip_resource_limit.go, NetworkCards).
SEVERAL_NETWORK_CARDS = frozenset(
    {
        "c6in.32xlarge",
        "dl1.24xlarge",
        "m6idn.32xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5en.48xlarge",
        "trn1.32xlarge",
        "trn1n.32xlarge",
    }
)
