"""Long reliability runs, each a module run with `python -m tests.reliability.<name>`."""
