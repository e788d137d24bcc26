"""Instance-type facts: the compiled AWS table, its lookups, the EKS max-pods formula, the
`fitguard instance-types` command and the compile script that produced the data file."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from capacity import instances
from fitguard.cli import main as fitguard_main

ROOT = Path(__file__).resolve().parents[1]
DATA_FILE = ROOT / "capacity" / "data" / "instance_types.json"
CONFORMANCE = Path(__file__).resolve().parents[2] / "shared/conformance"

# Where the newest published table (generated 2026-08-06) and the conformance sample disagree.
# The VPC resource controller's limits.go generated 2025-10-06 (commit 02c28c714bc8) still had
# i4i.large as IsTrunkingCompatible false / BranchInterface 0, as the sample does; the 2026-08-06
# table (Karpenter's byte copy at 01a436f0bbbc) makes it trunking with 9 branch ENIs.
NEWER_THAN_SAMPLE = {"i4i.large": (9, True)}


def _conformance(name: str) -> Any:
    path = CONFORMANCE / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return json.loads(path.read_text(encoding="utf-8"))


def test_m5_large_offers_nine_branch_enis_and_trunks() -> None:
    facts = instances.lookup("m5.large")
    assert facts is not None
    assert (facts.branch_interfaces, facts.trunking) == (9, True)
    assert (facts.interfaces, facts.ipv4_per_interface) == (3, 10)
    assert (facts.vcpu, facts.memory_mib, facts.gpu, facts.architecture) == (2, 8192, 0, "amd64")


def test_m5_xlarge_offers_eighteen_branch_enis() -> None:
    facts = instances.lookup("m5.xlarge")
    assert facts is not None and facts.branch_interfaces == 18 and facts.trunking


def test_every_t3_type_offers_no_branch_eni_and_cannot_trunk() -> None:
    t3 = [name for name in instances.known_types() if name.startswith("t3.")]
    assert len(t3) >= 7  # nano .. 2xlarge: the check below is not vacuous
    for name in t3:
        facts = instances.lookup(name)
        assert facts is not None
        assert (facts.branch_interfaces, facts.trunking) == (0, False), name


def test_unknown_type_is_none_not_zero_facts() -> None:
    assert instances.lookup("x9.huge") is None
    assert instances.lookup("") is None
    assert instances.lookup("M5.LARGE") is None  # EC2 names are exact, lower case


def test_lookup_hands_out_the_same_prebuilt_frozen_facts() -> None:
    first = instances.lookup("c5.large")
    assert first is not None and first is instances.lookup("c5.large")
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.branch_interfaces = 0  # type: ignore[misc]


def test_shape_fields_are_none_where_cluster_autoscaler_lists_no_shape() -> None:
    # x8i is in AWS's table but not in the cluster-autoscaler static list we compiled
    facts = instances.lookup("x8i.64xlarge")
    assert facts is not None and facts.branch_interfaces == 98
    assert (facts.vcpu, facts.memory_mib, facts.gpu, facts.architecture) == (None, None, None, None)
    assert "vcpu" not in facts.to_json()


def test_table_holds_the_whole_aws_list_sorted() -> None:
    names = instances.known_types()
    # the table generated 2026-08-06 lists 1,401 types; far fewer means a truncated compile
    assert 1100 <= len(names) <= 1500
    assert names == sorted(names)
    assert instances.data_source()["typeCount"] == len(names)


def test_data_source_records_repo_path_commit_and_date() -> None:
    source = instances.data_source()
    assert source["retrieved"] == "2026-11-29"
    limits = source["limits"]
    assert limits["repo"] == "aws/karpenter-provider-aws"
    assert limits["path"] == "pkg/providers/instancetype/zz_generated.vpclimits.go"
    assert limits["commit"] == "01a436f0bbbc75a1252aba1a3a48ca115b7e6cc0"
    assert limits["copyOf"] == {
        "repo": "aws/amazon-vpc-resource-controller-k8s",
        "path": "pkg/aws/vpc/limits.go",
    }
    assert limits["generatedAt"] == "2026-08-06T04:02:42Z"
    autoscaler = source["autoscaler"]
    assert autoscaler["repo"] == "kubernetes/autoscaler"
    assert autoscaler["path"] == "cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go"
    assert autoscaler["commit"] == "07806e9edcfede7a0c7c70833867e904f2114221"
    assert set(source["fields"]) >= {"branchInterfaces", "trunking", "vcpu", "memoryMiB"}


def test_data_source_is_a_copy_callers_cannot_corrupt() -> None:
    instances.data_source()["limits"]["commit"] = "tampered"
    assert instances.data_source()["limits"]["commit"] != "tampered"


def test_branch_eni_conformance_sample_agrees() -> None:
    sample: dict[str, list[Any]] = _conformance("branch-eni-limits-sample.json")
    assert len(sample) >= 50
    for name, (branch_interfaces, trunking) in sample.items():
        facts = instances.lookup(name)
        assert facts is not None, name
        expected = NEWER_THAN_SAMPLE.get(name, (branch_interfaces, trunking))
        assert (facts.branch_interfaces, facts.trunking) == expected, name


def test_cluster_autoscaler_shapes_agree_with_conformance_data() -> None:
    used: dict[str, Any] = _conformance("cluster-autoscaler-aws-templates.json")["instance_types_used"]
    shapes = {name: shape for name, shape in used.items() if isinstance(shape, dict)}
    assert shapes
    for name, shape in shapes.items():
        facts = instances.lookup(name)
        assert facts is not None, name
        expected = (shape["VCPU"], shape["MemoryMb"], shape["GPU"], shape["Architecture"])
        assert (facts.vcpu, facts.memory_mib, facts.gpu, facts.architecture) == expected, name


def test_max_pods_follows_the_eks_ami_formula() -> None:
    # eni-max-pods.txt: m5.large 29, t3.large 35, m5.24xlarge 737
    for name, max_pods in (("m5.large", 29), ("t3.large", 35), ("m5.24xlarge", 737)):
        facts = instances.lookup(name)
        assert facts is not None and facts.max_pods() == max_pods, name


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = fitguard_main(["instance-types", *argv], only="fitguard.instance_types")
    return code, capsys.readouterr().out


def test_cli_json_maps_known_types_to_facts_and_unknown_to_null(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "m5.large", "t3.large", "x9.huge", "-o", "json")
    document = json.loads(out)
    assert code == 1  # one type is unknown
    assert list(document) == ["m5.large", "t3.large", "x9.huge"]
    assert document["m5.large"]["branchInterfaces"] == 9 and document["m5.large"]["trunking"] is True
    assert document["m5.large"]["maxPods"] == 29
    assert document["t3.large"]["branchInterfaces"] == 0 and document["t3.large"]["trunking"] is False
    assert document["x9.huge"] is None


def test_cli_exits_zero_when_every_type_is_known(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "m5.large", "c6g.medium", "-o", "json")
    assert code == 0
    assert json.loads(out)["c6g.medium"]["branchInterfaces"] == 4


def test_cli_table_has_one_row_per_type_and_says_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "m5.large", "x9.huge")
    lines = out.splitlines()
    assert code == 1
    assert lines[0].split()[:3] == ["TYPE", "BRANCH-ENIS", "TRUNKING"]
    assert lines[1].split()[:3] == ["m5.large", "9", "yes"]
    assert lines[2].split()[:2] == ["x9.huge", "unknown"]
    assert len(lines) == 3


def test_cli_help_documents_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        fitguard_main(["instance-types", "--help"], only="fitguard.instance_types")
    text = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "exit status" in text and "unknown" in text and "null" in text


# --- the compile script, on Go written here in the generated files' syntax (not upstream text)

LIMITS_GO = """\
// Code generated by go generate; DO NOT EDIT.
// This file was generated at 2026-08-06T04:02:42Z

package instancetype

var Limits = map[string]*VPCLimits{
\t"c6in.32xlarge": {
\t\tInterface:               16,
\t\tIPv4PerInterface:        50,
\t\tIsTrunkingCompatible:    true,
\t\tBranchInterface:         106,
\t\tDefaultNetworkCardIndex: 0,
\t\tNetworkCards: []NetworkCard{
\t\t\t{
\t\t\t\tMaximumNetworkInterfaces: 8,
\t\t\t\tNetworkCardIndex:         0,
\t\t\t},

\t\t\t{
\t\t\t\tMaximumNetworkInterfaces: 8,
\t\t\t\tNetworkCardIndex:         1,
\t\t\t},
\t\t},
\t\tHypervisor:  "nitro",
\t\tIsBareMetal: false,
\t},
\t"m5.large": {
\t\tInterface:               3,
\t\tIPv4PerInterface:        10,
\t\tIsTrunkingCompatible:    true,
\t\tBranchInterface:         9,
\t\tDefaultNetworkCardIndex: 0,
\t\tNetworkCards: []NetworkCard{
\t\t\t{
\t\t\t\tMaximumNetworkInterfaces: 3,
\t\t\t\tNetworkCardIndex:         0,
\t\t\t},
\t\t},
\t\tHypervisor:  "nitro",
\t\tIsBareMetal: false,
\t},
\t"t3.large": {
\t\tInterface:               3,
\t\tIPv4PerInterface:        12,
\t\tIsTrunkingCompatible:    false,
\t\tBranchInterface:         0,
\t\tDefaultNetworkCardIndex: 0,
\t\tNetworkCards: []NetworkCard{
\t\t\t{
\t\t\t\tMaximumNetworkInterfaces: 3,
\t\t\t\tNetworkCardIndex:         0,
\t\t\t},
\t\t},
\t\tHypervisor:  "nitro",
\t\tIsBareMetal: false,
\t},
}
"""

AUTOSCALER_GO = """\
package aws

var StaticListLastUpdateTime = "2024-10-02"

var InstanceTypes = map[string]*InstanceType{
\t"c6in.32xlarge": {
\t\tInstanceType: "c6in.32xlarge",
\t\tVCPU:         128,
\t\tMemoryMb:     262144,
\t\tGPU:          0,
\t\tArchitecture: "amd64",
\t},
\t"m5.large": {
\t\tInstanceType: "m5.large",
\t\tVCPU:         2,
\t\tMemoryMb:     8192,
\t\tGPU:          0,
\t\tArchitecture: "amd64",
\t},
\t"t3.large": {
\t\tInstanceType: "t3.large",
\t\tVCPU:         2,
\t\tMemoryMb:     8192,
\t\tGPU:          0,
\t\tArchitecture: "amd64",
\t},
}
"""


def _compiler() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compile_instance_types", ROOT / "scripts/compile_instance_types.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compile(tmp_path: Path, limits_go: str, autoscaler_go: str) -> tuple[int, Path]:
    (tmp_path / "limits.go").write_text(limits_go, encoding="utf-8")
    (tmp_path / "ca.go").write_text(autoscaler_go, encoding="utf-8")
    out = tmp_path / "out.json"
    committed = json.loads(DATA_FILE.read_text(encoding="utf-8"))["_source"]
    code = _compiler().main(
        [
            str(tmp_path / "limits.go"),
            str(tmp_path / "ca.go"),
            "--limits-source",
            "{repo}@{commit}:{path}".format(**committed["limits"]),
            "--limits-upstream",
            "{repo}:{path}".format(**committed["limits"]["copyOf"]),
            "--autoscaler-source",
            "{repo}@{commit}:{path}".format(**committed["autoscaler"]),
            "--retrieved",
            committed["retrieved"],
            "-o",
            str(out),
        ]
    )
    return code, out


def test_compile_script_reproduces_the_committed_entries(tmp_path: Path) -> None:
    code, out = _compile(tmp_path, LIMITS_GO, AUTOSCALER_GO)
    assert code == 0
    compiled = json.loads(out.read_text(encoding="utf-8"))
    committed = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    assert list(compiled["types"]) == ["c6in.32xlarge", "m5.large", "t3.large"]
    for name, entry in compiled["types"].items():
        assert entry == committed["types"][name], name
    assert compiled["types"]["c6in.32xlarge"]["networkCards"] == 2
    ignore = {"typeCount"}  # the snippet has 3 types, the table 1,401
    assert {k: v for k, v in compiled["_source"].items() if k not in ignore} == {
        k: v for k, v in committed["_source"].items() if k not in ignore
    }


def test_compile_script_writes_one_type_per_line(tmp_path: Path) -> None:
    _, out = _compile(tmp_path, LIMITS_GO, AUTOSCALER_GO)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert sum(1 for line in lines if line.startswith('    "m5.large": {"branchInterfaces": 9')) == 1


def test_compile_script_refuses_an_entry_without_branch_interfaces(tmp_path: Path) -> None:
    broken = LIMITS_GO.replace("\t\tBranchInterface:         9,\n", "")
    code, out = _compile(tmp_path, broken, AUTOSCALER_GO)
    assert code == 1 and not out.exists()
