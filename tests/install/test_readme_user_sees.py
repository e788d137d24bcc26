"""The README's "What a user sees" shows the texts the tests prove: each console block there is
rendered from tests/user_sees.py, whose texts tests/e2e/test_kubectl.py (the real kubectl) and
tests/fitguard/test_report.py assert whole. `python -m tests.user_sees` rewrites the blocks."""

from __future__ import annotations

import pytest

from tests.user_sees import BLOCKS, README, marked, render


def test_every_block_of_the_readme_is_the_tests_text() -> None:
    """README.md is what render() makes of it: no block edited by hand, none stale after a
    message changed."""
    text = README.read_text(encoding="utf-8")
    assert render(text) == text, "README.md differs from the tests' texts: run python -m tests.user_sees"


def test_every_text_is_shown_once() -> None:
    """Each rendered text has its one marked block in the README, and no marker names a text
    the tests do not hold."""
    assert sorted(marked(README.read_text(encoding="utf-8"))) == sorted(BLOCKS)


def test_a_changed_block_is_found_and_rendered_back() -> None:
    """A block edited by hand differs from its rendering, and render() restores it; a marker that
    names no text is an error, not a block left as it was."""
    name = "scratch-build"
    good = f"<!-- user-sees: {name} -->\n```console\n{BLOCKS[name]()}```\n"
    edited = good.replace("ng-burst", "ng-bursty")
    assert render(f"a\n{edited}b\n") == f"a\n{good}b\n"
    with pytest.raises(KeyError):
        render("<!-- user-sees: nothing -->\n```console\nx\n```\n")
