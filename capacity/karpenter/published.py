"""A NodePool as fitguard publishes it on its NodeGroupTemplate (`spec.karpenter`), and read back.

The controller reads the NodePool, its EC2NodeClass and the Karpenter controller's settings; the
webhook reads none of them, only the template. So the template carries what `build_template`
needs to rebuild the same KarpenterTemplate (the NodePool's `spec.template` as written: requirements
with minValues, labels, taints, startup taints, nodeClassRef; the class's `spec`; the settings; the
memory of joined nodes), and, for a person and `kubectl get ngt`, each allowed type's allocatable.
The webhook rebuilds once per template object and judges with the rebuilt one, so the two
processes judge with the same code and the same inputs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capacity.karpenter.automode import is_automode
from capacity.karpenter.live import LiveStorage, live_storage
from capacity.karpenter.nodeclass import KarpenterOptions
from capacity.karpenter.template import KarpenterTemplate, TypeOffer, build_template
from capacity.quantity import canonical_quantity
from capacity.resources import EPHEMERAL_STORAGE, MEMORY, Resources, parse_resources, to_quantities

PROVIDER = "karpenter"


@dataclass(frozen=True, slots=True)
class PublishedNodePool:
    nodepool: str
    nodeclass: str
    nodeclass_kind: str
    template: Mapping[str, Any]  # the NodePool's spec.template, as written
    nodeclass_spec: Mapping[str, Any]  # the class's spec, as written
    settings: KarpenterOptions = field(default_factory=KarpenterOptions)
    discovered: Mapping[str, int] = field(default_factory=dict)  # type -> a joined node's memory
    ready: bool = True
    offers: tuple[tuple[str, Resources], ...] = ()  # (type, allocatable) for display
    # the DaemonSet pods a node would run (milli-units, `pods` counted): the most common, and per
    # type where it differs (a DaemonSet selecting an architecture or a type)
    overhead: Resources = field(default_factory=dict)
    overheads: Mapping[str, Resources] = field(default_factory=dict)
    # per type, what its live nodes offer of ephemeral-storage where it is below the estimate (live.py)
    live: Mapping[str, LiveStorage] = field(default_factory=dict)
    built: list[KarpenterTemplate] = field(default_factory=list, compare=False, repr=False)

    def rebuild(self) -> KarpenterTemplate:
        """The KarpenterTemplate the controller built, built again (once per object)."""
        if not self.built:
            pool = {"metadata": {"name": self.nodepool}, "spec": {"template": dict(self.template)}}
            self.built.append(
                build_template(
                    pool,
                    {"spec": dict(self.nodeclass_spec)},
                    karpenter=self.settings,
                    discovered=self.discovered,
                )
            )
        return self.built[0]

    @property
    def automode(self) -> bool:
        """Its class is an EKS Auto Mode NodeClass (the template's nodeClassRef says so)."""
        spec = self.template.get("spec")
        ref = spec.get("nodeClassRef") if isinstance(spec, Mapping) else None
        return is_automode(ref) if isinstance(ref, Mapping) else False

    def most_offered(self) -> Resources:
        """Per resource, the most any allowed type offers (what `kubectl get ngt` prints)."""
        best: Resources = {}
        for _, allocatable in self.offers:
            for resource, value in allocatable.items():
                if value:  # the extended resources no allowed type has stay out
                    best[resource] = max(value, best.get(resource, value))
        return best

    def overhead_of(self, offer: TypeOffer) -> Resources:
        return dict(self.overheads.get(offer.name, self.overhead))

    def to_object(self) -> dict[str, Any]:
        return {
            "nodePool": self.nodepool,
            "nodeClass": self.nodeclass,
            "nodeClassKind": self.nodeclass_kind,
            "ready": self.ready,
            "settings": {
                "reservedENIs": self.settings.reserved_enis,
                "vmMemoryOverheadPercent": str(self.settings.vm_memory_overhead_percent),
                "nodeClassCEL": self.settings.node_class_cel,
            },
            "discoveredMemory": {
                k: canonical_quantity(v, MEMORY) for k, v in sorted(self.discovered.items())
            },
            "template": dict(self.template),
            "nodeClassSpec": dict(self.nodeclass_spec),
            "daemonSetOverhead": to_quantities(self.overhead),
            "instanceTypes": [self._offer_object(n, a) for n, a in self.offers],
        }

    def _offer_object(self, name: str, allocatable: Resources) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, "allocatable": to_quantities(allocatable)}
        if name in self.overheads:
            entry["daemonSetOverhead"] = to_quantities(self.overheads[name])
        live = self.live.get(name)
        if live is not None:
            entry["live"] = {
                "allocatable": to_quantities({EPHEMERAL_STORAGE: live.allocatable}),
                "nodes": live.nodes,
                "sameNodeClass": live.current,
            }
        return entry

    @classmethod
    def from_object(cls, raw: Mapping[str, Any]) -> PublishedNodePool:
        """spec.karpenter read back; TypeError / ValueError naming the field."""
        where = "spec.karpenter"
        settings = _map(raw.get("settings"), f"{where}.settings")
        template = _map(raw.get("template"), f"{where}.template")
        spec = _map(raw.get("nodeClassSpec"), f"{where}.nodeClassSpec")
        reserved = settings.get("reservedENIs", 0)
        if isinstance(reserved, bool) or not isinstance(reserved, int):
            raise TypeError(f"{where}.settings.reservedENIs: expected an integer")
        try:
            overhead = float(str(settings.get("vmMemoryOverheadPercent", "0.075")))
        except ValueError:
            raise ValueError(f"{where}.settings.vmMemoryOverheadPercent: expected a number") from None
        memory = parse_resources(_map(raw.get("discoveredMemory"), f"{where}.discoveredMemory"), where)
        offers, overheads, live = _offers(raw.get("instanceTypes"), f"{where}.instanceTypes")
        return cls(
            nodepool=str(raw.get("nodePool") or ""),
            nodeclass=str(raw.get("nodeClass") or ""),
            nodeclass_kind=str(raw.get("nodeClassKind") or "EC2NodeClass"),
            template=template,
            nodeclass_spec=spec,
            settings=KarpenterOptions(reserved, overhead, settings.get("nodeClassCEL") is True),
            discovered=memory,
            ready=raw.get("ready", True) is not False,
            offers=tuple(offers),
            overhead=parse_resources(raw.get("daemonSetOverhead"), f"{where}.daemonSetOverhead"),
            overheads=overheads,
            live=live,
        )


_Offers = tuple[list[tuple[str, Resources]], dict[str, Resources], dict[str, LiveStorage]]


def _offers(raw: object, where: str) -> _Offers:
    if raw is None:
        return [], {}, {}
    if not isinstance(raw, list):
        raise TypeError(f"{where}: expected a list")
    offers, overheads, live = [], {}, {}
    for index, item in enumerate(raw):
        entry = _map(item, f"{where}[{index}]")
        name = str(entry.get("name") or "")
        offers.append((name, parse_resources(entry.get("allocatable"), f"{where}[{index}].allocatable")))
        if entry.get("daemonSetOverhead") is not None:
            at = f"{where}[{index}].daemonSetOverhead"
            overheads[name] = parse_resources(entry["daemonSetOverhead"], at)
        if entry.get("live") is not None:
            live[name] = _live(_map(entry["live"], f"{where}[{index}].live"), f"{where}[{index}].live")
    return offers, overheads, live


def _live(raw: Mapping[str, Any], where: str) -> LiveStorage:
    """An offer's `live` read back: its ephemeral-storage, node count and whether the nodes were
    launched under the class as it is (a missing or non-boolean flag reads as not: never a denial)."""
    allocatable = parse_resources(raw.get("allocatable"), f"{where}.allocatable")
    if EPHEMERAL_STORAGE not in allocatable:
        raise ValueError(f"{where}.allocatable.{EPHEMERAL_STORAGE}: missing")
    nodes = raw.get("nodes", 0)
    if isinstance(nodes, bool) or not isinstance(nodes, int):
        raise TypeError(f"{where}.nodes: expected an integer")
    return LiveStorage(allocatable[EPHEMERAL_STORAGE], nodes, raw.get("sameNodeClass") is True)


def _map(raw: object, where: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"{where}: expected a map")
    return raw


def published(
    nodepool: Mapping[str, Any],
    nodeclass: Mapping[str, Any],
    settings: KarpenterOptions,
    discovered: Mapping[str, int],
    overhead: Callable[[TypeOffer], Resources],
    nodes: Iterable[Mapping[str, Any]] = (),
) -> tuple[PublishedNodePool, KarpenterTemplate]:
    """What the template of `nodepool` publishes, with the KarpenterTemplate it stands for;
    `overhead`: the DaemonSet pods a node of an offer would run; `nodes`: the cluster's nodes, for
    what the NodePool's live nodes offer of ephemeral-storage (live.py). Raises NodeClassError /
    RequirementError (ValueError) naming a field that cannot be read."""
    built = build_template(nodepool, nodeclass, karpenter=settings, discovered=discovered)
    per_type = {o.name: overhead(o) for o in built.offers}
    counted = Counter(tuple(sorted(v.items())) for v in per_type.values())
    common = dict(counted.most_common(1)[0][0]) if counted else {}
    spec = nodepool.get("spec") or {}
    ref = ((spec.get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
    record = PublishedNodePool(
        nodepool=built.name,
        nodeclass=str(ref.get("name") or ""),
        nodeclass_kind=str(ref.get("kind") or "EC2NodeClass"),
        template=dict(spec.get("template") or {}),
        nodeclass_spec=dict(nodeclass.get("spec") or {}),
        settings=settings,
        discovered=dict(discovered),
        ready=nodepool_ready(nodepool),
        offers=tuple((o.name, dict(o.allocatable)) for o in built.offers),
        overhead=common,
        overheads={k: v for k, v in per_type.items() if v != common},
        live=live_storage(
            nodes,
            built.name,
            nodeclass,
            {o.name: o.allocatable.get(EPHEMERAL_STORAGE, 0) for o in built.offers},
        ),
    )
    record.built.append(built)
    return record, built


def nodepool_ready(nodepool: Mapping[str, Any]) -> bool:
    """The NodePool's Ready condition (kubernetes-sigs/karpenter `pkg/apis/v1/nodepool_status.go`
    ConditionTypeReady); a NodePool with no conditions yet counts as ready (a state file, an older
    Karpenter), one whose Ready is False or Unknown does not."""
    conditions = (nodepool.get("status") or {}).get("conditions") or []
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True
