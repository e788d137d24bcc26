"""The answer is written by orjson only where that gives json.dumps's bytes (webhook/answer.py
`json_bytes`): every answer of both webhooks to the add-on corpus and the benchmark's reviews, in
each mode; any text (every ASCII character, DEL, beyond ASCII, lone surrogates); and the values
orjson refuses or writes otherwise go to json.dumps, which decides as before."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.bench import synth
from tests.corpus.subjects import CLUSTERS, load_objects, subjects, with_installed_accounts
from tests.webhook.test_review_wire import review_of
from webhook.answer import Webhook, answer, json_bytes, review_response
from webhook.cluster import from_objects
from webhook.review import Verdict, WebhookOptions
from webhook.review_wire import load_json


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


@functools.cache
def demo_objects() -> list[dict[str, Any]]:
    return with_installed_accounts(load_objects(CLUSTERS["demo"]))


@pytest.mark.parametrize("mode", ["enforce", "warn", "audit"])
def test_every_answer_to_the_corpus_and_the_benchmark_is_written_as_json_dumps_writes_it(mode: str) -> None:
    """Allowed, denied (long messages), warned, patched and abstained answers alike."""
    config = WebhookOptions(mode=mode)
    corpus = [(from_objects(demo_objects()), review_of(s.obj)) for s in subjects(demo_objects())]
    bench_view = from_objects(synth.state_objects(40))
    bench = [(bench_view, body) for body in synth.review_bodies(24, seed=11, deployments=0.4)]
    written = set()
    for view, body in corpus + bench:
        for webhook in Webhook:
            review = answer(webhook, load_json(body)["request"], view, config).review("admission.k8s.io/v1")
            assert json_bytes(review) == dumps(review)
            written.add((webhook, review["response"]["allowed"], "patch" in review["response"]))
    assert len(written) >= 3  # denied, allowed, patched: not one kind of answer only


@pytest.mark.parametrize("code", range(0x80))
def test_each_ascii_character_is_escaped_as_json_dumps_escapes_it(code: int) -> None:
    """Control characters, quotes, backslashes and DEL (which orjson leaves as it is) in a
    message."""
    review = {"response": {"uid": "u", "status": {"message": f"a{chr(code)}b"}, "warnings": [chr(code)]}}
    assert json_bytes(review) == dumps(review)


@settings(max_examples=300, deadline=None)
@given(text=st.text(), key=st.text(max_size=5), number=st.integers(-(2**70), 2**70))
def test_any_text_and_integer_is_written_as_json_dumps_writes_it(text: str, key: str, number: int) -> None:
    """Beyond ASCII, lone surrogates (orjson refuses them), integers beyond 64 bits (orjson
    refuses them), in values and keys."""
    value = {"uid": text, key: [text, number, True, None], "warnings": [key]}
    assert json_bytes(value) == dumps(value)


@dataclasses.dataclass
class Unwritable:
    name: str


@pytest.mark.parametrize(
    "value",
    [
        {1: "a key that is no string"},
        {"patch": ("a", "tuple")},
        {"s": type("Text", (str,), {})("a str subclass")},
    ],
)
def test_values_orjson_writes_otherwise_are_written_by_json_dumps(value: Any) -> None:
    """A key that is no string, a tuple, a subclass of str: the bytes json.dumps writes."""
    assert json_bytes(value) == dumps(value)


def test_what_json_dumps_refuses_is_refused() -> None:
    """A dataclass, which orjson would write and json.dumps refuses: refused, as before."""
    with pytest.raises(TypeError):
        json_bytes({"v": Unwritable("x")})


def test_a_patch_is_encoded_as_before() -> None:
    """The patch inside a /mutate answer (base64 of its JSON) is json.dumps's bytes."""
    verdict = Verdict(allowed=True, patch=[{"op": "add", "path": "/a~1b", "value": {"é": "\x7f"}}])
    review = review_response("admission.k8s.io/v1", "u", verdict, mutating=True)
    raw = base64.b64decode(review["response"]["patch"])
    assert raw == dumps(verdict.patch)
