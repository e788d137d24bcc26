"""`fitguard report` (fitguard/report.py) on the bundled snapshot of the classic case: the scheduler
sees 3 free branch ENIs where none are, whatever today's date, and the models and formats agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fitguard.cli import main
from tests.user_sees import REPORT_CLASSIC

SNAPSHOT = str(Path(__file__).resolve().parents[2] / "examples" / "snapshot-classic.json")
CLASSIC = "ip-10-0-1-23.ec2.internal"
TRAPPED = "ip-10-0-2-45.ec2.internal"
CONTRACT_KEYS = {
    "name",
    "nodeGroup",
    "instanceType",
    "capacity",
    "inUse",
    "held",
    "schedulerFree",
    "trueFree",
    "waiting",
}


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["report", *args], only="report")
    return code, capsys.readouterr().out


def nodes_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, Any]]:
    code, out = report(capsys, "--snapshot", SNAPSHOT, "-o", "json", *args)
    assert code == 0
    return {node["name"]: node for node in json.loads(out)["nodes"]}


def test_the_classic_snapshot_shows_three_free_to_the_scheduler_and_none_really(capsys) -> None:
    nodes = nodes_json(capsys)
    classic = nodes[CLASSIC]
    assert classic.keys() >= CONTRACT_KEYS
    assert (classic["capacity"], classic["inUse"], classic["held"]) == (9, 6, 3)
    assert (classic["schedulerFree"], classic["trueFree"], classic["waiting"]) == (3, 0, 0)
    assert classic["heldBy"] == ["job-a-m3z8", "job-a-p9q1", "job-a-x7k2"]
    assert (classic["nodeGroup"], classic["instanceType"]) == ("ng-batch", "m5.large")


def test_the_pod_bound_into_the_gap_waits(capsys) -> None:
    """In use 7 and held 3 of 9: the true free count is shown as 0, never -1, and the branch ENI the
    pods placed there lack is counted (`lacking`)."""
    trapped = nodes_json(capsys)[TRAPPED]
    assert (trapped["schedulerFree"], trapped["trueFree"], trapped["waiting"]) == (2, 0, 1)
    assert trapped["lacking"] == 1
    assert trapped["waitingPods"] == ["batch/job-b-d4s6"]


def test_after_the_window_the_held_enis_are_free_again(capsys) -> None:
    """Captured at 12:00:00, the jobs finished at 11:59:40; cooldown 60 s + 30 s processing."""
    assert nodes_json(capsys, "--now", "2024-05-01T12:01:09Z")[CLASSIC]["held"] == 3
    classic = nodes_json(capsys, "--now", "2024-05-01T12:01:10Z")[CLASSIC]
    assert (classic["held"], classic["trueFree"]) == (0, 3)


def test_on_delete_model_holds_until_the_pods_are_deleted(capsys) -> None:
    nodes = nodes_json(capsys, "--branch-eni-release", "on-delete", "--now", "2024-05-02T00:00:00Z")
    classic = nodes[CLASSIC]
    assert (classic["held"], classic["trueFree"]) == (3, 0)


def test_the_table_has_every_column_and_the_node_event_text(capsys) -> None:
    """Issue 31: the whole table of the classic snapshot. No free count below zero (the second
    node's true free is -1 in the books), and each free count the scheduler sees that is not free
    says where it went: held by the finished pods named, and one the pod placed there waits for."""
    code, out = report(capsys, "--snapshot", SNAPSHOT)
    assert (code, out) == (0, REPORT_CLASSIC)


def test_a_node_whose_pods_ask_for_more_than_it_advertises_says_so(capsys, tmp_path) -> None:
    """A node advertising 2 branch ENIs (its trunk not yet fully counted) with the classic node's 6
    pods on it, none held: the scheduler's free count is 0, not -4, and the line says the pods wait
    for 4 more."""
    snapshot = json.loads(Path(SNAPSHOT).read_text())
    for item in snapshot["items"]:
        if item["kind"] == "Node" and item["metadata"]["name"] == CLASSIC:
            for key in ("allocatable", "capacity"):
                item["status"][key]["vpc.amazonaws.com/pod-eni"] = "2"
    path = tmp_path / "short.json"
    path.write_text(json.dumps(snapshot))
    code, out = report(capsys, "--snapshot", str(path), "--now", "2024-05-01T12:05:00Z")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split() == [CLASSIC, "ng-batch", "m5.large", "2", "6", "0", "0", "0", "0"]
    assert (
        f"{CLASSIC}: its pods ask for 6 branch ENIs, it advertises 2: the pods placed here wait for 4 more"
        in lines
    )


def test_the_configmap_cooldown_sets_the_window(capsys, tmp_path) -> None:
    snapshot = json.loads(Path(SNAPSHOT).read_text())
    for item in snapshot["items"]:
        if item["kind"] == "ConfigMap":
            item["data"]["branch-eni-cooldown"] = "300"
    path = tmp_path / "long.json"
    path.write_text(json.dumps(snapshot))
    code, out = report(capsys, "--snapshot", str(path), "-o", "json", "--now", "2024-05-01T12:03:00Z")
    assert code == 0
    document = json.loads(out)
    assert document["releaseWindowSeconds"] == 330.0
    assert {n["name"]: n["held"] for n in document["nodes"]}[CLASSIC] == 3


def test_a_missing_snapshot_or_bad_time_is_a_clear_error(capsys, tmp_path) -> None:
    assert main(["report", "--snapshot", str(tmp_path / "nope.json")], only="report") == 1
    assert "nope.json" in capsys.readouterr().err
    assert main(["report", "--snapshot", SNAPSHOT, "--now", "noon"], only="report") == 2
    assert "--now" in capsys.readouterr().err


def test_the_live_report_lists_the_cluster_through_a_kubeconfig(capsys, fake_kube, tmp_path) -> None:
    """The same books from the API as from the snapshot (objects loaded into the fake server)."""
    snapshot = json.loads(Path(SNAPSHOT).read_text())
    for item in snapshot["items"]:
        fake_kube.create(item)
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    code, out = report(capsys, "--kubeconfig", str(kubeconfig), "-o", "json", "--now", "2024-05-01T12:00:00Z")
    assert code == 0
    classic = {n["name"]: n for n in json.loads(out)["nodes"]}[CLASSIC]
    assert (classic["schedulerFree"], classic["trueFree"], classic["held"]) == (3, 0, 3)


def test_a_karpenter_nodes_books_are_its_nodepools(capsys, fake_kube, tmp_path) -> None:
    """The classic node launched by Karpenter instead (NodePool "general", Karpenter's
    `karpenter.k8s.aws/ec2nodeclass` label, no node group label), read from the API: its row is the
    snapshot's row whole, but for the group, which is the NodePool's name (the name of the NodePool's
    NodeGroupTemplate, controller/nodepools.py)."""
    expected = nodes_json(capsys, "--now", "2024-05-01T12:00:00Z")[CLASSIC]
    snapshot = json.loads(Path(SNAPSHOT).read_text())
    for item in snapshot["items"]:
        if item["kind"] == "Node" and item["metadata"]["name"] == CLASSIC:
            labels = item["metadata"]["labels"]
            del labels["eks.amazonaws.com/nodegroup"]
            labels.update({"karpenter.sh/nodepool": "general", "karpenter.k8s.aws/ec2nodeclass": "default"})
        fake_kube.create(item)
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    code, out = report(capsys, "--kubeconfig", str(kubeconfig), "-o", "json", "--now", "2024-05-01T12:00:00Z")
    assert code == 0
    assert {n["name"]: n for n in json.loads(out)["nodes"]}[CLASSIC] == {**expected, "nodeGroup": "general"}
