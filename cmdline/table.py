"""The one text-table layout of every command's `-o table` output."""

from __future__ import annotations

from collections.abc import Sequence


def render_table(rows: Sequence[Sequence[str]]) -> str:
    """`rows` (the header first) as left-aligned columns two spaces apart, each as wide as its widest
    cell, trailing blanks stripped, lines joined by newlines (no final one)."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    )
