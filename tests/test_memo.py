"""The webhook judges a pod shape once per generation of the templates: identical pods share the
verdict, a pod placed differently does not, and a changed template is seen at once."""

from __future__ import annotations

import copy
from pathlib import Path

from capacity.fit import PodNeeds
from kube.statefile import load_state
from webhook.cluster import from_objects
from webhook.review import WebhookOptions
from webhook.validate import review

OBJECTS = load_state(Path(__file__).resolve().parents[1] / "examples" / "cluster.yaml")


def request(name: str, requests: dict[str, str], **spec: object) -> dict[str, object]:
    pod = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec},
    }
    return {
        "uid": name,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": "default",
        "object": pod,
    }


def test_pods_judged_alike_share_a_key_and_others_do_not() -> None:
    a = PodNeeds.from_spec({"containers": [{"name": "x", "resources": {"requests": {"cpu": "1"}}}]})
    b = PodNeeds.from_spec(
        {"containers": [{"name": "y", "image": "other", "resources": {"limits": {"cpu": "1"}}}]}
    )
    pinned = PodNeeds.from_spec(
        {
            "nodeSelector": {"workload": "general"},
            "containers": [{"name": "x", "resources": {"requests": {"cpu": "1"}}}],
        }
    )
    tolerant = PodNeeds.from_spec(
        {
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "x", "resources": {"requests": {"cpu": "1"}}}],
        }
    )
    assert a.key == b.key
    assert len({a.key, pinned.key, tolerant.key}) == 3


def test_a_remembered_denial_is_forgotten_when_a_template_changes() -> None:
    view = from_objects(copy.deepcopy(OBJECTS))
    config = WebhookOptions(mode="enforce")
    assert not review(request("one", {"ephemeral-storage": "30Gi"}), view, config).allowed
    assert not review(request("two", {"ephemeral-storage": "30Gi"}), view, config).allowed
    tagged = next(o for o in copy.deepcopy(OBJECTS) if o["metadata"]["name"] == "ng-batch")
    tagged["spec"]["autoscaler"]["allocatable"]["ephemeral-storage"] = "44Gi"
    view.templates.apply("MODIFIED", tagged)
    assert review(request("three", {"ephemeral-storage": "30Gi"}), view, config).allowed
