"""Compile what Karpenter knows of each instance type, beyond fitguard's own instance facts, into
`capacity/data/karpenter_facts.json`, and its published instance-type reference into the test
table `tests/data/karpenter_instance_types.json`.

Inputs, all read from files the maintainer fetched (never from the network here):

- `--reference`: aws/karpenter-provider-aws `website/content/en/docs/reference/instance-types.md`,
  written by its `hack/docs/instancetypes_gen/main.go` from live DescribeInstanceTypes in three
  regions: per type, the labels Karpenter gives it and its allocatable (capacity less overhead)
  with an AL2023 EC2NodeClass, no block device mappings, the default settings.
- `--limits` (repeatable): Karpenter's copy of the VPC resource controller's table,
  `pkg/providers/instancetype/zz_generated.vpclimits.go`, at a commit. Karpenter's `awsPodENI`
  offers `BranchInterface` of a trunking-compatible type from this copy (not the controller's
  own table), so the branch ENIs Karpenter plans with depend on the Karpenter release.

What `capacity/data/karpenter_facts.json` takes from the reference, per type, and why:

- `vcpu`, `memoryMiB`, `architecture`: only for types fitguard's instance facts have no shape for
  (cluster-autoscaler's static list does not list them). The labels `karpenter.k8s.aws/instance-cpu`,
  `karpenter.k8s.aws/instance-memory` and `kubernetes.io/arch` are EC2's `DefaultVCpus`,
  `SizeInMiB` and first supported architecture as Karpenter restates them (`computeRequirements`);
  for every type both list they equal cluster-autoscaler's values (the compile refuses otherwise).
- `localNvmeGB`: the label `karpenter.k8s.aws/instance-local-nvme`, EC2's
  `InstanceStorageInfo.TotalSizeInGB` for types with NVMe instance store (RAID0's ephemeral storage).
- `labels`: the labels of `STORED_LABELS` (processor, EBS and network bandwidth, GPU and accelerator
  names), which Karpenter sets from DescribeInstanceTypes; every type of the reference has an entry,
  so a label absent there is one Karpenter does not set (DoesNotExist) for that type.
- `nvidiaGpu`, `amdGpu`, `neuron`, `neuronCores`, `efa`: the reference's resource column, which is
  the EC2 value unchanged (`computeCapacity` passes these through; no overhead subtracts from them).

Usage:

    python scripts/compile_karpenter_facts.py \\
        --reference instance-types.md --reference-source REPO@COMMIT:PATH \\
        --limits VPCLIMITS.go --limits-source REPO@COMMIT:PATH [--limits ... --limits-source ...] \\
        --retrieved YYYY-MM-DD [--facts-out F.json] [--reference-out R.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compile_instance_types import _generated_at, _source_ref, parse_go_map

from capacity.karpenter.instance_labels import STORED

ROOT = Path(__file__).resolve().parents[1]
FACTS_OUT = ROOT / "capacity" / "data" / "karpenter_facts.json"
REFERENCE_OUT = ROOT / "tests" / "data" / "karpenter_instance_types.json"
INSTANCE_TYPES = ROOT / "capacity" / "data" / "instance_types.json"

_TYPE = re.compile(r"^### `([^`]+)`$")
_ROW = re.compile(r"^ \|([^|]+)\|([^|]*)\|$")
# labels EC2 facts fitguard has no other source for (`computeRequirements` sets them from
# ProcessorInfo, EbsInfo, NetworkInfo, the bandwidth table, GpuInfo, InferenceAcceleratorInfo, NeuronInfo):
# the ones capacity/karpenter/instance_labels.py reads back from the compiled facts
STORED_LABELS = STORED
_PASS_THROUGH = {
    "nvidia.com/gpu": "nvidiaGpu",
    "amd.com/gpu": "amdGpu",
    "aws.amazon.com/neuron": "neuron",
    "aws.amazon.com/neuroncore": "neuronCores",
    "vpc.amazonaws.com/efa": "efa",
}


def parse_reference(text: str) -> dict[str, dict[str, dict[str, str]]]:
    """Every `### type` section's label and resource rows, as written."""
    types: dict[str, dict[str, dict[str, str]]] = {}
    section: dict[str, str] | None = None
    current: dict[str, dict[str, str]] | None = None
    for line in text.splitlines():
        if found := _TYPE.match(line):
            current = types.setdefault(found[1], {"labels": {}, "resources": {}})
            section = None
        elif current is not None and line.startswith("#### "):
            section = current.get(line[5:].strip().lower())
        elif section is not None and (row := _ROW.match(line)):
            key, value = row[1].strip(), row[2].strip()
            if key not in ("Label", "Resource", "--"):  # the header and its rule
                section[key] = value
    return types


def branch_table(text: str) -> dict[str, int]:
    """Karpenter's `awsPodENI` per type: BranchInterface where trunking-compatible (others offer 0)."""
    limits = parse_go_map(text, "Limits")
    return {
        name: int(raw["BranchInterface"])
        for name, raw in sorted(limits.items())
        if raw["IsTrunkingCompatible"] and int(raw["BranchInterface"]) > 0
    }


def supplement(reference: dict[str, dict[str, dict[str, str]]], known: dict[str, Any]) -> dict[str, Any]:
    """The facts fitguard lacks, per type (see the module docstring); refuses a shape that disagrees."""
    out: dict[str, Any] = {}
    for name in sorted(reference):
        labels, resources = reference[name]["labels"], reference[name]["resources"]
        shape = {
            "vcpu": int(labels["karpenter.k8s.aws/instance-cpu"]),
            "memoryMiB": int(labels["karpenter.k8s.aws/instance-memory"]),
            "architecture": labels["kubernetes.io/arch"],
        }
        entry: dict[str, Any] = {}
        mine = known.get(name, {})
        if "memoryMiB" in mine:
            theirs = {k: mine[k] for k in shape}
            if theirs != shape:
                raise SystemExit(f"{name}: fitguard's shape {theirs} differs from the reference's {shape}")
        else:
            entry.update(shape)
        if "karpenter.k8s.aws/instance-local-nvme" in labels:
            entry["localNvmeGB"] = int(labels["karpenter.k8s.aws/instance-local-nvme"])
        for resource, key in _PASS_THROUGH.items():
            if resource in resources:
                entry[key] = int(resources[resource])
        entry["labels"] = {key: labels[key] for key in STORED_LABELS if key in labels}
        out[name] = entry
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--reference-source", required=True, help="REPO@COMMIT:PATH")
    parser.add_argument("--limits", type=Path, action="append", required=True)
    parser.add_argument("--limits-source", action="append", required=True, help="REPO@COMMIT:PATH")
    parser.add_argument("--retrieved", required=True, help="YYYY-MM-DD")
    parser.add_argument("--facts-out", type=Path, default=FACTS_OUT)
    parser.add_argument("--reference-out", type=Path, default=REFERENCE_OUT)
    return parser


def _lines(source: dict[str, Any], key: str, rows: dict[str, Any]) -> str:
    """Readable `_source`, then one entry per line, so a regenerated file diffs small."""
    body = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in rows.items())
    head = json.dumps(source, indent=2).replace("\n", "\n  ")
    return f'{{\n  "_source": {head},\n  "{key}": {{\n{body}\n  }}\n}}\n'


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if len(args.limits) != len(args.limits_source):
        raise SystemExit("each --limits needs its --limits-source")
    reference_ref = _source_ref(args.reference_source, "--reference-source")
    reference = parse_reference(args.reference.read_text(encoding="utf-8"))
    known = json.loads(INSTANCE_TYPES.read_text(encoding="utf-8"))["types"]
    tables: dict[str, Any] = {}
    branches: dict[str, dict[str, int]] = {}
    for path, spec in zip(args.limits, args.limits_source, strict=True):
        ref = _source_ref(spec, "--limits-source")
        text = path.read_text(encoding="utf-8")
        tables[ref["commit"]] = {**ref, "generatedAt": _generated_at(text)}
        branches[ref["commit"]] = branch_table(text)
    command = " ".join(
        ["python scripts/compile_karpenter_facts.py", f"--reference {args.reference.name}"]
        + [f"--reference-source {args.reference_source}"]
        + [
            f"--limits {p.name} --limits-source {s}"
            for p, s in zip(args.limits, args.limits_source, strict=True)
        ]
        + [f"--retrieved {args.retrieved}"]
    )
    source = {
        "retrieved": args.retrieved,
        "command": command,
        "reference": reference_ref,
        "branchTables": tables,
    }
    facts = {"_source": source, "types": supplement(reference, known), "branchInterfaces": branches}
    rendered = _lines(source, "types", facts["types"])
    # the branch tables go last, one table per line
    rendered = rendered[: rendered.rstrip().rfind("}")].rstrip() + ',\n  "branchInterfaces": {\n'
    rendered += ",\n".join(
        f"    {json.dumps(c)}: {json.dumps(t, sort_keys=True)}" for c, t in branches.items()
    )
    rendered += "\n  }\n}\n"
    args.facts_out.write_text(rendered, encoding="utf-8")
    ref_source = {"retrieved": args.retrieved, "reference": reference_ref, "command": command}
    args.reference_out.write_text(_lines(ref_source, "types", reference), encoding="utf-8")
    print(f"{len(facts['types'])} supplemented types, {len(reference)} reference types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
