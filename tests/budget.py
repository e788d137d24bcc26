"""How much a test does: a property's examples, capped under `make mutation`; a sweep's size, larger
under `make test-deep`.

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


def deep() -> bool:
    """Whether this is `make test-deep` (FITGUARD_TEST_DEPTH=deep): the sweeps that `make test` keeps
    to a covering sample, to stay within its time on a loaded two-core machine, run whole."""
    return os.environ.get("FITGUARD_TEST_DEPTH") == "deep"
