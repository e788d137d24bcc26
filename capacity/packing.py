"""First-fit packing of identical pods into bins of free capacity, the planner's inner loop.

A bin is `count` nodes with the same free vector (a node, a group's nodes on their way, or new
nodes of one group), so thousands of identical nodes cost one entry; a shape is a group of
identical pods with a cursor over those already placed. Vectors are lists of milli-units in the
planner's resource order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from capacity.demand import PodRef, PodShape

# New nodes of an option are first-fit among the most recent bin classes only: bounded work per pod
# shape, at the cost of a rare extra node when many distinct shapes leave gaps in old bins.
NEW_BIN_WINDOW = 32


class Bin:
    """`count` nodes with the same free vector; `target` is a node name or a group name."""

    __slots__ = ("count", "free", "target")

    def __init__(self, target: str, free: list[int], count: int = 1) -> None:
        self.target = target
        self.free = free
        self.count = count


class Shape:
    """A group of identical pods (`req`, a vector) being placed, pods before `cursor` already."""

    __slots__ = ("cursor", "index", "req", "shape")

    def __init__(self, index: int, shape: PodShape, req: tuple[int, ...]) -> None:
        self.index = index
        self.shape = shape
        self.req = req
        self.cursor = 0  # pods before it are placed

    @property
    def remaining(self) -> int:
        return len(self.shape.pods) - self.cursor

    def take(self, n: int) -> list[PodRef]:
        taken = self.shape.pods[self.cursor : self.cursor + n]
        self.cursor += n
        return taken


def how_many(free: list[int], req: tuple[int, ...], nonzero: tuple[int, ...]) -> int:
    n = -1
    for i in nonzero:
        k = free[i] // req[i]
        if k <= 0:
            return 0
        if n < 0 or k < n:
            n = k
    return n


def first_fit(
    bins: list[Bin],
    req: tuple[int, ...],
    nonzero: tuple[int, ...],
    want: int,
    accepts: Callable[[str], bool],
    *,
    start: int = 0,
) -> tuple[int, list[tuple[str, int]]]:
    """First fit of `want` identical pods into `bins` from `start` (split classes as needed);
    (placed, per target)."""
    placed: list[tuple[str, int]] = []
    left = want
    i = start
    while left and i < len(bins):
        b = bins[i]
        if not accepts(b.target):
            i += 1
            continue
        k = how_many(b.free, req, nonzero)
        if k <= 0:
            i += 1
            continue
        if b.count * k <= left:
            b.free = [f - k * r for f, r in zip(b.free, req, strict=True)]
            placed.append((b.target, b.count * k))
            left -= b.count * k
            i += 1
            continue
        full, part = divmod(left, k)
        new: list[Bin] = []
        if full:
            new.append(Bin(b.target, [f - k * r for f, r in zip(b.free, req, strict=True)], full))
        if part:
            new.append(Bin(b.target, [f - part * r for f, r in zip(b.free, req, strict=True)], 1))
        b.count -= full + (1 if part else 0)
        if b.count == 0:
            del bins[i]
        bins[i:i] = new
        placed.append((b.target, left))
        left = 0
    return want - left, placed


def nonzero_indices(req: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i for i, r in enumerate(req) if r > 0)


def pack_new_nodes(
    empty: list[int], limit: int, fitting: Sequence[Shape]
) -> tuple[int, list[tuple[list[int], int]], list[tuple[int, int]], list[int]]:
    """The pods of `fitting` onto new nodes of one group (free vector `empty`), first fit among the
    newest bins, opening at most `limit` nodes: (nodes opened, their (free, count) classes,
    (shape index, pods placed), indices of the shapes the limit cut short)."""
    bins: list[Bin] = []
    opened = 0
    counts: list[tuple[int, int]] = []
    capped: list[int] = []
    everything = lambda _target: True  # noqa: E731  # all bins are this group's
    for s in fitting:
        nonzero = nonzero_indices(s.req)
        placed, _ = first_fit(
            bins, s.req, nonzero, s.remaining, everything, start=max(len(bins) - NEW_BIN_WINDOW, 0)
        )
        left = s.remaining - placed
        per_node = how_many(empty, s.req, nonzero)
        if left and per_node > 0:
            wanted = -(-left // per_node)
            allowed = min(wanted, limit - opened)
            if allowed < wanted:
                capped.append(s.index)
            take = min(left, allowed * per_node)
            if take:
                new_bins = []
                full, part = divmod(take, per_node)
                if full:
                    new_bins.append(
                        Bin("", [f - per_node * r for f, r in zip(empty, s.req, strict=True)], full)
                    )
                if part:
                    new_bins.append(Bin("", [f - part * r for f, r in zip(empty, s.req, strict=True)], 1))
                bins.extend(new_bins)
                opened += full + (1 if part else 0)
                placed += take
        if placed:
            counts.append((s.index, placed))
    return opened, [(b.free, b.count) for b in bins if b.count], counts, capped
