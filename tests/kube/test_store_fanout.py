"""kube/store.py: a Store's events, versions and listeners; Fanout: one reflector feeds several
stores of one kind, each with its own projection (the books' node records and discovery's slim
nodes from one node watch); and capacity/records.py discovery_node, the slim copy, keeps
everything discovery reads."""

from __future__ import annotations

import gc
import logging
from typing import Any

import pytest

from capacity.records import discovery_node
from kube.store import Fanout, Store, object_key


def node(name: str, zone: str = "a") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"topology.kubernetes.io/zone": zone},
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {"providerID": f"aws:///us-east-1{zone}/i-{name}", "taints": []},
        "status": {
            "allocatable": {"cpu": "2"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["big"], "sizeBytes": 1}],
            "volumesInUse": [],
            "volumesAttached": [],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"kubeletVersion": "v1.31.0"},
        },
    }


def test_discovery_node_keeps_only_what_discovery_reads() -> None:
    """The whole slim node: metadata's name and labels, the whole spec, status's allocatable and
    conditions (images, volumes, daemon endpoints, nodeInfo and managedFields left out)."""
    assert discovery_node(node("n1")) == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"providerID": "aws:///us-east-1a/i-n1", "taints": []},
        "status": {
            "allocatable": {"cpu": "2"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_a_fanout_keeps_each_store_equal_to_the_same_objects_in_its_own_projection() -> None:
    """A paged list (project + replace_records), then ADDED, MODIFIED and DELETED events: both
    stores hold exactly the live objects, each projected its own way, and both are synced."""
    names: Store[str] = Store("nodes", lambda o: o["metadata"]["name"].upper())
    slim: Store[dict[str, Any]] = Store("nodes (discovery)", discovery_node)
    fanout = Fanout([names, slim])
    fresh = {"": {"n1": fanout.project(node("n1")), "n2": fanout.project(node("n2"))}}
    fanout.replace_records(fresh, "10")  # type: ignore[arg-type]
    assert (names.synced, slim.synced, names.resource_version, slim.resource_version) == (
        True,
        True,
        "10",
        "10",
    )
    fanout.apply("ADDED", node("n3"), "11")
    fanout.apply("MODIFIED", node("n1", zone="b"), "12")
    fanout.apply("DELETED", node("n2"), "13")
    assert sorted(names.items()) == ["N1", "N3"]
    assert sorted((n["metadata"]["name"], n["metadata"]["labels"]) for n in slim.items()) == [
        ("n1", {"topology.kubernetes.io/zone": "b"}),
        ("n3", {"topology.kubernetes.io/zone": "a"}),
    ]
    fanout.advance("14")
    assert (names.resource_version, slim.resource_version) == ("14", "14")


def test_a_fanout_passes_resource_versions_rejections_and_its_kind_through() -> None:
    """The fan-out is named after its first store and is synced only once a list went through it;
    each event's resourceVersion reaches every store, an event without one leaves theirs as it was,
    a list without one clears it; an object one store rejects is kept by the other (None in its
    place) and one every store rejects projects to None; a whole relist (`replace`) reaches both."""
    names: Store[str] = Store("nodes", lambda o: o["metadata"]["name"].upper())
    zones: Store[str] = Store("zones", lambda o: o["metadata"]["labels"]["topology.kubernetes.io/zone"])
    fanout = Fanout([names, zones])
    assert (fanout.kind, fanout.synced) == ("nodes", False)
    unzoned = {"metadata": {"name": "bare", "labels": {}}}
    assert fanout.project(unzoned) == ("BARE", None)
    assert fanout.project({"metadata": {}}) is None
    fanout.replace_records({"": {"bare": ("BARE", None)}})  # type: ignore[arg-type]
    assert (fanout.synced, names.resource_version, zones.resource_version) == (True, "", "")
    assert (names.items(), zones.items()) == (["BARE"], [])
    fanout.apply("ADDED", node("n1"), "21")
    assert (names.resource_version, zones.resource_version) == ("21", "21")
    fanout.apply("MODIFIED", node("n1", zone="c"))
    assert (names.resource_version, zones.resource_version) == ("21", "21")
    assert (sorted(names.items()), zones.items()) == (["BARE", "N1"], ["c"])
    relisted = Fanout([names, zones])
    relisted.replace([node("n2", zone="d")], "30")
    assert (relisted.synced, names.items(), zones.items()) == (True, ["N2"], ["d"])
    assert (names.resource_version, zones.resource_version) == ("30", "30")
    relisted.replace([node("n4")])
    assert (names.items(), names.resource_version, zones.resource_version) == (["N4"], "", "")


def pod(name: str, namespace: str = "ns", *, ok: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "ok": ok}


def checked(obj: Any) -> str:
    if not obj["ok"]:
        raise ValueError("malformed")
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def test_a_store_tells_its_listeners_every_change_and_counts_versions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every change bumps the version by one and is told to each listener as (type, old, new),
    after a listener that raises too (its failure logged, naming the store); a relist reports
    vanished records deleted and every record modified with its old record; an object that
    becomes malformed leaves as a deletion and is counted rejected (a warning naming the store,
    the object and why); a relist without a namespace that had objects reports them deleted, and
    one without a resourceVersion clears it; deleting an absent object changes nothing but the
    version; an event without a resourceVersion keeps the last one; reads see namespaces apart
    and whole."""
    store: Store[str] = Store("pods", checked)
    seen: list[tuple[str, Any, Any]] = []

    def broken(*_: Any) -> None:
        raise RuntimeError("a listener's bug")

    store.add_listener(broken)
    store.add_listener(lambda kind, old, new: seen.append((kind, old, new)))
    assert (store.synced, store.version, store.resource_version, len(store)) == (False, 0, "", 0)
    store.replace([pod("a"), pod("b"), pod("c", "other"), pod("bad", ok=False)], "5")
    assert (store.synced, store.version, store.resource_version, store.rejected) == (True, 1, "5", 1)
    store.apply("ADDED", pod("d"), "6")
    store.apply("MODIFIED", pod("a"))
    assert (store.version, store.resource_version) == (3, "6")
    store.apply("DELETED", pod("b"), "8")
    store.apply("DELETED", pod("absent"), "9")
    store.apply("MODIFIED", pod("c", "other", ok=False), "10")
    assert (store.version, store.resource_version, store.rejected) == (6, "10", 2)
    store.advance("11")
    assert (store.version, store.resource_version) == (6, "11")
    assert (sorted(store.items()), store.items("ns"), store.items("none"), len(store)) == (
        ["ns/a", "ns/d"],
        ["ns/a", "ns/d"],
        [],
        2,
    )
    assert (store.get("ns", "a"), store.get("ns", "b"), store.get("other", "c")) == ("ns/a", None, None)
    store.apply("ADDED", pod("z", "other"))
    store.replace([pod("d"), pod("e")], "12")
    assert seen == [
        ("MODIFIED", None, "ns/a"),
        ("MODIFIED", None, "ns/b"),
        ("MODIFIED", None, "other/c"),
        ("ADDED", None, "ns/d"),
        ("MODIFIED", "ns/a", "ns/a"),
        ("DELETED", "ns/b", None),
        ("DELETED", "other/c", None),
        ("ADDED", None, "other/z"),
        ("DELETED", "ns/a", None),
        ("DELETED", "other/z", None),
        ("MODIFIED", "ns/d", "ns/d"),
        ("MODIFIED", None, "ns/e"),
    ]
    assert (store.version, store.resource_version, sorted(store.items())) == (8, "12", ["ns/d", "ns/e"])
    store.replace_records({})
    assert (store.version, store.resource_version, store.items()) == (9, "", [])
    rejected = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert rejected == [
        "skipping malformed pods ns/bad: malformed",
        "skipping malformed pods other/c: malformed",
    ]
    assert {r.getMessage() for r in caplog.records if r.levelno == logging.ERROR} == {
        "listener of pods failed"
    }


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        ({"metadata": {"namespace": "ns", "name": "a"}}, ("ns", "a")),
        ({"metadata": {"name": "cluster-wide"}}, ("", "cluster-wide")),
        ({"metadata": {"namespace": None, "name": 7}}, ("", "7")),
        ({"metadata": {}}, ("", "")),
        ({}, ("", "")),
        ({"metadata": None}, ("", "")),
        ({"metadata": 3}, ("", "")),
        ({"metadata": ["ns", "a"]}, ("", "")),
        ("not an object", ("", "")),
        (None, ("", "")),
    ],
)
def test_an_object_is_keyed_by_namespace_and_name_and_a_malformed_one_by_empty_parts(
    obj: Any, key: tuple[str, str]
) -> None:
    """object_key gives (namespace, name) as text, with "" for a part that is missing, and
    ("", "") for an object that is not a map or whose metadata is not a map."""
    assert object_key(obj) == key


@pytest.mark.parametrize("enabled", [True, False])
def test_a_relist_tells_its_listeners_with_the_collector_paused_then_restores_it_and_is_synced(
    enabled: bool,
) -> None:
    """While a relist's changes are told, the cyclic collector is paused and the store is not yet
    synced (what the listeners keep is complete before anyone waiting for `synced` goes on); after
    it the collector is as the caller left it, enabled or not, and the store is synced."""
    store: Store[str] = Store("pods", checked)
    seen: list[tuple[str, bool, bool]] = []
    store.add_listener(lambda kind, old, new: seen.append((kind, gc.isenabled(), store.synced)))
    was = gc.isenabled()
    try:
        if enabled:
            gc.enable()
        else:
            gc.disable()
        store.replace([pod("a"), pod("b")], "1")
        assert (gc.isenabled(), store.synced) == (enabled, True)
        store.replace([pod("b")], "2")
        assert (gc.isenabled(), store.synced) == (enabled, True)
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()
    assert seen == [
        ("MODIFIED", False, False),
        ("MODIFIED", False, False),
        ("DELETED", False, True),
        ("MODIFIED", False, True),
    ]
