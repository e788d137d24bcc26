"""The words of the branch ENI books: a node's held ENIs (its event, and `fitguard report`), a
waiting pod's reason, and the free counts a person is shown.

A count shown is never negative, and a free count the scheduler sees that is not really free says
where those ENIs are: held by finished pods, or wanted by pods already placed on the node. The
scheduler's free count (capacity - in use) is negative when the pods it placed ask for more than
the node advertises (a node whose trunk ENI is not initialised advertises none).
"""

from __future__ import annotations

from capacity.branch_eni import NodeSummary, Waiting


def shown_free(count: int) -> int:
    """A free count as a person is shown it: never below zero."""
    return max(count, 0)


def lacking(summary: NodeSummary) -> int:
    """Branch ENIs the pods placed on the node ask for beyond those it has: in use and held
    together past its capacity (those pods wait)."""
    return max(-summary.true_free, 0)


def held_message(summary: NodeSummary, shown: int = 5) -> str:
    """The node event's text: `3 of 9 branch ENIs are held by finished pods a, b, c; the scheduler
    sees 3 free, but those 3 are held: none is free`."""
    names = ", ".join(summary.held_by[:shown])
    more = ", ..." if len(summary.held_by) > shown else ""
    return (
        f"{summary.held} of {summary.capacity} branch ENIs are held by finished pods {names}{more}; "
        f"{free_words(summary)}"
    )


def none_free(seen: int, taken_by: str = "held") -> str:
    """The scheduler sees `seen` free where none is: what took them (`held`, `leaked`)."""
    if seen <= 0:
        return "the scheduler sees none free"
    those = "it is" if seen == 1 else f"those {seen} are"
    return f"the scheduler sees {seen} free, but {those} {taken_by}: none is free"


def free_words(summary: NodeSummary) -> str:
    """What the scheduler sees free, what really is, and where the difference went."""
    seen = shown_free(summary.scheduler_free)
    really = shown_free(summary.true_free)
    if seen == 0 or really == 0:
        said = none_free(seen)
    elif really == seen:
        said = f"the scheduler sees {seen} free, and {'it is' if seen == 1 else 'they are'}"
    else:
        verb = "is" if really == 1 else "are"
        said = f"the scheduler sees {seen} free, {summary.held} of them held: {really} {verb} free"
    short = lacking(summary)
    return f"{said}, and the pods placed here wait for {short} more" if short else said


def overcommitted_message(summary: NodeSummary) -> str:
    """A node whose pods ask for more branch ENIs than it advertises, none held (the report's line;
    a node with held ENIs says it in `held_message`)."""
    return (
        f"its pods ask for {summary.in_use} branch ENIs, it advertises {summary.capacity}: "
        f"the pods placed here wait for {lacking(summary)} more"
    )


def waiting_message(summary: NodeSummary, waiting: Waiting, now: float) -> str:
    """A waiting pod's event text: why it waits, and until when it probably will."""
    waited = f"bound to {summary.name} {max(now - waiting.since, 0.0):.0f} s ago, still without a branch ENI"
    if summary.held and summary.next_release is not None:
        return (
            f"{waited}: {summary.held} of {summary.capacity} are held by finished or deleted pods "
            f"({', '.join(summary.held_by[:3])}{', ...' if len(summary.held_by) > 3 else ''}); "
            f"the next is released within about {summary.next_release:.0f} s"
        )
    if summary.held:
        return f"{waited}: {summary.held} of {summary.capacity} are held by finished pods until deleted"
    return f"{waited}: all {summary.capacity} are in use by running pods; it waits until one of them ends"
