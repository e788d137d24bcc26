"""The install components of manifests/components/ and their valid combinations: at most one mode
(warn, enforce and audit exclude each other), plus any subset of the others. A combination is
rendered from a kustomization of manifests/base and its components, mode first."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path

from tests.kustomize import write_kustomization

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
COMPONENTS = MANIFESTS / "components"
MODES = ("warn", "enforce", "audit")
FEATURES = ("fail-closed", "reclaim", "scaling-on", "monitoring", "cert-manager", "network-policy")

Combination = tuple[str, ...]


def combinations() -> Iterator[Combination]:
    """Every valid combination: no mode or one, then each subset of the features (256 in all)."""
    for mode in (None, *MODES):
        for size in range(len(FEATURES) + 1):
            for features in itertools.combinations(FEATURES, size):
                yield ((mode,) if mode else ()) + features


def kubectl_sample() -> list[Combination]:
    """The combinations `kubectl kustomize` renders on every run: the base, each component alone, and
    each mode with every other component (no mode too). Components meet only where they patch the
    same object (the two Deployments, the webhook configurations), in listing order; these cover
    each component without the others and each pair of components together. kubectl costs 0.3 to
    0.8 s a render on the shared test machine, so all 256 (set FITGUARD_KUBECTL_ALL=1) take minutes."""
    everything = [(), *((component,) for component in (*MODES, *FEATURES))]
    everything += [((mode,) if mode else ()) + FEATURES for mode in (None, *MODES)]
    return everything


def name(combination: Combination) -> str:
    return "+".join(combination) or "base"


def kustomization(directory: Path, combination: Sequence[str], **fields: object) -> Path:
    """A kustomization in `directory` of the base with these components, in this order."""
    return write_kustomization(directory, [BASE], [COMPONENTS / component for component in combination], **fields)
