"""What projecting pods into records costs in memory, for the record-size tests."""

from __future__ import annotations

import tracemalloc
from typing import Any

from capacity.records import project_pod


def bytes_per_record(raws: list[dict[str, Any]]) -> float:
    """The heap that grows per pod while `raws` are projected (tracemalloc, every file): the
    records and the list holding them, not the decoded objects they were made from."""
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        records = [project_pod(raw) for raw in raws]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert len(records) == len(raws)
    return grown / len(raws)
