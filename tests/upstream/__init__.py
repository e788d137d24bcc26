"""Upstream behaviour as case tables, written from the upstream source (each case cites the file and
function it restates), so a clone of this repository runs them without ../shared."""
