"""The alert rules and the Grafana dashboard (manifests/components/monitoring/): promtool checks and
unit-tests the rules, and a real Prometheus on loopback scraping a running webhook and controller finds every
metric a rule or a dashboard query names. Each test skips cleanly where promtool or prometheus is
absent (Debian's `prometheus` package ships both; .ci/run installs it)."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.loop import ControllerLoop
from controller.run import ControllerOptions
from controller.settings import BooksOptions, LoopOptions, ServingOptions
from fitguard.demo_seed import seed_moto
from kube.client import as_kube_client
from kube.statefile import load_state
from tests.tlsfixtures import TlsFiles
from tests.waiting import eventually
from tests.webhook_server import admission_review, post, running

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "components" / "monitoring"
EXAMPLES = ROOT / "examples"
METRIC = re.compile(r"\bfitguard_[a-z0-9_]+\b")


def rule_groups() -> list[dict[str, Any]]:
    return yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]["groups"]


def rule_expressions() -> list[str]:
    return [rule["expr"] for group in rule_groups() for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def metric_names(expressions: list[str]) -> set[str]:
    return {name for expr in expressions for name in METRIC.findall(expr)}


def write_rules(directory: Path) -> Path:
    """The PrometheusRule's groups as a Prometheus rule file, and the promtool cases beside it."""
    (directory / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
    shutil.copy(ROOT / "tests" / "promtool" / "rules_test.yaml", directory / "rules_test.yaml")
    return directory


def test_every_rule_has_a_promtool_case() -> None:
    """Each alert of the PrometheusRule is named by at least one case with an expected firing."""
    cases = yaml.safe_load((ROOT / "tests" / "promtool" / "rules_test.yaml").read_text())["tests"]
    fired = {check["alertname"] for case in cases for check in case["alert_rule_test"] if check["exp_alerts"]}
    alerts = {rule["alert"] for group in rule_groups() for rule in group["rules"]}
    assert fired == alerts


def test_promtool_checks_and_unit_tests_the_rules(tmp_path: Path) -> None:
    """`promtool check rules` accepts the rule file and `promtool test rules` passes every case."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian: apt-get install prometheus)")
    directory = write_rules(tmp_path)
    checked = subprocess.run(
        [promtool, "check", "rules", str(directory / "rules.yaml")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool, "test", "rules", str(directory / "rules_test.yaml")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


# --- a real Prometheus -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_json(url: str) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return json.loads(response.read())


@pytest.fixture
def controller(fake_kube: Any, aws: Any) -> Iterator[ControllerLoop]:
    """One controller (it leads) over the demo cluster, EC2 verification on so leaked-ENI series exist."""
    seed_moto(EXAMPLES / "aws-seed.yaml")
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fitguard-system"}})
    for obj in load_state(EXAMPLES / "cluster.yaml"):
        if obj["kind"] in ("Node", "DaemonSet", "ConfigMap", "Namespace"):
            fake_kube.apply(obj)
    options = LoopOptions(
        discovery=ControllerOptions(cluster_name="demo"),
        interval=0.5,
        books=BooksOptions(reconcile_interval=0.2),
        serving=ServingOptions(bind="127.0.0.1:0"),
        verify_with_ec2=True,
    )
    loop = ControllerLoop(options, as_kube_client(fake_kube.api_client()))
    stop = threading.Event()
    threading.Thread(target=loop.run, args=(stop,), daemon=True).start()
    yield loop
    stop.set()


# The job prometheus-operator gives the webhook's targets: the name of the Service its ServiceMonitor
# finds them through (tests/install/test_monitoring_manifests.py checks the rules name the same).
WEBHOOK_JOB = "fitguard-webhook-metrics"
WEBHOOK_ALERTS = ("FitguardWebhookDown", "FitguardWebhookNotScraped")


def _rule_expr(alert: str) -> str:
    [expr] = [
        rule["expr"] for group in rule_groups() for rule in group["rules"] if rule.get("alert") == alert
    ]
    return str(expr)


@pytest.mark.slow
def test_a_real_prometheus_finds_every_metric_the_rules_and_dashboard_use(
    controller: ControllerLoop, tls_files: TlsFiles, tmp_path: Path
) -> None:
    """Prometheus on loopback (its own config and storage in tmp) scrapes a running webhook (its
    status port, under the job prometheus-operator would give it) and a running controller; every
    metric name a rule or a dashboard query uses is among the scraped series, and every rule
    expression evaluates without error. The webhook alerts' expressions find nothing while the
    webhook answers, and once it has stopped `up == 0` finds exactly its target (and `absent`
    still nothing: the target is there, failing)."""
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.skip("prometheus not installed (Debian: apt-get install prometheus)")
    write_rules(tmp_path)
    eventually(
        lambda: controller.last_cycle is not None and controller.last_cycle.node_groups,
        "a controller cycle",
        timeout=60,
    )
    with ExitStack() as stack:
        webhook = stack.enter_context(
            running(tls_files, ["--state", str(EXAMPLES / "cluster.yaml")], workers=1)
        )
        pod = next(o for o in load_state(EXAMPLES / "workloads.yaml") if o["kind"] == "Pod")
        for path in ("/mutate", "/validate"):
            assert post(webhook.connect(), admission_review(pod), path)[0] == 200
        port = _free_port()
        webhook_target = f"127.0.0.1:{webhook.status_port}"
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(tmp_path / "rules.yaml")],
            "scrape_configs": [
                {
                    "job_name": "controller",
                    "static_configs": [{"targets": [f"127.0.0.1:{controller.http.port}"]}],
                },
                {  # the plain-HTTP status port, as the webhook's metrics Service exposes it
                    "job_name": WEBHOOK_JOB,
                    "static_configs": [{"targets": [webhook_target]}],
                },
            ],
        }
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
        log = (tmp_path / "prometheus.log").open("wb")
        server = subprocess.Popen(
            [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}/api/v1"

        def query(expr: str) -> list[dict[str, Any]]:
            answer = _get_json(f"{base}/query?query={urllib.request.quote(expr)}")
            assert answer["status"] == "success", (expr, answer)
            return list(answer["data"]["result"])

        try:

            def scraped() -> set[str] | None:
                try:
                    targets = _get_json(f"{base}/targets")["data"]["activeTargets"]
                except OSError:
                    return None
                if len(targets) != 2 or any(t["health"] != "up" for t in targets):
                    return None
                return set(_get_json(f"{base}/label/__name__/values")["data"])

            names = eventually(scraped, "both targets scraped", timeout=60)
            wanted = metric_names(rule_expressions()) | metric_names(dashboard_expressions())
            assert wanted - names == set()
            for expr in rule_expressions():
                query(expr)
            assert [query(_rule_expr(alert)) for alert in WEBHOOK_ALERTS] == [[], []]
            stack.close()  # the webhook stops; Prometheus keeps scraping its port
            down = eventually(
                lambda: query(_rule_expr("FitguardWebhookDown")), "the webhook's failed scrape", timeout=30
            )
            assert [(s["metric"]["job"], s["metric"]["instance"], s["value"][1]) for s in down] == [
                (WEBHOOK_JOB, webhook_target, "0")
            ]
            assert query(_rule_expr("FitguardWebhookNotScraped")) == []
        finally:
            server.terminate()
            server.wait(timeout=30)
