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
        # the generation the verdicts are for, with the verdicts (least recently used first); the
        # pair is replaced whole, so no first generation has to be made up
        self._memo: tuple[object, OrderedDict[tuple[Any, ...], Any]] = (
            None,
            OrderedDict(),
        )
        self._lock = threading.Lock()

    def refusals(
        self, needs: PodNeeds, templates: Iterable[NodeGroupTemplate], generation: object
    ) -> list[GroupVerdict] | None:
        return self.remember((refusals, needs.key), generation, lambda: refusals(needs, templates))

    def memory_reliance(
        self, needs: PodNeeds, templates: Iterable[NodeGroupTemplate], generation: object
    ) -> list[GroupVerdict] | None:
        """`capacity.serve.memory_reliance`, remembered the same way."""
        return self.remember(
            (memory_reliance, needs.key), generation, lambda: memory_reliance(needs, templates)
        )

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
        key = (denial_message, needs.key, subject, tuple(extra))
        return self.remember(key, generation, lambda: denial_message(verdicts, needs, subject, extra))

    def remember(self, key: tuple[Any, ...], generation: object, compute: Callable[[], T]) -> T:
        """`compute()` remembered under `key` for this generation (a new generation starts empty)."""
        with self._lock:
            current, memo = self._memo
            if generation != current:
                self._memo = (generation, OrderedDict())
            elif key in memo:
                memo.move_to_end(key)
                return memo[key]
        result = compute()
        with self._lock:
            current, memo = self._memo
            if generation == current:
                memo[key] = result
                if len(memo) > self.size:
                    del memo[next(iter(memo))]  # the least recently used
        return result
