"""The one writer of the exhausted-node label: the books reconciler decides which nodes should carry
it (controller/books_reconciler.py); this applies each decision, at a bounded rate, remembering
what it wrote until the node watch shows it, and says what became of it as a typed outcome."""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from capacity.names import EXHAUSTED_LABEL
from controller.settings import BooksOptions
from kube.client import ApiLike, KubeError, as_kube_client
from kube.events import TokenBucket
from kube.patch import remove_node_label, set_node_label

log = logging.getLogger(__name__)


class LabelAction(enum.Enum):
    SET = "label-set"
    REMOVED = "label-removed"
    DEFERRED = "label-deferred"  # the write rate is spent: the next pass tries again
    FAILED = "label-failed"  # the API refused: the next pass tries again


@dataclass(frozen=True)
class LabelWant:
    """One node whose label is not what the books want, and why it should be."""

    node: str
    exhausted: bool
    reason: str
    node_group: str = ""


@dataclass(frozen=True)
class BooksDecision:
    """One thing the leader did or chose not to do, with its reason (also logged)."""

    action: LabelAction
    node: str
    reason: str


class LabelWriter:
    """Writes wanted labels through `api` at the options' rate (no API, or a dry run: decides and
    logs, writes nothing)."""

    def __init__(self, api: ApiLike | None, options: BooksOptions, now: float) -> None:
        self.api = as_kube_client(api) if api is not None and not options.dry_run else None
        self._bucket = TokenBucket(options.label_rate, options.label_burst, now)
        self._rewrite_after = options.rewrite_after
        self._written: dict[str, tuple[bool, float]] = {}  # node -> (exhausted, when we wrote it)

    def seen(self, node: str) -> None:
        """The watch shows the node as we want it, or the node is gone: nothing left to remember."""
        self._written.pop(node, None)

    def pending(self, want: LabelWant, now: float) -> bool:
        """Written already, and the watch has not shown it yet."""
        written = self._written.get(want.node)
        return written is not None and written[0] == want.exhausted and now - written[1] < self._rewrite_after

    def apply(self, want: LabelWant, now: float) -> BooksDecision:
        if not self._bucket.take(now):
            log.info(
                "label write deferred",
                extra={"node": want.node, "exhausted": want.exhausted, "why": "rate limit"},
            )
            return BooksDecision(LabelAction.DEFERRED, want.node, "rate limit")
        action = LabelAction.SET if want.exhausted else LabelAction.REMOVED
        try:
            if self.api is not None:
                if want.exhausted:
                    set_node_label(self.api, want.node, EXHAUSTED_LABEL, "true")
                else:
                    remove_node_label(self.api, want.node, EXHAUSTED_LABEL)
        except KubeError as err:
            log.warning(
                "label write failed",
                extra={"node": want.node, "exhausted": want.exhausted, "error": str(err)},
            )
            return BooksDecision(LabelAction.FAILED, want.node, str(err))
        self._written[want.node] = (want.exhausted, now)
        log.info(
            action.value, extra={"node": want.node, "node_group": want.node_group, "reason": want.reason}
        )
        return BooksDecision(action, want.node, want.reason)
