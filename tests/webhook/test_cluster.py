"""The webhook's in-memory view (webhook/cluster.py): what each store keeps of an object, how the
VPC CNI ConfigMap's flag is read, a pod's security groups and the missing-ServiceAccount error,
readiness, and the whole /snapshotz document."""

from __future__ import annotations

import copy
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kube.statefile import load_state
from tests.fakekube.fixtures import fake_kube  # noqa: F401  (the fixture)
from tests.fakekube.server import FakeKubeServer
from tests.waiting import eventually
from webhook.cluster import (
    CONFIG_KEYS,
    WATCHES,
    ClusterView,
    ServiceAccountNotFound,
    WhenServed,
    config_data,
    from_objects,
    labels_of,
    parse_bool,
    start_reflectors,
)

CLUSTER = load_state(Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml")


@pytest.mark.parametrize(
    ("obj", "labels"),
    [
        ({"metadata": {"labels": {"a": "1", "b": 2}}}, {"a": "1", "b": "2"}),
        ({"metadata": {"labels": None}}, {}),
        ({"metadata": {}}, {}),
        ({"metadata": None}, {}),
        ({"metadata": "x"}, {}),
        ({}, {}),
    ],
)
def test_a_namespace_or_service_account_keeps_its_labels_as_strings(
    obj: dict[str, Any], labels: dict[str, str]
) -> None:
    """The labels, every value as a string; none when absent."""
    assert labels_of(obj) == labels


@pytest.mark.parametrize(
    ("function", "obj", "message"),
    [
        (labels_of, {"metadata": {"labels": ["a"]}}, "metadata.labels: expected a map"),
        (config_data, {"data": ["a"]}, "data: expected a map"),
    ],
)
def test_a_malformed_map_is_a_type_error_naming_the_field(
    function: Any, obj: dict[str, Any], message: str
) -> None:
    """Labels or ConfigMap data that are not maps are refused (the store skips and counts them)."""
    with pytest.raises(TypeError) as raised:
        function(obj)
    assert str(raised.value) == message


def test_only_the_config_keys_the_webhook_reads_are_kept() -> None:
    """Of a ConfigMap's data, only enable-windows-ipam and branch-eni-cooldown, as strings."""
    assert CONFIG_KEYS == ("enable-windows-ipam", "branch-eni-cooldown")
    data = {"enable-windows-ipam": True, "branch-eni-cooldown": 60, "warm-ip-target": "5"}
    assert config_data({"data": data}) == {"enable-windows-ipam": "True", "branch-eni-cooldown": "60"}
    assert config_data({"data": None}) == {}
    assert config_data({}) == {}


@pytest.mark.parametrize("value", ["1", "t", "T", "true", "TRUE", "True"])
def test_the_spellings_go_reads_as_true(value: str) -> None:
    """strconv.ParseBool's true spellings."""
    assert parse_bool(value) is True


@pytest.mark.parametrize("value", [None, "", "0", "f", "false", "yes", "on", "tRUE", " true"])
def test_anything_else_is_false(value: str | None) -> None:
    """Everything else, including absence, is false."""
    assert parse_bool(value) is False


def cni(data: dict[str, str], namespace: str = "kube-system", name: str = "amazon-vpc-cni") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name},
        "data": data,
    }


@pytest.mark.parametrize(
    ("objects", "enabled"),
    [
        ([cni({"enable-windows-ipam": "true"})], True),
        ([cni({"enable-windows-ipam": "false"})], False),
        ([cni({})], False),
        ([], False),
        ([cni({"enable-windows-ipam": "true"}, namespace="default")], False),
        ([cni({"enable-windows-ipam": "true"}, name="other")], False),
    ],
)
def test_windows_ipam_is_read_from_the_vpc_cni_config_map_only(
    objects: list[dict[str, Any]], enabled: bool
) -> None:
    """kube-system/amazon-vpc-cni's enable-windows-ipam, read as Go reads a bool; no such
    ConfigMap (or one elsewhere or named otherwise) means off."""
    assert from_objects(objects).windows_ipam_enabled() is enabled


def account(namespace: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"namespace": namespace, "name": name, "labels": labels},
    }


def policy(name: str, spec: dict[str, Any], groups: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "vpcresources.k8s.aws/v1beta1",
        "kind": "SecurityGroupPolicy",
        "metadata": {"namespace": "shop", "name": name},
        "spec": {**spec, "securityGroups": {"groupIds": groups}},
    }


VIEW_OBJECTS = [
    account("shop", "default", {}),
    account("shop", "api", {"role": "api"}),
    policy("by-pod", {"podSelector": {"matchLabels": {"app": "web"}}}, ["sg-pod"]),
    policy("by-sa", {"serviceAccountSelector": {"matchLabels": {"role": "api"}}}, ["sg-sa"]),
]


@pytest.mark.parametrize(
    ("pod", "groups"),
    [
        ({"metadata": {"labels": {"app": "web"}}, "spec": {}}, ["sg-pod"]),
        (
            {"metadata": {"labels": {"app": "web"}}, "spec": {"serviceAccountName": "api"}},
            ["sg-pod", "sg-sa"],
        ),
        ({"metadata": {"labels": {"app": "db"}}, "spec": {"serviceAccountName": "api"}}, ["sg-sa"]),
        ({"metadata": {"labels": {"app": "db"}}, "spec": {"serviceAccountName": ""}}, []),
        ({"metadata": "x", "spec": "y"}, []),
        ({"metadata": {"labels": {"app": 5}}, "spec": {}}, []),
    ],
)
def test_a_pods_groups_come_from_its_labels_and_its_service_account(
    pod: dict[str, Any], groups: list[str]
) -> None:
    """The namespace's policies matched against the pod's labels and its ServiceAccount's labels
    (the default account when it names none); odd shapes are read as empty."""
    assert from_objects(VIEW_OBJECTS).security_groups("shop", pod) == groups


def test_a_missing_service_account_is_an_error_naming_it() -> None:
    """The pod's ServiceAccount must exist in the pod's namespace, even when no policy is there."""
    view = from_objects(VIEW_OBJECTS)
    with pytest.raises(ServiceAccountNotFound) as raised:
        view.security_groups("shop", {"metadata": {}, "spec": {"serviceAccountName": "ghost"}})
    assert str(raised.value) == 'serviceaccount "ghost" not found in namespace "shop"'
    with pytest.raises(ServiceAccountNotFound) as raised:
        view.security_groups("empty", {"metadata": {}, "spec": {}})
    assert str(raised.value) == 'serviceaccount "default" not found in namespace "empty"'


def test_namespace_labels_of_a_known_and_an_unknown_namespace() -> None:
    """A namespace's labels, or none for one not held."""
    view = from_objects(CLUSTER)
    assert view.namespace_labels("payments") == {"team": "payments"}
    assert view.namespace_labels("nowhere") == {}


def test_the_view_is_ready_when_every_store_has_synced() -> None:
    """A new view waits for all nine stores (NodePools and their node classes too: not knowing them
    is not knowing every place a pod could run, nor whether a NodePool's template is current);
    wait_ready gives up (False) at its deadline and says True at once when everything is synced."""
    view = ClusterView()
    assert not view.ready()
    assert view.wait_ready(0.0) is False
    optional = view.optional_stores()
    for kind, store in view.stores().items():
        if kind not in optional:
            store.replace([])
    assert not view.ready()
    for store in optional.values():
        store.replace([])
    assert view.ready() and view.wait_ready(0.0) is True


def test_the_snapshot_is_the_whole_state_held() -> None:
    """/snapshotz: readiness, each store's sync state, size and resourceVersion, every policy and
    template as an object, and the Windows IPAM flag."""
    view = from_objects(copy.deepcopy(CLUSTER))
    view.policies.replace(view_policies := [o for o in CLUSTER if o["kind"] == "SecurityGroupPolicy"], "42")
    snapshot = view.snapshot()
    assert {k: v for k, v in snapshot.items() if k != "nodeGroupTemplates"} == {
        "ready": True,
        "stores": {
            "Namespace": {"synced": True, "objects": 2, "resourceVersion": ""},
            "ServiceAccount": {"synced": True, "objects": 3, "resourceVersion": ""},
            "SecurityGroupPolicy": {"synced": True, "objects": 1, "resourceVersion": "42"},
            "ConfigMap": {"synced": True, "objects": 1, "resourceVersion": ""},
            # the demo's three node groups and its Karpenter NodePool's template
            "NodeGroupTemplate": {"synced": True, "objects": 4, "resourceVersion": ""},
            "Node": {"synced": True, "objects": 4, "resourceVersion": ""},
            "NodePool": {"synced": True, "objects": 1, "resourceVersion": ""},
            "EC2NodeClass": {"synced": True, "objects": 1, "resourceVersion": ""},
            "NodeClass": {"synced": True, "objects": 0, "resourceVersion": ""},
        },
        "nodePools": ["default"],
        "securityGroupPolicies": [
            {
                "namespace": "payments",
                "name": "payments-db-access",
                "valid": True,
                "groupIds": ["sg-0a1b2c3d4e5f60001"],
                "spec": view_policies[0]["spec"],
            }
        ],
        "windowsIpamEnabled": False,
    }
    assert [t["metadata"]["name"] for t in snapshot["nodeGroupTemplates"]] == [
        "ng-batch",
        "ng-burst",
        "ng-general",
    ]


def test_what_each_store_watches() -> None:
    """Every kind cluster-wide, except the VPC CNI ConfigMap, watched alone by name in kube-system;
    NodePools and node classes only once the API serves them (WhenServed)."""
    assert WATCHES == (
        ("Namespace", None, ""),
        ("ServiceAccount", None, ""),
        ("SecurityGroupPolicy", None, ""),
        ("ConfigMap", "kube-system", "metadata.name=amazon-vpc-cni"),
        ("NodeGroupTemplate", None, ""),
        ("Node", None, ""),
    )
    assert list(ClusterView().stores()) == [
        "Namespace",
        "ServiceAccount",
        "SecurityGroupPolicy",
        "ConfigMap",
        "NodeGroupTemplate",
        "Node",
        "NodePool",
        "EC2NodeClass",
        "NodeClass",
    ]


@pytest.mark.slow
def test_a_view_filled_by_reflectors_holds_what_the_api_server_has(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    """start_reflectors lists and watches each kind through the real client: the view becomes
    ready holding the cluster's namespaces, accounts, policies and templates, and of the
    ConfigMaps only kube-system/amazon-vpc-cni (not one of that name elsewhere); a later change
    arrives by the watch."""
    for obj in copy.deepcopy(CLUSTER):
        if obj["kind"] in (
            "Namespace",
            "ServiceAccount",
            "SecurityGroupPolicy",
            "ConfigMap",
            "NodeGroupTemplate",
            "Node",
        ):
            fake_kube.apply(obj)
    fake_kube.apply(cni({"enable-windows-ipam": "true"}, name="other-config"))
    fake_kube.apply(cni({"enable-windows-ipam": "true"}, namespace="default"))
    view = ClusterView()
    reflectors = start_reflectors(view, fake_kube.api_client())
    try:
        eventually(view.ready, "every store synced")
        assert {kind: len(store) for kind, store in view.stores().items() if kind != "Namespace"} == {
            "ServiceAccount": 3,
            "SecurityGroupPolicy": 1,
            "ConfigMap": 1,
            "NodeGroupTemplate": 4,  # the NodePool's template too; the NodePool itself is not applied
            "Node": 4,
            "NodePool": 0,
            "EC2NodeClass": 0,
            "NodeClass": 0,
        }
        assert view.config_maps.get("kube-system", "other-config") is None
        assert view.namespace_labels("payments") == {"team": "payments"}
        assert view.windows_ipam_enabled() is False
        fake_kube.apply(cni({"enable-windows-ipam": "true"}))
        eventually(view.windows_ipam_enabled, "the flag changed by the watch")
    finally:
        for reflector in reflectors:
            reflector.stop()


def test_wait_ready_returns_once_the_last_store_syncs() -> None:
    """A view whose last store syncs while wait_ready is waiting: it answers True (the deadline
    only bounds a hang)."""
    view = ClusterView()
    for store in list(view.stores().values())[:-1]:
        store.replace([])
    waiting = threading.Event()
    answer: list[bool] = []

    def wait() -> None:
        waiting.set()
        answer.append(view.wait_ready(30.0))

    thread = threading.Thread(target=wait)
    thread.start()
    waiting.wait(30)
    view.auto_node_classes.replace([])
    thread.join(30)
    assert answer == [True]


NODE_POOL = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}, "spec": {}}


def test_node_pools_are_watched_where_the_api_serves_them(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    """Served: the store lists and watches NodePools (one created later arrives)."""
    fake_kube.apply(copy.deepcopy(NODE_POOL))
    store = ClusterView().node_pools
    watch = WhenServed(fake_kube.api_client(), "NodePool", store, 0.1, 0.1).start()
    try:
        eventually(lambda: store.synced and len(store) == 1, "the NodePool listed")
        assert watch.reflector is not None
        fake_kube.apply({**NODE_POOL, "metadata": {"name": "gpu"}})
        eventually(lambda: len(store) == 2, "a new NodePool watched")
    finally:
        watch.stop()


def test_a_cluster_without_karpenter_has_no_node_pools_until_it_serves_them(
    fake_kube: FakeKubeServer,  # noqa: F811
) -> None:
    """Not served (404 on karpenter.sh/v1): the store is synced and empty, so the webhook is ready
    and knows no NodePool can launch a node; asked again, a CRD installed later is watched."""
    fake_kube.faults.fail(404, path="/apis/karpenter.sh/v1", count=None)
    fake_kube.apply(copy.deepcopy(NODE_POOL))
    store = ClusterView().node_pools
    watch = WhenServed(fake_kube.api_client(), "NodePool", store, 0.2, 0.2).start()
    try:
        eventually(lambda: store.synced, "an empty NodePool store")
        assert len(store) == 0 and watch.reflector is None
        fake_kube.faults.clear()
        eventually(lambda: len(store) == 1, "the NodePools once served")
    finally:
        watch.stop()


def test_an_unanswered_question_leaves_the_webhook_not_ready(fake_kube: FakeKubeServer) -> None:  # noqa: F811
    """A failed discovery (500) is not taken for "no Karpenter": the store stays unsynced, so the
    webhook is not ready rather than blind to NodePools, until the question is answered."""
    fault = fake_kube.faults.fail(500, path="/apis/karpenter.sh/v1", count=None)
    store = ClusterView().node_pools
    watch = WhenServed(fake_kube.api_client(), "NodePool", store, 0.1, 0.1).start()
    try:
        eventually(lambda: len(fake_kube.requests.find(path="/apis/karpenter.sh/v1")) >= 3, "three questions")
        assert not store.synced
        assert fault in fake_kube.faults.armed()
        fake_kube.faults.clear()
        eventually(lambda: store.synced, "synced once answered")
    finally:
        watch.stop()


def test_stopped_before_the_question_is_answered_it_starts_no_reflector(
    fake_kube: FakeKubeServer,  # noqa: F811
) -> None:
    """A webhook that stops while the question waits (the API failing) leaves nothing running:
    no reflector is started after `stop`, so none is left retrying a server that went away."""
    fake_kube.faults.fail(500, path="/apis/karpenter.sh/v1", count=None)
    store = ClusterView().node_pools
    watch = WhenServed(fake_kube.api_client(), "NodePool", store, 0.1, 0.1).start()
    eventually(lambda: len(fake_kube.requests.find(path="/apis/karpenter.sh/v1")) >= 1, "one question")
    watch.stop()
    fake_kube.faults.clear()
    asked = len(fake_kube.requests.find(path="/apis/karpenter.sh/v1"))
    time.sleep(0.3)  # three retry periods: a thread still running would ask again
    assert (len(fake_kube.requests.find(path="/apis/karpenter.sh/v1")), watch.reflector) == (asked, None)


def test_a_nodepool_whose_template_changed_since_it_was_published_is_not_judged() -> None:
    """The NodePool as listed now has another spec.template than the published template was built
    from (an instance type added): until the controller's next cycle it is not judged, so a pod
    its old template refused is admitted unjudged; with the template it was built from, the same
    pod is denied naming the NodePool. Without the NodePool listed (a state file), the published
    template is judged."""
    import copy

    from capacity.karpenter.published import PROVIDER, published
    from capacity.placement import Abstention
    from capacity.template import NodeGroupTemplate
    from tests.capacity.karpenter.test_published import NODECLASS, POOL, SETTINGS
    from tests.objects import review
    from webhook.review import WebhookOptions
    from webhook.validate import review as validate_review

    record, _ = published(POOL, NODECLASS, SETTINGS, {}, lambda offer: {})
    ngt = NodeGroupTemplate("general", provider=PROVIDER, karpenter=record).to_object()
    listed = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **copy.deepcopy(POOL)}
    widened = copy.deepcopy(listed)
    widened["spec"]["template"]["spec"]["requirements"][0]["values"].append("m5.24xlarge")
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": "apps"},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "namespace": "apps"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "16"}}}],
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        },
    }
    config = WebhookOptions(mode="enforce")

    def answer(*objects: dict[str, Any]) -> Any:
        view = from_objects([namespace, account, ngt, *objects])
        return view, validate_review(review(pod)["request"], view, config)

    view, stale = answer(widened)
    assert view.published_pools() == {} and view.node_pool_names() == ["general"]
    assert stale.allowed and stale.abstained is Abstention.NODEPOOLS
    for objects in ((listed,), ()):
        view, current = answer(*objects)
        assert list(view.published_pools()) == ["general"]
        assert not current.allowed and "NodePool general" in current.message


def _pool_review(pod_requests: dict[str, str], *objects: dict[str, Any], pool: Any = None) -> Any:
    """The view of a NodePool's published template (tests/capacity/karpenter/test_published.py's
    `general`, class `default`) beside `objects`, and its answer to a pod of `pod_requests`."""
    from capacity.karpenter.published import PROVIDER, published
    from capacity.template import NodeGroupTemplate
    from tests.capacity.karpenter.test_published import NODECLASS, POOL, SETTINGS
    from tests.objects import review
    from webhook.review import WebhookOptions
    from webhook.validate import review as validate_review

    record, _ = published(pool or POOL, NODECLASS, SETTINGS, {}, lambda offer: {})
    ngt = NodeGroupTemplate("general", provider=PROVIDER, karpenter=record).to_object()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": "apps"},
    }
    container = {"name": "c", "image": "i", "resources": {"requests": pod_requests}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "namespace": "apps"},
        "spec": {"containers": [container], "tolerations": [{"key": "dedicated", "operator": "Exists"}]},
    }
    view = from_objects([namespace, account, ngt, *objects])
    return view, validate_review(review(pod)["request"], view, WebhookOptions(mode="enforce"))


def test_a_nodepool_whose_ec2nodeclass_changed_since_it_was_published_is_not_judged() -> None:
    """The EC2NodeClass as listed now has another spec than the published template was built from
    (a 100Gi root volume where it had none): until the controller's next cycle the NodePool is not
    judged, so a pod asking 50Gi of ephemeral-storage, which the old class's 17Gi refused, is
    admitted unjudged; with the class as it was built from, or not listed (a state file), the same
    pod is denied naming the NodePool."""
    import copy

    from capacity.placement import Abstention
    from tests.capacity.karpenter.test_published import NODECLASS

    built_from = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        **copy.deepcopy(NODECLASS),
    }
    larger = copy.deepcopy(built_from)
    larger["spec"]["blockDeviceMappings"] = [
        {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}
    ]
    view, stale = _pool_review({"ephemeral-storage": "50Gi"}, larger)
    assert view.published_pools() == {} and view.node_pool_names() == ["general"]
    assert (stale.allowed, stale.abstained) == (True, Abstention.NODEPOOLS)
    for objects in ((built_from,), ()):
        view, current = _pool_review({"ephemeral-storage": "50Gi"}, *objects)
        assert list(view.published_pools()) == ["general"]
        assert not current.allowed and "NodePool general" in current.message


def test_an_automode_nodepool_is_stale_by_its_nodeclass_not_by_an_ec2nodeclass_of_that_name() -> None:
    """An Auto Mode NodePool's template is compared with the eks.amazonaws.com NodeClass it names:
    a changed `ephemeralStorage.size` there makes it unjudged; an EC2NodeClass of the same name
    with another spec does not."""
    import copy

    from tests.capacity.karpenter.test_published import NODECLASS, POOL

    pool = copy.deepcopy(POOL)
    pool["spec"]["template"]["spec"]["nodeClassRef"] = {
        "group": "eks.amazonaws.com",
        "kind": "NodeClass",
        "name": "default",
    }
    auto = {"apiVersion": "eks.amazonaws.com/v1", "kind": "NodeClass", "metadata": {"name": "default"}}
    built_from = {**auto, **copy.deepcopy(NODECLASS)}
    resized = {**auto, "spec": {**NODECLASS["spec"], "ephemeralStorage": {"size": "200Gi"}}}
    ec2 = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {},
    }
    view, _ = _pool_review({"cpu": "1"}, built_from, ec2, pool=pool)
    assert list(view.published_pools()) == ["general"]
    view, _ = _pool_review({"cpu": "1"}, resized, pool=pool)
    assert view.published_pools() == {}


@pytest.mark.slow
def test_a_class_changed_in_the_api_makes_its_nodepool_unjudged_until_republished(
    fake_kube: FakeKubeServer,  # noqa: F811
) -> None:
    """Through start_reflectors and the real client against the fake API server: the NodePool,
    its EC2NodeClass and its published template are listed and the NodePool is judged; the
    EC2NodeClass given a root volume by the API arrives by the watch and the NodePool is no longer
    judged; the class put back as it was, it is judged again. Auto Mode's NodeClasses, not served
    here (404 on eks.amazonaws.com/v1), are an empty synced store."""
    from capacity.karpenter.published import PROVIDER, published
    from capacity.template import NodeGroupTemplate
    from tests.capacity.karpenter.test_published import NODECLASS, POOL, SETTINGS

    fake_kube.faults.fail(404, path="/apis/eks.amazonaws.com/v1", count=None)
    record, _ = published(POOL, NODECLASS, SETTINGS, {}, lambda offer: {})
    fake_kube.apply(NodeGroupTemplate("general", provider=PROVIDER, karpenter=record).to_object())
    fake_kube.apply({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **copy.deepcopy(POOL)})
    nodeclass = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        **copy.deepcopy(NODECLASS),
    }
    fake_kube.apply(copy.deepcopy(nodeclass))
    view = ClusterView()
    reflectors = start_reflectors(view, fake_kube.api_client())
    try:
        eventually(view.ready, "every store synced")
        assert (len(view.ec2_node_classes), len(view.auto_node_classes)) == (1, 0)
        assert list(view.published_pools()) == ["general"]
        root = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "100Gi"}}]
        [current] = fake_kube.objects("EC2NodeClass")
        fake_kube.apply({**current, "spec": {**NODECLASS["spec"], "blockDeviceMappings": root}})
        eventually(lambda: view.published_pools() == {}, "the changed class watched")
        [current] = fake_kube.objects("EC2NodeClass")
        fake_kube.apply({**current, "spec": copy.deepcopy(NODECLASS["spec"])})
        eventually(lambda: list(view.published_pools()) == ["general"], "the class as it was")
    finally:
        for reflector in reflectors:
            reflector.stop()
