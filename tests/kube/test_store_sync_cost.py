"""What the controller's sync does to go faster must not change what it computes: the list page's
projection pauses the cyclic GC and turns it back on (kube/store.py project_page), and a
quantity string seen before is taken from a memo (capacity/resources.py parse_resources)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from capacity.quantity import QuantityError
from capacity.resources import parse_resources
from kube.store import project_page as _project_page


def test_a_page_is_projected_with_the_gc_paused_and_the_gc_is_back_on_after() -> None:
    """Every object projected while the GC is paused; the records keyed by namespace and name; the
    GC enabled again afterwards, also when a projection raises."""
    assert gc.isenabled()
    during: list[bool] = []

    def project(obj: dict[str, Any]) -> str | None:
        during.append(gc.isenabled())
        return None if obj["metadata"]["name"] == "skip" else obj["metadata"]["name"].upper()

    fresh: dict[str, dict[str, Any]] = {}
    items = [{"metadata": {"namespace": "a", "name": n}} for n in ("p1", "skip", "p2")]
    _project_page(project, items, fresh)
    assert (during, fresh, gc.isenabled()) == ([False, False, False], {"a": {"p1": "P1", "p2": "P2"}}, True)

    def broken(obj: dict[str, Any]) -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        _project_page(broken, items, {})
    assert gc.isenabled()


def test_quantities_parse_the_same_the_first_and_the_second_time() -> None:
    """Strings, whole numbers and floats, twice over (the second time from the memo for strings):
    the same whole map; a bad string is refused both times with the field named."""
    raw = {"cpu": "250m", "memory": 64, "ephemeral-storage": 1.5, "pods": "110"}
    want = {"cpu": 250, "memory": 64_000, "ephemeral-storage": 1_500, "pods": 110_000}
    assert parse_resources(raw, "r") == want
    assert parse_resources(raw, "r") == want
    assert parse_resources({"cpu": 2, "memory": "250m"}, "r") == {"cpu": 2_000, "memory": 250}
    for _ in range(2):
        with pytest.raises(QuantityError, match=r"^r\.cpu: invalid quantity '12x'"):
            parse_resources({"cpu": "12x"}, "r")


def test_the_first_synced_cache_leaves_the_garbage_collectors_generations() -> None:
    """Once every store of the controller's cache has listed, the records are frozen out of the
    cyclic GC (gc.freeze), so later watch events do not pay for walking them; not before."""
    from controller.cache import ClusterCache

    gc.unfreeze()
    cache = ClusterCache()
    try:
        cache.nodes.replace([], "1")
        cache.pods.replace([{"metadata": {"namespace": "a", "name": "p1"}}], "1")
        assert (cache.wait_synced(0), gc.get_freeze_count()) == (False, 0)
        cache.fill({})
        assert cache.wait_synced(0)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_lists_notifications_run_with_the_gc_paused_and_it_is_back_on_after() -> None:
    """The listeners of a full list are called with the GC paused; it is on again afterwards."""
    from kube.store import Store

    store: Store[dict[str, Any]] = Store("pods")
    during: list[bool] = []
    store.add_listener(lambda event, old, new: during.append(gc.isenabled()))
    store.replace([{"metadata": {"namespace": "a", "name": n}} for n in ("p1", "p2")], "1")
    assert (during, gc.isenabled()) == ([False, False], True)
