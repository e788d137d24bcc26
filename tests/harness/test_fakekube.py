"""The fake apiserver behaves like the real one for the kubernetes client (v37) and raw HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeKubeServer, fixtures
from tests.fakekube.patch import PatchError, json_patch

fake_kube = fixtures.fake_kube  # the fixture, until tests/conftest.py exposes it to every test module

NS = "default"
SGP = ("vpcresources.k8s.aws", "v1beta1")
NGT = ("fitguard.io", "v1alpha1")
WATCH_TIMEOUT = 5  # seconds: a safety net so a broken watch fails the test instead of hanging it


# Not tests.objects.pod: this pod has no namespace (the fake API server fills it in from the URL,
# which is under test) and an env list (which strategic merge patches act on).
def pod(name: str, labels: dict[str, str] | None = None, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "busybox", "env": [{"name": "A", "value": "1"}]}]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def core(server: FakeKubeServer) -> client.CoreV1Api:
    return client.CoreV1Api(server.api_client())


def status_body(error: ApiException) -> dict[str, Any]:
    return json.loads(error.body)


def take(events: Iterator[dict[str, Any]], count: int, w: watch.Watch) -> list[dict[str, Any]]:
    """The first `count` events of a stream, then stop watching."""
    seen = []
    for event in events:
        seen.append(event)
        if len(seen) == count:
            w.stop()
            break
    return seen


def when_watching(server: FakeKubeServer, action: Callable[[], None], watches: int = 1) -> threading.Thread:
    """Run `action` in a thread once `watches` watches have started, so its changes are live events."""

    def run() -> None:
        assert server.wait_for_watches(watches, timeout=WATCH_TIMEOUT)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# --- CRUD --------------------------------------------------------------------------------------


def test_create_sets_system_fields_and_get_list_replace_delete_round_trip(fake_kube: FakeKubeServer) -> None:
    """POST answers 201 with uid/RV/creationTimestamp/namespace; GET, LIST, PUT and DELETE agree."""
    v1 = core(fake_kube)
    created = v1.create_namespaced_pod(NS, pod("web", {"app": "web"}))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.namespace == NS
    assert created.status.phase == "Pending"  # the pod registry's create strategy
    assert fake_kube.requests.find(method="POST")[-1].body["metadata"]["name"] == "web"

    assert v1.read_namespaced_pod("web", NS).metadata.uid == created.metadata.uid
    listed = v1.list_namespaced_pod(NS)
    assert [p.metadata.name for p in listed.items] == ["web"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)

    created.metadata.labels["tier"] = "front"
    replaced = v1.replace_namespaced_pod("web", NS, created)
    assert replaced.metadata.labels == {"app": "web", "tier": "front"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    deleted = v1.delete_namespaced_pod("web", NS)
    assert deleted.metadata.name == "web"  # pods answer DELETE with the object
    with pytest.raises(ApiException) as missing:
        v1.read_namespaced_pod("web", NS)
    assert missing.value.status == 404
    assert status_body(missing.value)["reason"] == "NotFound"


def test_create_twice_is_409_already_exists_and_stale_update_is_409_conflict(
    fake_kube: FakeKubeServer,
) -> None:
    """A second create of a name, and a PUT with an old resourceVersion, are Status 409s."""
    leases = client.CoordinationV1Api(fake_kube.api_client())
    body = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    first = leases.create_namespaced_lease(NS, body)
    with pytest.raises(ApiException) as again:
        leases.create_namespaced_lease(NS, body)
    assert (again.value.status, status_body(again.value)["reason"]) == (409, "AlreadyExists")

    first.spec.holder_identity = "b"
    leases.replace_namespaced_lease("leader", NS, first)
    first.spec.holder_identity = "c"  # still carries the resourceVersion from before the last write
    with pytest.raises(ApiException) as stale:
        leases.replace_namespaced_lease("leader", NS, first)
    status = status_body(stale.value)
    assert (stale.value.status, status["reason"], status["kind"], status["status"]) == (
        409,
        "Conflict",
        "Status",
        "Failure",
    )
    assert leases.read_namespaced_lease("leader", NS).spec.holder_identity == "b"


def test_generate_name_appends_a_random_suffix(fake_kube: FakeKubeServer) -> None:
    """metadata.generateName yields distinct names with the prefix."""
    v1 = core(fake_kube)
    body = {"metadata": {"generateName": "worker-"}, "data": {"k": "v"}}
    names = {v1.create_namespaced_config_map(NS, body).metadata.name for _ in range(3)}
    assert len(names) == 3
    assert all(name.startswith("worker-") and len(name) == len("worker-") + 5 for name in names)


def test_delete_preconditions_on_uid_and_resource_version_are_409(fake_kube: FakeKubeServer) -> None:
    """DeleteOptions.preconditions that do not match leave the object and answer 409 Conflict."""
    v1 = core(fake_kube)
    created = v1.create_namespaced_pod(NS, pod("p"))
    for preconditions in ({"uid": "not-the-uid"}, {"resourceVersion": "1"}):
        with pytest.raises(ApiException) as refused:
            v1.delete_namespaced_pod("p", NS, body={"preconditions": preconditions})
        assert refused.value.status == 409
        assert "Precondition failed" in status_body(refused.value)["message"]
    assert v1.read_namespaced_pod("p", NS)
    matching = {"uid": created.metadata.uid, "resourceVersion": created.metadata.resource_version}
    v1.delete_namespaced_pod("p", NS, body={"preconditions": matching})
    assert fake_kube.objects("Pod") == []


def test_delete_of_a_config_map_answers_a_success_status(fake_kube: FakeKubeServer) -> None:
    """Registries without ReturnDeletedObject answer DELETE with a Status of Success."""
    v1 = core(fake_kube)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
    answer = v1.delete_namespaced_config_map("cm", NS)
    assert answer["kind"] == "Status" and answer["status"] == "Success"


def test_finalizers_hold_deletion_until_removed(fake_kube: FakeKubeServer) -> None:
    """DELETE of an object with finalizers only sets deletionTimestamp; removing them deletes it."""
    v1 = core(fake_kube)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "held", "finalizers": ["example.com/keep"]}})
    v1.delete_namespaced_config_map("held", NS)
    marked = v1.read_namespaced_config_map("held", NS)
    assert marked.metadata.deletion_timestamp is not None
    v1.patch_namespaced_config_map("held", NS, [{"op": "remove", "path": "/metadata/finalizers"}])
    assert fake_kube.objects("ConfigMap", NS) == []


def test_dry_run_stores_nothing_on_create_patch_and_delete(fake_kube: FakeKubeServer) -> None:
    """dryRun=All answers as if done but leaves the store and resourceVersion untouched."""
    v1 = core(fake_kube)
    rv = fake_kube.store.resource_version
    answered = v1.create_namespaced_config_map(NS, {"metadata": {"name": "dry"}}, dry_run="All")
    assert answered.metadata.name == "dry"
    assert fake_kube.objects("ConfigMap") == []
    assert fake_kube.store.resource_version == rv
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "real"}, "data": {"a": "1"}})
    rv = fake_kube.store.resource_version
    patched = v1.patch_namespaced_config_map("real", NS, {"data": {"a": "2"}}, dry_run="All")
    assert patched.data == {"a": "2"}
    v1.delete_namespaced_config_map("real", NS, dry_run="All")
    assert fake_kube.get("ConfigMap", "real", NS)["data"] == {"a": "1"}
    assert fake_kube.store.resource_version == rv


# --- patches -----------------------------------------------------------------------------------


def test_strategic_merge_patch_merges_containers_by_name(fake_kube: FakeKubeServer) -> None:
    """Strategic merge (the client's default for dict bodies) merges containers and env by name."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p"))
    patch = {
        "spec": {
            "containers": [
                {"name": "app", "resources": {"requests": {"vpc.amazonaws.com/pod-eni": "1"}}},
                {"name": "sidecar", "image": "envoy"},
            ]
        }
    }
    patched = v1.patch_namespaced_pod("p", NS, patch)
    app, sidecar = patched.spec.containers
    assert (app.name, app.image, app.resources.requests) == (
        "app",
        "busybox",
        {"vpc.amazonaws.com/pod-eni": "1"},
    )
    assert app.env[0].name == "A"
    assert sidecar.image == "envoy"
    assert (
        fake_kube.requests.find(method="PATCH")[-1].content_type == "application/strategic-merge-patch+json"
    )


def test_merge_patch_replaces_lists_and_null_deletes(fake_kube: FakeKubeServer) -> None:
    """JSON merge patch replaces a list whole and removes a key given null."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p", {"a": "1", "b": "2"}))
    patch = {"metadata": {"labels": {"a": None}}, "spec": {"containers": [{"name": "other", "image": "x"}]}}
    patched = v1.patch_namespaced_pod("p", NS, patch, _content_type="application/merge-patch+json")
    assert patched.metadata.labels == {"b": "2"}
    assert [c.name for c in patched.spec.containers] == ["other"]


def test_json_patch_add_remove_replace_test_with_escaped_pointers(fake_kube: FakeKubeServer) -> None:
    """RFC 6902 ops apply in order; ~1 in a pointer is "/"; a failed test is 422 and changes nothing."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p", {"old": "x"}))
    ops = [
        {"op": "test", "path": "/metadata/labels/old", "value": "x"},
        {"op": "add", "path": "/metadata/labels/fitguard.io~1keep", "value": "true"},
        {"op": "remove", "path": "/metadata/labels/old"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "alpine"},
    ]
    patched = v1.patch_namespaced_pod("p", NS, ops)
    assert patched.metadata.labels == {"fitguard.io/keep": "true"}
    assert patched.spec.containers[0].image == "alpine"
    assert fake_kube.requests.find(method="PATCH")[-1].content_type == "application/json-patch+json"

    with pytest.raises(ApiException) as failed:
        v1.patch_namespaced_pod("p", NS, [{"op": "test", "path": "/metadata/labels/old", "value": "x"}])
    assert failed.value.status == 422
    assert fake_kube.get("Pod", "p", NS)["metadata"]["labels"] == {"fitguard.io/keep": "true"}


def test_patch_with_stale_resource_version_is_409(fake_kube: FakeKubeServer) -> None:
    """A resourceVersion inside a patch is a precondition."""
    v1 = core(fake_kube)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
    v1.patch_namespaced_config_map("cm", NS, {"data": {"a": "1"}})
    with pytest.raises(ApiException) as stale:
        v1.patch_namespaced_config_map("cm", NS, {"metadata": {"resourceVersion": "2"}, "data": {"a": "2"}})
    assert stale.value.status == 409


def test_custom_resources_take_merge_patch_but_refuse_strategic_merge(fake_kube: FakeKubeServer) -> None:
    """CustomObjectsApi patches with merge patch; strategic merge on a custom resource is 415."""
    custom = client.CustomObjectsApi(fake_kube.api_client())
    body = {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"name": "sgp"},
        "spec": {"podSelector": {"matchLabels": {"role": "db"}}, "securityGroups": {"groupIds": ["sg-1"]}},
    }
    custom.create_namespaced_custom_object(*SGP, NS, "securitygrouppolicies", body)
    patched = custom.patch_namespaced_custom_object(
        *SGP, NS, "securitygrouppolicies", "sgp", {"spec": {"securityGroups": {"groupIds": ["sg-2"]}}}
    )
    assert patched["spec"]["securityGroups"]["groupIds"] == ["sg-2"]
    assert fake_kube.requests.find(method="PATCH")[-1].content_type == "application/merge-patch+json"
    listed = custom.list_namespaced_custom_object(*SGP, NS, "securitygrouppolicies")
    assert [item["kind"] for item in listed["items"]] == ["SecurityGroupPolicy"]
    with pytest.raises(ApiException) as refused:
        custom.patch_namespaced_custom_object(
            *SGP,
            NS,
            "securitygrouppolicies",
            "sgp",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert refused.value.status == 415


def test_strategic_merge_of_node_status_conditions_by_type(fake_kube: FakeKubeServer) -> None:
    """status.conditions merge by type on /status, leaving the other conditions as they were."""
    v1 = core(fake_kube)
    conditions = [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]
    fake_kube.create({"kind": "Node", "metadata": {"name": "n1"}, "status": {"conditions": conditions}})
    patched = v1.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert [(c.type, c.status) for c in patched.status.conditions] == [
        ("Ready", "False"),
        ("MemoryPressure", "False"),
    ]


def test_json_patch_pointer_escapes_and_move_copy() -> None:
    """~0 is "~" and ~1 is "/" in pointers; move and copy work; "-" appends; the target is not mutated."""
    target = {"a~b": {"c/d": 1}, "list": [1]}
    ops = [
        {"op": "copy", "from": "/a~0b/c~1d", "path": "/list/-"},
        {"op": "move", "from": "/a~0b", "path": "/moved"},
    ]
    assert json_patch(target, ops) == {"list": [1, 1], "moved": {"c/d": 1}}
    assert target == {"a~b": {"c/d": 1}, "list": [1]}
    with pytest.raises(PatchError):
        json_patch(target, [{"op": "replace", "path": "/missing", "value": 1}])


# --- status subresource ------------------------------------------------------------------------


def test_status_subresource_splits_writes_between_spec_and_status(fake_kube: FakeKubeServer) -> None:
    """The main resource cannot write status; /status writes only status."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p"))
    v1.patch_namespaced_pod("p", NS, {"status": {"phase": "Running"}, "metadata": {"labels": {"x": "1"}}})
    after_main = fake_kube.get("Pod", "p", NS)
    assert after_main["status"] == {"phase": "Pending"} and after_main["metadata"]["labels"] == {"x": "1"}

    v1.patch_namespaced_pod_status(
        "p", NS, {"status": {"phase": "Succeeded"}, "metadata": {"labels": {"y": "2"}}}
    )
    after_status = fake_kube.get("Pod", "p", NS)
    assert after_status["status"]["phase"] == "Succeeded"
    assert after_status["metadata"]["labels"] == {"x": "1"}
    assert fake_kube.requests.find(method="PATCH")[-1].path.endswith("/pods/p/status")


def test_custom_resource_status_subresource_and_required_resource_version(fake_kube: FakeKubeServer) -> None:
    """NodeGroupTemplate: create drops status, /status sets it, PUT needs a resourceVersion (422)."""
    custom = client.CustomObjectsApi(fake_kube.api_client())
    body = {
        "apiVersion": "fitguard.io/v1alpha1",
        "kind": "NodeGroupTemplate",
        "metadata": {"name": "ng-batch"},
        "spec": {"provider": "aws-asg", "instanceTypes": ["m5.large"]},
        "status": {"nodes": 3},
    }
    created = custom.create_cluster_custom_object(*NGT, "nodegrouptemplates", body)
    assert "status" not in created and created["metadata"]["generation"] == 1
    custom.patch_cluster_custom_object_status(
        *NGT, "nodegrouptemplates", "ng-batch", {"status": {"nodes": 1}}
    )
    stored = fake_kube.get("NodeGroupTemplate", "ng-batch")
    assert stored["status"] == {"nodes": 1} and stored["metadata"]["generation"] == 1

    unversioned = {**body, "metadata": {"name": "ng-batch"}, "spec": {"provider": "manual"}}
    with pytest.raises(ApiException) as invalid:
        custom.replace_cluster_custom_object(*NGT, "nodegrouptemplates", "ng-batch", unversioned)
    assert invalid.value.status == 422
    versioned = {**unversioned, "metadata": stored["metadata"]}
    replaced = custom.replace_cluster_custom_object(*NGT, "nodegrouptemplates", "ng-batch", versioned)
    assert replaced["status"] == {"nodes": 1} and replaced["metadata"]["generation"] == 2


# --- lists -------------------------------------------------------------------------------------


def test_list_pages_are_a_consistent_snapshot(fake_kube: FakeKubeServer) -> None:
    """limit/continue pages show the objects as of the first page, whatever changes in between."""
    v1 = core(fake_kube)
    for name in ("a", "b", "c", "d", "e"):
        v1.create_namespaced_config_map(NS, {"metadata": {"name": name}, "data": {"v": "1"}})
    first = v1.list_namespaced_config_map(NS, limit=2)
    assert [c.metadata.name for c in first.items] == ["a", "b"]
    assert first.metadata.remaining_item_count == 3
    fake_kube.patch("ConfigMap", "d", {"data": {"v": "2"}}, NS)
    fake_kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "f", "namespace": NS}})
    fake_kube.delete("ConfigMap", "c", NS)
    names, values = [], []
    token = first.metadata._continue
    while token:
        page = v1.list_namespaced_config_map(NS, limit=2, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [c.metadata.name for c in page.items]
        values += [c.data["v"] for c in page.items]
        token = page.metadata._continue
    assert (names, values) == (["c", "d", "e"], ["1", "1", "1"])


def test_expired_continue_token_is_410(fake_kube: FakeKubeServer) -> None:
    """A continue token older than the retained history answers 410 Expired."""
    v1 = core(fake_kube)
    for name in ("a", "b", "c"):
        v1.create_namespaced_config_map(NS, {"metadata": {"name": name}})
    first = v1.list_namespaced_config_map(NS, limit=1)
    fake_kube.patch("ConfigMap", "c", {"data": {"x": "y"}}, NS)
    fake_kube.expire_history("ConfigMap")
    with pytest.raises(ApiException) as gone:
        v1.list_namespaced_config_map(NS, limit=1, _continue=first.metadata._continue)
    assert (gone.value.status, status_body(gone.value)["reason"]) == (410, "Expired")


def test_label_selectors_support_every_operator(fake_kube: FakeKubeServer) -> None:
    """=, ==, !=, in, notin, exists and !exists select as upstream (missing labels count for != and notin)."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("a", {"app": "web", "tier": "front"}))
    v1.create_namespaced_pod(NS, pod("b", {"app": "db"}))
    v1.create_namespaced_pod(NS, pod("c", {}))
    expected = {
        "app=web": ["a"],
        "app==db": ["b"],
        "app!=web": ["b", "c"],
        "app in (web, db)": ["a", "b"],
        "app notin (web)": ["b", "c"],
        "tier": ["a"],
        "!tier": ["b", "c"],
        "app,!tier": ["b"],
        "app in (web,db),tier=front": ["a"],
    }
    for selector, names in expected.items():
        listed = v1.list_namespaced_pod(NS, label_selector=selector)
        assert [p.metadata.name for p in listed.items] == names, selector


def test_field_selectors_on_pods_across_namespaces(fake_kube: FakeKubeServer) -> None:
    """spec.nodeName, status.phase, metadata.name and metadata.namespace select; unknown fields are 400."""
    v1 = core(fake_kube)
    v1.create_namespace({"metadata": {"name": "team"}})
    v1.create_namespaced_pod(NS, pod("a", node="n1"))
    v1.create_namespaced_pod("team", pod("b", node="n2"))
    v1.create_namespaced_pod("team", pod("c"))
    fake_kube.patch("Pod", "b", {"status": {"phase": "Running"}}, "team")

    def names(selector: str) -> list[str]:
        return [p.metadata.name for p in v1.list_pod_for_all_namespaces(field_selector=selector).items]

    assert names("spec.nodeName=n1") == ["a"]
    assert names("spec.nodeName=") == ["c"]  # unscheduled pods
    assert names("status.phase!=Pending") == ["b"]
    assert names("metadata.namespace=team,metadata.name!=b") == ["c"]
    with pytest.raises(ApiException) as unsupported:
        v1.list_pod_for_all_namespaces(field_selector="spec.hostname=x")
    assert unsupported.value.status == 400


# --- watches -----------------------------------------------------------------------------------


def test_watch_streams_added_modified_deleted(fake_kube: FakeKubeServer) -> None:
    """Watch().stream sees the current object as ADDED, then live MODIFIED and DELETED events."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p"))

    def changes() -> None:
        fake_kube.patch("Pod", "p", {"metadata": {"labels": {"x": "1"}}}, NS)
        fake_kube.delete("Pod", "p", NS)

    when_watching(fake_kube, changes)
    w = watch.Watch()
    events = take(w.stream(v1.list_namespaced_pod, NS, timeout_seconds=WATCH_TIMEOUT), 3, w)
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "p"),
        ("MODIFIED", "p"),
        ("DELETED", "p"),
    ]
    assert events[1]["object"].metadata.labels == {"x": "1"}
    assert int(events[2]["object"].metadata.resource_version) > int(
        events[1]["object"].metadata.resource_version
    )


def test_watch_from_a_resource_version_replays_only_later_events(fake_kube: FakeKubeServer) -> None:
    """A watch resumed from a list's resourceVersion sees exactly the changes after it."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("early"))
    listed = v1.list_namespaced_pod(NS)
    v1.create_namespaced_pod(NS, pod("late"))
    fake_kube.patch("Pod", "early", {"metadata": {"labels": {"seen": "yes"}}}, NS)
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_pod, NS, resource_version=listed.metadata.resource_version, timeout_seconds=1
    )
    events = [(e["type"], e["object"].metadata.name) for e in stream]
    assert events == [("ADDED", "late"), ("MODIFIED", "early")]


def test_watch_with_selector_sees_objects_leave_and_enter_the_selection(fake_kube: FakeKubeServer) -> None:
    """A change that moves an object out of (into) a label selection is DELETED (ADDED) for the watcher."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p", {"app": "web"}))
    rv = v1.list_namespaced_pod(NS).metadata.resource_version
    fake_kube.patch("Pod", "p", {"metadata": {"labels": {"app": "db"}}}, NS)
    fake_kube.patch("Pod", "p", {"metadata": {"labels": {"app": "web"}}}, NS)
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_pod, NS, label_selector="app=web", resource_version=rv, timeout_seconds=1
    )
    assert [e["type"] for e in stream] == ["DELETED", "ADDED"]


def test_watch_from_an_expired_resource_version_raises_410(fake_kube: FakeKubeServer) -> None:
    """v37 Watch retries a 410 ERROR event once from the same RV, then raises ApiException(410)."""
    v1 = core(fake_kube)
    old_rv = v1.list_namespaced_pod(NS).metadata.resource_version
    v1.create_namespaced_pod(NS, pod("p"))
    fake_kube.expire_history("Pod")
    w = watch.Watch()
    with pytest.raises(ApiException) as gone:
        list(w.stream(v1.list_namespaced_pod, NS, resource_version=old_rv))
    assert gone.value.status == 410
    assert "Expired" in gone.value.reason
    assert len(fake_kube.requests.find(method="GET", watch=True)) == 2


def test_expired_watch_error_event_is_a_status_on_the_raw_stream(fake_kube: FakeKubeServer) -> None:
    """Raw HTTP watch from a too old RV: 200, then one ERROR event whose object is a 410 Expired Status."""
    core(fake_kube).create_namespaced_pod(NS, pod("p"))
    fake_kube.expire_history("Pod")
    with urllib3.PoolManager() as http:
        url = f"{fake_kube.url}/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion=1"
        answer = http.request("GET", url, preload_content=False)
        lines = [json.loads(line) for line in b"".join(answer.stream()).splitlines()]
    assert answer.status == 200 and answer.headers["Transfer-Encoding"] == "chunked"
    assert [line["type"] for line in lines] == ["ERROR"]
    status = lines[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")


def test_raw_list_then_watch_over_urllib3(fake_kube: FakeKubeServer) -> None:
    """Hand-written list+watch: the list RV starts a watch that streams newline-delimited JSON events."""
    fake_kube.create({"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}})
    with urllib3.PoolManager() as http:
        listed = json.loads(http.request("GET", f"{fake_kube.url}/api/v1/nodes").data)
        assert listed["kind"] == "NodeList" and "kind" not in listed["items"][0]  # built-in items: no kind
        fake_kube.patch("Node", "n1", {"metadata": {"labels": {"fitguard.io/branch-eni-exhausted": "true"}}})
        rv = listed["metadata"]["resourceVersion"]
        url = f"{fake_kube.url}/api/v1/nodes?watch=1&resourceVersion={rv}&timeoutSeconds=1"
        answer = http.request("GET", url, preload_content=False)
        events = [json.loads(line) for line in b"".join(answer.stream()).splitlines()]
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("MODIFIED", "Node")]
    assert events[0]["object"]["status"] == {"allocatable": {"cpu": "2"}}


def test_bookmarks_arrive_only_when_allowed(fake_kube: FakeKubeServer) -> None:
    """allowWatchBookmarks brings BOOKMARK events with the current RV, which the client adopts."""
    v1 = core(fake_kube)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
    rv = v1.list_namespaced_config_map(NS).metadata.resource_version
    fake_kube.create({"kind": "Node", "metadata": {"name": "n"}})  # moves the global RV past the list
    w = watch.Watch()
    stream = w.stream(
        v1.list_namespaced_config_map, NS, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=1
    )
    bookmark = take(stream, 1, w)[0]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["raw_object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(fake_kube.store.resource_version)},
    }
    assert w.resource_version == str(fake_kube.store.resource_version)

    plain = watch.Watch()
    assert list(plain.stream(v1.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=1)) == []


# --- faults ------------------------------------------------------------------------------------


def test_throttle_answers_429_with_retry_after(fake_kube: FakeKubeServer) -> None:
    """A 429 carries Retry-After and a Status: a POST surfaces it, a GET is retried by urllib3."""
    v1 = core(fake_kube)
    fake_kube.faults.throttle(retry_after=7, method="POST")
    with pytest.raises(ApiException) as throttled:
        v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
    assert throttled.value.status == 429
    assert throttled.value.headers["Retry-After"] == "7"
    assert status_body(throttled.value)["reason"] == "TooManyRequests"

    # urllib3's default Retry honours Retry-After on 429 for idempotent methods (0 s here: no wait).
    fake_kube.faults.throttle(retry_after=0, method="GET", count=2)
    assert v1.list_namespaced_config_map(NS).items == []
    assert [r.fault for r in fake_kube.requests.find(method="GET")] == ["throttle", "throttle", None]


def test_fail_answers_500_for_matching_requests_only(fake_kube: FakeKubeServer) -> None:
    """A 500 fault hits the matching method/path the given number of times, then service resumes."""
    v1 = core(fake_kube)
    fake_kube.faults.fail(method="POST", path="/configmaps", count=2)
    assert v1.list_namespaced_config_map(NS).items == []  # a GET does not match
    for _ in range(2):
        with pytest.raises(ApiException) as failed:
            v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
        assert (failed.value.status, status_body(failed.value)["reason"]) == (500, "InternalError")
    assert v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}}).metadata.name == "cm"
    assert fake_kube.faults.armed() == []


def test_dropped_watch_is_resumed_by_the_client_without_losing_events(fake_kube: FakeKubeServer) -> None:
    """A watch closed after one event: Watch().stream re-watches from the last RV and sees the rest."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p"))
    rv = v1.list_namespaced_pod(NS).metadata.resource_version
    for value in ("1", "2", "3"):
        fake_kube.patch("Pod", "p", {"metadata": {"labels": {"v": value}}}, NS)
    fake_kube.faults.close_watch_after(1, path="/pods")
    fake_kube.faults.drop_next_watch(path="/pods")
    w = watch.Watch()
    events = take(w.stream(v1.list_namespaced_pod, NS, resource_version=rv), 3, w)
    assert [e["object"].metadata.labels["v"] for e in events] == ["1", "2", "3"]
    assert [r.fault for r in fake_kube.requests.find(watch=True)] == ["close_watch", "close_watch", None]


def test_abruptly_dropped_watch_is_a_protocol_error_for_the_client(fake_kube: FakeKubeServer) -> None:
    """abrupt=True cuts the connection mid-stream instead of ending it cleanly."""
    v1 = core(fake_kube)
    v1.create_namespaced_pod(NS, pod("p"))
    fake_kube.faults.drop_next_watch(abrupt=True)
    w = watch.Watch()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(w.stream(v1.list_namespaced_pod, NS, timeout_seconds=WATCH_TIMEOUT))


def test_expire_next_watch_fault_sends_a_410_error_event(fake_kube: FakeKubeServer) -> None:
    """The injected 410 reaches the client as ApiException(410) when it does not retry (timeout set)."""
    v1 = core(fake_kube)
    fake_kube.faults.expire_next_watch(path="/pods")
    w = watch.Watch()
    with pytest.raises(ApiException) as gone:
        list(w.stream(v1.list_namespaced_pod, NS, timeout_seconds=WATCH_TIMEOUT))
    assert gone.value.status == 410


def test_delay_holds_the_answer_past_the_client_read_timeout(fake_kube: FakeKubeServer) -> None:
    """A delayed POST times out on the client; the next, undelayed one is answered."""
    v1 = core(fake_kube)
    fake_kube.faults.delay(2.0, method="POST")
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        v1.create_namespaced_config_map(NS, {"metadata": {"name": "slow"}}, _request_timeout=(1, 0.2))
    assert v1.create_namespaced_config_map(NS, {"metadata": {"name": "fast"}}).metadata.name == "fast"
    assert [r.fault for r in fake_kube.requests.find(method="POST")] == ["delay", None]


def test_refused_connections_then_listening_again_on_the_same_port(fake_kube: FakeKubeServer) -> None:
    """stop_listening refuses connections (and drops kept-alive ones); start_listening restores service."""
    v1 = core(fake_kube)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "kept"}})
    port = fake_kube.port
    fake_kube.stop_listening()
    with pytest.raises(urllib3.exceptions.MaxRetryError) as refused:
        v1.list_namespaced_config_map(NS, _request_timeout=1)
    assert isinstance(refused.value.reason, urllib3.exceptions.NewConnectionError)
    fake_kube.start_listening()
    assert fake_kube.port == port
    assert [c.metadata.name for c in v1.list_namespaced_config_map(NS).items] == ["kept"]


def test_stop_listening_ends_open_watches(fake_kube: FakeKubeServer) -> None:
    """An apiserver going away cuts its watch streams: the client's read fails."""
    v1 = core(fake_kube)
    when_watching(fake_kube, fake_kube.stop_listening)
    w = watch.Watch()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(w.stream(v1.list_namespaced_pod, NS, timeout_seconds=WATCH_TIMEOUT))


def test_request_log_records_method_path_query_content_type_and_body(fake_kube: FakeKubeServer) -> None:
    """Every request is logged in order with its parsed query, Content-Type and JSON body."""
    v1 = core(fake_kube)
    fake_kube.requests.clear()
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
    v1.list_namespaced_config_map(NS, label_selector="a=b", limit=5)
    v1.patch_namespaced_config_map(
        "cm", NS, {"data": {"k": "v"}}, _content_type="application/merge-patch+json"
    )
    post, get, patch = fake_kube.requests.find()
    # The v37 client sends no Content-Type on create; the apiserver then decodes JSON.
    assert (post.method, post.path, post.content_type) == (
        "POST",
        f"/api/v1/namespaces/{NS}/configmaps",
        None,
    )
    assert post.body == {"metadata": {"name": "cm"}}
    assert (get.method, get.query, get.body, get.watch) == (
        "GET",
        {"labelSelector": "a=b", "limit": "5"},
        None,
        False,
    )
    assert (patch.method, patch.path, patch.content_type, patch.body) == (
        "PATCH",
        f"/api/v1/namespaces/{NS}/configmaps/cm",
        "application/merge-patch+json",
        {"data": {"k": "v"}},
    )


# --- other APIs and configuration --------------------------------------------------------------


def test_events_v1_and_admissionregistration_v1_objects(fake_kube: FakeKubeServer) -> None:
    """events.k8s.io/v1 events (namespaced) and webhook configurations (cluster-scoped) round-trip."""
    api = fake_kube.api_client()
    events = client.EventsV1Api(api)
    event = {
        "metadata": {"name": "e1"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "fitguard.io/controller",
        "reportingInstance": "controller-0",
        "action": "Label",
        "reason": "BranchENIExhausted",
        "type": "Warning",
        "regarding": {"kind": "Node", "name": "n1"},
        "note": "no branch ENI left",
    }
    assert events.create_namespaced_event(NS, event).reason == "BranchENIExhausted"
    assert [e.metadata.name for e in events.list_event_for_all_namespaces().items] == ["e1"]

    admission = client.AdmissionregistrationV1Api(api)
    webhook = {
        "metadata": {"name": "fitguard"},
        "webhooks": [
            {
                "name": "mutate.fitguard.io",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": {"name": "fitguard", "namespace": "kube-system"}},
            }
        ],
    }
    admission.create_mutating_webhook_configuration(webhook)
    patch = {"webhooks": [{"name": "mutate.fitguard.io", "clientConfig": {"caBundle": "Q0E="}}]}
    patched = admission.patch_mutating_webhook_configuration("fitguard", patch)  # strategic: merged by name
    assert patched.webhooks[0].client_config.ca_bundle == "Q0E="
    assert patched.webhooks[0].side_effects == "None"
    assert fake_kube.requests.find(method="POST", path="/mutatingwebhookconfigurations")[0].path == (
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    )


def test_discovery_and_unknown_paths(fake_kube: FakeKubeServer) -> None:
    """/version, /api, /apis answer; an unserved resource is a 404 Status."""
    api = fake_kube.api_client()
    assert client.VersionApi(api).get_code().major == "1"
    groups = {g.name for g in client.ApisApi(api).get_api_versions().groups}
    assert {"fitguard.io", "vpcresources.k8s.aws", "coordination.k8s.io"} <= groups
    resources = client.CoreV1Api(api).get_api_resources().resources
    assert {"pods", "pods/status", "nodes"} <= {r.name for r in resources}
    with urllib3.PoolManager() as http:
        answer = http.request("GET", f"{fake_kube.url}/api/v1/services")
    assert answer.status == 404 and json.loads(answer.data)["kind"] == "Status"


def test_kubeconfig_works_in_a_subprocess(fake_kube: FakeKubeServer, tmp_path: Path) -> None:
    """write_kubeconfig gives a subprocess (KUBECONFIG) a working client."""
    fake_kube.create({"kind": "Namespace", "metadata": {"name": "from-parent"}})
    path = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    script = (
        "from kubernetes import client, config\n"
        "config.load_kube_config()\n"
        "print(','.join(n.metadata.name for n in client.CoreV1Api().list_namespace().items))\n"
    )
    env = {**os.environ, "KUBECONFIG": str(path), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    assert "from-parent" in done.stdout.strip().split(",")

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=configuration)
    assert configuration.host == fake_kube.url
