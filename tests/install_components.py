"""The install components of manifests/components/ and their valid combinations: at most one mode
(warn, enforce and audit exclude each other), plus any subset of the others. A combination is
rendered from a kustomization of manifests/base and its components, mode first."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate

from tests.cert_manager_schemas import SCHEMAS as CERT_MANAGER_SCHEMAS
from tests.kustomize import object_id, write_kustomization
from tests.monitoring_schemas import SCHEMAS as MONITORING_SCHEMAS
from tests.supported_versions import MINIMUM_VALIDATOR_VERSION

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
COMPONENTS = MANIFESTS / "components"
MODES = ("warn", "enforce", "audit")
FEATURES = ("fail-closed", "reclaim", "scaling-on", "monitoring", "cert-manager", "network-policy")

Combination = tuple[str, ...]
Obj = dict[str, Any]
# The oldest Kubernetes the documents promise and the newest the validator knows.
VERSIONS = (MINIMUM_VALIDATOR_VERSION, kubernetes_validate.latest_version())


def combinations() -> Iterator[Combination]:
    """Every valid combination: no mode or one, then each subset of the features (256 in all)."""
    for mode in (None, *MODES):
        for size in range(len(FEATURES) + 1):
            for features in itertools.combinations(FEATURES, size):
                yield ((mode,) if mode else ()) + features


def kubectl_sample() -> list[Combination]:
    """The combinations `kubectl kustomize` renders in `make test`: the base, each component alone,
    and each mode with every other component (no mode too). Components meet only where they patch
    the same object (the two Deployments, the webhook configurations), in listing order; these
    cover each component without the others and each pair of components together (kubectl costs
    0.2 to 0.8 s a render; `make test-deep` renders all 256)."""
    everything = [(), *((component,) for component in (*MODES, *FEATURES))]
    everything += [((mode,) if mode else ()) + FEATURES for mode in (None, *MODES)]
    return everything


def name(combination: Combination) -> str:
    return "+".join(combination) or "base"


def kustomization(directory: Path, combination: Sequence[str], **fields: object) -> Path:
    """A kustomization in `directory` of the base with these components, in this order."""
    return write_kustomization(
        directory, [BASE], [COMPONENTS / component for component in combination], **fields
    )


def custom_schemas(objects: list[Obj]) -> dict[tuple[str, str], Obj]:
    """(apiVersion, kind) -> schema of every custom kind: prometheus-operator's and cert-manager's
    (compiled from their CRDs), and each version of a CRD among `objects` (NodeGroupTemplate)."""
    schemas: dict[tuple[str, str], Obj] = {**MONITORING_SCHEMAS, **CERT_MANAGER_SCHEMAS}
    for crd in (obj for obj in objects if obj["kind"] == "CustomResourceDefinition"):
        spec = crd["spec"]
        for version in spec["versions"]:
            schemas[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    return schemas


def validation_failures(objects: Iterable[Obj], schemas: dict[tuple[str, str], Obj]) -> list[str]:
    """One line per object that does not validate: a custom kind against its schema, a built-in
    kind against the strict Kubernetes schemas of every version in VERSIONS."""
    failures = []
    for obj in objects:
        schema = schemas.get((obj["apiVersion"], obj["kind"]))
        try:
            if schema is not None:
                jsonschema.validate(obj, schema)
            else:
                for version in VERSIONS:
                    kubernetes_validate.validate(obj, version, strict=True)
        except (jsonschema.ValidationError, kubernetes_validate.ValidationError) as err:
            failures.append(f"{object_id(obj)}: {str(err).splitlines()[0]}")
    return failures
