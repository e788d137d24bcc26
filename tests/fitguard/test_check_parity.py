"""`fitguard check` gives the webhook's own answer: one table of cases (those of webhook/test_validate.py that
a CREATE can meet, plus the mutation-first pod cases), each run through the webhook's Flask app over
its HTTP contract (/mutate, the patch applied by the fake apiserver's JSON patch engine, then
/validate, as the apiserver calls them) and through the `fitguard check` command line on the same
object and the same state written to a file. Both must agree on verdict, message and warnings, and
both must give the verdict the table expects."""

from __future__ import annotations

import base64
import copy
import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from capacity.names import MODE_LABEL
from fitguard.cli import main
from kube.statefile import load_state
from tests.fakekube.patch import json_patch
from tests.objects import node_groups_only, pod
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import WebhookOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = node_groups_only(load_state(EXAMPLES / "cluster.yaml"))
WORKLOADS = {obj["metadata"]["name"]: obj for obj in load_state(EXAMPLES / "workloads.yaml")}
POD_ENI = "vpc.amazonaws.com/pod-eni"

State = list[dict[str, Any]]


def base() -> State:
    return copy.deepcopy(CLUSTER)


def changed_template(name: str, change: Callable[[dict[str, Any]], None]) -> Callable[[], State]:
    """The demo state with one group's template changed and its live nodes gone: a node that
    contradicts what the test says of its group would otherwise take the pod."""

    def state() -> State:
        objects = [
            o
            for o in base()
            if not (
                o["kind"] == "Node" and o["metadata"]["labels"].get("eks.amazonaws.com/nodegroup") == name
            )
        ]
        for obj in objects:
            if obj["kind"] == "NodeGroupTemplate" and obj["metadata"]["name"] == name:
                change(obj["spec"])
        return objects

    return state


def spec_set(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda spec: spec.update(copy.deepcopy(fields))


def tag_batch(spec: dict[str, Any]) -> None:
    spec["autoscaler"]["allocatable"]["ephemeral-storage"] = "47019777424"


def taint_general(spec: dict[str, Any]) -> None:
    spec["actual"]["taints"] = [{"key": "dedicated", "value": "eni", "effect": "NoSchedule"}]


def default_namespace_mode(mode: str) -> Callable[[], State]:
    def state() -> State:
        objects = base()
        for obj in objects:
            if obj["kind"] == "Namespace" and obj["metadata"]["name"] == "default":
                obj["metadata"]["labels"] = {MODE_LABEL: mode}
        return objects

    return state


def no_templates() -> State:
    return [o for o in base() if o["kind"] != "NodeGroupTemplate"]


def job(kind: str) -> dict[str, Any]:
    template = {
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"ephemeral-storage": "900Gi"}}}]}
    }
    spec = {"template": template} if kind == "Job" else {"jobTemplate": {"spec": {"template": template}}}
    return {
        "apiVersion": "batch/v1",
        "kind": kind,
        "metadata": {"name": "j", "namespace": "default"},
        "spec": spec,
    }


def payments_deployment(app: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "payments"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {
                    "serviceAccountName": "payments-api",
                    "nodeSelector": {"node.kubernetes.io/instance-type": "t3.large"},
                    "containers": [{"name": "c"}],
                },
            }
        },
    }


T3 = {"node.kubernetes.io/instance-type": "t3.large"}
TOLERATES = [{"key": "dedicated", "operator": "Exists"}]


@dataclass(frozen=True)
class Case:
    id: str
    obj: dict[str, Any]
    allowed: bool
    state: Callable[[], State] = base
    mode: str = "enforce"
    says: str = ""  # a line the message (or, when allowed, the first warning) must hold


CASES = [
    Case("zero-group-trap", WORKLOADS["scratch-build"], False, says="pod does not fit any node group"),
    Case("tag-fixes-trap", WORKLOADS["scratch-build"], True, changed_template("ng-batch", tag_batch)),
    Case("live-node", WORKLOADS["scratch-build"], True, changed_template("ng-batch", spec_set(nodes=1))),
    Case(
        "fitguard-scales",
        WORKLOADS["scratch-build"],
        True,
        changed_template("ng-batch", spec_set(scaleFromZero="fitguard")),
    ),
    Case("pod-eni-on-t3", pod("eni", {POD_ENI: "1"}, nodeSelector=T3), False),
    Case("pod-eni-on-m5", pod("eni", {POD_ENI: "1"}), True),
    Case("selector-fits", pod("big", {"cpu": "3"}, nodeSelector={"workload": "general"}), True),
    Case("selector-too-small", pod("big", {"cpu": "3800m"}, nodeSelector={"workload": "general"}), False),
    Case(
        "untolerated-taint", pod("eni", {POD_ENI: "1"}), False, changed_template("ng-general", taint_general)
    ),
    Case(
        "tolerated-taint",
        pod("eni", {POD_ENI: "1"}, tolerations=TOLERATES),
        True,
        changed_template("ng-general", taint_general),
    ),
    Case("daemonset-overhead", pod("x", {"cpu": "3800m"}), False),
    Case(
        "no-overhead",
        pod("x", {"cpu": "3800m"}),
        True,
        changed_template("ng-general", spec_set(daemonSetOverhead={})),
    ),
    Case(
        "deployment-warn",
        WORKLOADS["video-transcode"],
        True,
        mode="warn",
        says="spec.template.spec.containers[0].resources.limits.ephemeral-storage: fits no node group",
    ),
    Case("deployment-enforce", WORKLOADS["video-transcode"], False, says="fields to edit: spec.template"),
    Case("job", job("Job"), False),
    Case("cronjob-warn", job("CronJob"), True, mode="warn", says="spec.jobTemplate.spec.template.spec"),
    Case("sgp-template-t3", payments_deployment("payments-api"), False, says="supports no branch ENIs"),
    Case("no-sgp-template-t3", payments_deployment("other"), True),
    Case("namespace-audit", WORKLOADS["scratch-build"], True, default_namespace_mode("audit")),
    Case("namespace-warn", WORKLOADS["scratch-build"], True, default_namespace_mode("warn")),
    Case(
        "max-size-zero",
        pod("eni", {POD_ENI: "1"}),
        False,
        changed_template("ng-general", spec_set(maxSize=0, nodes=0)),
        says="ng-general: max size is 0",
    ),
    # pods meet /mutate first: pod-eni injected by a SecurityGroupPolicy decides the verdict
    Case("mutated-pod-fits", WORKLOADS["payments-api-0"], True),
    Case("mutated-pod-on-t3", WORKLOADS["payments-worker-0"], False, says="supports no branch ENIs"),
    Case(
        "missing-service-account",
        pod("lost", {}, namespace="payments", serviceAccountName="nobody"),
        False,
        says='serviceaccount "nobody" not found',
    ),
    Case(
        "exempt-namespace",
        pod("sys", {"cpu": "900"}, namespace="kube-system"),
        True,
        says="kube-system is exempt",
    ),
]

Answer = tuple[bool, str, list[str]]


def through_webhook(case: Case) -> Answer:
    """The answer of the webhook's app: /mutate for a pod (its patch applied), then /validate."""
    client = create_app(from_objects(case.state()), WebhookOptions(mode=case.mode)).test_client()
    obj = copy.deepcopy(case.obj)
    group, _, version = obj["apiVersion"].rpartition("/")
    request = {
        "uid": "parity",
        "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "operation": "CREATE",
        "namespace": obj["metadata"]["namespace"],
        "object": obj,
    }
    warnings: list[str] = []
    paths = ["/mutate", "/validate"] if obj["kind"] == "Pod" else ["/validate"]
    for path in paths:
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
        answer = client.post(path, data=json.dumps(review), content_type="application/json")
        assert answer.status_code == 200
        response = answer.get_json()["response"]
        warnings += response.get("warnings") or []
        message = str((response.get("status") or {}).get("message") or "")
        if not response["allowed"]:
            return False, message, warnings
        if response.get("patch"):
            patched = json_patch(request["object"], json.loads(base64.b64decode(response["patch"])))
            request = {**request, "object": patched}
    return True, message, warnings


def through_check(case: Case, tmp_path: Path) -> tuple[int, Answer]:
    """The exit status and the answer of `fitguard check -o json` on the same object and state."""
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": case.state()}))
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(case.obj))
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(
            ["check", "-f", str(manifest), "--state", str(state), "--mode", case.mode, "-o", "json"]
        )
    results = json.loads(out.getvalue())["results"]
    assert len(results) == 1
    result = results[0]
    return status, (result["allowed"], result["message"], result["warnings"])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_check_and_the_webhook_give_the_same_verdict_message_and_warnings(case: Case, tmp_path: Path) -> None:
    """The same object and state through both paths: equal answers, the expected verdict, and an
    exit status that follows it."""
    webhook = through_webhook(case)
    status, checked = through_check(case, tmp_path)
    assert checked == webhook
    assert webhook[0] is case.allowed
    assert status == (0 if case.allowed else 1)
    if case.says:
        shown = webhook[1] if (not case.allowed or webhook[1]) else "\n".join(webhook[2])
        assert case.says in shown


def test_where_check_and_the_webhook_part_the_check_is_stricter(tmp_path: Path) -> None:
    """Two inputs only `fitguard check` can meet, answered as CI needs: a state without templates
    (the webhook admits with its cold-start warning; check refuses the state, exit 2, saying what is
    missing) and a quantity the API server cannot decode (the webhook, which never receives one
    from a real API server, says it could not check; check denies it as the API server does, 400)."""
    cold = Case("cold-start", WORKLOADS["scratch-build"], True, no_templates)
    allowed, _, warnings = through_webhook(cold)
    assert allowed and any("fitguard knows no node group" in w for w in warnings)
    malformed = Case("malformed-quantity", pod("bad", {"cpu": "lots"}), True)
    allowed, _, warnings = through_webhook(malformed)
    assert allowed and any("could not check" in w for w in warnings)
    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": cold.state()}))
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump(cold.obj))
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        status = main(["check", "-f", str(manifest), "--state", str(state)])
    assert status == 2
    assert "no NodeGroupTemplates in it: nothing to judge pods against" in err.getvalue()
    status, (allowed, message, _) = through_check(malformed, tmp_path)
    assert (status, allowed) == (1, False)
    assert message == (
        'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
