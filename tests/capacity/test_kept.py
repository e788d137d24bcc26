"""capacity/kept.py: one copy of each equal value, in a memo that never outgrows its limit."""

from __future__ import annotations

from capacity.kept import kept


def test_the_first_copy_of_an_equal_value_is_the_one_given_back() -> None:
    """A second value equal to a kept one is answered with the kept object, not itself."""
    memo: dict[str, str] = {}
    first = "".join(["0/3 nodes are ", "available"])
    second = "".join(["0/3 nodes ", "are available"])
    assert first == second and first is not second
    assert kept(memo, first, first, 4) is first
    assert kept(memo, second, second, 4) is first


def test_a_falsy_value_is_kept_and_given_back() -> None:
    """0 and "" are values like any other: kept once and found again (only a missing key misses)."""
    memo: dict[int, int] = {}
    zero = 0
    assert kept(memo, 0, zero, 4) == 0
    assert memo == {0: 0}


def test_a_memo_at_its_limit_starts_again() -> None:
    """At `limit` keys the memo is emptied before the next one is kept: never more than the limit."""
    memo: dict[int, int] = {}
    for value in range(10):
        kept(memo, value, value, 4)
        assert len(memo) <= 4
    assert memo == {8: 8, 9: 9}
