"""The one reading of a Kubernetes string map (capacity/string_maps.py): strict when the caller
names the field, lenient for labels under admission."""

from __future__ import annotations

import pytest

from capacity.string_maps import string_map


def test_a_named_field_must_be_a_map_and_its_entries_are_made_strings() -> None:
    """With a field name, keys and values become strings and a non-map is a TypeError naming it."""
    assert string_map({"a": "x", "n": 1, 2: True}, "metadata.labels") == {"a": "x", "n": "1", "2": "True"}
    assert string_map(None, "metadata.labels") == {}
    with pytest.raises(TypeError, match=r"^metadata\.labels: expected a map$"):
        string_map(["a"], "metadata.labels")


def test_without_a_field_a_non_map_is_empty_and_entries_not_strings_are_dropped() -> None:
    """Lenient reading: what the API server would have rejected is left out rather than coerced."""
    assert string_map({"a": "x", "n": 1, 2: "y", "b": "z"}) == {"a": "x", "b": "z"}
    assert string_map("labels") == {}
    assert string_map(None) == {}
