"""Each AMI family's defaults that change capacity, restated from aws/karpenter-provider-aws
`pkg/providers/amifamily` (`resolver.go`: `GetAMIFamily`, `DefaultEBS`, `DefaultFamily.FeatureFlags`;
`al2.go`, `al2023.go`, `bottlerocket.go`, `windows.go`, `custom.go`: `DefaultBlockDeviceMappings`,
`EphemeralBlockDevice`, `FeatureFlags`) and `pkg/apis/v1/ec2nodeclass.go` (`AMIFamily`, `Alias`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

GI = 2**30
# resolver.go DefaultEBS: gp3, encrypted, 20Gi; the size is all capacity reads of it
DEFAULT_EBS_BYTES = 20 * GI


class AmiFamily(enum.Enum):
    AL2 = "AL2"
    AL2023 = "AL2023"
    BOTTLEROCKET = "Bottlerocket"
    WINDOWS2019 = "Windows2019"
    WINDOWS2022 = "Windows2022"
    WINDOWS2025 = "Windows2025"
    CUSTOM = "Custom"

    @property
    def is_windows(self) -> bool:
        return self in (AmiFamily.WINDOWS2019, AmiFamily.WINDOWS2022, AmiFamily.WINDOWS2025)


@dataclass(frozen=True, slots=True)
class FeatureFlags:
    """resolver.go `FeatureFlags`: the three that change capacity."""

    uses_eni_limited_memory_overhead: bool  # kube-reserved memory from ENI-limited pods, not max pods
    pods_per_core_enabled: bool
    supports_eni_limited_pod_density: bool  # max pods from ENIs; otherwise 110


@dataclass(frozen=True, slots=True)
class FamilyDefaults:
    flags: FeatureFlags
    ephemeral_device: str | None  # EphemeralBlockDevice: the volume pods' ephemeral storage is on
    default_volumes: tuple[tuple[str, int], ...]  # DefaultBlockDeviceMappings: (device name, bytes)

    def default_ephemeral_bytes(self) -> int:
        """The ephemeral device's default size; DefaultEBS when the family defines none (Custom)."""
        for device, size in self.default_volumes:
            if device == self.ephemeral_device:
                return size
        return DEFAULT_EBS_BYTES


_DEFAULT_FLAGS = FeatureFlags(True, True, True)  # DefaultFamily, embedded by AL2, AL2023 and Custom
_XVDA = ("/dev/xvda", DEFAULT_EBS_BYTES)
_DEFAULTS = {
    AmiFamily.AL2: FamilyDefaults(_DEFAULT_FLAGS, "/dev/xvda", (_XVDA,)),
    AmiFamily.AL2023: FamilyDefaults(_DEFAULT_FLAGS, "/dev/xvda", (_XVDA,)),
    # a 4Gi OS volume and the 20Gi data volume pods write to
    AmiFamily.BOTTLEROCKET: FamilyDefaults(
        FeatureFlags(False, False, True),
        "/dev/xvdb",
        (("/dev/xvda", 4 * GI), ("/dev/xvdb", DEFAULT_EBS_BYTES)),
    ),
    AmiFamily.CUSTOM: FamilyDefaults(_DEFAULT_FLAGS, None, ()),
}
_WINDOWS = FamilyDefaults(FeatureFlags(False, True, False), "/dev/sda1", (("/dev/sda1", 50 * GI),))


def defaults(family: AmiFamily) -> FamilyDefaults:
    return _WINDOWS if family.is_windows else _DEFAULTS[family]


# ec2nodeclass.go amiFamilyFromAlias: the alias families, matched lower-cased
_ALIAS_FAMILIES = {f.value.lower(): f for f in AmiFamily if f is not AmiFamily.CUSTOM}


class AmiFamilyError(ValueError):
    """An amiFamily or alias Karpenter's validation would refuse."""


def family_of(ami_family: str | None, aliases: tuple[str, ...] = ()) -> AmiFamily:
    """EC2NodeClass `AMIFamily()`: spec.amiFamily when set, else the first alias term's family.

    `GetAMIFamily` falls back to AL2 for a name it does not know; the CRD refuses such a name, so
    an unknown one here is an error rather than a silent AL2 (it would change every number).
    """
    if ami_family is not None:
        for family in AmiFamily:
            if family.value == ami_family:
                return family
        raise AmiFamilyError(f"amiFamily {ami_family!r} is not one of {[f.value for f in AmiFamily]}")
    for alias in aliases:
        parts = alias.split("@")
        if len(parts) != 2:
            raise AmiFamilyError(f"alias {alias!r} is not family@version")
        if parts[0] not in _ALIAS_FAMILIES:
            raise AmiFamilyError(f"alias family {parts[0]!r} is not one of {sorted(_ALIAS_FAMILIES)}")
        return _ALIAS_FAMILIES[parts[0]]
    # ec2nodeclass.go: unreachable under validation (one of the two is required); upstream says Custom
    return AmiFamily.CUSTOM
