"""Which kubeconfig a command reads, and the one line every command prints when it cannot load it.

The files are the Kubernetes Python client's (and kubectl's) choice: `--kubeconfig`, else each
file $KUBECONFIG lists (joined by the OS path separator), else ~/.kube/config; a pod in a cluster
naming none uses its service account. None of those files existing is the commonest first-run
mistake, and the client's own words for it ("Invalid kube-config file. No configuration found.")
read as a broken file: `missing_kubeconfig` says what was looked for instead.
"""

from __future__ import annotations

import os
from typing import Any

CONFIG_ERROR = "ConfigError"  # KubeError.reason of a configuration that cannot be loaded
IN_CLUSTER_VARIABLE = "KUBERNETES_SERVICE_HOST"
DEFAULT_KUBECONFIG = "~/.kube/config"


def in_cluster(kubeconfig: str | None) -> bool:
    """Whether the service account is used: a pod in a cluster that names no kubeconfig."""
    return kubeconfig is None and IN_CLUSTER_VARIABLE in os.environ


def missing_kubeconfig(kubeconfig: str | None) -> str | None:
    """Why no kubeconfig can be read when none of the files that would be read exists; else None
    (a file exists, or the service account is used)."""
    if in_cluster(kubeconfig):
        return None
    listed = os.environ.get("KUBECONFIG") or ""
    if kubeconfig:
        named, paths = "--kubeconfig", [kubeconfig]
    elif listed:
        named, paths = "$KUBECONFIG", [p for p in listed.split(os.pathsep) if p]
    else:
        named, paths = "", [DEFAULT_KUBECONFIG]
    if any(os.path.exists(os.path.expanduser(path)) for path in paths):
        return None
    if not named:
        return f"{DEFAULT_KUBECONFIG} does not exist and $KUBECONFIG is not set"
    if len(paths) == 1:
        return f"{named} {paths[0]} does not exist"
    return f"none of the files {named} names exists ({', '.join(paths)})"


def config_problem(err: Any, offline: str = "") -> str | None:
    """For a KubeError saying the configuration cannot be loaded: one line, with `offline` (the
    command's way to run without a cluster) after it; None for any other error."""
    if getattr(err, "status", None) != 0 or getattr(err, "reason", None) != CONFIG_ERROR:
        return None
    line = " ".join(f"cannot load the Kubernetes configuration: {err.message}".split())
    return f"{line}; {offline}" if offline else line
