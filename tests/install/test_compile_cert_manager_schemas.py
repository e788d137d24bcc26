"""scripts/compile_cert_manager_schemas.py keeps a CRD's served v1 schema whole but for the
`description` keywords (a property named `description` stays), refuses CRDs lacking a wanted kind,
and the committed data file has the shape the tests read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scripts.compile_cert_manager_schemas import DEFAULT_OUT, compile_schemas, main


def crd(kind: str, schema: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "spec": {
                "group": "cert-manager.io",
                "names": {"kind": kind},
                "versions": [
                    {"name": "v1alpha2", "served": False, "schema": {"openAPIV3Schema": {"type": "string"}}},
                    {"name": "v1", "served": True, "schema": {"openAPIV3Schema": schema}},
                ],
            },
        }
    )


SCHEMA = {
    "description": "prose",
    "type": "object",
    "properties": {
        "spec": {
            "description": "more prose",
            "type": "object",
            "required": ["secretName"],
            "properties": {
                "secretName": {"type": "string", "description": "x"},
                "description": {"type": "string"},
            },
        }
    },
}
STRIPPED = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["secretName"],
            "properties": {"secretName": {"type": "string"}, "description": {"type": "string"}},
        }
    },
}


def test_descriptions_go_and_everything_else_stays() -> None:
    """Whole result: both kinds' v1 schemas, without prose, the property named description kept."""
    assert compile_schemas([crd("Certificate", SCHEMA), crd("Issuer", SCHEMA)]) == {
        "cert-manager.io/v1/Certificate": STRIPPED,
        "cert-manager.io/v1/Issuer": STRIPPED,
    }


def test_a_missing_kind_is_refused_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = tmp_path / "certificates.yaml"
    only.write_text(crd("Certificate", SCHEMA))
    with pytest.raises(ValueError, match="Issuer"):
        compile_schemas([only.read_text()])
    out = tmp_path / "out.json"
    assert main(["--crd", str(only), "--source", "x@y:z", "--retrieved", "2026-12-01", "-o", str(out)]) == 2
    assert "Issuer" in capsys.readouterr().err and not out.exists()


def test_the_committed_file_names_its_source_and_holds_both_kinds() -> None:
    document = json.loads(DEFAULT_OUT.read_text())
    assert sorted(document["schemas"]) == ["cert-manager.io/v1/Certificate", "cert-manager.io/v1/Issuer"]
    assert document["_source"]["from"].startswith(
        "cert-manager/cert-manager@2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd"
    )
    assert document["_source"]["retrieved"] == "2026-12-01"
    assert '"description": "' not in DEFAULT_OUT.read_text().replace('"description": {', "")
