"""The one text-table helper every `-o table` output uses (cmdline/table.py)."""

from __future__ import annotations

from cmdline.table import render_table


def test_columns_are_as_wide_as_their_widest_cell_two_spaces_apart_without_trailing_blanks() -> None:
    """Each column is padded to its widest cell (header included), columns are two spaces apart, the
    last column's padding is stripped and there is no final newline."""
    rows = [("NAME", "TYPE", "NOTE"), ("ng-a", "m5.xlarge", ""), ("ng-long-name", "t3", "stale")]
    assert render_table(rows) == (
        "NAME          TYPE       NOTE\nng-a          m5.xlarge\nng-long-name  t3         stale"
    )


def test_a_header_alone_is_one_line_and_no_rows_is_empty() -> None:
    """A table with only its header is the header line; a table with no rows at all is empty text."""
    assert render_table([("A", "BB")]) == "A  BB"
    assert render_table([]) == ""
