"""Upstream behaviour as case tables written from the upstream source (each case cites the file and
function it restates), so that a clone of this repository alone runs them."""
