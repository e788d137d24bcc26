"""kube/store.py: a store counts as synced only once its listeners have seen the first list, so
whoever waits for `synced` (the books' wait for their stores, the controller's start-up, the benchmark's
probe) finds the books built from the whole list, not from part of it."""

from __future__ import annotations

from typing import Any

from kube.store import Store


def test_listeners_see_the_first_list_before_the_store_counts_as_synced() -> None:
    """Each notification of the first list sees synced False; once replace_records returns it is True."""
    store: Store[dict[str, Any]] = Store("pods")
    seen: list[tuple[str, str, bool]] = []
    store.add_listener(lambda event, old, new: seen.append((event, new["metadata"]["name"], store.synced)))
    pods = [{"metadata": {"namespace": "a", "name": name}} for name in ("p1", "p2")]
    store.replace(pods, "7")
    assert seen == [("MODIFIED", "p1", False), ("MODIFIED", "p2", False)]
    assert (store.synced, store.resource_version, len(store)) == (True, "7", 2)


def test_an_object_whose_metadata_is_not_a_map_is_counted_and_skipped() -> None:
    """A pod with `metadata: [{}]` or a bare number among the items: rejected and counted, and
    the rest of the list is kept (the key lookup used to raise while logging the rejection)."""
    from capacity.records import project_pod

    store: Store[Any] = Store("pods", project_pod)
    good = {"metadata": {"namespace": "a", "name": "p1"}}
    store.replace([{"metadata": [{}]}, 7, good], "3")  # type: ignore[list-item]
    assert (store.rejected, [record.name for record in store.items()]) == (2, ["p1"])
