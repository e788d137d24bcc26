"""What both admission handlers share (webhook/review.py): the configuration's checks, the
namespace of a request, the exemptions, the mode a namespace gets, and how a denial is softened."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from capacity.string_maps import string_map
from webhook.review import (
    MAX_BODY_BYTES,
    Verdict,
    WebhookOptions,
    effective_mode,
    exemption,
    request_namespace,
    soften,
)


class Namespaces:
    """Namespace labels by name, as the cluster view answers them (unknown: no labels)."""

    def __init__(self, **labels: dict[str, str]) -> None:
        self.labels = labels
        self.asked: list[str] = []

    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        self.asked.append(namespace)
        return self.labels.get(namespace, {})


def test_the_default_configuration() -> None:
    """Enforce, failure policy ignore, the guard on, fitguard-system and kube-system exempt, an
    object's own ignore label not honoured, 7 MiB bodies."""
    assert WebhookOptions() == WebhookOptions(
        mode="enforce",
        failure_policy="ignore",
        eni_guard=True,
        own_namespace="fitguard-system",
        exempt_namespaces=frozenset({"kube-system"}),
        allow_object_ignore=False,
        max_body_bytes=7 * 1024 * 1024,
    )
    assert MAX_BODY_BYTES == 7_340_032


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"mode": "block"}, "mode must be one of enforce, warn, audit, not 'block'"),
        ({"failure_policy": "deny"}, "failure policy must be one of ignore, fail"),
    ],
)
def test_a_bad_mode_or_failure_policy_is_refused_with_the_choices(
    config: dict[str, str], message: str
) -> None:
    """An unknown mode or failure policy is a ValueError naming the allowed values."""
    with pytest.raises(ValueError) as raised:
        WebhookOptions(**config)
    assert str(raised.value) == message


@pytest.mark.parametrize(("mode", "policy"), [("warn", "fail"), ("audit", "ignore"), ("enforce", "fail")])
def test_every_mode_and_failure_policy_is_accepted(mode: str, policy: str) -> None:
    """Each named mode and policy makes a configuration holding them."""
    config = WebhookOptions(mode=mode, failure_policy=policy)
    assert (config.mode, config.failure_policy) == (mode, policy)


def test_a_denial_is_forbidden_by_default() -> None:
    """Verdict.deny: not allowed, the message, 403 Forbidden, nothing else."""
    assert Verdict.deny("no") == Verdict(allowed=False, message="no", code=403, reason="Forbidden")
    assert Verdict() == Verdict(True, None, "", [], None, "", "", "")


@pytest.mark.parametrize(
    ("request_", "namespace"),
    [
        ({"namespace": "a", "object": {"metadata": {"namespace": "b"}}}, "a"),
        ({"namespace": "", "object": {"metadata": {"namespace": "b"}}}, "b"),
        ({"namespace": 3, "object": {"metadata": {"namespace": "b"}}}, "b"),
        ({"object": {"metadata": {"namespace": 3}}}, ""),
        ({"object": {"metadata": "x"}}, ""),
        ({"object": None}, ""),
        ({}, ""),
    ],
)
def test_the_namespace_is_the_requests_else_the_objects(request_: dict[str, Any], namespace: str) -> None:
    """The request's namespace when it is a non-empty string, else the object's when it is a
    string, else empty."""
    assert request_namespace(request_) == namespace


def _pod_request(namespace: str, labels: object = None) -> dict[str, Any]:
    return {"namespace": namespace, "object": {"metadata": {"namespace": namespace, "labels": labels}}}


@pytest.mark.parametrize(
    ("request_", "namespaces", "config", "reason"),
    [
        (_pod_request("kube-system"), {}, WebhookOptions(), "namespace kube-system is exempt"),
        (_pod_request("fitguard-system"), {}, WebhookOptions(), "namespace fitguard-system is exempt"),
        (_pod_request("tools"), {}, WebhookOptions(own_namespace="tools"), "namespace tools is exempt"),
        (
            _pod_request("ci"),
            {},
            WebhookOptions(exempt_namespaces=frozenset({"ci"})),
            "namespace ci is exempt",
        ),
        (_pod_request("kube-system"), {}, WebhookOptions(exempt_namespaces=frozenset()), None),
        (_pod_request("shop", {"fitguard.io/ignore": "true"}), {}, WebhookOptions(), None),
        (
            _pod_request("shop", {"fitguard.io/ignore": "true"}),
            {},
            WebhookOptions(allow_object_ignore=True),
            "object has fitguard.io/ignore=true",
        ),
        (
            _pod_request("shop", {"fitguard.io/ignore": "yes"}),
            {},
            WebhookOptions(allow_object_ignore=True),
            None,
        ),
        (_pod_request("shop", ["fitguard.io/ignore"]), {}, WebhookOptions(allow_object_ignore=True), None),
        (
            _pod_request("shop"),
            {"shop": {"fitguard.io/ignore": "true"}},
            WebhookOptions(),
            "namespace shop has fitguard.io/ignore=true",
        ),
        (_pod_request("shop"), {"shop": {"fitguard.io/ignore": "True"}}, WebhookOptions(), None),
        (_pod_request("shop"), {"other": {"fitguard.io/ignore": "true"}}, WebhookOptions(), None),
    ],
)
def test_exemptions_and_their_reasons(
    request_: dict[str, Any],
    namespaces: dict[str, dict[str, str]],
    config: WebhookOptions,
    reason: str | None,
) -> None:
    """Exempt and own namespaces, an object's ignore label (only when allowed, only "true"), and a
    namespace's ignore label (only "true"), each with its own reason; anything else is reviewed."""
    assert exemption(request_, Namespaces(**namespaces), config) == reason


def test_a_request_without_a_namespace_never_asks_for_namespace_labels() -> None:
    """A cluster-scoped object: no namespace to look up, not exempt, the configured mode."""
    namespaces = Namespaces()
    assert exemption({"object": {"metadata": {}}}, namespaces, WebhookOptions()) is None
    assert effective_mode("", namespaces, WebhookOptions(mode="warn")) == "warn"
    assert namespaces.asked == []


@pytest.mark.parametrize(
    ("labels", "configured", "mode"),
    [
        ({"fitguard.io/mode": "audit"}, "enforce", "audit"),
        ({"fitguard.io/mode": "warn"}, "audit", "warn"),
        ({"fitguard.io/mode": "enforce"}, "warn", "enforce"),
        ({"fitguard.io/mode": "off"}, "warn", "warn"),
        ({}, "audit", "audit"),
    ],
)
def test_a_namespace_label_naming_a_mode_overrides_the_configured_one(
    labels: dict[str, str], configured: str, mode: str
) -> None:
    """The namespace's fitguard.io/mode when it is a mode, else the configured mode."""
    assert effective_mode("shop", Namespaces(shop=labels), WebhookOptions(mode=configured)) == mode


PATCH = [{"op": "add", "path": "/x", "value": 1}]


@pytest.mark.parametrize(
    ("verdict", "mode", "softened"),
    [
        (Verdict.deny("no"), "enforce", Verdict.deny("no")),
        (
            Verdict(allowed=False, patch=PATCH, message="no", warnings=["w"], code=403, reason="Forbidden"),
            "warn",
            Verdict(allowed=True, patch=PATCH, warnings=["w", "no"]),
        ),
        (
            Verdict(allowed=False, patch=PATCH, message="no", warnings=["w"], code=403, reason="Forbidden"),
            "audit",
            Verdict(allowed=True, patch=PATCH, warnings=["w"]),
        ),
        (Verdict(message="fine", warnings=["w"]), "warn", Verdict(message="fine", warnings=["w"])),
    ],
)
def test_soften_turns_a_denial_into_the_modes_allowance(
    verdict: Verdict, mode: str, softened: Verdict
) -> None:
    """enforce keeps the denial; warn allows with the message added to the warnings; audit allows
    with only the warnings there were; patches are kept; an allowance is returned as it is."""
    assert soften(verdict, mode) == softened


@pytest.mark.parametrize(
    ("raw", "labels"),
    [
        ({"a": "1", "b": 2, 3: "c", "d": None, "e": ""}, {"a": "1", "e": ""}),
        (["a"], {}),
        (None, {}),
        ("a=b", {}),
    ],
)
def test_string_map_keeps_only_string_pairs(raw: object, labels: dict[str, str]) -> None:
    """Labels as the API guarantees them: string keys to string values, anything else dropped."""
    assert string_map(raw) == labels


def test_a_mapping_that_is_no_dict_is_read_as_a_dict_is() -> None:
    """The handlers take any Mapping (`MAPPINGS` only recognises a dict first): a read-only view
    of a request is read as the request, its namespace, exemption and pod check alike."""
    from types import MappingProxyType

    from webhook.mutate import check_pod

    frozen = MappingProxyType
    pod = frozen({"metadata": frozen({"namespace": "kube-system", "labels": frozen({})}),
                  "spec": frozen({"containers": [frozen({"name": "c"})]})})  # fmt: skip
    request = frozen({"object": pod})
    assert request_namespace(request) == "kube-system"
    assert exemption(request, Namespaces(), WebhookOptions()) == "namespace kube-system is exempt"
    check_pod(pod)  # raises PodError for a pod it cannot read
