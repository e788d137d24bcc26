"""kube/bounded.py: the bounds every user-supplied YAML or JSON file is read within, at their edges
(a document just inside each bound reads, one just past it is refused, with the line)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from kube import bounded
from kube.bounded import (
    LIBYAML_MAX_NEST,
    MAX_DEPTH,
    InputLimitError,
    allowed_alias_ratio,
    excessive_aliasing,
    load_json,
    yaml_documents,
)


def nested_yaml(levels: int) -> str:
    """`levels` maps, each holding the next, in block style, the innermost holding a scalar."""
    return "".join("  " * i + f"k{i}:\n" for i in range(levels - 1)) + "  " * (levels - 1) + "k: v\n"


def nested_json(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def test_kubectls_alias_ratio_at_its_edges() -> None:
    """yaml.v2's allowedAliasRatio: 99 % up to 400,000 nodes, 10 % from 4,000,000, linear between;
    nothing is refused until more than 1,000 nodes and more than 100 of them from aliases."""
    assert allowed_alias_ratio(400_000) == 0.99
    assert allowed_alias_ratio(4_000_000) == 0.10
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert not excessive_aliasing(1000, 1000)
    assert not excessive_aliasing(100_000, 100)
    assert excessive_aliasing(1001, 1000)
    assert not excessive_aliasing(1001, 990)
    assert excessive_aliasing(5_000_000, 500_001)
    assert not excessive_aliasing(5_000_000, 500_000)


def test_ordinary_aliases_read_and_each_alias_is_the_anchors_value() -> None:
    """A manifest sharing one env list between 50 containers by alias reads whole."""
    containers = "\n".join(f"  - {{name: c{i}, env: *env}}" for i in range(50))
    text = "env: &env [{name: A, value: '1'}, {name: B, value: '2'}]\ncontainers:\n" + containers + "\n"
    [(_, doc)] = list(yaml_documents(text))
    assert [c["env"][1]["value"] for c in doc["containers"]] == ["2"] * 50


def test_a_self_referencing_anchor_is_refused() -> None:
    """`&a [*a]` would be an infinite document: refused with its line."""
    with pytest.raises(InputLimitError) as refused:
        list(yaml_documents("x: 1\na: &a [*a]\n"))
    assert (refused.value.line, refused.value.reason) == (2, "an anchor contains an alias of itself")


def test_nesting_reads_to_the_bound_and_not_past_it() -> None:
    """128 levels of collections read (YAML and JSON); 129 are refused, the YAML with the line of
    the first collection too deep."""
    assert len(list(yaml_documents(nested_yaml(MAX_DEPTH)))) == 1
    with pytest.raises(InputLimitError) as refused:
        list(yaml_documents(nested_yaml(MAX_DEPTH + 1)))
    assert refused.value.line == MAX_DEPTH + 1
    assert load_json(nested_json(MAX_DEPTH)) is not None
    with pytest.raises(InputLimitError, match="nested deeper than 128 levels"):
        load_json(nested_json(MAX_DEPTH + 1))
    with pytest.raises(InputLimitError):
        load_json(nested_json(100_000))  # Python's own decoder gives up first: the same error


def test_json_that_is_not_json_is_still_a_decode_error() -> None:
    """The bounds do not hide a syntax error: json.JSONDecodeError, for the caller to try YAML."""
    with pytest.raises(json.JSONDecodeError):
        load_json("{")


def test_libyaml_refuses_nesting_past_its_own_limit_before_composing_it() -> None:
    """The fast reading composes with libyaml, which recurses once per level: it relies on
    libyaml's own nesting limit (1,000 levels) so that no text, however deep, reaches that
    recursion unbounded. A PyYAML whose libyaml lacks the limit fails here."""
    deep = "[" * (LIBYAML_MAX_NEST + 1) + "]" * (LIBYAML_MAX_NEST + 1)
    with pytest.raises(yaml.YAMLError, match="exceeded maximum nesting depth"):
        yaml.compose(deep, Loader=yaml.CSafeLoader)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\n---\nb: [1, {c: 2}]\n---\n",  # several documents, an empty one last
        "just a scalar\n---\n- [a, [b, [c]]]\n- {k: [v]}\n",  # a scalar document, nested lists
        "a: &x 1\nb: &x 2\n",  # a duplicate anchor, no alias: the counting reader's words
        "a: 1\n---\nb: [\n",  # the second document broken
        "x: '*not an alias'\ny: \"a * b\"\n",  # a star after a blank: read the counting way
        "- " * 40 + "x\n" + "a: b\n",  # not YAML at its second line
        nested_yaml(MAX_DEPTH + 1),
        "---\n" + nested_yaml(MAX_DEPTH) + "---\n" + nested_yaml(MAX_DEPTH + 5),
        "t: !!binary aGVsbG8=\nd: 2024-01-01\nf: .nan\nn: ~\nm: {<<: {a: 1}, b: 2}\n",
        "a: !!python/object:os.system x\n",  # a tag the safe constructor refuses
    ],
)
def test_the_fast_reading_gives_what_the_counting_reading_gives(text: str) -> None:
    """Documents, objects, lines and errors (type, words, line) are the counting reader's, whether a
    text is read by libyaml's composer (no alias possible) or the counting way."""
    fast = _outcome(lambda: yaml_documents(text))
    counted = _outcome(lambda: bounded._counted_documents(text))
    assert repr(fast) == repr(counted)


def _outcome(read: Any) -> list[Any]:
    """What a reading yields (each document's first line and object) and how it ends."""
    seen: list[Any] = []
    try:
        for node, doc in read():
            seen.append((node.start_mark.line if node is not None else None, doc))
    except (yaml.YAMLError, InputLimitError) as err:
        seen.append((type(err).__name__, str(err)))
    return seen
