"""Which taints of a node survive into cluster-autoscaler's template of it.

Restated from sigs.k8s.io/cluster-autoscaler pkg/utils/taints/taints.go (SanitizeTaints,
NodeConditionTaints, NewTaintConfig, IsStartupTaint, IsStatusTaint), which
pkg/simulator/node_info_utils.go (createSanitizedNode) applies to every template: the one built from
a live node and the one built from tags (SanitizedTemplateNodeInfoFromNodeGroup) alike.

Dropped: cluster-autoscaler's own deletion marks, the node-condition taints (a fixed list, not every
`node.kubernetes.io/` key: `node.kubernetes.io/out-of-service` is kept), and the startup and status
taints (three built-in prefixes, plus keys and prefixes given by its flags). Everything else is kept.

The flags are read from the running cluster-autoscaler's command line (`taint_options_from_argv`),
as pkg/config/flags/flags.go `AutoscalingFlags.AddFlags` and `Options` declare and merge them:
`--startup-taint`, `--ignore-taint` (deprecated, merged into the startup taints),
`--startup-taint-prefix` and `--status-taint`, each a pflag string array (repeated, never split at
commas). With no cluster-autoscaler found, only what every cluster-autoscaler drops is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from capacity.autoscaler_flags import flag_values
from capacity.taints import Taint

TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"  # ToBeDeletedTaint
DELETION_CANDIDATE = "DeletionCandidateOfClusterAutoscaler"  # DeletionCandidateTaintKey
IGNORE_TAINT_PREFIX = "ignore-taint.cluster-autoscaler.kubernetes.io/"
STARTUP_TAINT_PREFIX = "startup-taint.cluster-autoscaler.kubernetes.io/"
STATUS_TAINT_PREFIX = "status-taint.cluster-autoscaler.kubernetes.io/"

# NodeConditionTaints: transient node states (k8s.io/api core/v1 taint keys, the cloud provider's
# two, GKE's termination handler and AWS's NodeWithImpairedVolumes).
NODE_CONDITION_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/pid-pressure",
        "node.cloudprovider.kubernetes.io/uninitialized",
        "node.cloudprovider.kubernetes.io/shutdown",
        "cloud.google.com/impending-node-termination",
        "NodeWithImpairedVolumes",
    }
)


@dataclass(frozen=True, slots=True)
class TaintOptions:
    """NewTaintConfig: `--startup-taint`, `--startup-taint-prefix` and `--status-taint` on top of the
    built-in prefixes (ignore-taint and startup-taint are startup prefixes; status-taint is status)."""

    startup_taints: frozenset[str] = frozenset()
    startup_taint_prefixes: tuple[str, ...] = ()
    status_taints: frozenset[str] = frozenset()

    def is_startup_taint(self, key: str) -> bool:
        prefixes = (IGNORE_TAINT_PREFIX, STARTUP_TAINT_PREFIX, *self.startup_taint_prefixes)
        return key in self.startup_taints or key.startswith(prefixes)

    def is_status_taint(self, key: str) -> bool:
        return key in self.status_taints or key.startswith(STATUS_TAINT_PREFIX)


DEFAULT_TAINT_CONFIG = TaintOptions()

STARTUP_TAINT_FLAG = "startup-taint"
IGNORE_TAINT_FLAG = "ignore-taint"
STARTUP_TAINT_PREFIX_FLAG = "startup-taint-prefix"
STATUS_TAINT_FLAG = "status-taint"
TAINT_FLAGS = (STARTUP_TAINT_FLAG, IGNORE_TAINT_FLAG, STARTUP_TAINT_PREFIX_FLAG, STATUS_TAINT_FLAG)


def taint_options_from_argv(argv: Sequence[str]) -> TaintOptions:
    """The taint options of a cluster-autoscaler run with this command line: `AutoscalingFlags.Options`
    sets StartupTaints to the `--ignore-taint` values followed by the `--startup-taint` ones, and
    StartupTaintPrefixes and StatusTaints to their flags' values; `NewTaintConfig` adds the built-in
    prefixes. An empty value is kept as given (an empty prefix makes every taint a startup taint,
    as Go's strings.HasPrefix says)."""
    given = flag_values(argv, TAINT_FLAGS)
    return TaintOptions(
        startup_taints=frozenset((*given[IGNORE_TAINT_FLAG], *given[STARTUP_TAINT_FLAG])),
        startup_taint_prefixes=tuple(given[STARTUP_TAINT_PREFIX_FLAG]),
        status_taints=frozenset(given[STATUS_TAINT_FLAG]),
    )


def is_dropped(taint: Taint, config: TaintOptions = DEFAULT_TAINT_CONFIG) -> bool:
    """True when SanitizeTaints leaves the taint out of a template."""
    return (
        taint.key in (TO_BE_DELETED, DELETION_CANDIDATE)
        or taint.key in NODE_CONDITION_TAINTS
        or config.is_startup_taint(taint.key)
        or config.is_status_taint(taint.key)
    )


def sanitize_taints(
    taints: Iterable[Taint], config: TaintOptions = DEFAULT_TAINT_CONFIG
) -> tuple[Taint, ...]:
    """SanitizeTaints: the taints a template keeps, in their order."""
    return tuple(t for t in taints if not is_dropped(t, config))
