"""Plumbing every fitguard command shares, low in the layers so that `webhook/`, `controller/` and
`fitguard/` can all use it without importing upward: logging setup, text tables, one-line messages
and the runner behind `python -m webhook` / `python -m controller`. Standard library only."""

__version__ = "0.1.0"  # the project's version (pyproject.toml), in build_info and `--version`
