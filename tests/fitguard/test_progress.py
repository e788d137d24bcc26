"""fitguard/progress.py: a long check shows how far it has got on a terminal's standard error, and
nothing anywhere else. The clock is a stand-in: nothing waits."""

from __future__ import annotations

import io

from fitguard.progress import INTERVAL, Progress
from tests.objects import Clock


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_the_count_rewritten_in_place_and_erased_at_the_end() -> None:
    """1,000 objects, the clock moving one interval per object: the line is rewritten (never a new
    line) with the count so far, and erased when the check ends."""
    stream, clock = Terminal(), Clock()
    progress = Progress(1000, stream, clock)
    for _ in range(3):
        clock.now += INTERVAL
        progress.step()
    progress.done()
    assert stream.getvalue() == (
        "\rchecked 1 of 1,000 objects\rchecked 2 of 1,000 objects\rchecked 3 of 1,000 objects\r\x1b[K"
    )


def test_the_line_is_rewritten_at_most_once_an_interval() -> None:
    """Objects judged faster than the interval move the count without writing it each time."""
    stream, clock = Terminal(), Clock()
    progress = Progress(1000, stream, clock)
    for _ in range(50):
        progress.step()
    assert stream.getvalue() == ""
    clock.now += INTERVAL
    progress.step()
    assert stream.getvalue() == "\rchecked 51 of 1,000 objects"


def test_nothing_is_written_off_a_terminal_or_for_a_short_input() -> None:
    """A pipe or a CI log gets no progress line, nor does a terminal for a few hundred objects; and
    `done` erases only a line it wrote."""
    for stream, total in ((io.StringIO(), 100_000), (Terminal(), 499)):
        clock = Clock()
        progress = Progress(total, stream, clock)
        for _ in range(3):
            clock.now += INTERVAL
            progress.step()
        progress.done()
        assert stream.getvalue() == ""
