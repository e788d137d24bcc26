"""State files read as `kubectl get -o yaml|json` prints them, and bad ones say where they are bad."""

import re
from pathlib import Path

import pytest

from kube.statefile import StateFileError, by_kind, load_state, parse_state

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: default}\n"
NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"


def test_a_list_several_documents_and_json_all_read_the_same() -> None:
    as_list = parse_state(
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n"
    )
    as_documents = parse_state(f"{POD}---\n{NODE}")
    as_json = parse_state('{"kind": "PodList", "items": [{"kind": "Pod", "metadata": {"name": "a"}}]}')
    assert [o["metadata"]["name"] for o in as_list] == ["a"]
    assert [o["kind"] for o in as_documents] == ["Pod", "Node"]
    assert [o["kind"] for o in as_json] == ["Pod"]
    assert sorted(by_kind(as_documents)) == ["Node", "Pod"]


def test_empty_documents_are_skipped() -> None:
    assert len(parse_state(f"---\n{POD}---\n---\n")) == 1


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("kind: List\nitems: {a: 1}\n", "items must be a list"),
        ("- 1\n- 2\n", "expected an object"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "needs kind and metadata"),
        ("kind: List\nitems:\n- {kind: Pod}\n", "state[0].items[0]"),
        ("a: [1, 2\n", "not YAML or JSON"),
    ],
)
def test_bad_state_files_say_what_and_where(text: str, where: str) -> None:
    with pytest.raises(StateFileError, match=re.escape(where)):
        parse_state(text)


def test_a_missing_file_is_a_state_file_error(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="No such file"):
        load_state(tmp_path / "absent.yaml")


def test_the_bundled_examples_read() -> None:
    examples = Path(__file__).resolve().parents[1] / "examples"
    kinds = by_kind(load_state(examples / "cluster.yaml"))
    assert {"Namespace", "Node", "NodeGroupTemplate", "SecurityGroupPolicy", "ServiceAccount"} <= set(kinds)
