"""What a NodePool object (a dict as the API returns it) says about the nodes it would launch:
the requirements of its NodeClaim template, its labels and its taints.

Upstream: kubernetes-sigs/karpenter `pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go`
`NewNodeClaimTemplate` (requirements with minValues, then the template's labels plus the NodePool
and NodeClass labels as `In` requirements, then `karpenter.sh/registered` and `initialized` for the
DaemonSet simulation), `pkg/apis/v1/nodepool.go` (`spec.template.spec.taints`, `startupTaints`: a
startup taint is removed once the node is initialised, so it never keeps a pod off),
`pkg/apis/v1/labels.go` `NodeClassLabelKey`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capacity.karpenter.labels import INITIALIZED, NODECLASS, NODEPOOL, REGISTERED
from capacity.karpenter.requirement import RequirementError
from capacity.karpenter.requirements import Requirements, from_labels, from_selector_requirements
from capacity.taints import Taint


@dataclass(frozen=True, slots=True)
class NodePoolTemplate:
    name: str
    nodeclass_name: str
    nodeclass_kind: str
    requirements: Requirements
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]  # startup taints left out


def _map(raw: object, where: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise RequirementError(f"{where}: expected a map")
    return raw


def _taints(raw: object, where: str) -> tuple[Taint, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(t, Mapping) for t in raw):
        raise RequirementError(f"{where}: expected a list of taints")
    return tuple(Taint.from_object(t) for t in raw)


def nodepool_template(obj: Mapping[str, Any]) -> NodePoolTemplate:
    """`NewNodeClaimTemplate` of a NodePool object; raises RequirementError naming the bad field."""
    name = str(_map(obj.get("metadata"), "metadata").get("name", ""))
    template = _map(_map(obj.get("spec"), "spec").get("template"), "spec.template")
    spec = _map(template.get("spec"), "spec.template.spec")
    ref = _map(spec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
    kind = str(ref.get("kind", "EC2NodeClass"))
    nodeclass = str(ref.get("name", ""))
    labels = {
        str(k): str(v) for k, v in _map(_map(template.get("metadata"), "").get("labels"), "labels").items()
    }
    # NodeClassLabelKey: "<group>/<kind lower-cased>", here the EC2NodeClass's
    labels |= {
        NODEPOOL: name,
        NODECLASS if kind == "EC2NodeClass" else f"{ref.get('group')}/{kind.lower()}": nodeclass,
    }
    requirements = from_selector_requirements(
        spec.get("requirements"), "spec.template.spec.requirements", with_min_values=True
    ).add(from_labels(labels), from_labels({REGISTERED: "true", INITIALIZED: "true"}))
    return NodePoolTemplate(
        name=name,
        nodeclass_name=nodeclass,
        nodeclass_kind=kind,
        requirements=requirements,
        labels=labels,
        taints=_taints(spec.get("taints"), "spec.template.spec.taints"),
    )
