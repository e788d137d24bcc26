"""fitguard_admission_reviews_total: every answered review counted once by webhook, resource kind,
operation and verdict (allow, deny, warn, audit, error); and fitguard_build_info names the webhook."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from fitguard import __version__
from kube.statefile import load_state
from tests import objects
from webhook.app import create_app
from webhook.cluster import from_objects
from webhook.review import WebhookOptions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = load_state(EXAMPLES / "cluster.yaml")
SCRATCH = next(o for o in load_state(EXAMPLES / "workloads.yaml") if o["metadata"]["name"] == "scratch-build")
VERDICTS = ("allow", "deny", "warn", "audit", "error")


def review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return objects.review(obj, operation=operation, with_resource=True)


def counts() -> dict[tuple[str, str], float]:
    """The validate webhook's Pod CREATE reviews by verdict, every verdict listed."""
    return {
        (verdict, op): REGISTRY.get_sample_value(
            "fitguard_admission_reviews_total",
            {"webhook": "validate", "kind": "Pod", "operation": op, "verdict": verdict},
        )
        or 0.0
        for verdict in VERDICTS
        for op in ("CREATE", "UPDATE")
    }


def answer(mode: str, obj: dict[str, Any], operation: str = "CREATE", broken: bool = False) -> bool:
    view = from_objects(copy.deepcopy(CLUSTER))
    if broken:
        view.templates = None  # type: ignore[assignment]  # the review itself fails: an internal error
    client = create_app(view, WebhookOptions(mode=mode)).test_client()
    body = client.post("/validate", json=review(copy.deepcopy(obj), operation)).get_json()
    return bool(body["response"]["allowed"])


def small_pod() -> dict[str, Any]:
    pod = copy.deepcopy(SCRATCH)
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return pod


def test_each_verdict_is_counted_once_under_its_own_label() -> None:
    """One review per verdict: a fitting pod (allow), the classic trap under enforce (deny), warn
    and audit, and a review that fails inside (error, answered by the failure policy); UPDATE of a
    fitting pod counts as allow under its own operation. Every other count stays as it was."""
    before = counts()
    assert answer("enforce", small_pod()) is True
    assert answer("enforce", SCRATCH) is False
    assert answer("warn", SCRATCH) is True
    assert answer("audit", SCRATCH) is True
    answer("enforce", SCRATCH, broken=True)
    assert answer("enforce", small_pod(), operation="UPDATE") is True
    after = counts()
    delta = {key: after[key] - before[key] for key in after}
    expected = dict.fromkeys(delta, 0.0)
    expected.update({(v, "CREATE"): 1.0 for v in VERDICTS})
    expected[("allow", "UPDATE")] = 1.0
    assert delta == expected


def test_build_info_names_the_webhook_and_its_version() -> None:
    """fitguard_build_info{component="webhook", version} is 1 once an app exists."""
    create_app(from_objects([]), WebhookOptions())
    assert (
        REGISTRY.get_sample_value("fitguard_build_info", {"component": "webhook", "version": __version__})
        == 1
    )
