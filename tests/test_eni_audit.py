"""Leaked branch ENIs: unclaimed by any pod for longer than the release window, per node."""

from capacity.eni_audit import BranchEni, LeakTracker

TRUNKS = {"eni-trunk-a": "i-a", "eni-trunk-b": "i-b"}
NODES = {"i-a": "node-a", "i-b": "node-b"}
ENIS = [
    BranchEni("eni-1", "eni-trunk-a"),
    BranchEni("eni-2", "eni-trunk-a"),
    BranchEni("eni-3", "eni-trunk-b"),
]


def test_counts_per_node_and_claimed_enis_are_never_leaks() -> None:
    tracker = LeakTracker(window=90)
    audit = tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-2", "eni-3"}, NODES, now=0)
    assert audit.per_node == {"node-a": 2, "node-b": 1}
    assert tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-2", "eni-3"}, NODES, now=1000).leaks == ()


def test_an_unclaimed_eni_is_a_leak_only_past_the_window() -> None:
    tracker = LeakTracker(window=90)
    assert tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-3"}, NODES, now=100).leaks == ()
    assert tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-3"}, NODES, now=190).leaks == ()  # exactly the window
    (leak,) = tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-3"}, NODES, now=191).leaks
    assert (leak.eni_id, leak.node, leak.instance_id, leak.unclaimed_for) == ("eni-2", "node-a", "i-a", 91)


def test_a_claim_in_between_restarts_the_clock() -> None:
    tracker = LeakTracker(window=90)
    tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-3"}, NODES, now=0)
    tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-2", "eni-3"}, NODES, now=50)  # a new pod got eni-2
    assert tracker.audit(ENIS, TRUNKS, {"eni-1", "eni-3"}, NODES, now=120).leaks == ()


def test_an_eni_on_an_unknown_instance_is_still_reported() -> None:
    tracker = LeakTracker(window=0)
    tracker.audit([BranchEni("eni-9", "eni-trunk-x")], TRUNKS, set(), NODES, now=0)
    (leak,) = tracker.audit([BranchEni("eni-9", "eni-trunk-x")], TRUNKS, set(), NODES, now=1).leaks
    assert (leak.node, leak.instance_id) == ("", "")
