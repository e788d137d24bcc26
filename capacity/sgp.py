"""SecurityGroupPolicy matching, as the VPC resource controller does it (docs/design.md failure 3).

Upstream: aws/amazon-vpc-resource-controller-k8s pkg/utils/helper.go (filterPodSecurityGroups):
- a policy with neither podSelector nor serviceAccountSelector, or with no group ids, is ignored;
- every selector that is set must match (pod labels; the labels of the pod's ServiceAccount), an
  empty selector matches everything, a selector that metav1.LabelSelectorAsSelector rejects (an
  unknown operator, In/NotIn without values, Exists/DoesNotExist with values, an invalid label key
  or value: capacity/selectors.py) matches nothing, so the policy is skipped for the pod;
- the group ids of every matching policy are concatenated, duplicates dropped in first-seen order.
Only policies of the pod's own namespace are considered: callers pass those.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capacity.resources import POD_ENI
from capacity.selectors import Labels, Predicate, SelectorError, label_selector

API_VERSION = "vpcresources.k8s.aws/v1beta1"


@dataclass(frozen=True, slots=True)
class SecurityGroupPolicy:
    """A compiled policy; `None` selectors were not set, `error` says why a selector never matches."""

    namespace: str
    name: str
    pod_selector: Predicate | None
    service_account_selector: Predicate | None
    group_ids: tuple[str, ...]
    spec: Mapping[str, Any]  # as written, for /snapshotz and messages
    error: str = ""

    @property
    def valid(self) -> bool:
        """Upstream skips a policy without any selector or without group ids."""
        has_selector = self.pod_selector is not None or self.service_account_selector is not None
        return has_selector and bool(self.group_ids)

    def matches(self, pod_labels: Labels, sa_labels: Labels) -> bool:
        if not self.valid:
            return False
        if self.pod_selector is not None and not self.pod_selector(pod_labels):
            return False
        return self.service_account_selector is None or self.service_account_selector(sa_labels)

    def to_object(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "valid": self.valid,
            "groupIds": list(self.group_ids),
            "spec": dict(self.spec),
        }
        if self.error:
            obj["error"] = self.error
        return obj


def _never(labels: Labels) -> bool:
    return False


def _selector(raw: object, field: str, errors: list[str]) -> Predicate | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        errors.append(f"{field}: expected a map")
        return _never
    try:
        return label_selector(raw, field)
    except SelectorError as err:
        # upstream logs LabelSelectorAsSelector's error and treats the selector as not matching
        errors.append(str(err))
        return _never


def compile_policy(obj: Mapping[str, Any]) -> SecurityGroupPolicy:
    """A SecurityGroupPolicy object as the API returns it. Raises TypeError when it is not one."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        raise TypeError("metadata and spec must be maps")
    errors: list[str] = []
    pod_selector = _selector(spec.get("podSelector"), "spec.podSelector", errors)
    sa_selector = _selector(spec.get("serviceAccountSelector"), "spec.serviceAccountSelector", errors)
    groups = spec.get("securityGroups") or {}
    raw_ids = groups.get("groupIds") if isinstance(groups, Mapping) else None
    if raw_ids is not None and not isinstance(raw_ids, list):
        errors.append("spec.securityGroups.groupIds: expected a list")
        raw_ids = None
    return SecurityGroupPolicy(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        pod_selector=pod_selector,
        service_account_selector=sa_selector,
        group_ids=tuple(str(g) for g in raw_ids or ()),
        spec=spec,
        error="; ".join(errors),
    )


def matching_groups(
    policies: Iterable[SecurityGroupPolicy], pod_labels: Labels, sa_labels: Labels
) -> list[str]:
    """The security group ids a pod gets: every matching policy ORed, de-duplicated in order."""
    seen: dict[str, None] = {}
    for policy in matching_policies(policies, pod_labels, sa_labels):
        for group in policy.group_ids:
            seen.setdefault(group, None)
    return list(seen)


def matching_policies(
    policies: Iterable[SecurityGroupPolicy], pod_labels: Labels, sa_labels: Labels
) -> list[SecurityGroupPolicy]:
    """The policies that match a pod, in the order given: what a denial names when the pod-eni
    request it refuses was injected, not written."""
    return [policy for policy in policies if policy.matches(pod_labels, sa_labels)]


def pod_has_eni_request(pod: Mapping[str, Any] | None) -> bool:
    """Upstream utils.PodHasENIRequest: any container names pod-eni in its requests."""
    if not isinstance(pod, Mapping):
        return False
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    if not isinstance(containers, list):
        return False
    for container in containers:
        resources = container.get("resources") if isinstance(container, Mapping) else None
        requests = resources.get("requests") if isinstance(resources, Mapping) else None
        if isinstance(requests, Mapping) and POD_ENI in requests:
            return True
    return False
