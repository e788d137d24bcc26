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
    examples = Path(__file__).resolve().parents[2] / "examples"
    kinds = by_kind(load_state(examples / "cluster.yaml"))
    assert {"Namespace", "Node", "NodeGroupTemplate", "SecurityGroupPolicy", "ServiceAccount"} <= set(kinds)


A = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "default"}}
N = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}


@pytest.mark.parametrize(
    "text",
    [
        f"{POD}---\n{NODE}",
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: n}}\n",
        "kind: List\nitems:\n- {kind: PodList, items: "
        "[{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default}}]}\n"
        "---\nkind: NodeList\nitems: null\n---\n{apiVersion: v1, kind: Node, metadata: {name: n}}\n",
        '[{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "default"}},'
        ' {"kind": "NodeList", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}]}]',
        '  {"kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", '
        '"namespace": "default"}}, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}]}',
        # not JSON (unquoted keys) but YAML's flow style: read as YAML
        "{apiVersion: v1, kind: List, items: "
        "[{apiVersion: v1, kind: Pod, metadata: {name: a, namespace: default}},"
        " {apiVersion: v1, kind: Node, metadata: {name: n}}]}",
    ],
)
def test_every_form_of_a_state_file_reads_as_the_same_whole_objects(text: str) -> None:
    """Several YAML documents, a List (nested Lists, a List with null items), a JSON array or
    object, and YAML flow style that only looks like JSON all give the same whole objects in
    order, and group by kind into the same whole map."""
    objects = parse_state(text)
    assert objects == [A, N]
    assert by_kind(objects) == {"Pod": [A], "Node": [N]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: List\nitems: {a: 1}\n", "f.yaml[0]: items must be a list"),
        ("kind: PodList\nitems: 3\n", "f.yaml[0]: items must be a list"),
        ("- 1\n- 2\n", "f.yaml[0]: expected an object, got list"),
        ("[1]", "f.yaml[0]: expected an object, got int"),
        (f"{POD}---\nplain text\n", "f.yaml[1]: expected an object, got str"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "f.yaml[0]: every object needs kind and metadata"),
        ("kind: Pod\nmetadata: a\n", "f.yaml[0]: every object needs kind and metadata"),
        ("kind: Pod\n", "f.yaml[0]: every object needs kind and metadata"),
        ("kind: PodList\n", "f.yaml[0]: every object needs kind and metadata"),
        (
            "kind: List\nitems:\n- {kind: Pod, metadata: {}}\n- {kind: Pod}\n",
            "f.yaml[0].items[1]: every object needs kind and metadata",
        ),
        (
            '{"kind": "List", "items": [{"kind": "List", "items": [7]}]}',
            "f.yaml[0].items[0].items[0]: expected an object, got int",
        ),
    ],
)
def test_a_bad_state_file_gets_one_whole_message_saying_where(text: str, message: str) -> None:
    """Each bad shape is refused with the source's name, the document's index, the path to the
    bad item and what is wrong, as one whole message."""
    with pytest.raises(StateFileError) as refused:
        parse_state(text, "f.yaml")
    assert str(refused.value) == message


def test_unreadable_text_and_files_are_state_file_errors_naming_the_source(tmp_path: Path) -> None:
    """Text neither JSON nor YAML names the source (default `state`) and YAML's complaint; a missing
    file names its path and the OS's reason; a readable file reads whole, with its path as the
    source of any complaint."""
    with pytest.raises(StateFileError) as broken:
        parse_state("a: [1, 2\n")
    assert str(broken.value).startswith("state: not YAML or JSON: while parsing a flow sequence")
    missing = tmp_path / "absent.yaml"
    with pytest.raises(StateFileError) as absent:
        load_state(missing)
    assert str(absent.value) == f"{missing}: No such file or directory"
    good = tmp_path / "good.yaml"
    good.write_text(f"{POD}---\n{NODE}", encoding="utf-8")
    assert load_state(str(good)) == [A, N]
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "Pod"}', encoding="utf-8")
    with pytest.raises(StateFileError) as refused:
        load_state(bad)
    assert str(refused.value) == f"{bad}[0]: every object needs kind and metadata"


@pytest.mark.parametrize(
    "text",
    [
        '\n  {"kind": "List", "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": '
        '{"name": "\\ud83d\\ude00", "namespace": "default"}}]}',
        '\n  [{"apiVersion": "v1", "kind": "Pod", "metadata": '
        '{"name": "\\ud83d\\ude00", "namespace": "default"}}]',
    ],
    ids=["object", "array"],
)
def test_json_that_yaml_cannot_read_is_read_as_json(text: str) -> None:
    """Text that starts (after leading blanks) with `{` or `[` is read as JSON first: JSON with a
    character outside the BMP escaped as a surrogate pair (as `json.dumps` writes it), which YAML
    refuses, still reads whole."""
    assert parse_state(text) == [{**A, "metadata": {"name": "\U0001f600", "namespace": "default"}}]
