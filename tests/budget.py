"""How many examples a property runs: its own number, capped under `make mutation`.

A property that runs 300 examples in `make test` runs at most MUTATION_CAP per mutant, because
`make mutation` runs each mutant's covering tests again (HYPOTHESIS_PROFILE=mutation, set by the
target). An explicit `@settings(max_examples=...)` would otherwise override the profile.
"""

import os

MUTATION_CAP = 20


def examples(wanted: int) -> int:
    """`wanted`, or MUTATION_CAP when running under `make mutation`."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "mutation":
        return min(wanted, MUTATION_CAP)
    return wanted
