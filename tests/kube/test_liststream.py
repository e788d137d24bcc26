"""kube/liststream.py: a list body's items read one at a time, exactly as a whole-body json.loads
would give them, whatever the member order, whitespace, string contents and chunk boundaries; and
every body that is not a complete JSON object refused, with the words a whole-body decode used."""

from __future__ import annotations

import itertools
import json
import random
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube import podwire
from kube.liststream import WHOLE_BELOW, BadList, ListReader
from tests.budget import examples

_BLANKS = ["", "", "", " ", "\n", "\t", "\r\n", "  \n\t "]

# strings that a byte scanner gets wrong: quotes, backslashes, brackets, commas and colons inside
# them, escapes of each, non-ASCII text (multi-byte in UTF-8, split across chunks)
_TRICKY = st.sampled_from(
    ['"', "\\", "\\\\", '\\"', "{", "}", "[", "]", ",", ":", "]}", '"items"', "é", "😀"]
)
_TEXT = st.lists(st.one_of(_TRICKY, st.text(max_size=8)), max_size=6).map("".join)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    _TEXT,
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=20,
)


def encode(value: Any, rng: random.Random, ascii_only: bool) -> str:
    """JSON text of `value` with random whitespace between every two tokens."""

    def blank() -> str:
        return rng.choice(_BLANKS)

    if isinstance(value, dict):
        members = [
            f"{blank()}{encode(k, rng, ascii_only)}{blank()}:{blank()}{encode(v, rng, ascii_only)}{blank()}"
            for k, v in value.items()
        ]
        return "{" + (",".join(members) if members else blank()) + "}"
    if isinstance(value, list):
        elements = [f"{blank()}{encode(v, rng, ascii_only)}{blank()}" for v in value]
        return "[" + (",".join(elements) if elements else blank()) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def list_body(items: list[Any], others: dict[str, Any], rng: random.Random, ascii_only: bool) -> bytes:
    """A list object with `items` placed among the other members at a random position."""
    members = list(others.items())
    members.insert(rng.randint(0, len(members)), ("items", items))
    return encode(dict(members), rng, ascii_only).encode()


def chunked(body: bytes, rng: random.Random) -> Iterator[bytes]:
    """`body` cut at random places, one-byte chunks included (splitting escapes and UTF-8)."""
    pos = 0
    while pos < len(body):
        size = rng.choice([1, 2, 3, 7, 64, 1000])
        yield body[pos : pos + size]
        pos += size


def read(chunks: Any, decode: Any = json.loads, whole: Any = None) -> tuple[list[Any], dict[str, Any]]:
    """The items and members as the reader gives them: item by item, or with `whole` (a decoder of
    the whole items array) where the body has ended within WHOLE_BELOW bytes."""
    reader = ListReader(chunks, decode, whole)
    items = list(reader.items())
    return items, reader.members


_MODES = st.sampled_from([None, json.loads])  # item by item; the whole array at once


_OTHERS = st.dictionaries(_TEXT.filter(lambda k: k != "items"), _VALUES, max_size=3).map(
    lambda d: {"metadata": {"resourceVersion": "12", "continue": 'a"b\\'}, **d}
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(_VALUES, max_size=8),
    others=_OTHERS,
    seed=st.integers(),
    ascii_only=st.booleans(),
    whole=_MODES,
)
def test_streamed_items_equal_the_whole_body_decode(
    items: list[Any], others: dict[str, Any], seed: int, ascii_only: bool, whole: Any
) -> None:
    """For arbitrary items (nested arrays, empty objects, strings full of quotes, backslashes and
    brackets, unicode) and metadata before or after them, with whitespace anywhere and any chunk
    boundaries, the items and the other members are json.loads' of the whole body, read item by
    item or as one array."""
    rng = random.Random(seed)
    body = list_body(items, others, rng, ascii_only)
    expected = json.loads(body)
    got_items, members = read(chunked(body, rng), whole=whole)
    assert got_items == expected["items"]
    assert members == {k: v for k, v in expected.items() if k != "items"}


@settings(max_examples=examples(100), deadline=None)
@given(items=st.lists(_VALUES, min_size=1, max_size=4), others=_OTHERS, seed=st.integers(), whole=_MODES)
def test_every_truncated_body_is_refused(
    items: list[Any], others: dict[str, Any], seed: int, whole: Any
) -> None:
    """A body that breaks off anywhere before the object's end is a BadList, never a short list."""
    rng = random.Random(seed)
    body = list_body(items, others, rng, False).rstrip()
    for cut in {rng.randrange(len(body)) for _ in range(20)} | {0, 1, len(body) - 1}:
        with pytest.raises(BadList, match="not JSON"):
            read(chunked(body[:cut], rng), whole=whole)


@settings(max_examples=examples(200), deadline=None)
@given(
    items=st.lists(_VALUES, max_size=4),
    others=_OTHERS,
    seed=st.integers(),
    garbage=st.binary(min_size=1, max_size=3),
    whole=_MODES,
)
def test_garbled_bodies_are_refused_or_read_as_json_reads_them(
    items: list[Any], others: dict[str, Any], seed: int, garbage: bytes, whole: Any
) -> None:
    """Bytes overwritten anywhere: when json.loads refuses the result, so does the reader; when the
    reader accepts it, it reads what json.loads reads."""
    rng = random.Random(seed)
    body = bytearray(list_body(items, others, rng, False))
    at = rng.randrange(len(body))
    body[at : at + len(garbage)] = garbage
    try:
        expected = json.loads(bytes(body))
    except ValueError:
        with pytest.raises(BadList):
            read(chunked(bytes(body), rng), whole=whole)
        return
    try:
        got_items, members = read(chunked(bytes(body), rng), whole=whole)
    except BadList:
        return  # stricter than json.loads (NaN, a second items array): refused, not misread
    assert isinstance(expected, dict)
    streamed = isinstance(expected.get("items"), list)
    assert got_items == (expected["items"] if streamed else [])
    assert members == {k: v for k, v in expected.items() if not (k == "items" and streamed)}


_NOT_JSON = "list page is not JSON: "


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", _NOT_JSON + "Expecting value: line 1 column 1 (char 0)"),
        (b"   ", _NOT_JSON + "Expecting value: line 1 column 1 (char 0)"),
        (b"<html>gateway timeout</html>", _NOT_JSON + "Expecting value: line 1 column 1 (char 0)"),
        (b"[1, 2]", "list page is not an object"),
        (b'"items"', "list page is not an object"),
        (b'{"items": [1, 2]', _NOT_JSON + "the body ends inside the list object"),
        (b'{"items": [1, 2}', _NOT_JSON + "expected ',' or ']' in the items array, got '}'"),
        (b'{"items": [1 2]}', _NOT_JSON + "expected ',' or ']' in the items array, got '2'"),
        (b'{"items" [1]}', _NOT_JSON + "expected ':' in the list object, got '['"),
        (b'{"a": 1 "b": 2}', _NOT_JSON + "expected ',' or '}' in the list object, got '\"'"),
        # a NUL is a byte like any other, not the end of the body
        (b'{"items": [1]\x00}', _NOT_JSON + "expected ',' or '}' in the list object, got '\\x00'"),
        (b'{"items": []}\x00', _NOT_JSON + "data after the list object"),
        (b'{"items": []} {}', _NOT_JSON + "data after the list object"),
        (b"{}x", _NOT_JSON + "data after the list object"),
        (b'{"items": [{"a": "b}]}', _NOT_JSON + "the body ends inside a value"),
        (b'{"items": [12', _NOT_JSON + "the body ends inside a value"),
        # msgspec's own words for an invalid value, not "ends inside": the body did not end there
        (b'{"items": [nul]}', _NOT_JSON + "JSON is malformed: invalid character (byte 1)"),
        (b'{"items": [], }', _NOT_JSON + "JSON is malformed: invalid character (byte 0)"),
        (b'{"items": [], "items": []}', _NOT_JSON + "it has two items arrays"),
        (b"{1: []}", _NOT_JSON + "an object key is not a string"),
    ],
)
def test_bad_bodies_are_refused_with_one_line(body: bytes, words: str) -> None:
    """Each kind of bad body gets its own one-line reason, whole: the place in the body and the byte
    found there, or the whole-body decoder's words where the body is not an object; the same reason
    whether the items are read one by one or as one array, in one chunk or byte by byte."""
    for size, whole in itertools.product((1, len(body) or 1), (None, json.loads)):
        with pytest.raises(BadList) as caught:
            read((body[i : i + size] for i in range(0, len(body), size)), whole=whole)
        assert str(caught.value) == words


def test_an_items_member_that_is_not_an_array_is_kept_as_a_member() -> None:
    """`"items": null` (an empty list as some servers write it) yields nothing and is kept."""
    assert read([b'{"items": null, "metadata": {"resourceVersion": "3"}}']) == (
        [],
        {"items": None, "metadata": {"resourceVersion": "3"}},
    )


def test_numbers_cut_at_a_chunk_boundary_are_read_whole() -> None:
    """An item that is a number split across chunks is one number, not two."""
    assert read([b'{"items": [12', b"34, 5", b"6]}"]) == ([1234, 56], {})


@pytest.mark.parametrize("whole", [None, json.loads])
def test_a_number_cut_where_it_is_not_yet_valid_waits_for_the_next_chunk(whole: Any) -> None:
    """msgspec refuses "1.", "1e", "1e+" and "-" at the end of what arrived as invalid numbers, at a
    byte one past the end (not as truncated): there the next chunk decides, and the number is read
    whole."""
    chunks = [b'{"items": [1.', b"5, -", b"2, 1e", b"3, 2e+", b"1]}"]
    assert read(chunks, whole=whole) == ([1.5, -2, 1000.0, 20.0], {})


@pytest.mark.parametrize("whole", [None, json.loads])
def test_an_empty_object_and_blanks_around_the_object_read_as_nothing(whole: Any) -> None:
    """Blanks before and after the object, and an object with no members, in chunks of any size:
    no items, no members, no refusal."""
    assert read([b" ", b"\n{", b" ", b"}", b"\t"], whole=whole) == ([], {})
    assert read([b"{}"], whole=whole) == ([], {})
    assert read([b' \r\n {"items": [1], "kind": "List"} '], whole=whole) == ([1], {"kind": "List"})


def test_an_array_decoder_that_gives_no_list_is_not_trusted() -> None:
    """A whole-array decoder that answers with something other than a list (a tuple here) has not
    decoded the page: each item goes through the item decoder instead."""
    items, members = read(
        [b'{"items": [1, 2], "kind": "List"}'], lambda raw: ("item", json.loads(raw)), tuple
    )
    assert (items, members) == ([("item", 1), ("item", 2)], {"kind": "List"})


def _counted_array_decoder(decode: Callable[[bytes], Any] = json.loads) -> tuple[list[int], Any]:
    """An array decoder that records the length of each array it is given, and `decode`s it."""
    arrays: list[int] = []

    def one_array(data: bytes) -> Any:
        arrays.append(len(data))
        return decode(data)

    return arrays, one_array


def test_a_short_array_in_a_body_that_goes_on_past_the_read_ahead_is_read_item_by_item() -> None:
    """The one-array decode is for a body that has ended within WHOLE_BELOW bytes of the array; a
    short array followed by a member longer than that (the body has not ended) is read item by item,
    although the array itself arrived whole."""
    pad = b"x" * (WHOLE_BELOW + 10)
    body = b'{"items": [1, 2], "metadata": {"pad": "' + pad + b'"}}'
    arrays, one_array = _counted_array_decoder()
    items, members = read((body[i : i + 50_000] for i in range(0, len(body), 50_000)), json.loads, one_array)
    assert (items, arrays) == ([1, 2], [])
    assert members == {"metadata": {"pad": pad.decode()}}


def test_an_array_after_a_long_member_that_ends_within_the_read_ahead_is_decoded_as_one() -> None:
    """What counts is the body after the array's start, not what was read before it: an array after
    a 3 MB member, in a body that ends 2 MB later, is one decode."""
    mb = 1 << 20
    body = (
        b'{"metadata": {"pad": "'
        + b"x" * (3 * mb)
        + b'"}, "items": [1, 2], "kind": "'
        + b"y" * (2 * mb)
        + b'"}'
    )
    arrays, one_array = _counted_array_decoder()
    items, members = read((body[i : i + mb] for i in range(0, len(body), mb)), json.loads, one_array)
    assert (items, len(arrays)) == ([1, 2], 1)
    assert members["kind"] == "y" * (2 * mb)


def test_a_value_many_chunks_long_is_read_whole() -> None:
    """An item far larger than a chunk (a 1 MB ConfigMap) arrives whole."""
    big = {"data": {"k": "x" * 1_000_000}}
    body = json.dumps({"items": [big, {}]}).encode()
    assert read(body[i : i + 4096] for i in range(0, len(body), 4096)) == ([big, {}], {})


def test_pods_decode_as_the_page_decoder_decodes_them() -> None:
    """With kube/podwire.py's pod decoder, each streamed pod equals the whole-page decode's."""
    from tests.bench import bigcluster

    pods = bigcluster.render(40, 0).pods
    body = b'{"kind":"PodList","items":[' + b",".join(pods) + b'],"metadata":{"resourceVersion":"9"}}'
    items, members = read((body[i : i + 5000] for i in range(0, len(body), 5000)), podwire.decode_pod)
    assert items == podwire.decode_page(body)["items"]
    assert members["metadata"] == {"resourceVersion": "9"}


def test_a_page_that_arrived_whole_is_decoded_as_one_array() -> None:
    """A body that ends within WHOLE_BELOW bytes is given to the array decoder once, and no item
    goes through the item decoder; the pods equal the item-by-item decode's."""
    from tests.bench import bigcluster

    pods = bigcluster.render(40, 0).pods
    body = b'{"kind":"PodList","items":[' + b",".join(pods) + b'],"metadata":{"resourceVersion":"9"}}'
    arrays, one_array = _counted_array_decoder(podwire.decode_items)

    def no_item(data: bytes) -> Any:
        raise AssertionError("an item decoded on its own")

    chunks = [body[i : i + 5000] for i in range(0, len(body), 5000)]
    items, members = read(iter(chunks), no_item, one_array)
    assert len(arrays) == 1
    assert items == read(iter(chunks), podwire.decode_pod)[0]
    assert members["metadata"] == {"resourceVersion": "9"}


def test_an_odd_pod_in_a_whole_array_is_decoded_as_alone() -> None:
    """A pod the schema refuses inside a page read whole takes the tolerant path alone, as it does
    item by item: the same objects either way, the other pods slim."""
    from tests.bench import bigcluster

    pods = bigcluster.render(3, 0).pods
    odd = b'{"metadata":{"name":"odd","labels":7},"spec":{"containers":"x"}}'
    body = b'{"items":[' + b",".join([pods[0], odd, pods[1]]) + b"]}"
    whole = read([body], podwire.decode_pod, podwire.decode_items)[0]
    assert whole == read([body], podwire.decode_pod)[0]
    assert whole[1] == json.loads(odd)


def _big_list(count: int, item: bytes, chunk: int = 50_000) -> Iterator[bytes]:
    """A list body of `count` copies of `item` in `chunk`-byte pieces that cut items anywhere,
    generated piece by piece (never whole here either)."""

    def parts() -> Iterator[bytes]:
        yield b'{"metadata":{"resourceVersion":"1"},"items":['
        for i in range(count):
            yield item if i == count - 1 else item + b","
        yield b'],"kind":"List"}'

    pending = b""
    for part in parts():
        pending += part
        while len(pending) >= chunk:
            yield pending[:chunk]
            pending = pending[chunk:]
    yield pending


def test_peak_memory_is_one_chunk_and_one_item_not_the_body() -> None:
    """Reading a 20,000-item list (about 10 MB) allocates at most a few chunks' worth at once:
    the body is never held whole. The bound is a ratio of the body's size, not a time."""
    item = json.dumps(
        {"metadata": {"name": "x" * 300, "labels": {"a": "b" * 100}}, "spec": list(range(20))}
    ).encode()
    count = 20_000
    body_size = count * (len(item) + 1)
    seen = 0
    tracemalloc.start()
    try:
        reader = ListReader(_big_list(count, item), json.loads)
        for _ in reader.items():  # each item dropped at once, as the projection keeps only records
            seen += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == count
    assert reader.members == {"metadata": {"resourceVersion": "1"}, "kind": "List"}
    assert peak < body_size / 20, f"peak {peak} B for a {body_size} B body"


def test_an_item_the_callers_decoder_refuses_is_one_line_naming_the_decoders_words() -> None:
    """An item that is JSON but not what the caller's decoder takes (a number where a typed decoder
    wants an object): the list is refused with the decoder's own words, one line."""
    with pytest.raises(BadList) as caught:
        read([b'{"items": [{"a": 1}, 5]}'], msgspec.json.Decoder(dict).decode)
    assert str(caught.value) == "list page is not JSON: Expected `object`, got `int`"


def test_a_body_longer_than_the_read_ahead_is_read_item_by_item() -> None:
    """With an array decoder, a body that goes on past WHOLE_BELOW bytes is still never held whole:
    the peak is the read-ahead twice (its chunks, then their join) and a few chunks, not the body
    (half of it here)."""
    item = json.dumps({"metadata": {"name": "x" * 300}, "spec": list(range(20))}).encode()
    count = 4 * WHOLE_BELOW // len(item)
    arrays, one_array = _counted_array_decoder()
    tracemalloc.start()
    try:
        reader = ListReader(_big_list(count, item), json.loads, one_array)
        seen = sum(1 for _ in reader.items())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seen == count
    assert arrays == []
    assert peak < 2 * WHOLE_BELOW + 4 * 50_000, f"peak {peak} B for a {count * len(item)} B body"
