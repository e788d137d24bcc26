"""`make lint`: only kube/ talks to the Kubernetes API, for paths and verbs too (docs/design.md,
layering). import-linter already keeps the `kubernetes` library inside kube/; this check keeps the
rest of the code from building API paths or choosing verbs with kube's own client. Outside kube/ a
module must not
- contain a string literal that is an API path (`/api/v1...`, `/apis/...`),
- call `.request(...)` (a raw verb on the client) or `.path(...)` (a Resource's path),
- take a parameter `api` annotated `Any` (kube/client.py's ApiLike says what is accepted).
Prints each finding as `path:line: what` and exits 1 when there is one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("capacity", "certs", "controller", "fitguard", "webhook")
API_PATH_PREFIXES = ("/api/", "/apis/")
FORBIDDEN_CALLS = ("request", "path")


def findings(source: str, filename: str) -> Iterator[tuple[int, str]]:
    """Each (line, what) in one module's source that crosses the boundary."""
    tree = ast.parse(source, filename)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # f-strings' parts too
            if node.value.startswith(API_PATH_PREFIXES):
                yield node.lineno, f"{node.value!r} is an API path: use a function of kube/api.py"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in FORBIDDEN_CALLS
        ):
            yield node.lineno, f".{node.func.attr}(...) on the API: use a function of kube/api.py"
        elif isinstance(node, ast.arg) and node.arg == "api" and _is_any(node.annotation):
            yield node.lineno, "parameter `api: Any`: annotate it ApiLike or KubeClient (kube/client.py)"


def _is_any(annotation: ast.expr | None) -> bool:
    return annotation is not None and ast.unparse(annotation) in ("Any", "typing.Any")


def check(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Every finding under `root`'s packages, as `path:line: what`, in path order."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for line, what in findings(path.read_text(encoding="utf-8"), str(path)):
                found.append(f"{path.relative_to(root)}:{line}: {what}")
    return found


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    found = check(root)
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} place(s) outside kube/ talk to the Kubernetes API themselves", file=sys.stderr)
        return 1
    print("only kube/ builds API paths and calls the client: kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
