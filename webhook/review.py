"""What both admission handlers share: the webhook's configuration, the verdict a handler returns,
and the exemptions that skip a request before any handler looks at it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from capacity.defaults import NAMESPACE
from capacity.names import IGNORE_LABEL, MODE_LABEL
from capacity.placement import Abstention

MODES = ("enforce", "warn", "audit")
# `isinstance(x, MAPPINGS)` answers as `isinstance(x, Mapping)`, but a dict (all a decoded review
# holds) is recognised at once, without Mapping's instance check (a Python-level call of the ABC)
MAPPINGS = (dict, Mapping)
FAILURE_POLICIES = ("ignore", "fail")
# A review carries object and oldObject, each up to the apiserver's 3 MiB request body limit.
MAX_BODY_BYTES = 7 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WebhookOptions:
    """How the webhook answers.

    mode: enforce denies, warn allows with warnings, audit allows and only logs (the namespace label
    `fitguard.io/mode` overrides it per namespace). failure_policy: what an internal error answers,
    `ignore` (allow, like the apiserver's failurePolicy Ignore) or `fail` (deny).
    """

    mode: str = "enforce"
    failure_policy: str = "ignore"
    eni_guard: bool = True
    own_namespace: str = NAMESPACE
    exempt_namespaces: frozenset[str] = frozenset({"kube-system"})
    # Whether an object's own fitguard.io/ignore=true label exempts it. Off: opting out is the
    # cluster administrator's decision, taken on namespaces (as Gatekeeper honours its ignore
    # label on namespaces only), not every pod author's.
    allow_object_ignore: bool = False
    max_body_bytes: int = MAX_BODY_BYTES
    # Whether the status port serves GET /snapshotz (`--snapshotz`). Off: the snapshot holds every
    # policy's security group IDs and selectors, every template and this configuration, and the
    # status port has no authentication; anyone who reaches it would read them. Off, it is a 404.
    snapshotz: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.failure_policy not in FAILURE_POLICIES:
            raise ValueError(f"failure policy must be one of {', '.join(FAILURE_POLICIES)}")


@dataclass(slots=True)
class Verdict:
    """A handler's answer; `code`/`reason` become the response's status when set."""

    allowed: bool = True
    patch: list[dict[str, Any]] | None = None
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    code: int | None = None
    reason: str = ""
    # A finding of mode warn or audit: allowed, but no node group could serve the object. The app
    # logs it, counts it by `finding_mode` and records it as an event (never for a dry run).
    finding: str = ""
    finding_mode: str = ""
    # Admitted without a verdict, and why (capacity/placement.py): the response's audit annotation.
    abstained: Abstention | None = None

    @classmethod
    def deny(cls, message: str, code: int = 403, reason: str = "Forbidden") -> Verdict:
        return cls(allowed=False, message=message, code=code, reason=reason)


class NamespaceLabels(Protocol):
    def namespace_labels(self, namespace: str) -> Mapping[str, str]: ...


def request_namespace(request: Mapping[str, Any]) -> str:
    """The namespace of the object under review: the request's, or the object's own."""
    namespace = request.get("namespace")
    if isinstance(namespace, str) and namespace:
        return namespace
    obj = request.get("object")
    meta = obj.get("metadata") if isinstance(obj, MAPPINGS) else None
    value = meta.get("namespace") if isinstance(meta, MAPPINGS) else None
    return value if isinstance(value, str) else ""


def exemption(request: Mapping[str, Any], cluster: NamespaceLabels, config: WebhookOptions) -> str | None:
    """Why this request is skipped, or None. Checked in code as well as in the webhook
    configuration's selectors, so a misconfigured selector cannot make the webhook block itself.
    An object's own ignore label counts only with `allow_object_ignore`."""
    namespace = request_namespace(request)
    if namespace in config.exempt_namespaces or namespace == config.own_namespace:
        return f"namespace {namespace} is exempt"
    obj = request.get("object")
    meta = obj.get("metadata") if isinstance(obj, MAPPINGS) else None
    labels = meta.get("labels") if isinstance(meta, MAPPINGS) else None
    if config.allow_object_ignore and isinstance(labels, MAPPINGS) and labels.get(IGNORE_LABEL) == "true":
        return f"object has {IGNORE_LABEL}=true"
    if namespace and cluster.namespace_labels(namespace).get(IGNORE_LABEL) == "true":
        return f"namespace {namespace} has {IGNORE_LABEL}=true"
    return None


def effective_mode(namespace: str, cluster: NamespaceLabels, config: WebhookOptions) -> str:
    """The namespace label `fitguard.io/mode` when it names a mode, else the configured one."""
    mode = cluster.namespace_labels(namespace).get(MODE_LABEL) if namespace else None
    return mode if mode in MODES else config.mode


def soften(verdict: Verdict, mode: str) -> Verdict:
    """A denial under warn becomes an allowance with the message as a warning; under audit an
    allowance with nothing for the user (the caller logs it). Patches are kept either way."""
    if verdict.allowed or mode == "enforce":
        return verdict
    warnings = [*verdict.warnings, verdict.message] if mode == "warn" else list(verdict.warnings)
    return Verdict(allowed=True, patch=verdict.patch, message="", warnings=warnings)
