"""Instance-type facts: the compiled AWS table, its lookups, max pods on the default network card,
which upstream table each type came from, the `fitguard instance-types` command and the compile
script that produced the data file. The expected values are the upstream tables written out under
tests/upstream/ (each cites its file and commit), never fitguard's own data."""

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
from tests.upstream.branch_eni_limits import DISAGREEMENTS, LATER_COPY_ONLY, RESOURCE_CONTROLLER
from tests.upstream.ec2_instance_types import STATIC_LIST
from tests.upstream.eni_max_pods import ENI_MAX_PODS, SEVERAL_NETWORK_CARDS

ROOT = Path(__file__).resolve().parents[2]
DATA_FILE = ROOT / "capacity" / "data" / "instance_types.json"
CONFORMANCE = Path(__file__).resolve().parents[3] / "shared/conformance"


def _conformance(name: str) -> Any:
    path = CONFORMANCE / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (an extra cross-check; tests/upstream/ holds the cases)")
    return json.loads(path.read_text(encoding="utf-8"))


def _facts(name: str) -> instances.InstanceFacts:
    facts = instances.lookup(name)
    assert facts is not None, name
    return facts


M5_LARGE = instances.InstanceFacts(
    name="m5.large",
    branch_interfaces=9,
    trunking=True,
    interfaces=3,
    ipv4_per_interface=10,
    default_card_interfaces=3,
    limits_from="resourceController",
    vcpu=2,
    memory_mib=8192,
    gpu=0,
    architecture="amd64",
    network_cards=1,
    hypervisor="nitro",
    bare_metal=False,
    shape_from="autoscaler",
)


def test_m5_large_facts_whole() -> None:
    """m5.large, one card: every field, from the controller's table and CA's list."""
    assert _facts("m5.large") == M5_LARGE


def test_the_data_file_read_afresh_gives_m5_large_whole() -> None:
    """The table is read once per process (`functools.cache`), so a lookup after the first one never
    reads the file again: here the cache is emptied first, the file is read and every field of
    m5.large is checked as the reading made it; the cache is emptied again so later tests read it
    afresh too."""
    instances._document.cache_clear()
    try:
        assert instances.lookup("m5.large") == M5_LARGE
    finally:
        instances._document.cache_clear()


def test_p4d_24xlarge_max_pods_counts_the_default_card_only() -> None:
    """p4d.24xlarge has 60 ENIs on 4 cards, 15 on the default one: 15 * 49 + 2 = 737 pods, as
    eni-max-pods.txt says, not 60 * 49 + 2 = 2942."""
    facts = _facts("p4d.24xlarge")
    assert (facts.interfaces, facts.network_cards, facts.default_card_interfaces) == (60, 4, 15)
    assert facts.max_pods() == 737


def test_max_pods_agrees_with_eni_max_pods_txt() -> None:
    """Every type of the sample written from misc/eni-max-pods.txt has the file's max pods."""
    assert {name: _facts(name).max_pods() for name in ENI_MAX_PODS} == ENI_MAX_PODS


def test_the_multi_card_sample_would_fail_if_every_card_counted() -> None:
    """The sample's multi-card types are the ones that tell default-card from all-cards apart: with
    every card's ENIs, none of them would have the file's max pods (so the check above can fail)."""
    assert set(ENI_MAX_PODS) >= SEVERAL_NETWORK_CARDS
    for name in SEVERAL_NETWORK_CARDS:
        facts = _facts(name)
        assert facts.network_cards is not None and facts.network_cards > 1, name
        assert facts.interfaces * (facts.ipv4_per_interface - 1) + 2 != ENI_MAX_PODS[name], name


def test_branch_enis_agree_with_the_resource_controllers_table() -> None:
    """Every type of the sample written from the controller's limits.go has its (BranchInterface,
    IsTrunkingCompatible), and says it came from that table."""
    found = {name: (_facts(name).branch_interfaces, _facts(name).trunking) for name in RESOURCE_CONTROLLER}
    assert found == RESOURCE_CONTROLLER
    assert {_facts(name).limits_from for name in RESOURCE_CONTROLLER} == {"resourceController"}


def test_types_only_the_later_copy_lists_come_from_it_and_say_so() -> None:
    """New families the controller's table lacks: the later copy's values, marked laterCopy."""
    for name, expected in LATER_COPY_ONLY.items():
        facts = _facts(name)
        assert ((facts.branch_interfaces, facts.trunking), facts.limits_from) == (expected, "laterCopy")


def test_i4i_large_takes_the_controllers_entry_and_the_data_file_says_why() -> None:
    """The controller's table says i4i.large cannot trunk, the later copy says 9 branch ENIs: the
    controller's entry is taken, and `_source.disagreements` keeps both, the choice and a reason."""
    (controller, later) = DISAGREEMENTS["i4i.large"]
    facts = _facts("i4i.large")
    assert ((facts.branch_interfaces, facts.trunking), facts.limits_from) == (
        controller,
        "resourceController",
    )
    disagreements = instances.data_source()["disagreements"]
    assert list(disagreements) == list(DISAGREEMENTS)
    recorded = disagreements["i4i.large"]
    assert set(recorded) == {"resourceController", "laterCopy", "taken", "why"}
    assert recorded["resourceController"] == {"branchInterfaces": controller[0], "trunking": controller[1]}
    assert recorded["laterCopy"] == {"branchInterfaces": later[0], "trunking": later[1]}
    assert recorded["taken"] == "resourceController"
    assert "controller" in recorded["why"] and "trunk" in recorded["why"]


def test_shapes_agree_with_cluster_autoscalers_static_list() -> None:
    """vCPU, memory, GPUs (every manufacturer: g4ad.xlarge 1, dl1.24xlarge 8) and architecture
    (t2.medium and mac2.metal amd64) as CA's generated list has them."""
    found = {
        name: (_facts(name).vcpu, _facts(name).memory_mib, _facts(name).gpu, _facts(name).architecture)
        for name in STATIC_LIST
    }
    assert found == STATIC_LIST
    assert {_facts(name).shape_from for name in STATIC_LIST} == {"autoscaler"}


def test_every_architecture_is_one_cluster_autoscaler_writes() -> None:
    """No 386 or arm64_mac anywhere: CA's list has only amd64 and arm64."""
    architectures = {_facts(name).architecture for name in instances.known_types()}
    assert architectures == {"amd64", "arm64", None}


def test_every_t3_type_offers_no_branch_eni_and_cannot_trunk() -> None:
    """The t3 family cannot trunk: zero branch ENIs is a fact, for every size."""
    t3 = [name for name in instances.known_types() if name.startswith("t3.")]
    assert len(t3) >= 7  # nano .. 2xlarge: the check below is not vacuous
    assert {(_facts(n).branch_interfaces, _facts(n).trunking) for n in t3} == {(0, False)}


def test_unknown_type_is_none_not_zero_facts() -> None:
    """A type no table lists is None, never zeros; names are exact."""
    assert instances.lookup("x9.huge") is None
    assert instances.lookup("") is None
    assert instances.lookup("M5.LARGE") is None  # EC2 names are exact, lower case


def test_lookup_hands_out_the_same_prebuilt_frozen_facts() -> None:
    """Lookups sit on the admission path: one prebuilt frozen object per type."""
    first = instances.lookup("c5.large")
    assert first is not None and first is instances.lookup("c5.large")
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.branch_interfaces = 0  # type: ignore[misc]


def test_shape_fields_are_none_where_cluster_autoscaler_lists_no_shape() -> None:
    """c7g-flex.large is in AWS's (later) table but not in CA's static list: no shape, no guess."""
    facts = _facts("c7g-flex.large")
    assert (facts.vcpu, facts.memory_mib, facts.gpu, facts.architecture, facts.shape_from) == (None,) * 5
    assert not {"vcpu", "memoryMiB", "gpu", "architecture", "shapeFrom"} & set(facts.to_json())


def test_table_holds_the_whole_aws_list_sorted() -> None:
    """Both tables merged: 1,164 types from the controller, 237 more from the later copy."""
    names = instances.known_types()
    assert names == sorted(names)
    source = instances.data_source()
    assert source["typeCount"] == len(names) == 1401
    assert source["limitsFromCount"] == {"resourceController": 1164, "laterCopy": 237}
    counted = {
        key: sum(1 for n in names if _facts(n).limits_from == key) for key in source["limitsFromCount"]
    }
    assert counted == source["limitsFromCount"]


def test_data_source_records_each_table_with_repo_path_commit_and_date() -> None:
    """Every table the data came from, with repository, commit, path and its own date."""
    source = instances.data_source()
    assert source["retrieved"] == "2026-12-01"
    tables = source["tables"]
    assert list(tables) == ["resourceController", "laterCopy", "autoscaler", "eniMaxPods"]
    assert tables["resourceController"] == {
        "repo": "aws/amazon-vpc-resource-controller-k8s",
        "commit": "b8d425119bdba371202882b808f202c6073a46cc",
        "path": "pkg/aws/vpc/limits.go",
        "generatedAt": "2026-03-20T18:06:29Z",
    }
    assert tables["laterCopy"] == {
        "repo": "aws/karpenter-provider-aws",
        "commit": "1d927085dd81a9df9301e613f371dac5b4d16bfe",
        "path": "pkg/providers/instancetype/zz_generated.vpclimits.go",
        "generatedAt": "2026-08-06T04:02:42Z",
    }
    assert tables["autoscaler"] == {
        "repo": "kubernetes/autoscaler",
        "commit": "55c37cd5eb550756c5ccc5a89e9068d77797e575",
        "path": "cluster-autoscaler/cloudprovider/aws/ec2_instance_types.go",
        "staticListLastUpdateTime": "2026-01-22",
    }
    eni = tables["eniMaxPods"]
    assert (eni["repo"], eni["commit"], eni["path"]) == (
        "aws/amazon-vpc-cni-k8s",
        "b52188387f2e2f10bf289ace929d6a63b176a4fa",
        "misc/eni-max-pods.txt",
    )
    assert eni["agreeing"] == 1372  # every type both list agreed when compiled
    assert "precedence" in source and "resource controller" in source["precedence"]
    assert set(source["fields"]) == set(
        json.loads(DATA_FILE.read_text(encoding="utf-8"))["types"]["m5.large"]
    )


def test_compile_script_names_the_tables_the_committed_file_was_made_from() -> None:
    """The script's docstring and the data file name the same repositories, commits and date."""
    script = (ROOT / "scripts/compile_instance_types.py").read_text(encoding="utf-8")
    source = instances.data_source()
    named = [f"{t['repo']}@{t['commit']}" for t in source["tables"].values()]
    assert [ref for ref in named if ref not in script] == []
    assert f"compiled on {source['retrieved']}" in script


def test_data_source_is_a_copy_callers_cannot_corrupt() -> None:
    """data_source() hands out a copy: a caller's edit does not reach the next caller."""
    instances.data_source()["tables"]["resourceController"]["commit"] = "tampered"
    assert instances.data_source()["tables"]["resourceController"]["commit"] != "tampered"


def test_branch_eni_conformance_sample_agrees() -> None:
    """Extra cross-check where ../shared is present: the shared sample, with no exception."""
    sample: dict[str, list[Any]] = _conformance("branch-eni-limits-sample.json")
    assert len(sample) >= 50
    found = {name: [_facts(name).branch_interfaces, _facts(name).trunking] for name in sample}
    assert found == sample


def test_cluster_autoscaler_shapes_agree_with_conformance_data() -> None:
    """Extra cross-check where ../shared is present: the shapes CA's templates used."""
    used: dict[str, Any] = _conformance("cluster-autoscaler-aws-templates.json")["instance_types_used"]
    shapes = {name: shape for name, shape in used.items() if isinstance(shape, dict)}
    assert shapes
    for name, shape in shapes.items():
        facts = _facts(name)
        expected = (shape["VCPU"], shape["MemoryMb"], shape["GPU"], shape["Architecture"])
        assert (facts.vcpu, facts.memory_mib, facts.gpu, facts.architecture) == expected, name


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = fitguard_main(["instance-types", *argv], only="instance-types")
    return code, capsys.readouterr().out


def test_cli_json_whole_answer_for_multi_card_gpu_i386_disputed_later_and_unknown_types(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fitguard instance-types ... -o json`, whole: p4d.24xlarge 737 pods (default card), t2.medium
    amd64, g4ad.xlarge one (AMD) GPU, i4i.large the controller's 0/no trunking, c7g-flex.large from
    the later copy with no shape, x9.huge null."""
    code, out = _cli(
        capsys,
        "p4d.24xlarge",
        "t2.medium",
        "g4ad.xlarge",
        "i4i.large",
        "c7g-flex.large",
        "x9.huge",
        "-o",
        "json",
    )
    assert code == 1  # one type is unknown
    assert json.loads(out) == {
        "p4d.24xlarge": {
            "branchInterfaces": 62,
            "trunking": True,
            "interfaces": 60,
            "defaultCardInterfaces": 15,
            "ipv4PerInterface": 50,
            "maxPods": 737,
            "limitsFrom": "resourceController",
            "networkCards": 4,
            "hypervisor": "nitro",
            "bareMetal": False,
            "vcpu": 96,
            "memoryMiB": 1179648,
            "gpu": 8,
            "architecture": "amd64",
            "shapeFrom": "autoscaler",
        },
        "t2.medium": {
            "branchInterfaces": 0,
            "trunking": False,
            "interfaces": 3,
            "defaultCardInterfaces": 3,
            "ipv4PerInterface": 6,
            "maxPods": 17,
            "limitsFrom": "resourceController",
            "networkCards": 1,
            "hypervisor": "xen",
            "bareMetal": False,
            "vcpu": 2,
            "memoryMiB": 4096,
            "gpu": 0,
            "architecture": "amd64",
            "shapeFrom": "autoscaler",
        },
        "g4ad.xlarge": {
            "branchInterfaces": 12,
            "trunking": True,
            "interfaces": 2,
            "defaultCardInterfaces": 2,
            "ipv4PerInterface": 4,
            "maxPods": 8,
            "limitsFrom": "resourceController",
            "networkCards": 1,
            "hypervisor": "nitro",
            "bareMetal": False,
            "vcpu": 4,
            "memoryMiB": 16384,
            "gpu": 1,
            "architecture": "amd64",
            "shapeFrom": "autoscaler",
        },
        "i4i.large": {
            "branchInterfaces": 0,
            "trunking": False,
            "interfaces": 3,
            "defaultCardInterfaces": 3,
            "ipv4PerInterface": 10,
            "maxPods": 29,
            "limitsFrom": "resourceController",
            "networkCards": 1,
            "hypervisor": "nitro",
            "bareMetal": False,
            "vcpu": 2,
            "memoryMiB": 16384,
            "gpu": 0,
            "architecture": "amd64",
            "shapeFrom": "autoscaler",
        },
        "c7g-flex.large": {
            "branchInterfaces": 3,
            "trunking": True,
            "interfaces": 3,
            "defaultCardInterfaces": 3,
            "ipv4PerInterface": 10,
            "maxPods": 29,
            "limitsFrom": "laterCopy",
            "networkCards": 1,
            "hypervisor": "nitro",
            "bareMetal": False,
        },
        "x9.huge": None,
    }


def test_cli_json_dl1_24xlarge_counts_its_habana_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """dl1.24xlarge: 8 Habana Gaudi count as 8 GPUs, and 4 cards give 737 pods; exit 0 when known."""
    code, out = _cli(capsys, "dl1.24xlarge", "-o", "json")
    assert code == 0
    assert json.loads(out) == {
        "dl1.24xlarge": {
            "branchInterfaces": 62,
            "trunking": True,
            "interfaces": 60,
            "defaultCardInterfaces": 15,
            "ipv4PerInterface": 50,
            "maxPods": 737,
            "limitsFrom": "resourceController",
            "networkCards": 4,
            "hypervisor": "nitro",
            "bareMetal": False,
            "vcpu": 96,
            "memoryMiB": 786432,
            "gpu": 8,
            "architecture": "amd64",
            "shapeFrom": "autoscaler",
        }
    }


def test_cli_table_has_one_row_per_type_and_says_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    """The table: a header, one row per type in order, "unknown" for a type no table lists."""
    code, out = _cli(capsys, "p4d.24xlarge", "x9.huge")
    assert code == 1
    assert [line.split() for line in out.splitlines()] == [
        [
            "TYPE",
            "BRANCH-ENIS",
            "TRUNKING",
            "ENIS",
            "IPV4/ENI",
            "MAX-PODS",
            "VCPU",
            "MEMORY-MIB",
            "GPU",
            "ARCH",
            "FROM",
        ],
        ["p4d.24xlarge", "62", "yes", "60", "50", "737", "96", "1179648", "8", "amd64", "resourceController"],
        ["x9.huge", "unknown", "-", "-", "-", "-", "-", "-", "-", "-", "-"],
    ]


def test_cli_help_documents_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    """--help says what the exit statuses and null mean."""
    with pytest.raises(SystemExit) as exit_info:
        fitguard_main(["instance-types", "--help"], only="instance-types")
    text = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "exit status" in text and "unknown" in text and "null" in text


# --- the compile script, on Go written here in the generated files' syntax (not upstream text)


def _limits_entry(name: str, limits: tuple[int, int, bool, int], cards: list[int]) -> str:
    """One `Limits` entry; `limits` is (Interface, IPv4PerInterface, IsTrunkingCompatible,
    BranchInterface), `cards` each card's MaximumNetworkInterfaces."""
    interfaces, ipv4, trunking, branch = limits
    card_text = "".join(
        f"\t\t\t{{\n\t\t\t\tMaximumNetworkInterfaces: {count},\n"
        f"\t\t\t\tNetworkCardIndex:         {index},\n\t\t\t}},\n"
        for index, count in enumerate(cards)
    )
    return (
        f'\t"{name}": {{\n'
        f"\t\tInterface:               {interfaces},\n"
        f"\t\tIPv4PerInterface:        {ipv4},\n"
        f"\t\tIsTrunkingCompatible:    {'true' if trunking else 'false'},\n"
        f"\t\tBranchInterface:         {branch},\n"
        "\t\tDefaultNetworkCardIndex: 0,\n"
        f"\t\tNetworkCards: []NetworkCard{{\n{card_text}\t\t}},\n"
        '\t\tHypervisor:  "nitro",\n'
        "\t\tIsBareMetal: false,\n"
        "\t},\n"
    )


def _limits_go(generated: str, *entries: str) -> str:
    return (
        "// Code generated by go generate; DO NOT EDIT.\n"
        f"// This file was generated at {generated}\n\npackage vpc\n\n"
        "var Limits = map[string]*VPCLimits{\n" + "".join(entries) + "}\n"
    )


P4D = _limits_entry("p4d.24xlarge", (60, 50, True, 62), [15, 15, 15, 15])
M5 = _limits_entry("m5.large", (3, 10, True, 9), [3])
I4I_OFF = _limits_entry("i4i.large", (3, 10, False, 0), [3])
I4I_ON = _limits_entry("i4i.large", (3, 10, True, 9), [3])
NEW = _limits_entry("c7g-flex.large", (3, 10, True, 3), [3])
CONTROLLER_GO = _limits_go("2026-03-20T18:06:29Z", I4I_OFF, M5, P4D)
LATER_GO = _limits_go("2026-08-06T04:02:42Z", NEW, I4I_ON, M5, P4D)

AUTOSCALER_GO = """\
package aws

var StaticListLastUpdateTime = "2026-01-22"

var InstanceTypes = map[string]*InstanceType{
\t"m5.large": {
\t\tInstanceType: "m5.large",
\t\tVCPU:         2,
\t\tMemoryMb:     8192,
\t\tGPU:          0,
\t\tArchitecture: "amd64",
\t},
\t"p4d.24xlarge": {
\t\tInstanceType: "p4d.24xlarge",
\t\tVCPU:         96,
\t\tMemoryMb:     1179648,
\t\tGPU:          8,
\t\tArchitecture: "amd64",
\t},
\t"i4i.large": {
\t\tInstanceType: "i4i.large",
\t\tVCPU:         2,
\t\tMemoryMb:     16384,
\t\tGPU:          0,
\t\tArchitecture: "amd64",
\t},
}
"""

ENI_MAX_PODS_TXT = "# a comment\n#\ni4i.large 29\nm5.large 29\np4d.24xlarge 737\nu-6tb1.metal 737\n"


def _compiler() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compile_instance_types", ROOT / "scripts/compile_instance_types.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compile(
    tmp_path: Path,
    controller_go: str = CONTROLLER_GO,
    later_go: str | None = LATER_GO,
    eni_max_pods: str | None = ENI_MAX_PODS_TXT,
) -> tuple[int, Path]:
    committed = json.loads(DATA_FILE.read_text(encoding="utf-8"))["_source"]["tables"]
    inputs = {
        "resourceController": ("--limits", "limits.go", controller_go),
        "laterCopy": ("--later-limits", "zz_generated.vpclimits.go", later_go),
        "autoscaler": ("--autoscaler", "ec2_instance_types.go", AUTOSCALER_GO),
        "eniMaxPods": ("--eni-max-pods", "eni-max-pods.txt", eni_max_pods),
    }
    argv: list[str] = []
    for key, (flag, file_name, text) in inputs.items():
        if text is None:
            continue
        (tmp_path / file_name).write_text(text, encoding="utf-8")
        argv += [
            flag,
            str(tmp_path / file_name),
            f"{flag}-source",
            "{repo}@{commit}:{path}".format(**committed[key]),
        ]
    out = tmp_path / "out.json"
    code = _compiler().main([*argv, "--retrieved", "2026-12-01", "-o", str(out)])
    return code, out


def test_compile_script_reproduces_the_committed_entries_and_sources(tmp_path: Path) -> None:
    """The script on snippets in the upstream syntax writes exactly the committed entries for those
    types (default card, limitsFrom, shapeFrom), the same tables, command and disagreement."""
    code, out = _compile(tmp_path)
    assert code == 0
    compiled = json.loads(out.read_text(encoding="utf-8"))
    committed = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    assert compiled["types"] == {name: committed["types"][name] for name in compiled["types"]}
    assert list(compiled["types"]) == ["c7g-flex.large", "i4i.large", "m5.large", "p4d.24xlarge"]
    ours, theirs = compiled["_source"], committed["_source"]
    assert ours["command"] == theirs["command"]
    assert ours["disagreements"] == theirs["disagreements"]
    for key in ("resourceController", "laterCopy", "autoscaler"):
        assert ours["tables"][key] == theirs["tables"][key], key
    assert ours["tables"]["eniMaxPods"]["agreeing"] == 3
    assert ours["tables"]["eniMaxPods"]["onlyInEniMaxPods"] == ["u-6tb1.metal"]
    assert ours["limitsFromCount"] == {"resourceController": 3, "laterCopy": 1}


def test_compile_script_without_a_later_copy_records_no_disagreement(tmp_path: Path) -> None:
    """Only the controller's table: its types, all resourceController, no laterCopy table."""
    code, out = _compile(tmp_path, later_go=None, eni_max_pods=None)
    source = json.loads(out.read_text(encoding="utf-8"))["_source"]
    assert code == 0
    assert (list(source["tables"]), source["disagreements"]) == (["resourceController", "autoscaler"], {})
    assert source["limitsFromCount"] == {"resourceController": 3}


def test_compile_script_writes_one_type_per_line(tmp_path: Path) -> None:
    """One line per type keeps a regenerated table's diff small."""
    _, out = _compile(tmp_path)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert sum(1 for line in lines if line.startswith('    "m5.large": {"branchInterfaces": 9')) == 1


def test_compile_script_refuses_an_entry_without_branch_interfaces(tmp_path: Path) -> None:
    """A malformed entry stops the compile; nothing is written."""
    code, out = _compile(
        tmp_path, controller_go=CONTROLLER_GO.replace("\t\tBranchInterface:         9,\n", "")
    )
    assert code == 1 and not out.exists()


def test_compile_script_refuses_max_pods_that_disagree_with_eni_max_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table whose max pods differ from eni-max-pods.txt (here: all four cards counted) is not written."""
    code, out = _compile(
        tmp_path, eni_max_pods=ENI_MAX_PODS_TXT.replace("p4d.24xlarge 737", "p4d.24xlarge 2942")
    )
    assert code == 1 and not out.exists()
    assert "p4d.24xlarge: 737 != 2942" in capsys.readouterr().err


def test_compile_script_refuses_a_default_card_that_does_not_exist(tmp_path: Path) -> None:
    """DefaultNetworkCardIndex outside the cards is a broken table, not a guess."""
    p4d_at_card_4 = P4D.replace("DefaultNetworkCardIndex: 0", "DefaultNetworkCardIndex: 4")
    assert p4d_at_card_4 != P4D
    broken = _limits_go("2026-03-20T18:06:29Z", I4I_OFF, M5, p4d_at_card_4)
    code, out = _compile(tmp_path, controller_go=broken, later_go=None)
    assert code == 1 and not out.exists()
