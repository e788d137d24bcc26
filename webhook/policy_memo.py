"""The SecurityGroupPolicy match of a pod, remembered: the replicas of a workload (and every pod of
a namespace that has no policy) match the same policies, and matching compiles nothing but still
runs every selector of every policy of the namespace per pod.

The answer depends on the namespace's policies, the pod's labels and its ServiceAccount's labels
(capacity/sgp.py, upstream filterPodSecurityGroups) and on nothing else: the key is the namespace,
the pod's labels, the ServiceAccount's labels (its name only decides whether it exists, which the
caller checks first) and the version of the policies store (a changed, added or deleted policy
anywhere starts afresh). Bounded: the least recently used key goes first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from capacity.sgp import SecurityGroupPolicy, matching_groups, matching_policies
from webhook.memo import RefusalMemo

Policies = Callable[[], list[SecurityGroupPolicy]]
# (namespace, the pod's labels, its ServiceAccount's labels)
MatchKey = tuple[str, Mapping[str, str], Mapping[str, str]]


class PolicyMatchMemo:
    """`matching_groups` and the names of the `matching_policies` of a pod, per key above."""

    def __init__(self, size: int = 4096) -> None:
        self._memo = RefusalMemo(size)

    def groups(
        self,
        key: MatchKey,
        generation: object,
        policies: Policies,
    ) -> list[str]:
        """The security group ids the pod gets. `key`: (namespace, pod labels, ServiceAccount
        labels); `policies` lists the namespace's policies (called on a miss only,
        after `generation` was read, so an answer is never kept under a newer generation than the
        policies it was computed from)."""
        _, labels, sa_labels = key
        found = self._memo.remember(
            ("groups", *_frozen(key)),
            generation,
            lambda: tuple(matching_groups(policies(), labels, sa_labels)),
        )
        return list(found)

    def policy_names(
        self,
        key: MatchKey,
        generation: object,
        policies: Policies,
    ) -> list[str]:
        """`namespace/name` of each matching policy, in the policies' order."""
        _, labels, sa_labels = key

        def names() -> tuple[str, ...]:
            return tuple(f"{p.namespace}/{p.name}" for p in matching_policies(policies(), labels, sa_labels))

        return list(self._memo.remember(("names", *_frozen(key)), generation, names))


def _frozen(key: MatchKey) -> tuple[object, ...]:
    namespace, labels, sa_labels = key
    return namespace, tuple(labels.items()), tuple(sa_labels.items())
