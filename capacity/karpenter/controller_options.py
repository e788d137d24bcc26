"""The Karpenter controller's settings that change capacity, read from its container (the
Deployment's pod template, as a dict), as Karpenter reads them at start.

Upstream: aws/karpenter-provider-aws `pkg/operator/options/options.go` `AddFlags` (each flag's
default is its environment variable: `--reserved-enis` / `RESERVED_ENIS` read with strconv.Atoi,
default 0; `--vm-memory-overhead-percent` / `VM_MEMORY_OVERHEAD_PERCENT` with strconv.ParseFloat,
default 0.075; `--aws-feature-gates` / `AWS_FEATURE_GATES`, default `NodeClassCEL=false`; an
environment value that does not parse is the default), `ParseFeatureGates`,
`options_validation.go` (`validateVMMemoryOverheadPercent`, `validateReservedENIs`: negative values
stop the controller); `pkg/utils/utils.go` `WithDefaultFloat64`; kubernetes-sigs/karpenter
`pkg/utils/env/env.go` `WithDefaultInt`. A flag given twice takes its last value (Go's `flag`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from capacity.karpenter.nodeclass import KarpenterOptions
from capacity.karpenter.requirement import atoi

# the controller's pods as Karpenter's Helm chart labels them (charts/karpenter/templates/_helpers.tpl
# `karpenter.selectorLabels`: app.kubernetes.io/name is the chart's name)
KARPENTER_SELECTOR = "app.kubernetes.io/name=karpenter"
RESERVED_ENIS = "RESERVED_ENIS"
VM_MEMORY_OVERHEAD_PERCENT = "VM_MEMORY_OVERHEAD_PERCENT"
AWS_FEATURE_GATES = "AWS_FEATURE_GATES"
_FLAGS = {
    "reserved-enis": RESERVED_ENIS,
    "vm-memory-overhead-percent": VM_MEMORY_OVERHEAD_PERCENT,
    "aws-feature-gates": AWS_FEATURE_GATES,
}
# strconv.ParseFloat's decimal forms (hex floats, inf and nan left out: no setting uses them)
_FLOAT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


class KarpenterOptionsError(ValueError):
    """A setting the controller would refuse at start, or one fitguard cannot read."""


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    values: dict[str, str] = {}
    for entry in container.get("env") or []:
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if name not in _FLAGS.values():
            continue
        if "valueFrom" in entry:
            raise KarpenterOptionsError(f"env {name}: set from valueFrom, which fitguard does not resolve")
        values[str(name)] = str(entry.get("value") or "")  # a later entry overrides an earlier one
    return values


def _flags(words: Sequence[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        name, _, value = word.lstrip("-").partition("=")
        if word.startswith("-") and name in _FLAGS:
            if "=" not in word:  # `--flag value`
                index += 1
                if index == len(words):
                    raise KarpenterOptionsError(f"flag --{name} needs a value")
                value = words[index]
            values[_FLAGS[name]] = value
        index += 1
    return values


def _gates(text: str) -> bool:
    """ParseFeatureGates: `Name=bool` pairs, comma-separated; only NodeClassCEL matters here."""
    cel = False
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = pair.partition("=")
        if not sep or value.strip().lower() not in ("true", "false", "1", "0", "t", "f"):
            raise KarpenterOptionsError(f"{AWS_FEATURE_GATES}: {pair!r} is not Name=true|false")
        if name.strip() == "NodeClassCEL":
            cel = value.strip().lower() in ("true", "1", "t")
    return cel


def karpenter_options(container: Mapping[str, Any]) -> KarpenterOptions:
    """The settings of the Karpenter controller container `container` (its `env`, `command`, `args`)."""
    env = _env(container)
    reserved = atoi(env[RESERVED_ENIS]) if RESERVED_ENIS in env else None
    overhead_text = env.get(VM_MEMORY_OVERHEAD_PERCENT, "")
    overhead = float(overhead_text) if _FLOAT.fullmatch(overhead_text) else None
    gates = env.get(AWS_FEATURE_GATES, "NodeClassCEL=false")
    words = [str(w) for w in [*(container.get("command") or []), *(container.get("args") or [])]]
    flags = _flags(words)
    if RESERVED_ENIS in flags:  # a flag that does not parse stops the controller
        reserved = atoi(flags[RESERVED_ENIS])
        if reserved is None:
            raise KarpenterOptionsError(f"--reserved-enis {flags[RESERVED_ENIS]!r} is not an integer")
    if VM_MEMORY_OVERHEAD_PERCENT in flags:
        if not _FLOAT.fullmatch(flags[VM_MEMORY_OVERHEAD_PERCENT]):
            raise KarpenterOptionsError(
                f"--vm-memory-overhead-percent {flags[VM_MEMORY_OVERHEAD_PERCENT]!r} is not a number"
            )
        overhead = float(flags[VM_MEMORY_OVERHEAD_PERCENT])
    options = KarpenterOptions(
        reserved_enis=0 if reserved is None else reserved,
        vm_memory_overhead_percent=0.075 if overhead is None else overhead,
        node_class_cel=_gates(flags.get(AWS_FEATURE_GATES, gates)),
    )
    if options.reserved_enis < 0 or options.vm_memory_overhead_percent < 0:
        raise KarpenterOptionsError("reserved-enis and vm-memory-overhead-percent cannot be negative")
    return options
