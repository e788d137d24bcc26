"""The webhook's memo of verdicts: the replicas of a workload, and pods created again and again,
are judged once per generation of the node group templates."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from capacity.fit import PodNeeds
from capacity.serve import GroupVerdict, denial_message, memory_reliance, refusals
from capacity.template import NodeGroupTemplate

T = TypeVar("T")


class RefusalMemo:
    """`capacity.serve.refusals` remembered per pod shape (`PodNeeds.key`) for one generation of
    the templates (the templates store's version); a new generation starts empty."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._generation: object = None
        self._memo: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def refusals(
        self, needs: PodNeeds, templates: Iterable[NodeGroupTemplate], generation: object
    ) -> list[GroupVerdict] | None:
        return self._remembered(("refusals", needs.key), generation, lambda: refusals(needs, templates))

    def memory_reliance(
        self, needs: PodNeeds, templates: Iterable[NodeGroupTemplate], generation: object
    ) -> list[GroupVerdict] | None:
        """`capacity.serve.memory_reliance`, remembered the same way."""
        return self._remembered(("memory", needs.key), generation, lambda: memory_reliance(needs, templates))

    def denial_message(
        self,
        verdicts: list[GroupVerdict],
        needs: PodNeeds,
        subject: str,
        extra: Sequence[str],
        generation: object,
    ) -> str:
        """`capacity.serve.denial_message` of the verdicts this memo gave for `needs` in this
        generation, remembered per shape, subject and extra lines (the replicas of a workload that
        nothing serves are denied with the same text)."""
        key = ("denial", needs.key, subject, tuple(extra))
        return self._remembered(key, generation, lambda: denial_message(verdicts, needs, subject, extra))

    def _remembered(self, key: tuple[Any, ...], generation: object, compute: Callable[[], T]) -> T:
        with self._lock:
            if generation != self._generation:
                self._memo.clear()
                self._generation = generation
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        result = compute()
        with self._lock:
            if generation == self._generation:
                self._memo[key] = result
                if len(self._memo) > self.size:
                    self._memo.popitem(last=False)
        return result
