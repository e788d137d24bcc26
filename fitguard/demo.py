"""`fitguard demo`: the whole system on the bundled examples, with nothing to set up.

The controller discovers the node groups in AWS (moto in server mode, seeded from
examples/aws-seed.yaml, reached by boto3 over HTTP) and the cluster objects of
examples/cluster.yaml; the webhook app answers real AdmissionReviews for examples/workloads.yaml;
the report reads the branch ENI snapshot of examples/snapshot-classic.json. Only the network is
left out: the webhook is called in-process, not through TLS (`make test` covers that path).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import os
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from capacity.names import TEMPLATE_KIND

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RULE = "=" * 100


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the whole system on the bundled examples",
        description=(
            "Discovers the demo's node groups in a local moto server, shows the templates both ways "
            "(what a node really offers, what cluster-autoscaler believes), sends the demo's pods and "
            "Deployment through the mutating and validating webhooks, applies the autoscaler tags and "
            "shows the same pod admitted, then prints the branch ENI books of a node in the classic "
            "held-ENI state. Needs the test dependencies (moto) that `make demo` installs."
        ),
    )
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help="folder of the example files")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.ERROR)
    for noisy in ("werkzeug", "controller", "botocore"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    out = sys.stdout
    examples: Path = args.examples
    with moto_environment():
        from fitguard.demo_seed import seed_moto

        seed_moto(examples / "aws-seed.yaml")
        report = discover(examples, tags="plan")
        section(out, "1. Node groups, as the controller discovers them (AWS: moto over HTTP)")
        show_groups(out, report)
        client = webhook_client(examples, report["nodeGroups"])
        workloads = load(examples / "workloads.yaml")
        section(out, "2. The mutating webhook: a pod that matches a SecurityGroupPolicy")
        mutated = show_mutation(out, client, first(workloads, "payments-api-0"))
        section(out, "3. The validating webhook, at `kubectl apply` time (mode enforce)")
        for obj in workloads:
            name = obj["metadata"]["name"]
            admit(out, client, mutated if name == "payments-api-0" else obj)
        section(out, "4. A pod already pending: cluster-autoscaler will never scale for it; fitguard would")
        out.write("$ fitguard controller --once --dry-run  # --scaling=plan, the default\n")
        show_scaling(out, report)
        section(out, "5. fitguard syncs the autoscaler tags, so cluster-autoscaler can scale ng-batch from 0")
        out.write("$ fitguard controller --once --sync-autoscaler-tags=apply\n")
        apply_tags(out, report)
        report = discover(examples, tags="plan")
        batch = first(report["nodeGroups"], "ng-batch")["spec"]["autoscaler"]["allocatable"]
        out.write(f"  ng-batch, as cluster-autoscaler now sees it: {batch}\n")
        client = webhook_client(examples, report["nodeGroups"])
        admit(out, client, first(workloads, "scratch-build"))
        out.write("\nthe pending pod, on the next cycle:\n")
        show_scaling(out, report)
    section(out, "6. Branch ENI books: held ENIs the scheduler cannot see (fitguard report)")
    show_books(out, examples / "snapshot-classic.json")
    section(
        out, "7. Shift left: the same verdicts in CI, before anything reaches the cluster (fitguard check)"
    )
    from fitguard.check import demo as check_demo

    check_demo(out, examples)
    return 0


@contextlib.contextmanager
def moto_environment() -> Iterator[str]:
    """A moto server on loopback for the demo's AWS, and the boto3 environment pointing at it."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise SystemExit("fitguard demo needs moto (run it through `make demo`)") from None
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto's state lives in the process: start from an empty AWS whatever ran here before
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    opener.open(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"), timeout=10)
    saved = dict(os.environ)
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
        AWS_ACCESS_KEY_ID="demo",
        AWS_SECRET_ACCESS_KEY="demo",
        AWS_DEFAULT_REGION="us-east-1",
    )
    for variable in ("AWS_PROFILE", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ.pop(variable, None)
    try:
        yield os.environ["AWS_ENDPOINT_URL"]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()


def load(path: Path) -> list[dict[str, Any]]:
    from kube.statefile import load_state

    return load_state(path)


def first(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(obj for obj in objects if obj["metadata"]["name"] == name)


def discover(examples: Path, tags: str) -> dict[str, Any]:
    """One controller cycle on the demo cluster, scaling in plan mode (nothing written to AWS)."""
    from controller.compose import aws_clients
    from controller.run import ControllerOptions, run_once
    from controller.scaling_cli import build_driver
    from controller.scaling_options import ScalingOptions
    from controller.settings import TagSyncMode

    options = ControllerOptions(
        state=str(examples / "cluster.yaml"), sync_autoscaler_tags=TagSyncMode(tags), cluster_name="demo"
    )
    clients = aws_clients(options.region)
    driver = build_driver(ScalingOptions(mode="plan"), clients.autoscaling)
    # the demo reads the report as a user reads `--once -o json`
    return run_once(options, clients=clients, driver=driver).to_json()


def show_scaling(out: TextIO, report: dict[str, Any]) -> None:
    plan = report["scaling"]
    out.write(f"  unschedulable pods: {plan['unschedulablePods']}, of them cluster-autoscaler cannot see: ")
    out.write(f"{plan['demandPods']}\n")
    for up in report["scaleUps"]:
        info = f"{{{up['nodeGroup']} {up['from']}->{up['to']} (max: {up['maxSize']})}}"
        pods = ", ".join(up["pods"])
        # the event reason the controller records (controller/scaling.py): a plan is not a scale-up
        reason = "ScaleUpPlanned" if up["outcome"] == "planned" else "TriggeredScaleUp"
        out.write(f"  {reason} ({up['outcome']}): [{info}] for {pods}\n")
    for item in plan["notDemand"]:
        out.write(f"  left to cluster-autoscaler: {', '.join(item['pods'])}: {item['why']}\n")
    if not report["scaleUps"] and not plan["notDemand"]:
        out.write("  nothing to scale\n")


# moto, the demo's stand-in for AWS, tags EKS clusters only (its eks tag_resource): a managed node
# group's tags are shown as the plan a real cluster gets, never as an error the demo made itself.
MANAGED_NOT_WRITTEN = (
    "not written here: moto, the demo's local AWS, cannot tag EKS managed node groups; "
    "on EKS this is eks:TagResource on the node group"
)


def apply_tags(out: TextIO, report: dict[str, Any]) -> None:
    """The planned tags of `report` written as `--sync-autoscaler-tags=apply` writes them: an ASG's
    with CreateOrUpdateTags (the controller's own call); a managed node group's shown as the plan."""
    from controller.aws.clients import AwsClients
    from controller.aws.tags import put_asg_tag

    providers = {g["metadata"]["name"]: g["spec"]["provider"] for g in report["nodeGroups"]}
    clients = AwsClients.from_environment()
    for change in report["tagSync"]:
        group = change["nodeGroup"]
        tag = f"{group}: {change['key']}={change['value']}"
        if providers[group] == "eks-managed":
            out.write(f"  plan {tag} ({MANAGED_NOT_WRITTEN})\n")
            continue
        put_asg_tag(clients, group, change["key"], change["value"])  # the demo's ASGs bear the group's name
        out.write(f"  wrote {tag}\n")


def section(out: TextIO, title: str) -> None:
    out.write(f"\n{RULE}\n{title}\n{RULE}\n")


def show_groups(out: TextIO, report: dict[str, Any]) -> None:
    from capacity.template import NodeGroupTemplate
    from controller.cycle_table import cycle_table

    out.write(cycle_table(report) + "\n\n")
    for obj in report["nodeGroups"]:
        template = NodeGroupTemplate.from_object(obj)
        if template.karpenter is not None:
            types = ", ".join(template.instance_types)
            out.write(
                f"  {template.name}: a Karpenter NodePool; a pod no node group serves is judged by the "
                f"nodes Karpenter would launch for it ({types})\n"
            )
            continue
        _, why = template.judged_view()
        out.write(f"  {template.name}: a new pod is judged by the {_view_name(template)} view ({why})\n")


def _view_name(template: Any) -> str:
    view, _ = template.judged_view()
    return "autoscaler" if view is template.autoscaler else "actual"


def webhook_client(examples: Path, templates: list[dict[str, Any]]) -> Any:
    from webhook.app import create_app
    from webhook.cluster import from_objects
    from webhook.review import WebhookOptions

    objects = [o for o in load(examples / "cluster.yaml") if o["kind"] != TEMPLATE_KIND]
    view = from_objects([*objects, *templates])
    return create_app(view, WebhookOptions(mode="enforce")).test_client()


def review(client: Any, endpoint: str, obj: dict[str, Any]) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    body = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": f"demo-{obj['metadata']['name']}",
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
            "operation": "CREATE",
            "namespace": obj["metadata"].get("namespace", "default"),
            "object": obj,
        },
    }
    return client.post(endpoint, json=body).get_json()["response"]


def show_mutation(out: TextIO, client: Any, pod: dict[str, Any]) -> dict[str, Any]:
    from webhook.mutate import apply_patch

    name = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    response = review(client, "/mutate", pod)
    patch = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    out.write(f"POST /mutate for pod {name} (labels {pod['metadata'].get('labels')}):\n")
    out.write(f"  allowed: {response['allowed']}; JSON patch:\n")
    for op in patch:
        out.write(f"    {json.dumps(op)}\n")
    mutated = apply_patch(pod, patch)
    out.write("  the pod's spec after the patch:\n")
    spec = {key: mutated["spec"][key] for key in ("affinity", "containers") if key in mutated["spec"]}
    for line in json.dumps(spec, indent=2).splitlines():
        out.write(f"    {line}\n")
    return mutated


def admit(out: TextIO, client: Any, obj: dict[str, Any]) -> None:
    name = f"{obj['kind']} {obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}"
    if obj["kind"] == "Pod" and not _has_eni(obj):
        patch = review(client, "/mutate", obj).get("patch")
        if patch:
            from webhook.mutate import apply_patch

            obj = apply_patch(obj, json.loads(base64.b64decode(patch)))
    response = review(client, "/validate", obj)
    if response["allowed"]:
        out.write(f"\n$ kubectl apply  # {name}\n  admitted\n")
        return
    out.write(f"\n$ kubectl apply  # {name}\n")
    out.write("  Error from server (Forbidden): admission webhook denied the request:\n")
    for line in response["status"]["message"].splitlines():
        out.write(f"    {line}\n")


def _has_eni(pod: dict[str, Any]) -> bool:
    containers = pod["spec"].get("containers") or [{}]
    return "vpc.amazonaws.com/pod-eni" in ((containers[0].get("resources") or {}).get("requests") or {})


def show_books(out: TextIO, snapshot: Path) -> None:
    import time

    from fitguard.report import build_report, load_snapshot, write_report_table

    objects, captured = load_snapshot(str(snapshot))
    out.write(f"$ fitguard report --snapshot {snapshot.name}\n")
    write_report_table(build_report(objects, captured or time.time()), out)
