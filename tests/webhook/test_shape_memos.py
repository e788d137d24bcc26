"""What the admission path remembers between reviews gives the answer computing it afresh gives,
and forgets it the moment what it depends on changes: a pod's SecurityGroupPolicy match (per
namespace, pod labels, ServiceAccount labels and policies version, webhook/policy_memo.py) and a
pod's needs (per spec shape, capacity.fit.needs_key). A namespace's labels are read on every
review, never remembered."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from capacity.fit import PodNeeds
from capacity.names import IGNORE_LABEL, MODE_LABEL
from capacity.sgp import compile_policy
from kube.statefile import load_state
from webhook.answer import Webhook, answer
from webhook.cluster import ClusterView, from_objects
from webhook.policy_memo import PolicyMatchMemo
from webhook.review import WebhookOptions
from webhook.shapes import needs_key, pod_needs

CLUSTER = load_state(Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml")
NS = "shop"


def sgp(
    name: str, pod_selector: Any = None, sa_selector: Any = None, groups: tuple[str, ...] = ("sg-1",)
) -> Any:
    spec: dict[str, Any] = {"securityGroups": {"groupIds": list(groups)}}
    if pod_selector is not None:
        spec["podSelector"] = pod_selector
    if sa_selector is not None:
        spec["serviceAccountSelector"] = sa_selector
    return {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def account(name: str, labels: dict[str, str], namespace: str = NS) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
    }


def namespace(name: str, labels: dict[str, str] | None = None) -> Any:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def view(*extra: Any) -> ClusterView:
    objects = [
        *copy.deepcopy(CLUSTER),
        namespace(NS),
        namespace("other"),
        account("default", {}),
        account("default", {}, "other"),
        account("batch", {"role": "batch"}),
        account("plain", {}),
        *extra,
    ]
    return from_objects(objects)


def pod(labels: dict[str, str], sa: str = "default", ns: str = NS, cpu: str = "100m") -> Any:
    spec = {"serviceAccountName": sa, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns, "labels": labels},
        "spec": spec,
    }


def request(obj: Any) -> dict[str, Any]:
    return {
        "uid": "u",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "namespace": obj["metadata"]["namespace"],
        "operation": "CREATE",
        "object": obj,
    }


def groups(cluster: ClusterView, obj: Any) -> tuple[str, ...]:
    mutation = answer(Webhook.MUTATE, request(obj), cluster, WebhookOptions()).mutation
    assert mutation is not None
    return mutation.groups


def fresh(cluster: ClusterView) -> ClusterView:
    """The same stores with nothing remembered: the answer computed afresh."""
    return ClusterView(
        namespaces=cluster.namespaces,
        service_accounts=cluster.service_accounts,
        policies=cluster.policies,
        config_maps=cluster.config_maps,
        templates=cluster.templates,
        nodepool_templates=cluster.nodepool_templates,
        nodes=cluster.nodes,
        node_pools=cluster.node_pools,
    )


def test_a_changed_policy_changes_the_match_at_once() -> None:
    """A pod matched by a policy; the policy's selector changes, then it is deleted: the very next
    review of the same pod answers by the policy as it is now."""
    cluster = view(sgp("db", {"matchLabels": {"app": "db"}}))
    db = pod({"app": "db"})
    assert groups(cluster, db) == ("sg-1",)
    assert groups(cluster, db) == ("sg-1",)  # remembered
    # the policies' names, asked after the groups for the same pod, are remembered apart
    assert cluster.matching_policies(NS, db) == [f"{NS}/db"]
    assert cluster.security_groups(NS, db) == ["sg-1"]
    cluster.policies.apply("MODIFIED", sgp("db", {"matchLabels": {"app": "web"}}))
    assert groups(cluster, db) == ()
    assert groups(cluster, pod({"app": "web"})) == ("sg-1",)
    cluster.policies.apply("DELETED", sgp("db", {"matchLabels": {"app": "web"}}))
    assert groups(cluster, pod({"app": "web"})) == ()
    assert cluster.matching_policies(NS, pod({"app": "web"})) == []


def test_pods_alike_but_for_their_service_account_labels_match_apart() -> None:
    """Same namespace and labels, ServiceAccounts with other labels: each gets its own match, and a
    ServiceAccount relabelled is matched by its new labels at once."""
    cluster = view(sgp("batch", sa_selector={"matchLabels": {"role": "batch"}}))
    assert groups(cluster, pod({"app": "x"}, sa="batch")) == ("sg-1",)
    assert groups(cluster, pod({"app": "x"}, sa="plain")) == ()
    cluster.service_accounts.apply("MODIFIED", account("plain", {"role": "batch"}))
    assert groups(cluster, pod({"app": "x"}, sa="plain")) == ("sg-1",)


def test_pods_alike_in_two_namespaces_match_each_their_own_policies() -> None:
    """Only the pod's own namespace's policies count: the same labels elsewhere match nothing."""
    cluster = view(sgp("any", {}))
    assert groups(cluster, pod({"app": "x"})) == ("sg-1",)
    assert groups(cluster, pod({"app": "x"}, ns="other")) == ()


def test_pods_with_other_labels_match_apart_and_a_missing_account_is_still_refused() -> None:
    """Other pod labels, another match; a ServiceAccount that does not exist is refused every time
    (its existence is checked before anything remembered is looked up)."""
    cluster = view(sgp("db", {"matchLabels": {"app": "db"}}))
    assert groups(cluster, pod({"app": "db"})) == ("sg-1",)
    assert groups(cluster, pod({"app": "web"})) == ()
    for _ in range(2):
        verdict = answer(Webhook.MUTATE, request(pod({"app": "db"}, sa="nobody")), cluster, WebhookOptions())
        assert not verdict.verdict.allowed
        assert 'serviceaccount "nobody" not found' in verdict.verdict.message


def test_the_remembered_match_is_the_computed_one_for_every_pod_of_the_fixture() -> None:
    """Remembered or not, both webhooks give the same answers for a spread of pods (labels,
    accounts, namespaces) asked twice over."""
    policies = [
        sgp("db", {"matchLabels": {"app": "db"}}, groups=("sg-a", "sg-b")),
        sgp("batch", sa_selector={"matchLabels": {"role": "batch"}}, groups=("sg-b", "sg-c")),
        sgp("both", {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]}, {}),
    ]
    cluster = view(*policies)
    pods = [
        pod(labels, sa, ns)
        for labels in ({"app": "db"}, {"tier": "x"}, {"app": "db", "tier": "x"}, {})
        for sa in ("default", "batch")
        for ns in (NS, "other")
        if not (ns == "other" and sa == "batch")
    ]
    for _ in range(2):
        for obj in pods:
            for webhook in Webhook:
                remembered = answer(webhook, request(obj), cluster, WebhookOptions())
                computed = answer(webhook, request(obj), fresh(cluster), WebhookOptions())
                assert remembered.review("admission.k8s.io/v1") == computed.review("admission.k8s.io/v1")
                assert remembered.mutation == computed.mutation


def test_the_policy_memo_forgets_the_least_recently_used_key_past_its_size() -> None:
    """Bounded: a third key pushes the least recently used one out, which is then computed again."""
    memo = PolicyMatchMemo(size=2)
    calls: list[str] = []

    def listed(name: str) -> Any:
        def policies() -> list[Any]:
            calls.append(name)
            return []

        return policies

    for name in ("a", "b", "a", "c", "a", "b"):
        memo.groups((name, {}, {}), 1, listed(name))
    assert calls == ["a", "b", "c", "b"]


def test_a_namespace_label_changes_the_answer_at_once() -> None:
    """The namespace's mode and ignore labels are read on every review: a pod denied in enforce
    mode is allowed with warnings once its namespace says warn, and skipped once it says ignore."""
    cluster = view()
    huge = pod({"app": "x"}, cpu="5000")
    denied = answer(Webhook.VALIDATE, request(huge), cluster, WebhookOptions())
    assert not denied.verdict.allowed
    cluster.namespaces.apply("MODIFIED", namespace(NS, {MODE_LABEL: "warn"}))
    warned = answer(Webhook.VALIDATE, request(huge), cluster, WebhookOptions())
    assert warned.verdict.allowed
    assert warned.verdict.warnings
    cluster.namespaces.apply("MODIFIED", namespace(NS, {IGNORE_LABEL: "true"}))
    skipped = answer(Webhook.VALIDATE, request(huge), cluster, WebhookOptions())
    assert skipped.exemption == f"namespace {NS} has {IGNORE_LABEL}=true"


BASE: dict[str, Any] = {
    "containers": [{"name": "c", "image": "a", "resources": {"requests": {"cpu": "1"}}}],
    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
    "nodeSelector": {"a": "1", "b": "2"},
    "tolerations": [{"key": "k", "operator": "Exists"}],
}


@pytest.mark.parametrize(
    ("part", "value"),
    [
        ("containers", [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]),
        ("containers", [{"name": "c", "resources": {"requests": {"cpu": "1"}}}, {"name": "d"}]),
        ("containers", "not a list"),
        (
            "initContainers",
            [{"name": "i", "resources": {"requests": {"cpu": "1"}}, "restartPolicy": "Always"}],
        ),
        ("initContainers", [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]),
        ("resources", {"requests": {"cpu": "4"}}),
        ("overhead", {"cpu": "250m"}),
        ("nodeSelector", {"b": "2", "a": "1"}),  # the same map in another order names keys in another
        ("affinity", {"nodeAffinity": {}}),
        ("tolerations", []),
    ],
)
def test_a_spec_differing_in_a_part_the_needs_read_has_its_own_key(part: str, value: Any) -> None:
    """Every part `PodNeeds.from_spec` reads is in the key; a change there is another shape."""
    other = {**BASE, part: value}
    assert needs_key(other) != needs_key(BASE)


def test_a_spec_differing_only_where_the_needs_do_not_read_shares_the_key() -> None:
    """Names, images, env and other pod spec fields are no part of the shape."""
    other = copy.deepcopy(BASE)
    other["containers"][0].update(name="x", image="b", env=[{"name": "A"}])
    other["volumes"] = [{"name": "v"}]
    assert needs_key(other) == needs_key(BASE)


def test_needs_are_built_once_per_shape_and_equal_to_those_built_afresh() -> None:
    """The second replica of a shape gets the needs the first built; a shape that only reorders its
    node selector gets its own, naming its keys in its own order; a malformed spec raises each time,
    naming the field where it was given (a pod's spec, a workload's template)."""
    first = pod_needs(BASE, "spec")
    again = pod_needs(copy.deepcopy(BASE), "spec.template.spec")
    assert again is first
    built = PodNeeds.from_spec(BASE, "spec")
    assert (first.key, first.requests, first.checked) == (built.key, built.requests, built.checked)
    reordered = pod_needs({**BASE, "nodeSelector": {"b": "2", "a": "1"}}, "spec")
    assert reordered.selector_keys == ("b", "a")
    assert first.selector_keys == ("a", "b")
    for field in ("spec", "spec.template.spec", "spec"):
        with pytest.raises(TypeError) as refused:
            pod_needs({**BASE, "containers": "not a list"}, field)
        assert str(refused.value) == f"{field}.containers: expected a list of containers"


@pytest.mark.parametrize(
    "values",
    [
        (None, float("nan"), float("inf"), float("-inf")),  # orjson writes all four as null
        (2**64, float(2**64)),  # an integer beyond 64 bits, which orjson cannot write
        ("\ud800", "\udc00"),  # lone surrogates, which orjson cannot write
    ],
)
def test_values_orjson_writes_alike_or_not_at_all_get_keys_apart(values: tuple[Any, ...]) -> None:
    """The key is written by json.dumps where orjson's text could not tell values apart: a null,
    NaN and the infinities each get their own key, and a spec orjson cannot write gets one too."""
    keys = [needs_key({"containers": [{"resources": {"requests": {"cpu": value}}}]}) for value in values]
    assert None not in keys
    assert len(set(keys)) == len(values)


def test_a_spec_too_deep_to_write_is_built_each_time() -> None:
    """No key (nesting past the recursion limit): the needs are built, or refused, as without a memo,
    the refusal naming the field where the spec was given (a workload's template, here)."""
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    spec = {**BASE, "affinity": {"nodeAffinity": deep}}
    assert needs_key(spec) is None
    with pytest.raises(TypeError) as refused:
        pod_needs(spec, "spec.template.spec")
    assert str(refused.value) == "spec.template.spec.affinity.nodeAffinity: expected a map"


def test_a_refused_spec_never_gets_the_needs_of_a_remembered_one() -> None:
    """Containers that are not a list are refused every time, even right after the same spec with
    no containers at all was built and remembered."""
    assert pod_needs({**BASE, "containers": [], "initContainers": []}, "spec").requests == {}
    for malformed in ("not a list", {"a": "map"}, 7):
        with pytest.raises(TypeError, match="expected a list of containers"):
            pod_needs({**BASE, "containers": malformed, "initContainers": []}, "spec")


def test_the_policy_memo_matches_by_the_service_accounts_labels_for_groups_and_names() -> None:
    """A policy that selects by ServiceAccount labels matches a pod only through its ServiceAccount's
    labels: the groups and the policy names (what "fields to edit" names) both follow them, in
    the policies' order, and a pod whose ServiceAccount lacks the label gets only the pod-selected
    policy's."""

    def sgp(name: str, selector: str, labels: dict[str, str], group: str) -> Any:
        return compile_policy(
            {
                "metadata": {"namespace": NS, "name": name},
                "spec": {selector: {"matchLabels": labels}, "securityGroups": {"groupIds": [group]}},
            }
        )

    listed = [
        sgp("by-sa", "serviceAccountSelector", {"role": "db"}, "sg-sa"),
        sgp("by-pod", "podSelector", {"app": "x"}, "sg-pod"),
    ]
    memo = PolicyMatchMemo()
    with_sa = (NS, {"app": "x"}, {"role": "db"})
    without = (NS, {"app": "x"}, {"role": "web"})
    assert memo.policy_names(with_sa, 1, lambda: listed) == [f"{NS}/by-sa", f"{NS}/by-pod"]
    assert memo.groups(with_sa, 1, lambda: listed) == ["sg-sa", "sg-pod"]
    assert memo.policy_names(without, 1, lambda: listed) == [f"{NS}/by-pod"]
    assert memo.groups(without, 1, lambda: listed) == ["sg-pod"]


def test_the_policies_names_follow_a_changed_policy_asked_without_the_groups() -> None:
    """The names of the matching policies (what a denial's "fields to edit" lists), asked on their
    own, answer by the policies as they are now: a policy whose selector changes, then a second
    policy added, each changes the very next answer for the same pod."""
    cluster = view(sgp("db", {"matchLabels": {"app": "db"}}))
    db = pod({"app": "db"})
    assert cluster.matching_policies(NS, db) == [f"{NS}/db"]
    assert cluster.matching_policies(NS, db) == [f"{NS}/db"]  # remembered
    cluster.policies.apply("MODIFIED", sgp("db", {"matchLabels": {"app": "web"}}))
    assert cluster.matching_policies(NS, db) == []
    cluster.policies.apply("ADDED", sgp("all", {}))
    assert cluster.matching_policies(NS, db) == [f"{NS}/all"]
