"""The webhook under load over TLS while a gunicorn worker is SIGKILLed and the serving certificate
rotates (a short run of tests/reliability/load_with_faults.py): the only failed reviews are those
in flight on the killed worker, and the new certificate is served afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.load_with_faults import LoadPlan, run

pytestmark = pytest.mark.slow


def test_only_reviews_in_flight_on_the_killed_worker_fail(tmp_path: Path) -> None:
    outcome = run(LoadPlan(rate=150.0, seconds=6.0, processes=2, threads=4), tmp_path)
    print(outcome.summary())
    # the load ran through both faults: reviews were answered before the kill, between the kill
    # and the rotation, and after the rotation (counted, not timed)
    assert all(phase > 0 for phase in outcome.answered), outcome.answered
    assert outcome.unexplained == [], outcome.unexplained[:5]
    assert outcome.rotated, "the rotated certificate is not served"
    assert outcome.failures <= 2 * 4, "more failures than connections that could be in flight"
