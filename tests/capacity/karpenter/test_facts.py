"""The Karpenter facts data file (capacity/data/karpenter_facts.json) and the stored reference table
(tests/data/karpenter_instance_types.json) are what scripts/compile_karpenter_facts.py makes of
Karpenter's published instance-type reference: the committed entries are reproduced from the
stored table, the reference's markdown is read row by row, and a shape that disagrees with
fitguard's own instance facts is refused."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compile_karpenter_facts", ROOT / "scripts" / "compile_karpenter_facts.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _json(path: str) -> dict[str, Any]:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def test_the_committed_entries_are_reproduced_from_the_stored_reference() -> None:
    """supplement() over the stored reference and fitguard's instance facts gives exactly the
    committed per-type entries, and both files name the same reference commit."""
    reference = _json("tests/data/karpenter_instance_types.json")
    facts = _json("capacity/data/karpenter_facts.json")
    known = _json("capacity/data/instance_types.json")["types"]
    assert _script().supplement(reference["types"], known) == facts["types"]
    assert reference["_source"]["reference"] == facts["_source"]["reference"]
    assert set(facts["branchInterfaces"]) == set(facts["_source"]["branchTables"])


MARKDOWN = """## m5 Family
### `m5.large`
#### Labels
 | Label | Value |
 |--|--|
 |karpenter.k8s.aws/instance-cpu|2|
 |karpenter.k8s.aws/instance-memory|8192|
 |kubernetes.io/arch|amd64|
#### Resources
 | Resource | Quantity |
 |--|--|
 |cpu|1930m|
 |vpc.amazonaws.com/pod-eni|9|
"""


def test_the_reference_markdown_is_read_row_by_row() -> None:
    """Each type's label and resource rows, the header rows left out."""
    parsed = _script().parse_reference(MARKDOWN)
    assert parsed == {
        "m5.large": {
            "labels": {
                "karpenter.k8s.aws/instance-cpu": "2",
                "karpenter.k8s.aws/instance-memory": "8192",
                "kubernetes.io/arch": "amd64",
            },
            "resources": {"cpu": "1930m", "vpc.amazonaws.com/pod-eni": "9"},
        }
    }


def test_a_shape_that_disagrees_with_fitguards_facts_is_refused() -> None:
    """Where fitguard's instance facts have a shape, the reference must agree with it."""
    parsed = _script().parse_reference(MARKDOWN)
    known = {"m5.large": {"vcpu": 4, "memoryMiB": 8192, "architecture": "amd64"}}
    with pytest.raises(SystemExit, match=r"m5\.large: fitguard's shape"):
        _script().supplement(parsed, known)
