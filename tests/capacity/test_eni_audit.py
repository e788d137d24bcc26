"""Leaked branch ENIs: unclaimed by any pod for longer than the release window, per node."""

from capacity.eni_audit import Audit, BranchEni, Leak, LeakTracker

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


# -- whole answers (the mutation run of capacity/eni_audit.py, docs/testing.md) ---------------------


def test_an_audit_is_reported_whole_with_leaks_sorted_by_node_then_id() -> None:
    """Counts per node (an unknown instance counts under ''), and every leak past the window with
    its node, instance and seconds unclaimed, sorted by node then ENI id."""
    enis = [
        BranchEni("eni-9", "eni-trunk-b"),
        BranchEni("eni-5", "eni-trunk-a"),
        BranchEni("eni-4", "eni-trunk-b"),
        BranchEni("eni-7", "eni-trunk-x"),
        BranchEni("eni-1", "eni-trunk-a"),
    ]
    tracker = LeakTracker(window=10)
    first = tracker.audit(enis, TRUNKS, {"eni-1"}, NODES, now=100)
    assert first == Audit({"node-b": 2, "node-a": 2, "": 1}, ())
    assert tracker.audit(enis, TRUNKS, {"eni-1"}, NODES, now=111) == Audit(
        {"node-b": 2, "node-a": 2, "": 1},
        (
            Leak("eni-7", "", "", 11),
            Leak("eni-5", "node-a", "i-a", 11),
            Leak("eni-4", "node-b", "i-b", 11),
            Leak("eni-9", "node-b", "i-b", 11),
        ),
    )


def test_an_eni_gone_from_ec2_starts_afresh_when_it_comes_back() -> None:
    """The tracker forgets ENIs EC2 no longer lists: seen again, its clock starts anew."""
    tracker = LeakTracker(window=10)
    tracker.audit(ENIS, TRUNKS, set(), NODES, now=0)
    tracker.audit(ENIS[:2], TRUNKS, set(), NODES, now=5)
    assert tracker.audit(ENIS, TRUNKS, set(), NODES, now=20).leaks == (
        Leak("eni-1", "node-a", "i-a", 20),
        Leak("eni-2", "node-a", "i-a", 20),
    )
    assert tracker.audit(ENIS, TRUNKS, set(), NODES, now=31).leaks == (
        Leak("eni-1", "node-a", "i-a", 31),
        Leak("eni-2", "node-a", "i-a", 31),
        Leak("eni-3", "node-b", "i-b", 11),
    )


def test_a_trunk_on_an_instance_that_is_no_node_keeps_its_instance() -> None:
    """A known trunk whose instance is not a node: the leak names the instance and no node."""
    tracker = LeakTracker(window=0)
    tracker.audit([BranchEni("eni-1", "eni-trunk-a")], TRUNKS, set(), {}, now=0)
    assert tracker.audit([BranchEni("eni-1", "eni-trunk-a")], TRUNKS, set(), {}, now=2) == Audit(
        {"": 1}, (Leak("eni-1", "", "i-a", 2),)
    )
