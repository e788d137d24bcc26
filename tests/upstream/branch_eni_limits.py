"""Branch ENI limits per instance type, written from the VPC resource controller's table.

Source: aws/amazon-vpc-resource-controller-k8s `pkg/aws/vpc/limits.go`, `var Limits`, at commit
b8d425119bdba371202882b808f202c6073a46cc (file generated 2026-03-20T18:06:29Z), read 2026-12-01.
Each value is (BranchInterface, IsTrunkingCompatible) of the type's entry. The controller decides
with exactly these (`pkg/provider/branch/provider.go`: supported = found && IsTrunkingCompatible;
capacity = BranchInterface).
"""

from __future__ import annotations

RESOURCE_CONTROLLER: dict[str, tuple[int, bool]] = {
    "a1.medium": (10, True),
    "c3.2xlarge": (0, False),
    "c5.18xlarge": (107, True),
    "c5.large": (9, True),
    "c5a.16xlarge": (107, True),
    "c5n.large": (9, True),
    "c5n.xlarge": (18, True),
    "c6g.medium": (4, True),
    "c6i.24xlarge": (107, True),
    "c6in.2xlarge": (38, True),
    "c6in.32xlarge": (106, True),
    "c7g.2xlarge": (38, True),
    "c7gn.16xlarge": (107, True),
    "c7i-flex.large": (3, True),
    "c8gd.12xlarge": (54, True),
    "c8gn.2xlarge": (38, True),
    "d3en.12xlarge": (119, True),
    "d3en.4xlarge": (118, True),
    "dl1.24xlarge": (62, True),
    "f2.12xlarge": (114, True),
    "g4ad.xlarge": (12, True),
    "g5.2xlarge": (17, True),
    "i3.large": (0, False),
    "i3.metal": (120, True),
    "i4g.8xlarge": (54, True),
    "i4i.large": (0, False),
    "i8ge.48xlarge": (98, True),
    "im4gn.8xlarge": (54, True),
    "im4gn.large": (9, True),
    "m4.large": (0, False),
    "m5.12xlarge": (54, True),
    "m5.24xlarge": (107, True),
    "m5.2xlarge": (38, True),
    "m5.large": (9, True),
    "m5.metal": (120, True),
    "m5.xlarge": (18, True),
    "m5n.2xlarge": (38, True),
    "m5n.8xlarge": (54, True),
    "m6gd.4xlarge": (54, True),
    "m6i.large": (9, True),
    "m6idn.4xlarge": (54, True),
    "m6idn.large": (9, True),
    "m7g.medium": (4, True),
    "m7i.xlarge": (18, True),
    "m8g.2xlarge": (38, True),
    "m8gd.4xlarge": (54, True),
    "m8id.16xlarge": (106, True),
    "mac2.metal": (6, True),
    "p4d.24xlarge": (62, True),
    "p5.48xlarge": (120, True),
    "r5.large": (9, True),
    "r5.xlarge": (18, True),
    "r5b.4xlarge": (54, True),
    "r5d.xlarge": (18, True),
    "r6in.16xlarge": (107, True),
    "r7a.48xlarge": (107, True),
    "r7g.12xlarge": (54, True),
    "r8gb.48xlarge": (98, True),
    "r8i-flex.8xlarge": (52, True),
    "r8id.2xlarge": (38, True),
    "t2.medium": (0, False),
    "t3.large": (0, False),
    "t3.medium": (0, False),
    "t4g.small": (0, False),
    "trn1.32xlarge": (82, True),
    "x2gd.metal": (107, True),
    "x2idn.metal": (107, True),
    "x8g.8xlarge": (54, True),
    "x8g.metal-24xl": (107, True),
    "x8i.64xlarge": (98, True),
}

# A later copy of the same file: aws/karpenter-provider-aws
# `pkg/providers/instancetype/zz_generated.vpclimits.go` at commit
# 1d927085dd81a9df9301e613f371dac5b4d16bfe (generated 2026-08-06T04:02:42Z; Karpenter's
# hack/code/vpc_limits_gen downloads it from the controller's default branch). Types the
# controller's table above does not list at all: (BranchInterface, IsTrunkingCompatible).
LATER_COPY_ONLY: dict[str, tuple[int, bool]] = {
    "c7g-flex.large": (3, True),
    "hpc7g.16xlarge": (118, True),
    "m8g-flex.large": (3, True),
}

# Where the two disagree on a type both list: (controller's table, later copy).
DISAGREEMENTS: dict[str, tuple[tuple[int, bool], tuple[int, bool]]] = {
    "i4i.large": ((0, False), (9, True)),
}
