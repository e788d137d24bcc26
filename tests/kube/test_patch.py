"""The controller's writes against the fake API server: labels, guarded patch and delete, apply."""

from __future__ import annotations

import pytest

from kube.client import (
    NODE_GROUP_TEMPLATES,
    NODES,
    PODS,
    SECURITY_GROUP_POLICIES,
    KubeClient,
    KubeError,
    load_api_client,
)
from kube.patch import (
    Preconditions,
    apply_object,
    delete_custom_object,
    delete_pod,
    merge_patch,
    remove_node_label,
    set_node_label,
)
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer

pytestmark = pytest.mark.slow
EXHAUSTED = "fitguard.io/branch-eni-exhausted"
NGT = "fitguard.io/v1alpha1"
SGP = "vpcresources.k8s.aws/v1beta1"


def api(fake: FakeKubeServer) -> KubeClient:
    return KubeClient(fake.api_client())


def test_node_label_is_set_then_removed_with_null(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    fake_kube.create(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"keep": "me"}}}
    )
    set_node_label(api(fake_kube), "n1", EXHAUSTED, "true")
    assert fake_kube.get("Node", "n1")["metadata"]["labels"] == {"keep": "me", EXHAUSTED: "true"}
    remove_node_label(api(fake_kube), "n1", EXHAUSTED)
    assert fake_kube.get("Node", "n1")["metadata"]["labels"] == {"keep": "me"}
    (patch, _) = fake_kube.requests.find("PATCH", "/api/v1/nodes/n1")
    assert patch.content_type == "application/merge-patch+json"


def test_patch_with_a_stale_resource_version_is_refused(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    node = fake_kube.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    seen_rv = node["metadata"]["resourceVersion"]
    fake_kube.patch("Node", "n1", {"metadata": {"labels": {"moved": "on"}}})
    with pytest.raises(KubeError) as refused:
        merge_patch(
            api(fake_kube),
            NODES,
            "n1",
            {"spec": {"unschedulable": True}},
            preconditions=Preconditions(resource_version=seen_rv),
        )
    assert refused.value.conflict
    assert "unschedulable" not in fake_kube.get("Node", "n1").get("spec", {})
    pod = fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "team"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
    )
    uid, rv = pod["metadata"]["uid"], pod["metadata"]["resourceVersion"]
    patched = merge_patch(
        api(fake_kube),
        PODS,
        "p",
        {"metadata": {"labels": {"a": "b"}}},
        "team",
        preconditions=Preconditions(uid=uid, resource_version=rv),
    )
    assert (patched["metadata"]["name"], patched["metadata"]["labels"]) == ("p", {"a": "b"})
    [sent] = fake_kube.requests.find("PATCH", "/pods/")
    assert (sent.path, sent.body) == (
        "/api/v1/namespaces/team/pods/p",
        {"metadata": {"labels": {"a": "b"}, "uid": uid, "resourceVersion": rv}},
    )


def test_delete_pod_with_stale_preconditions_is_refused(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    pod = fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        }
    )
    uid, seen_rv = pod["metadata"]["uid"], pod["metadata"]["resourceVersion"]
    fake_kube.patch("Pod", "p", {"metadata": {"labels": {"changed": "yes"}}}, "default")
    with pytest.raises(KubeError) as refused:
        delete_pod(api(fake_kube), "default", "p", uid=uid, resource_version=seen_rv)
    assert refused.value.status == 409
    assert fake_kube.objects("Pod", "default")  # still there
    fresh_rv = fake_kube.get("Pod", "p", "default")["metadata"]["resourceVersion"]
    (delete,) = fake_kube.requests.find("DELETE", "/pods/p")
    assert delete.body["preconditions"] == {"uid": uid, "resourceVersion": seen_rv}
    assert delete_pod(api(fake_kube), "default", "p", uid=uid, resource_version=fresh_rv) is True
    assert delete_pod(api(fake_kube), "default", "p", uid=uid) is False  # already gone


def test_apply_creates_then_leaves_alone_then_replaces_when_changed(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    desired = {
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-batch", "labels": {"fitguard.io/provider": "aws-asg"}},
        "spec": {"provider": "aws-asg", "instanceTypes": ["m5.large"], "maxSize": 10},
    }
    action, created = apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, desired)
    assert action == "created"
    assert created["apiVersion"] == NGT
    fake_kube.patch(
        "NodeGroupTemplate", "ng-batch", {"metadata": {"labels": {"someone": "else"}}}, api_version=NGT
    )
    assert apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, desired)[0] == "unchanged"
    assert fake_kube.requests.find("PUT", "/nodegrouptemplates") == []
    changed = {**desired, "spec": {**desired["spec"], "maxSize": 20}}
    action, updated = apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, changed)
    assert action == "updated"
    assert updated["spec"]["maxSize"] == 20
    assert updated["metadata"]["labels"] == {"fitguard.io/provider": "aws-asg", "someone": "else"}


def test_delete_custom_object(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    fake_kube.create({"apiVersion": NGT, "kind": "NodeGroupTemplate", "metadata": {"name": "ng"}})
    assert delete_custom_object(api(fake_kube), NODE_GROUP_TEMPLATES, "ng") is True
    assert fake_kube.objects("NodeGroupTemplate", api_version=NGT) == []
    assert delete_custom_object(api(fake_kube), NODE_GROUP_TEMPLATES, "ng") is False


def test_client_from_kubeconfig_and_errors_carry_status_and_retry_after(
    fake_kube: FakeKubeServer,  # noqa: F811
    tmp_path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(fake_kube.write_kubeconfig(tmp_path / "config")))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    client = KubeClient(load_api_client())
    try:
        names = {ns["metadata"]["name"] for ns in client.get("/api/v1/namespaces")["items"]}
        assert "kube-system" in names
        with pytest.raises(KubeError) as missing:
            client.get(NODES.path(name="nope"))
        assert missing.value.not_found
        fake_kube.faults.throttle(retry_after=7, path="/nodes")
        with pytest.raises(KubeError) as throttled:
            client.get(NODES.path())
        assert (throttled.value.status, throttled.value.retry_after) == (429, 7.0)
    finally:
        client.api_client.close()


def test_resource_paths() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path("kube-system", "p") == "/api/v1/namespaces/kube-system/pods/p"
    assert NODES.path(name="n", subresource="status") == "/api/v1/nodes/n/status"
    assert NODE_GROUP_TEMPLATES.path(name="ng") == "/apis/fitguard.io/v1alpha1/nodegrouptemplates/ng"
    with pytest.raises(ValueError, match="needs its namespace"):
        PODS.path(name="p")


def test_delete_bodies_are_whole_delete_options(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    """Each DELETE carries whole DeleteOptions: preconditions only for what was seen, a grace
    period only when given (zero included); a pod deleted with neither has no preconditions and
    goes; a namespaced custom object is deleted in its own namespace."""
    for name in ("graceful", "now", "plain"):
        fake_kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "team"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            }
        )
    uid = fake_kube.get("Pod", "graceful", "team")["metadata"]["uid"]
    assert delete_pod(api(fake_kube), "team", "graceful", uid=uid, grace_period_seconds=30) is True
    assert delete_pod(api(fake_kube), "team", "now", grace_period_seconds=0) is True
    assert delete_pod(api(fake_kube), "team", "plain") is True
    assert fake_kube.objects("Pod", "team") == []
    fake_kube.create(
        {
            "apiVersion": SGP,
            "kind": "SecurityGroupPolicy",
            "metadata": {"name": "sgp", "namespace": "team"},
            "spec": {"podSelector": {}, "securityGroups": {"groupIds": ["sg-1"]}},
        }
    )
    assert delete_custom_object(api(fake_kube), SECURITY_GROUP_POLICIES, "sgp", "team") is True
    assert fake_kube.objects("SecurityGroupPolicy", "team", api_version=SGP) == []
    options = {"apiVersion": "v1", "kind": "DeleteOptions"}
    assert [(r.method, r.path, r.body) for r in fake_kube.requests.find("DELETE")] == [
        (
            "DELETE",
            "/api/v1/namespaces/team/pods/graceful",
            {**options, "preconditions": {"uid": uid}, "gracePeriodSeconds": 30},
        ),
        ("DELETE", "/api/v1/namespaces/team/pods/now", {**options, "gracePeriodSeconds": 0}),
        ("DELETE", "/api/v1/namespaces/team/pods/plain", options),
        ("DELETE", "/apis/vpcresources.k8s.aws/v1beta1/namespaces/team/securitygrouppolicies/sgp", options),
    ]


def test_apply_replaces_when_only_an_owned_label_or_annotation_differs(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    """A desired label or annotation the stored object lacks or says otherwise is a change (the
    object is replaced, others' labels kept); one it already has is not."""
    desired = {
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng", "labels": {"a": "1"}, "annotations": {"note": "x"}},
        "spec": {"provider": "aws-asg"},
    }
    assert apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, desired)[0] == "created"
    assert apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, desired)[0] == "unchanged"
    relabelled = {**desired, "metadata": {**desired["metadata"], "labels": {"a": "2"}}}
    action, stored = apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, relabelled)
    assert (action, stored["metadata"]["labels"], stored["metadata"]["annotations"]) == (
        "updated",
        {"a": "2"},
        {"note": "x"},
    )
    annotated = {**relabelled, "metadata": {**relabelled["metadata"], "annotations": {"note": "y"}}}
    action, stored = apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, annotated)
    assert (action, stored["metadata"]["labels"], stored["metadata"]["annotations"]) == (
        "updated",
        {"a": "2"},
        {"note": "y"},
    )
    assert apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, annotated)[0] == "unchanged"


def test_apply_retries_a_lost_race_three_times_then_says_so(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    """A create refused otherwise than by a 409 is raised at once; a create answered 409 (made
    meanwhile) is looked at again and retried, and a replace answered 409 is retried, up to three
    attempts in all, after which the third answer is raised; a namespaced object is applied in its
    namespace; a desired object without a name is refused."""
    desired = {
        "kind": "SecurityGroupPolicy",
        "metadata": {"name": "sgp", "namespace": "team"},
        "spec": {"podSelector": {}, "securityGroups": {"groupIds": ["sg-1"]}},
    }
    path = "/apis/vpcresources.k8s.aws/v1beta1/namespaces/team/securitygrouppolicies"
    injected = "Internal error injected by the test"  # the fake API server's Status message
    fake_kube.faults.fail(500, method="POST", count=1)
    with pytest.raises(KubeError) as failed:
        apply_object(api(fake_kube), SECURITY_GROUP_POLICIES, desired)
    assert str(failed.value) == f"500 InternalError: {injected}"  # not a lost race: not retried
    fake_kube.faults.fail(409, method="POST", count=None)
    with pytest.raises(KubeError) as lost:
        apply_object(api(fake_kube), SECURITY_GROUP_POLICIES, desired)
    assert str(lost.value) == f"409 InternalError: {injected}"  # the third answer itself
    assert [r.method for r in fake_kube.requests.find(path=path)] == ["GET", "POST"] * 4
    fake_kube.faults.clear()
    fake_kube.requests.clear()
    fake_kube.faults.fail(409, method="POST", count=1)
    assert apply_object(api(fake_kube), SECURITY_GROUP_POLICIES, desired)[0] == "created"
    assert [(r.method, r.path) for r in fake_kube.requests.find(path=path)] == [
        ("GET", f"{path}/sgp"),
        ("POST", path),
        ("GET", f"{path}/sgp"),
        ("POST", path),
    ]
    assert [r.body for r in fake_kube.requests.find("POST", path)] == [{"apiVersion": SGP, **desired}] * 2
    fake_kube.requests.clear()
    changed = {**desired, "spec": {"podSelector": {}, "securityGroups": {"groupIds": ["sg-2"]}}}
    fake_kube.faults.fail(409, method="PUT", count=None)
    with pytest.raises(KubeError) as refused:
        apply_object(api(fake_kube), SECURITY_GROUP_POLICIES, changed)
    assert str(refused.value) == f"409 InternalError: {injected}"  # the third answer itself
    assert [r.method for r in fake_kube.requests.find(path=path)] == ["GET", "PUT"] * 3
    fake_kube.faults.clear()
    fake_kube.requests.clear()
    fake_kube.faults.fail(409, method="PUT", count=2)
    assert apply_object(api(fake_kube), SECURITY_GROUP_POLICIES, changed)[0] == "updated"
    assert [r.method for r in fake_kube.requests.find(path=path)] == ["GET", "PUT"] * 3
    assert fake_kube.get("SecurityGroupPolicy", "sgp", "team", api_version=SGP)["spec"] == changed["spec"]
    with pytest.raises(ValueError) as nameless:
        apply_object(api(fake_kube), SECURITY_GROUP_POLICIES, {"kind": "SecurityGroupPolicy", "metadata": {}})
    assert str(nameless.value) == "apply_object: desired object has no metadata.name"


def test_a_replace_keeps_the_stored_status_and_metadata_and_zero_attempts_say_so(
    fake_kube: FakeKubeServer,  # noqa: F811
) -> None:
    """The PUT of a changed object is the whole desired body with the stored metadata (its
    resourceVersion makes the replace conditional) and the stored status (not ours to reset);
    with no attempts allowed, apply says it is still conflicting, naming the path."""
    desired = {"kind": "NodeGroupTemplate", "metadata": {"name": "ng"}, "spec": {"provider": "aws-asg"}}
    apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, desired)
    status = {"observedGeneration": 1, "conditions": []}
    fake_kube.patch("NodeGroupTemplate", "ng", {"status": status}, api_version=NGT)
    stored = fake_kube.get("NodeGroupTemplate", "ng", api_version=NGT)
    assert stored["status"] == status
    fake_kube.requests.clear()
    changed = {**desired, "spec": {"provider": "aws-asg", "maxSize": 3}}
    assert apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, changed)[0] == "updated"
    [put] = fake_kube.requests.find("PUT")
    assert put.body == {
        "apiVersion": NGT,
        "kind": "NodeGroupTemplate",
        "metadata": stored["metadata"],
        "spec": {"provider": "aws-asg", "maxSize": 3},
        "status": status,
    }
    with pytest.raises(KubeError) as refused:
        apply_object(api(fake_kube), NODE_GROUP_TEMPLATES, desired, attempts=0)
    assert str(refused.value) == (
        "409 Conflict: /apis/fitguard.io/v1alpha1/nodegrouptemplates/ng: still conflicting after 0 attempts"
    )
