"""`fitguard state export` against the fake apiserver (real REST, the real `kubernetes` client): the
file holds exactly what a verdict needs and records where and when it was taken, it is listed page
by page, and the webhook answering from it (`--state`) gives the same answers as the webhook
watching that apiserver live, as does `fitguard check` against either."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from capacity.names import EXPORTED_AT, EXPORTED_CLUSTER, EXPORTED_CONTEXT, EXPORTED_SERVER, MODE_LABEL
from fitguard.state_export import export_state
from kube.statefile import load_state
from tests.fakekube.server import FakeKubeServer
from tests.tlsfixtures import TlsFiles
from tests.webhook_server import admission_review, post, running
from webhook.cluster import WATCHES

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WATCHED = {kind for kind, _, _ in WATCHES}
CLUSTER = [obj for obj in load_state(EXAMPLES / "cluster.yaml") if obj["kind"] in WATCHED]
WORKLOADS = load_state(EXAMPLES / "workloads.yaml")
ENV = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}

# what must never reach a state file: a Secret, a pod, another ConfigMap, annotations
NOT_NEEDED = [
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "payments"},
        "data": {"password": "aHVudGVyMg=="},
    },
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app-settings", "namespace": "payments"},
        "data": {"token": "x"},
    },
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "coredns", "namespace": "kube-system"},
        "data": {"Corefile": ".:53 {}"},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "running", "namespace": "payments"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    },
]
RELAXED = [
    {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "relaxed", "labels": {MODE_LABEL: "warn"}},
    },
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "default",
            "namespace": "relaxed",
            "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/secret-role"},
        },
    },
]


def seed(fake_kube: FakeKubeServer) -> None:
    for obj in [*CLUSTER, *NOT_NEEDED, *RELAXED]:
        fake_kube.apply(copy.deepcopy(obj))
    vpc_cni = next(o for o in CLUSTER if o["kind"] == "ConfigMap")
    with_more = copy.deepcopy(vpc_cni)
    with_more["data"] = {**with_more.get("data", {}), "unrelated-setting": "kept out"}
    fake_kube.apply(with_more)


def export(kubeconfig: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "fitguard",
            "state",
            "export",
            "--kubeconfig",
            str(kubeconfig),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
        check=False,
        timeout=120,
    )


def test_the_export_holds_only_what_a_verdict_needs_and_says_where_from(
    fake_kube: FakeKubeServer, tmp_path: Path
) -> None:
    """Only the five kinds the webhook reads; a ServiceAccount keeps name and labels but not its
    annotations; of ConfigMaps only kube-system/amazon-vpc-cni and only the keys the webhook reads;
    the List records the time, context, cluster and API server."""
    seed(fake_kube)
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    run = export(kubeconfig, tmp_path / "state.yaml")
    assert run.returncode == 0, run.stderr
    doc = yaml.safe_load((tmp_path / "state.yaml").read_text())
    annotations = doc["metadata"]["annotations"]
    assert set(annotations) == {EXPORTED_AT, EXPORTED_CONTEXT, EXPORTED_CLUSTER, EXPORTED_SERVER}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", annotations[EXPORTED_AT])
    assert (annotations[EXPORTED_CONTEXT], annotations[EXPORTED_CLUSTER], annotations[EXPORTED_SERVER]) == (
        "fakekube",
        "fakekube",
        fake_kube.url,
    )
    items = doc["items"]
    assert {item["kind"] for item in items} == WATCHED
    assert [i for i in items if i["kind"] == "ConfigMap"] == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
            "data": next(o for o in CLUSTER if o["kind"] == "ConfigMap")["data"],
        }
    ]
    relaxed_sa = [
        i for i in items if i["kind"] == "ServiceAccount" and i["metadata"]["namespace"] == "relaxed"
    ]
    assert relaxed_sa == [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": "relaxed"},
        }
    ]
    assert "hunter" not in (tmp_path / "state.yaml").read_text()
    assert "aHVudGVyMg" not in (tmp_path / "state.yaml").read_text()
    templates = {i["metadata"]["name"]: i["spec"] for i in items if i["kind"] == "NodeGroupTemplate"}
    assert templates == {
        o["metadata"]["name"]: o["spec"] for o in CLUSTER if o["kind"] == "NodeGroupTemplate"
    }


def test_the_export_is_listed_page_by_page(
    fake_kube: FakeKubeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pages of 2 objects every list carries limit=2, the namespaces need several pages
    (continue tokens), and the result equals an export in one page."""
    seed(fake_kube)
    kubeconfig = str(fake_kube.write_kubeconfig(tmp_path / "kubeconfig"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    fake_kube.requests.clear()
    paged = export_state(kubeconfig, None, now=0, page_size=2)
    lists = [r for r in fake_kube.requests.find("GET") if not r.watch]
    assert lists and all(r.query.get("limit") == "2" for r in lists)
    namespace_pages = [r for r in lists if r.path == "/api/v1/namespaces"]
    assert len(namespace_pages) >= 2 and all(r.query.get("continue") for r in namespace_pages[1:])
    assert paged == export_state(kubeconfig, None, now=0, page_size=500)


def _answers(server: Any, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each object's /mutate answer (pods) and /validate answer, in order."""
    answers = []
    conn = server.connect()
    for i, obj in enumerate(objects):
        for path in ["/mutate", "/validate"] if obj["kind"] == "Pod" else ["/validate"]:
            status, body = post(conn, admission_review(obj, f"uid-{i}"), path)
            assert status == 200
            answers.append(body["response"])
    conn.close()
    return answers


def test_the_webhook_answers_the_same_from_the_export_as_from_the_live_api(
    fake_kube: FakeKubeServer, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """The demo's workloads (and one in a namespace whose label sets mode warn) get equal whole
    answers from a webhook watching the fake apiserver and one reading the exported file, with
    denials among them; `fitguard check` against the file and against the live API agree too."""
    seed(fake_kube)
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    assert export(kubeconfig, tmp_path / "state.yaml").returncode == 0
    deploy = next(o for o in WORKLOADS if o["kind"] == "Deployment")
    relaxed = {**copy.deepcopy(deploy), "metadata": {**deploy["metadata"], "namespace": "relaxed"}}
    objects = [*WORKLOADS, relaxed]
    with running(tls_files, ["--kubeconfig", str(kubeconfig)], workers=1) as live:
        from_live = _answers(live, objects)
    with running(tls_files, ["--state", str(tmp_path / "state.yaml")], workers=1) as offline:
        from_file = _answers(offline, objects)
    assert from_file == from_live
    assert [a["allowed"] for a in from_live if "patch" not in a].count(False) >= 2
    assert any(a.get("warnings") for a in from_live)

    manifest = tmp_path / "workloads.yaml"
    manifest.write_text(yaml.safe_dump_all(objects))
    runs = [
        subprocess.run(
            [sys.executable, "-m", "fitguard", "check", "-f", str(manifest), *source, "-o", "json"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=ENV,
            check=False,
            timeout=120,
        )
        for source in (["--state", str(tmp_path / "state.yaml")], ["--kubeconfig", str(kubeconfig)])
    ]
    assert [r.returncode for r in runs] == [1, 1], [r.stderr for r in runs]
    offline_results, live_results = (json.loads(r.stdout)["results"] for r in runs)
    assert offline_results == live_results
    assert [(r["name"], r["verdict"]) for r in live_results] == [
        ("scratch-build", "denied"),
        ("payments-api-0", "admitted"),
        ("payments-worker-0", "denied"),  # denied once /mutate has injected pod-eni
        ("web-0", "admitted"),
        ("video-transcode", "denied"),
        ("video-transcode", "warned"),
    ]


def test_nodes_and_node_pools_are_exported_as_the_webhook_reads_them(
    fake_kube: FakeKubeServer, tmp_path: Path
) -> None:
    """Issue 26: the state holds every place a pod could run. A Node keeps its labels, taints,
    cordon and allocatable (not its status conditions, addresses or images); a Karpenter NodePool
    keeps its name, spec and a deletion in progress."""
    seed(fake_kube)
    node = copy.deepcopy(next(o for o in CLUSTER if o["kind"] == "Node"))
    node["spec"]["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    node["spec"]["unschedulable"] = True
    node["status"]["addresses"] = [{"type": "InternalIP", "address": "10.0.1.11"}]
    node["metadata"]["annotations"] = {"node.alpha.kubernetes.io/ttl": "0"}
    fake_kube.apply(node)
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default", "annotations": {"karpenter.sh/nodepool-hash": "1"}},
        "spec": {"template": {"spec": {"requirements": []}}, "limits": {"cpu": "100"}},
    }
    fake_kube.apply(copy.deepcopy(pool))
    kubeconfig = fake_kube.write_kubeconfig(tmp_path / "kubeconfig")
    run = export(kubeconfig, tmp_path / "state.yaml")
    assert run.returncode == 0, run.stderr
    items = yaml.safe_load((tmp_path / "state.yaml").read_text())["items"]
    exported = next(
        i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == node["metadata"]["name"]
    )
    assert exported == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node["metadata"]["name"], "labels": node["metadata"]["labels"]},
        "spec": {"taints": node["spec"]["taints"], "unschedulable": True},
        "status": {"allocatable": node["status"]["allocatable"]},
    }
    assert [i for i in items if i["kind"] == "NodePool"] == [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodePool",
            "metadata": {"name": "default"},
            "spec": pool["spec"],
        }
    ]
    assert sum(i["kind"] == "Node" for i in items) == sum(o["kind"] == "Node" for o in CLUSTER)
