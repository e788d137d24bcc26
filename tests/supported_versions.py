"""The supported versions docs/install.md and README.md state (their "Supported versions" tables),
read so that tests check the manifests against what the documents promise."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = (ROOT / "docs" / "install.md", ROOT / "README.md")
_ROW = re.compile(r"^\| (?P<what>[^|]+?) \| (?P<versions>[^|]+?) \|", re.MULTILINE)
_MINIMUM = re.compile(r"^(\d+)\.(\d+) or newer$")


def stated_rows(document: Path) -> dict[str, str]:
    """what -> versions, from the table under the document's "Supported versions" heading."""
    text = document.read_text()
    match = re.search(r"^#+ Supported versions\n(?P<body>.*?)(?=^#+ |\Z)", text, re.MULTILINE | re.DOTALL)
    if match is None:
        raise ValueError(f"{document.name}: no 'Supported versions' section")
    rows = {m["what"].strip(): m["versions"].strip() for m in _ROW.finditer(match["body"])}
    rows.pop("What", None)
    return {what: versions for what, versions in rows.items() if not set(versions) <= {"-", " "}}


def minimum_kubernetes(document: Path) -> tuple[int, int]:
    """The oldest Kubernetes (major, minor) the document promises, from `| Kubernetes | 1.N or newer |`."""
    versions = stated_rows(document)["Kubernetes"]
    match = _MINIMUM.match(versions)
    if match is None:
        raise ValueError(f"{document.name}: Kubernetes row {versions!r} is not '1.N or newer'")
    return int(match[1]), int(match[2])


MINIMUM = minimum_kubernetes(DOCUMENTS[0])
MINIMUM_VALIDATOR_VERSION = f"{MINIMUM[0]}.{MINIMUM[1]}.0"  # kubernetes_validate's name for it
