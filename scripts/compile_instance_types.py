"""Compile AWS's per-instance-type tables (Go source) into `capacity/data/instance_types.json`.

Inputs, both read from files the maintainer fetched (never from the network here):

- the VPC resource controller's `Limits` map (`pkg/aws/vpc/limits.go` in
  aws/amazon-vpc-resource-controller-k8s; Karpenter vendors a byte copy with another package
  clause): branch ENIs, trunking, ENIs, IPv4 per ENI, network cards, hypervisor, bare metal;
- cluster-autoscaler's static `InstanceTypes` map (`cluster-autoscaler/cloudprovider/aws/
  ec2_instance_types.go` in kubernetes/autoscaler): vCPU, memory, GPUs, architecture, the shape
  CA gives a template node when it cannot call DescribeInstanceTypes.

Usage (the command that produced the committed file is recorded in its `_source.command`):

    python scripts/compile_instance_types.py LIMITS.go EC2_INSTANCE_TYPES.go \\
        --limits-source REPO@COMMIT:PATH [--limits-upstream REPO:PATH] \\
        --autoscaler-source REPO@COMMIT:PATH --retrieved YYYY-MM-DD [-o OUT.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "capacity" / "data" / "instance_types.json"

FIELDS = {
    "branchInterfaces": "branch ENIs (vpc.amazonaws.com/pod-eni) a node offers to pods with security groups;"
    " 0 when the type cannot trunk (VPC resource controller BranchInterface)",
    "trunking": "whether the type can attach a trunk ENI at all (IsTrunkingCompatible)",
    "interfaces": "maximum ENIs of the instance, all network cards (Interface)",
    "ipv4PerInterface": "IPv4 addresses per ENI (IPv4PerInterface)",
    "networkCards": "number of network cards (len(NetworkCards))",
    "hypervisor": "EC2 hypervisor (nitro, xen); empty for bare metal, as EC2 reports it",
    "bareMetal": "a .metal type (IsBareMetal)",
    "vcpu": "vCPUs in cluster-autoscaler's static list (VCPU); absent when CA does not list the type",
    "memoryMiB": "memory in MiB in cluster-autoscaler's static list (MemoryMb); absent likewise",
    "gpu": "GPUs in cluster-autoscaler's static list (GPU); absent likewise",
    "architecture": "amd64 or arm64 in cluster-autoscaler's static list (Architecture); absent likewise",
}

# Go tokens we need: strings, comments, words (identifiers, numbers, true/false), punctuation.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|[A-Za-z_0-9.\-]+|[{}\[\]:,*=()]|\S', re.S)
_GENERATED_AT = re.compile(r"^// This file was generated at (\S+)", re.M)
_CA_UPDATED = re.compile(r'StaticListLastUpdateTime\s*=\s*"([^"]*)"')


class GoParseError(ValueError):
    """The Go source is not the map literal we expect; says what and where."""


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text) if not t.startswith(("//", "/*"))]


class _Parser:
    """Just enough of Go composite literals: keyed structs, slices, strings, ints, bools."""

    def __init__(self, tokens: list[str], start: int) -> None:
        self.toks = tokens
        self.i = start

    def _peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else ""

    def _take(self, expected: str | None = None) -> str:
        tok = self._peek()
        if not tok or (expected is not None and tok != expected):
            raise GoParseError(f"expected {expected or 'a token'!r} at token {self.i}, found {tok!r}")
        self.i += 1
        return tok

    def value(self) -> Any:
        tok = self._peek()
        if tok.startswith('"'):
            self.i += 1
            return json.loads(tok)
        if tok in ("true", "false"):
            self.i += 1
            return tok == "true"
        if re.fullmatch(r"-?\d+", tok):
            self.i += 1
            return int(tok)
        if tok == "{":  # element of a typed slice or map: the type is elided
            return self.composite()
        # a type then its literal: map[string]*VPCLimits{, []NetworkCard{, VPCLimits{
        while self._peek() not in ("{", ""):
            if self._peek() in (",", "}", ":"):
                raise GoParseError(f"expected a value at token {self.i}, found {self._peek()!r}")
            self.i += 1
        return self.composite()

    def composite(self) -> dict[str, Any] | list[Any]:
        self._take("{")
        keyed: dict[str, Any] = {}
        items: list[Any] = []
        while self._peek() != "}":
            if self._peek(1) == ":":
                key = self._take()
                self._take(":")
                keyed[json.loads(key) if key.startswith('"') else key] = self.value()
            else:
                items.append(self.value())
            if self._peek() == ",":
                self._take(",")
        self._take("}")
        if keyed and items:
            raise GoParseError(f"mixed keyed and positional elements before token {self.i}")
        return keyed if keyed else items


def parse_go_map(text: str, var_name: str) -> dict[str, dict[str, Any]]:
    """The literal of `var <var_name> = map[...]...{...}` as plain Python data."""
    toks = _tokens(text)
    for i in range(len(toks) - 3):
        if toks[i] == "var" and toks[i + 1] == var_name and toks[i + 2] == "=":
            parsed = _Parser(toks, i + 3).value()
            if not isinstance(parsed, dict):
                raise GoParseError(f"{var_name} is not a keyed map literal")
            return parsed
    raise GoParseError(f"no `var {var_name} = ...` in the source")


def branch_facts(limits: dict[str, dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The VPC resource controller's fields, renamed; absent optional fields stay absent."""
    for name, raw in limits.items():
        try:
            entry: dict[str, Any] = {
                "branchInterfaces": int(raw["BranchInterface"]),
                "trunking": bool(raw["IsTrunkingCompatible"]),
                "interfaces": int(raw["Interface"]),
                "ipv4PerInterface": int(raw["IPv4PerInterface"]),
                "networkCards": len(raw.get("NetworkCards", [])),
            }
        except KeyError as missing:
            raise GoParseError(f"{name}: no field {missing}") from None
        # older tables have no hypervisor fields; the generator named it Hypervisor or HypervisorType
        hypervisor = raw.get("Hypervisor", raw.get("HypervisorType"))
        if hypervisor is not None:
            entry["hypervisor"] = str(hypervisor)
        if "IsBareMetal" in raw:
            entry["bareMetal"] = bool(raw["IsBareMetal"])
        yield name, entry


def shape_facts(ca_types: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """cluster-autoscaler's template shape per type."""
    shapes: dict[str, dict[str, Any]] = {}
    for name, raw in ca_types.items():
        try:
            shapes[name] = {
                "vcpu": int(raw["VCPU"]),
                "memoryMiB": int(raw["MemoryMb"]),
                "gpu": int(raw["GPU"]),
                "architecture": str(raw["Architecture"]),
            }
        except KeyError as missing:
            raise GoParseError(f"{name}: no field {missing}") from None
    return shapes


def _source_ref(spec: str, flag: str) -> dict[str, str]:
    match = re.fullmatch(r"([\w.-]+/[\w.-]+)@([0-9a-f]{7,40}):(.+)", spec)
    if match is None:
        raise SystemExit(f"{flag} must be REPO@COMMIT:PATH, got {spec!r}")
    return {"repo": match[1], "commit": match[2], "path": match[3]}


def compile_tables(limits_text: str, ca_text: str, source: dict[str, Any]) -> dict[str, Any]:
    """The document written to instance_types.json (types sorted by name)."""
    shapes = shape_facts(parse_go_map(ca_text, "InstanceTypes"))
    types = {}
    for name, entry in sorted(branch_facts(parse_go_map(limits_text, "Limits"))):
        types[name] = {**entry, **shapes.get(name, {})}
    generated = _GENERATED_AT.search(limits_text)
    updated = _CA_UPDATED.search(ca_text)
    full_source = dict(source)
    full_source["limits"] = {**source["limits"], "generatedAt": generated[1] if generated else None}
    full_source["autoscaler"] = {
        **source["autoscaler"],
        "staticListLastUpdateTime": updated[1] if updated else None,
    }
    full_source["fields"] = FIELDS
    full_source["typeCount"] = len(types)
    return {"_source": full_source, "types": types}


def render(document: dict[str, Any]) -> str:
    """Readable `_source`, then one type per line: diffs of a regenerated table stay small."""
    lines = [
        "{",
        '  "_source": ' + json.dumps(document["_source"], indent=2).replace("\n", "\n  ") + ",",
        '  "types": {',
    ]
    entries = list(document["types"].items())
    for index, (name, entry) in enumerate(entries):
        comma = "," if index < len(entries) - 1 else ""
        lines.append(f"    {json.dumps(name)}: {json.dumps(entry)}{comma}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("limits", type=Path, help="Go file with `var Limits = map[string]*VPCLimits{...}`")
    parser.add_argument("autoscaler", type=Path, help="Go file with `var InstanceTypes = map[...]`")
    parser.add_argument("--limits-source", required=True, help="REPO@COMMIT:PATH the limits file was read at")
    parser.add_argument("--limits-upstream", help="REPO:PATH the limits file is a copy of, if it is one")
    parser.add_argument("--autoscaler-source", required=True, help="REPO@COMMIT:PATH of the CA list")
    parser.add_argument("--retrieved", required=True, help="date the files were fetched, YYYY-MM-DD")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.retrieved):
        raise SystemExit(f"--retrieved must be YYYY-MM-DD, got {args.retrieved!r}")
    limits_ref: dict[str, Any] = dict(_source_ref(args.limits_source, "--limits-source"))
    if args.limits_upstream:
        repo, _, path = args.limits_upstream.partition(":")
        limits_ref["copyOf"] = {"repo": repo, "path": path}
    source = {
        "retrieved": args.retrieved,
        "limits": limits_ref,
        "autoscaler": _source_ref(args.autoscaler_source, "--autoscaler-source"),
        "command": "python scripts/compile_instance_types.py LIMITS.go EC2_INSTANCE_TYPES.go "
        + " ".join(
            f"{flag} {value}"
            for flag, value in (
                ("--limits-source", args.limits_source),
                ("--limits-upstream", args.limits_upstream),
                ("--autoscaler-source", args.autoscaler_source),
                ("--retrieved", args.retrieved),
            )
            if value
        ),
    }
    try:
        document = compile_tables(
            args.limits.read_text(encoding="utf-8"), args.autoscaler.read_text(encoding="utf-8"), source
        )
    except GoParseError as err:
        print(f"compile_instance_types: {err}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(document), encoding="utf-8")
    print(f"wrote {len(document['types'])} instance types to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
