"""Compile AWS's per-instance-type tables (Go source, text) into `capacity/data/instance_types.json`.

Inputs, all read from files the maintainer fetched (never from the network here):

- `--limits`: the VPC resource controller's `Limits` map (aws/amazon-vpc-resource-controller-k8s
  `pkg/aws/vpc/limits.go`): branch ENIs, trunking, ENIs, IPv4 per ENI, network cards and the
  default card, hypervisor, bare metal. The controller decides trunking from exactly this map
  (`pkg/provider/branch/provider.go`: a type is supported when it is found and trunking-compatible).
- `--later-limits` (optional): a later copy of that file (Karpenter's
  `pkg/providers/instancetype/zz_generated.vpclimits.go`, which its `hack/code/vpc_limits_gen`
  downloads from the controller's default branch). Precedence: the controller's own table wins for
  every type it lists; the later copy only adds the types it does not list. Where both list a type
  and disagree, the data file's `_source.disagreements` keeps both entries, which was taken and why.
- `--autoscaler`: cluster-autoscaler's static `InstanceTypes` map (kubernetes/autoscaler
  `cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go`, written by
  `ec2_instance_types/gen.go` through `transformInstanceType` in `aws_util.go`): vCPU, memory,
  GPUs (every manufacturer), architecture (amd64 unless EC2 says arm64).
- `--eni-max-pods` (optional, a check): the VPC CNI's `misc/eni-max-pods.txt`
  (aws/amazon-vpc-cni-k8s, written by `scripts/gen_vpc_ip_limits.go`). fitguard computes max pods
  from the default network card's ENIs as that generator does; the compile refuses to write a
  table whose max pods differ from the file for any type both list.

Each type records the table its limits came from (`limitsFrom`) and, where cluster-autoscaler
lists it, its shape's (`shapeFrom`); `_source.tables` names each table's repository, commit and path.

The committed file was compiled on 2026-12-01 from (the same is in its `_source.tables`):

- aws/amazon-vpc-resource-controller-k8s@b8d425119bdba371202882b808f202c6073a46cc
  pkg/aws/vpc/limits.go (generated 2026-03-20T18:06:29Z);
- aws/karpenter-provider-aws@1d927085dd81a9df9301e613f371dac5b4d16bfe
  pkg/providers/instancetype/zz_generated.vpclimits.go (generated 2026-08-06T04:02:42Z);
- kubernetes/autoscaler@55c37cd5eb550756c5ccc5a89e9068d77797e575
  cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go (StaticListLastUpdateTime 2026-01-22);
- aws/amazon-vpc-cni-k8s@b52188387f2e2f10bf289ace929d6a63b176a4fa misc/eni-max-pods.txt.

Usage (the command that produced the committed file is recorded in its `_source.command`):

    python scripts/compile_instance_types.py \\
        --limits LIMITS.go --limits-source REPO@COMMIT:PATH \\
        [--later-limits COPY.go --later-limits-source REPO@COMMIT:PATH] \\
        --autoscaler EC2_INSTANCE_TYPES.go --autoscaler-source REPO@COMMIT:PATH \\
        [--eni-max-pods ENI_MAX_PODS.txt --eni-max-pods-source REPO@COMMIT:PATH] \\
        --retrieved YYYY-MM-DD [-o OUT.json]
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
    "defaultCardInterfaces": "maximum ENIs of the default network card (NetworkCards[DefaultNetworkCardIndex]"
    " when there are several cards, else Interface): the ENIs the VPC CNI uses, so max pods is"
    " defaultCardInterfaces * (ipv4PerInterface - 1) + 2, as misc/eni-max-pods.txt",
    "ipv4PerInterface": "IPv4 addresses per ENI (IPv4PerInterface)",
    "networkCards": "number of network cards (len(NetworkCards))",
    "hypervisor": "EC2 hypervisor (nitro, xen); empty for bare metal, as EC2 reports it",
    "bareMetal": "a .metal type (IsBareMetal)",
    "limitsFrom": "the key in _source.tables of the table the fields above came from",
    "vcpu": "vCPUs in cluster-autoscaler's static list (VCPU); absent when CA does not list the type",
    "memoryMiB": "memory in MiB in cluster-autoscaler's static list (MemoryMb); absent likewise",
    "gpu": "GPUs of every manufacturer in cluster-autoscaler's static list (GPU); absent likewise",
    "architecture": "amd64 or arm64 in cluster-autoscaler's static list (Architecture); absent likewise",
    "shapeFrom": "the key in _source.tables of the table vcpu, memoryMiB, gpu and architecture came from",
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


# Keys of `_source.tables`; each type's `limitsFrom` / `shapeFrom` is one of them.
RESOURCE_CONTROLLER = "resourceController"
LATER_COPY = "laterCopy"
AUTOSCALER = "autoscaler"
ENI_MAX_PODS = "eniMaxPods"

PRECEDENCE = (
    "The VPC resource controller decides trunking and branch ENIs from the Limits map compiled into it"
    " (pkg/provider/branch/provider.go: supported = found && IsTrunkingCompatible), so its own"
    " repository's table is taken for every type it lists. The later copy only adds the types that"
    " table does not list yet (new families), for which it is the only statement there is."
)
DISAGREEMENT_REASON = (
    "The controller's own repository, at the commit read, lists this type with these values; the"
    " later copy's values come from a table revision no commit of that repository shows yet, and"
    " fitguard cannot know which revision the cluster's controller runs. Taking the controller's entry"
    " makes a pod that needs a branch ENI on this type get a clear deny or warning instead of being"
    " admitted onto nodes that may never get a trunk ENI. Re-check when the repository catches up."
)


def default_card_interfaces(name: str, raw: dict[str, Any]) -> int:
    """The ENIs of the default network card, as the VPC CNI's generator
    (aws/amazon-vpc-cni-k8s scripts/gen_vpc_ip_limits.go, describeInstanceTypes) takes them:
    the card at DefaultNetworkCardIndex when there are several, else the instance's maximum."""
    cards = raw.get("NetworkCards") or []
    if len(cards) > 1:
        index = int(raw.get("DefaultNetworkCardIndex", 0))
        if not 0 <= index < len(cards):
            raise GoParseError(f"{name}: DefaultNetworkCardIndex {index} outside its {len(cards)} cards")
        return int(cards[index]["MaximumNetworkInterfaces"])
    return int(raw["Interface"])


def branch_facts(limits: dict[str, dict[str, Any]], table: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The VPC resource controller's fields, renamed; absent optional fields stay absent."""
    for name, raw in limits.items():
        try:
            entry: dict[str, Any] = {
                "branchInterfaces": int(raw["BranchInterface"]),
                "trunking": bool(raw["IsTrunkingCompatible"]),
                "interfaces": int(raw["Interface"]),
                "defaultCardInterfaces": default_card_interfaces(name, raw),
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
        entry["limitsFrom"] = table
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
                "shapeFrom": AUTOSCALER,
            }
        except KeyError as missing:
            raise GoParseError(f"{name}: no field {missing}") from None
    return shapes


def parse_eni_max_pods(text: str) -> dict[str, int]:
    """`misc/eni-max-pods.txt`: `# comments`, then one `TYPE MAXPODS` per line."""
    table: dict[str, int] = {}
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2 or not fields[1].isdigit():
            raise GoParseError(f"eni-max-pods line {number}: expected `TYPE MAXPODS`, found {line!r}")
        table[fields[0]] = int(fields[1])
    if not table:
        raise GoParseError("eni-max-pods: no `TYPE MAXPODS` line")
    return table


def max_pods(entry: dict[str, Any]) -> int:
    """The VPC CNI generator's printPodLimit on the default card: ENIs * (IPv4 per ENI - 1) + 2."""
    return int(entry["defaultCardInterfaces"]) * (int(entry["ipv4PerInterface"]) - 1) + 2


def merge_limits(
    primary: dict[str, dict[str, Any]], later: dict[str, dict[str, Any]] | None
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Precedence as PRECEDENCE says; returns the merged entries and the disagreements."""
    merged = dict(branch_facts(primary, RESOURCE_CONTROLLER))
    disagreements: dict[str, Any] = {}
    for name, entry in branch_facts(later or {}, LATER_COPY):
        if name not in merged:
            merged[name] = entry
            continue
        ours = {k: v for k, v in merged[name].items() if k != "limitsFrom"}
        theirs = {k: v for k, v in entry.items() if k != "limitsFrom"}
        if ours != theirs:
            differing = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
            disagreements[name] = {
                RESOURCE_CONTROLLER: {k: ours.get(k) for k in differing},
                LATER_COPY: {k: theirs.get(k) for k in differing},
                "taken": RESOURCE_CONTROLLER,
                "why": DISAGREEMENT_REASON,
            }
    return merged, disagreements


def check_max_pods(types: dict[str, dict[str, Any]], eni_max_pods: dict[str, int]) -> dict[str, Any]:
    """Every type both list must have the file's max pods. Raises GoParseError naming the first few."""
    both = sorted(set(types) & set(eni_max_pods))
    wrong = [
        f"{n}: {max_pods(types[n])} != {eni_max_pods[n]}"
        for n in both
        if max_pods(types[n]) != eni_max_pods[n]
    ]
    if wrong:
        raise GoParseError(f"max pods disagree with eni-max-pods.txt for {len(wrong)} types: {wrong[:5]}")
    return {
        "agreeing": len(both),
        "onlyInEniMaxPods": sorted(set(eni_max_pods) - set(types)),
    }


def _source_ref(spec: str, flag: str) -> dict[str, str]:
    match = re.fullmatch(r"([\w.-]+/[\w.-]+)@([0-9a-f]{7,40}):(.+)", spec)
    if match is None:
        raise SystemExit(f"{flag} must be REPO@COMMIT:PATH, got {spec!r}")
    return {"repo": match[1], "commit": match[2], "path": match[3]}


def _generated_at(text: str) -> str | None:
    found = _GENERATED_AT.search(text)
    return found[1] if found else None


def compile_tables(
    texts: dict[str, str | None], refs: dict[str, dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    """The document written to instance_types.json (types sorted by name).

    `texts` and `refs` are keyed by the `_source.tables` keys; a None text is a table not given."""
    primary = parse_go_map(texts[RESOURCE_CONTROLLER] or "", "Limits")
    later_text = texts.get(LATER_COPY)
    later = parse_go_map(later_text, "Limits") if later_text is not None else None
    merged, disagreements = merge_limits(primary, later)
    ca_text = texts[AUTOSCALER] or ""
    shapes = shape_facts(parse_go_map(ca_text, "InstanceTypes"))
    types = {name: {**merged[name], **shapes.get(name, {})} for name in sorted(merged)}

    tables: dict[str, Any] = {
        RESOURCE_CONTROLLER: {
            **refs[RESOURCE_CONTROLLER],
            "generatedAt": _generated_at(texts[RESOURCE_CONTROLLER] or ""),
        },
    }
    if later_text is not None:
        tables[LATER_COPY] = {**refs[LATER_COPY], "generatedAt": _generated_at(later_text)}
    updated = _CA_UPDATED.search(ca_text)
    tables[AUTOSCALER] = {**refs[AUTOSCALER], "staticListLastUpdateTime": updated[1] if updated else None}
    eni_text = texts.get(ENI_MAX_PODS)
    if eni_text is not None:
        tables[ENI_MAX_PODS] = {**refs[ENI_MAX_PODS], **check_max_pods(types, parse_eni_max_pods(eni_text))}
    counts = {
        key: sum(1 for e in types.values() if e["limitsFrom"] == key)
        for key in (RESOURCE_CONTROLLER, LATER_COPY)
    }
    return {
        "_source": {
            **meta,
            "tables": tables,
            "precedence": PRECEDENCE,
            "disagreements": disagreements,
            "fields": FIELDS,
            "typeCount": len(types),
            "limitsFromCount": {k: v for k, v in counts.items() if k in tables},
        },
        "types": types,
    }


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


# (key in _source.tables, input flag, source flag, required)
_INPUTS = (
    (RESOURCE_CONTROLLER, "--limits", "--limits-source", True),
    (LATER_COPY, "--later-limits", "--later-limits-source", False),
    (AUTOSCALER, "--autoscaler", "--autoscaler-source", True),
    (ENI_MAX_PODS, "--eni-max-pods", "--eni-max-pods-source", False),
)
_HELP = {
    RESOURCE_CONTROLLER: "the VPC resource controller's pkg/aws/vpc/limits.go",
    LATER_COPY: "a later copy of limits.go (Karpenter's zz_generated.vpclimits.go)",
    AUTOSCALER: "cluster-autoscaler's cloudprovider/aws/ec2_instance_types.go",
    ENI_MAX_PODS: "the VPC CNI's misc/eni-max-pods.txt (a check of max pods)",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for key, flag, source_flag, required in _INPUTS:
        parser.add_argument(flag, type=Path, required=required, help=_HELP[key])
        parser.add_argument(source_flag, required=required, help=f"REPO@COMMIT:PATH {flag} was read at")
    parser.add_argument("--retrieved", required=True, help="date the files were fetched, YYYY-MM-DD")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", args.retrieved):
        raise SystemExit(f"--retrieved must be YYYY-MM-DD, got {args.retrieved!r}")
    texts: dict[str, str | None] = {}
    refs: dict[str, dict[str, Any]] = {}
    command = ["python scripts/compile_instance_types.py"]
    for key, flag, source_flag, _ in _INPUTS:
        path, spec = (
            getattr(args, flag[2:].replace("-", "_")),
            getattr(args, source_flag[2:].replace("-", "_")),
        )
        if (path is None) != (spec is None):
            raise SystemExit(f"{flag} and {source_flag} go together")
        if path is None:
            continue
        refs[key] = _source_ref(spec, source_flag)
        texts[key] = path.read_text(encoding="utf-8")
        command.append(f"{flag} {path.name} {source_flag} {spec}")
    command.append(f"--retrieved {args.retrieved}")
    meta = {"retrieved": args.retrieved, "command": " ".join(command)}
    try:
        document = compile_tables(texts, refs, meta)
    except GoParseError as err:
        print(f"compile_instance_types: {err}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(document), encoding="utf-8")
    print(f"wrote {len(document['types'])} instance types to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
