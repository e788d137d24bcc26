"""No wrong denials (issue 26): the published manifests of common add-ons (tests/corpus/manifests/,
sources.yaml) and every pod their controllers would make are admitted by fitguard, judged against the
demo cluster (examples/cluster.yaml, plus the add-ons' own Namespaces and ServiceAccounts) and a
mixed EKS cluster (tests/corpus/mixed-cluster.yaml).

Two ways in, as a user meets them: `fitguard check --state CLUSTER -f FILE -o json` run as the
installed console script, and the webhook's Flask app over a ClusterView of the state file, each pod
through /mutate (its patch applied) and then /validate, as the apiserver calls them.

The two admission tests fail today: DaemonSet pods carry the required node affinity
`matchFields: metadata.name In [node]` the DaemonSet controller pins them with, which fitguard never
matches, so it denies every one outside the exempt namespaces.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.corpus import controllers
from tests.corpus.subjects import (
    CLUSTERS,
    MANIFESTS,
    Subject,
    load_objects,
    nodes_of,
    sources,
    subjects,
    with_installed_accounts,
    workloads,
)
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import WebhookOptions

EXEMPT = WebhookOptions().exempt_namespaces | {WebhookOptions().own_namespace}
CHECK_TIMEOUT = 300  # ends a hang only: the corpus is judged in about a second


@functools.cache
def cluster_objects(name: str) -> list[dict[str, Any]]:
    """The cluster's objects (shared: no caller changes them)."""
    objects = load_objects(CLUSTERS[name])
    return with_installed_accounts(objects) if name == "demo" else objects


@functools.cache
def judged_on(name: str) -> list[Subject]:
    """Every subject on the cluster (shared: no caller changes them)."""
    return subjects(cluster_objects(name))


def denials_text(denials: list[tuple[str, str]], total: int) -> str:
    lines = [f"{len(denials)} of {total} objects and pods denied:"]
    lines += [f"- {where}: {message.splitlines()[0] if message else ''}" for where, message in denials]
    detail = denials[0][1] if denials else ""
    return "\n".join([*lines, "first denial in full:", detail])


def run_check(state: Path, manifest: Path) -> dict[str, Any]:
    console_script = Path(sys.executable).parent / "fitguard"
    done = subprocess.run(
        [str(console_script), "check", "--state", str(state), "-f", str(manifest), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=CHECK_TIMEOUT,
    )
    assert done.returncode in (0, 1), f"fitguard check exited {done.returncode}: {done.stderr}"
    body: dict[str, Any] = json.loads(done.stdout)
    return body


def check_denials(name: str, tmp_path: Path) -> tuple[list[tuple[str, str]], list[Subject]]:
    """One `fitguard check` over one multi-document file of every subject."""
    objects = cluster_objects(name)
    state = tmp_path / f"{name}-state.yaml"
    state.write_text(
        yaml.dump({"apiVersion": "v1", "kind": "List", "items": objects}, Dumper=yaml.CSafeDumper)
    )
    judged = judged_on(name)
    manifest = tmp_path / "corpus.yaml"
    manifest.write_text(yaml.dump_all([s.obj for s in judged], Dumper=yaml.CSafeDumper))
    body = run_check(state, manifest)
    results = body["results"]
    assert [r["document"] for r in results] == list(range(1, len(judged) + 1))
    denials = [
        (subject.where, result["message"])
        for subject, result in zip(judged, results, strict=True)
        if not result["allowed"]
    ]
    assert body["summary"]["denied"] == len(denials)
    return denials, judged


class Webhook:
    """The webhook's Flask app, called as the apiserver calls it on a create."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.client = create_app(from_objects(objects), WebhookOptions()).test_client()

    def post(self, path: str, obj: Mapping[str, Any], uid: str) -> dict[str, Any]:
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        request = {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": f"{str(obj['kind']).lower()}s"},
            "operation": "CREATE",
            "namespace": obj["metadata"]["namespace"],
            "name": obj["metadata"].get("name", ""),
            "object": obj,
            "dryRun": False,
        }
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        answer = self.client.post(path, data=json.dumps(review), content_type="application/json")
        assert answer.status_code == 200, f"{path} answered {answer.status_code}: {answer.get_data(True)}"
        response: dict[str, Any] = answer.get_json()["response"]
        assert response["uid"] == uid
        return response

    def admit(self, subject: Subject, uid: str) -> str | None:
        """None when admitted, else the denial's message (naming the webhook that denied)."""
        obj = subject.obj
        if obj["kind"] == "Pod":
            mutated = self.post("/mutate", obj, uid)
            if not mutated["allowed"]:
                return "mutate: " + str((mutated.get("status") or {}).get("message"))
            if mutated.get("patch"):
                patch = json.loads(base64.b64decode(mutated["patch"]))
                obj = jsonpatch.apply_patch(obj, patch)
        validated = self.post("/validate", obj, uid)
        if not validated["allowed"]:
            return "validate: " + str((validated.get("status") or {}).get("message"))
        return None


def webhook_denials(name: str) -> tuple[list[tuple[str, str]], list[Subject]]:
    objects = cluster_objects(name)
    webhook = Webhook(objects)
    judged = judged_on(name)
    denials = []
    for i, subject in enumerate(judged):
        message = webhook.admit(subject, f"corpus-{i}")
        if message is not None:
            denials.append((subject.where, message))
    return denials, judged


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_fitguard_check_admits_every_add_on_and_every_pod_its_controller_makes(
    name: str, tmp_path: Path
) -> None:
    """`fitguard check` (the console script, one run per cluster) denies none of the published
    workloads and none of the pods their controllers make on the cluster's nodes."""
    denials, judged = check_denials(name, tmp_path)
    assert not denials, denials_text(denials, len(judged))


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_the_webhook_admits_every_add_on_and_every_pod_its_controller_makes(name: str) -> None:
    """The webhook's /mutate then /validate (pods) or /validate (workloads) deny none of them."""
    denials, judged = webhook_denials(name)
    assert not denials, denials_text(denials, len(judged))


def test_the_corpus_files_are_the_published_bytes_with_their_provenance() -> None:
    """Every manifest is listed once in sources.yaml with a repository, path, 40-hex commit and
    licence, and still has the bytes it was fetched with; no file is unlisted."""
    entries = sources()
    listed = [e["file"] for e in entries]
    on_disk = sorted(str(p.relative_to(MANIFESTS)) for p in MANIFESTS.rglob("*.yaml"))
    assert sorted(listed) == on_disk
    for entry in entries:
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
        assert entry["repository"].count("/") == 1 and entry["path"] and entry["licence"], entry
        digest = hashlib.sha256((MANIFESTS / entry["file"]).read_bytes()).hexdigest()
        assert digest == entry["sha256"], f"{entry['file']} differs from what was fetched"


def test_the_corpus_has_ten_workloads_and_five_daemonsets_the_webhook_judges() -> None:
    """Enough of the corpus is judged (not exempt) for its verdicts to mean something."""
    all_workloads = list(workloads())
    judged_daemonsets = {
        w.obj["metadata"]["name"]
        for w in all_workloads
        if w.obj["kind"] == "DaemonSet" and w.namespace not in EXEMPT
    }
    assert len(all_workloads) >= 10
    assert len(judged_daemonsets) >= 5, judged_daemonsets


def test_the_mixed_cluster_holds_every_namespace_and_service_account_the_pods_need() -> None:
    """The pods of the corpus meet no missing ServiceAccount there (the mutating webhook would deny
    them, as upstream does), and every template lists the nodes it counts."""
    objects = load_objects(CLUSTERS["mixed"])
    assert with_installed_accounts(objects) == objects
    nodes = {n["metadata"]["name"] for n in nodes_of(objects)}
    for template in (o for o in objects if o["kind"] == "NodeGroupTemplate"):
        names = template["spec"]["nodeNames"]
        assert len(names) == template["spec"]["nodes"] and set(names) <= nodes, template["metadata"]["name"]


def _pods_of(daemonset: str, name: str) -> list[Subject]:
    return [
        s
        for s in judged_on(name)
        if s.obj["kind"] == "Pod" and s.obj["metadata"]["generateName"] == f"{daemonset}-"
    ]


def test_a_daemonset_pod_is_pinned_to_its_node_with_the_controllers_tolerations() -> None:
    """syncNodes' pod: the required terms replaced by one matchFields term naming the node (the
    template's own required terms are gone, its preferred ones kept), the six added tolerations plus
    network-unavailable for a hostNetwork pod, the DaemonSet as controller, no spec.nodeName."""
    pods = _pods_of("efs-csi-node", "mixed")  # hostNetwork, required affinity of its own
    assert len(pods) == 8
    pod = pods[0].obj
    assert "nodeName" not in pod["spec"]
    required = pod["spec"]["affinity"]["nodeAffinity"][controllers.REQUIRED]
    assert required == {
        "nodeSelectorTerms": [
            {
                "matchFields": [
                    {
                        "key": "metadata.name",
                        "operator": "In",
                        "values": ["ip-10-1-10-101.us-west-2.compute.internal"],
                    }
                ]
            }
        ]
    }
    assert pod["spec"]["tolerations"] == [
        {"operator": "Exists"},
        {"key": "efs.csi.aws.com/agent-not-ready", "operator": "Exists"},
        *controllers.daemon_tolerations(host_network=True),
    ]
    assert len(controllers.daemon_tolerations(host_network=True)) == 7
    owner = pod["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["controller"]) for o in owner] == [("DaemonSet", "efs-csi-node", True)]
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"


def test_a_daemonset_without_tolerations_skips_the_tainted_node_and_one_with_them_runs_everywhere() -> None:
    """NodeShouldRunDaemonPod: cloudwatch-agent (no tolerations) gets no pod on the GPU node tainted
    NoSchedule; node-exporter (tolerates everything) gets one on all eight nodes; on the demo
    cluster both run on its four untainted nodes."""
    gpu = "ip-10-1-12-31.us-west-2.compute.internal"
    agent = {s.where.rsplit(" on ", 1)[1] for s in _pods_of("cloudwatch-agent", "mixed")}
    exporter = {s.where.rsplit(" on ", 1)[1] for s in _pods_of("node-exporter", "mixed")}
    assert gpu not in agent and len(agent) == 7
    assert gpu in exporter and len(exporter) == 8
    assert len(_pods_of("cloudwatch-agent", "demo")) == len(_pods_of("node-exporter", "demo")) == 4


@pytest.mark.parametrize(
    ("selector", "runs"),
    [
        ({"nodeSelector": {"kubernetes.io/arch": "arm64"}}, 3),
        ({"nodeSelector": {"karpenter.sh/nodepool": "default"}}, 1),
        ({"nodeName": "ip-10-1-40-7.us-west-2.compute.internal"}, 1),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        controllers.REQUIRED: {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "NotIn", "values": ["x"]}
                                    ]
                                },
                            ]
                        }
                    }
                }
            },
            7,  # every node but the GPU node, whose taint the probe does not tolerate
        ),
        ({"affinity": {"nodeAffinity": {controllers.REQUIRED: {"nodeSelectorTerms": [{}]}}}}, 0),
        ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}]}, 8),
        ({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}]}, 7),
    ],
)
def test_which_nodes_a_daemonset_runs_on(selector: dict[str, Any], runs: int) -> None:
    """predicates: template nodeName, nodeSelector, required terms (matchFields on the node's name,
    an empty term matching nothing) and tolerations against the mixed cluster's eight nodes."""
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "probe", "namespace": "monitoring"},
        "spec": {
            "template": {"metadata": {"labels": {"app": "probe"}}, "spec": {"containers": [], **selector}}
        },
    }
    nodes = nodes_of(cluster_objects("mixed"))
    assert len(controllers.controller_pods(ds, "monitoring", nodes)) == runs


def test_a_deployments_pods_come_from_its_replicaset() -> None:
    """GetPodFromTemplate through the Deployment's ReplicaSet: `replicas` pods (metrics-server: 1,
    ebs-csi-controller: 2) named by generateName after the ReplicaSet, the template's labels plus
    pod-template-hash, the ReplicaSet as controller, the template's spec untouched."""
    by_name = {w.obj["metadata"]["name"]: w for w in workloads()}
    ebs = by_name["ebs-csi-controller"]
    pods = controllers.controller_pods(ebs.obj, ebs.namespace, [])
    assert len(pods) == ebs.obj["spec"]["replicas"] == 2
    rs = pods[0]["metadata"]["ownerReferences"][0]
    digest = pods[0]["metadata"]["labels"]["pod-template-hash"]
    assert (rs["kind"], rs["name"]) == ("ReplicaSet", f"ebs-csi-controller-{digest}")
    assert pods[0]["metadata"]["generateName"] == f"ebs-csi-controller-{digest}-"
    assert pods[0]["spec"] == ebs.obj["spec"]["template"]["spec"]
    assert pods[0]["metadata"]["namespace"] == "storage"
    metrics = by_name["metrics-server"]
    assert len(controllers.controller_pods(metrics.obj, metrics.namespace, [])) == 1
