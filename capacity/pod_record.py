"""The pod record the controller keeps for each of its pods (capacity/records.py `project_pod` builds
it): the fields the books, the guard, the planner and the reclaimers read, laid out so that 150,000
of them stay small (docs/benchmarks.md, "The controller's memory, fourth round (issue 32)")."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from capacity.kept import kept
from capacity.names import TERMINAL_PHASES

# The fields of a PodRecord, in the order they compare and print (tests build records from them).
POD_FIELDS = (
    "uid",
    "namespace",
    "name",
    "node",
    "phase",
    "pod_eni",
    "eni_count",
    "eni_ids",
    "started",
    "finished_at",
    "deleted_at",
    "created_at",
    "scheduled_at",
    "owner_kind",
    "owner_name",
    "keep",
    "unschedulable",
    "cpu",
    "memory",
    "ephemeral_storage",
    "pending_spec",
)
# One object per workload for what replicas share: (owner_kind, owner_name, cpu, memory,
# ephemeral_storage, pod_eni). Past the limit the memo starts again (values stay right, only
# sharing is lost). A field that is not a plain int or str is kept unshared, so a value keeps its type.
_SHARED_SHAPES = 16_384
_shapes: dict[tuple[Any, ...], tuple[Any, ...]] = {}
# The scheduler's message is the same words for thousands of pending pods: one copy of each.
_texts: dict[str, str] = {}


def _text(value: str | None) -> str | None:
    if type(value) is not str:
        return value
    return kept(_texts, value, value, _SHARED_SHAPES)


def _shape(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    kind, name, cpu, memory, storage, pod_eni = shape
    if not (
        type(cpu) is int
        and type(memory) is int
        and type(storage) is int
        and type(pod_eni) is int
        and type(kind) is str
        and type(name) is str
    ):
        return shape
    return kept(_shapes, shape, shape, _SHARED_SHAPES)


class PodRecord:
    """One pod as the books see it. Requests are milli-units (capacity/resources.py) except
    `pod_eni`, a whole count of branch ENIs. Compared field by field (POD_FIELDS) and never hashed.

    Laid out for 150,000 of them (docs/benchmarks.md, the controller's memory, fourth round): what
    every pod has its own of in slots; what replicas of one workload share (owner, requests) in one
    shared tuple; what only a finished, deleting, kept or unschedulable pod has (finish and deletion
    times, the keep label, the scheduler's message, the placement) in one tuple that is None for
    every other pod. 12 slots instead of 21: about 130 B a record instead of 210 B. Read only: the
    fields are read through properties and never assigned after construction."""

    __slots__ = (
        "_eni_ids",
        "_rare",
        "_shared",
        "created_at",
        "eni_count",
        "name",
        "namespace",
        "node",
        "phase",
        "scheduled_at",
        "started",
        "uid",
    )

    def __init__(  # noqa: PLR0913  # the fields, by name, as the dataclass it replaced took them
        self,
        uid: str,
        namespace: str,
        name: str,
        *,
        node: str = "",
        phase: str = "Pending",
        pod_eni: int = 0,
        eni_count: int = 0,
        eni_ids: tuple[str, ...] = (),
        started: bool = False,
        finished_at: float | None = None,
        deleted_at: float | None = None,
        created_at: float | None = None,
        scheduled_at: float | None = None,
        owner_kind: str = "",
        owner_name: str = "",
        keep: bool = False,
        unschedulable: str | None = None,
        cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        pending_spec: Mapping[str, Any] | None = None,
    ) -> None:
        self.uid = uid
        self.namespace = namespace
        self.name = name
        self.node = node
        self.phase = phase
        self.eni_count = eni_count
        # one branch ENI (most pods that have any): its id alone, without a tuple around it
        self._eni_ids = eni_ids[0] if _one_id(eni_ids) else eni_ids
        self.started = started
        self.created_at = created_at
        self.scheduled_at = scheduled_at
        self._shared = _shape((owner_kind, owner_name, cpu, memory, ephemeral_storage, pod_eni))
        rare = (finished_at, deleted_at, keep, _text(unschedulable), pending_spec)
        self._rare = None if rare == _NOTHING_RARE and keep is False else rare

    @property
    def owner_kind(self) -> str:
        """The controlling owner's kind ("" without one)."""
        return self._shared[0]  # type: ignore[no-any-return]

    @property
    def owner_name(self) -> str:
        """The controlling owner's name."""
        return self._shared[1]  # type: ignore[no-any-return]

    @property
    def cpu(self) -> int:
        """Requested CPU, millicores."""
        return self._shared[2]  # type: ignore[no-any-return]

    @property
    def memory(self) -> int:
        """Requested memory, milli-bytes."""
        return self._shared[3]  # type: ignore[no-any-return]

    @property
    def ephemeral_storage(self) -> int:
        """Requested ephemeral storage, milli-bytes."""
        return self._shared[4]  # type: ignore[no-any-return]

    @property
    def pod_eni(self) -> int:
        """Requested branch ENIs, a whole count."""
        return self._shared[5]  # type: ignore[no-any-return]

    @property
    def eni_ids(self) -> tuple[str, ...]:
        """The branch ENIs' ids (the pod-eni annotation's `eniId`s), () without any."""
        ids = self._eni_ids
        return (ids,) if isinstance(ids, str) else ids

    @property
    def finished_at(self) -> float | None:
        """When a terminal pod released its branch ENIs."""
        return None if self._rare is None else self._rare[0]

    @property
    def deleted_at(self) -> float | None:
        """Metadata.deletionTimestamp."""
        return None if self._rare is None else self._rare[1]

    @property
    def keep(self) -> bool:
        """Labelled to be kept (never reclaimed)."""
        return False if self._rare is None else self._rare[2]

    @property
    def unschedulable(self) -> str | None:
        """The scheduler's message while the pod is Unschedulable."""
        return None if self._rare is None else self._rare[3]

    @property
    def pending_spec(self) -> Mapping[str, Any] | None:
        """Only an unschedulable pod-eni pod keeps what decides where it fits (the guard reads it)."""
        return None if self._rare is None else self._rare[4]

    def fields(self) -> tuple[Any, ...]:
        """Every field's value, in POD_FIELDS order."""
        return tuple(getattr(self, f) for f in POD_FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodRecord):
            return NotImplemented
        # Equal slots are equal fields, and a watch event that changed nothing the books read
        # (kube/store.py `same`) compares equal records: that case costs twelve reads, not 42.
        # Slots can differ where fields do not (a falsy `keep` other than False): then by field.
        if _SLOT_VALUES(self) == _SLOT_VALUES(other):
            return True
        return self.fields() == other.fields()

    __hash__ = None  # type: ignore[assignment]  # compared by value, never a key

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def has_eni(self) -> bool:
        return self.eni_count > 0

    def __repr__(self) -> str:
        return f"PodRecord({self.namespace}/{self.name} on {self.node or '-'} {self.phase})"


_NOTHING_RARE = (None, None, False, None, None)


def _one_id(ids: tuple[str, ...]) -> bool:
    return type(ids) is tuple and len(ids) == 1 and type(ids[0]) is str


_SLOT_VALUES = operator.attrgetter(*PodRecord.__slots__)
