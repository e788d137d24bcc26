"""Compile the openAPIV3Schema of cert-manager's Certificate and Issuer (cert-manager.io/v1) into
`tests/data/cert_manager_schemas.json`, which the manifest tests validate the cert-manager component
against (tests/cert_manager_schemas.py). No package ships these CRDs, so they are read from files
the maintainer fetched (never from the network here): cert-manager/cert-manager's
`deploy/crds/cert-manager.io_certificates.yaml` and `deploy/crds/cert-manager.io_issuers.yaml`.

Each schema is kept whole in structure (types, required keys, enums, patterns, formats, the
`x-kubernetes-*` markers) with every `description` dropped: the prose is cert-manager's, and only
the structure validates. `_source` records the repository, commit, paths, when they were read and
the command.

The committed file was compiled on 2026-12-01 from
cert-manager/cert-manager@2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd (committed 2026-08-22,
`git describe`: v1.21.0-beta.0-212-g2d0d7f7f7):

    python scripts/compile_cert_manager_schemas.py \\
        --crd CERTIFICATES.yaml --crd ISSUERS.yaml \\
        --source cert-manager/cert-manager@2d0d7f7f74241a9cbf79f0e2a7bb247238ee09fd:deploy/crds \\
        --retrieved 2026-12-01
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "cert_manager_schemas.json"
KINDS = ("Certificate", "Issuer")
VERSION = "v1"


def without_descriptions(schema: Any) -> Any:
    """The schema with every `description` keyword removed (a property named `description` stays)."""
    if isinstance(schema, list):
        return [without_descriptions(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            result[key] = {name: without_descriptions(child) for name, child in value.items()}
        else:
            result[key] = without_descriptions(value)
    return result


def schemas_of(crd: dict[str, Any]) -> dict[str, Any]:
    """`apiVersion/kind` -> openAPIV3Schema for the served version VERSION of one CRD."""
    spec = crd["spec"]
    kind = spec["names"]["kind"]
    found = {}
    for version in spec["versions"]:
        if version["name"] == VERSION and version.get("served"):
            key = f"{spec['group']}/{VERSION}/{kind}"
            found[key] = without_descriptions(version["schema"]["openAPIV3Schema"])
    return found


def compile_schemas(texts: Sequence[str]) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for text in texts:
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                schemas.update(schemas_of(doc))
    wanted = {f"cert-manager.io/{VERSION}/{kind}" for kind in KINDS}
    missing = wanted - set(schemas)
    if missing:
        raise ValueError(f"the CRDs given define no {sorted(missing)}")
    return {key: schemas[key] for key in sorted(wanted)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crd", action="append", required=True, type=Path, help="a CRD YAML file")
    parser.add_argument("--source", required=True, help="REPO@COMMIT:DIRECTORY the files came from")
    parser.add_argument("--retrieved", required=True, help="YYYY-MM-DD the files were read")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    try:
        schemas = compile_schemas([path.read_text() for path in args.crd])
    except (OSError, ValueError, KeyError, yaml.YAMLError) as err:
        print(f"compile_cert_manager_schemas: {err}", file=sys.stderr)
        return 2
    document = {
        "_source": {
            "from": args.source,
            "files": sorted(path.name for path in args.crd),
            "retrieved": args.retrieved,
            "what": f"openAPIV3Schema of {', '.join(KINDS)} ({VERSION}), descriptions dropped",
            "command": "python scripts/compile_cert_manager_schemas.py "
            + " ".join(f"--crd {path.name}" for path in args.crd)
            + f" --source {args.source} --retrieved {args.retrieved}",
        },
        "schemas": schemas,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {', '.join(schemas)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
