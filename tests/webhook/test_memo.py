"""The webhook judges a pod shape once per generation of the templates: identical pods share the
verdict, a pod placed differently does not, and a changed template is seen at once."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path

from capacity.fit import PodNeeds
from capacity.template import NodeGroupTemplate
from kube.statefile import load_state
from tests.objects import node_groups_only
from webhook.cluster import from_objects
from webhook.memo import RefusalMemo
from webhook.review import WebhookOptions
from webhook.validate import review

OBJECTS = node_groups_only(load_state(Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"))


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


# -- RefusalMemo on its own: what is computed, what is remembered, what is forgotten ----------------


class Templates:
    """The templates as the memo receives them, counting how often they are read (each read is one
    computation of a verdict)."""

    def __init__(self, items: list[NodeGroupTemplate], during: Callable[[], object] | None = None) -> None:
        self.items = items
        self.reads = 0
        self.during = during

    def __iter__(self) -> Iterator[NodeGroupTemplate]:
        self.reads += 1
        if self.during is not None:
            self.during()
        return iter(self.items)


def needs(cpu: str) -> PodNeeds:
    return PodNeeds.from_spec({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]})


TEMPLATES = [NodeGroupTemplate.from_object(o) for o in OBJECTS if o["kind"] == "NodeGroupTemplate"]


def test_a_shape_is_computed_once_per_generation_and_both_questions_apart() -> None:
    """The same shape in the same generation is answered from the memo (the very same list); the
    memory question is remembered apart from the refusals; a new generation computes again."""
    memo = RefusalMemo()
    templates = Templates(TEMPLATES)
    first = memo.refusals(needs("300"), templates, 1)
    assert first is not None and [v.group for v in first] == ["ng-batch", "ng-burst", "ng-general"]
    assert memo.refusals(needs("300"), templates, 1) is first
    assert templates.reads == 1
    assert memo.memory_reliance(needs("300"), templates, 1) is None
    assert memo.memory_reliance(needs("300"), templates, 1) is None
    assert templates.reads == 2
    assert memo.refusals(needs("100m"), templates, 1) is None
    assert memo.refusals(needs("100m"), templates, 1) is None
    assert templates.reads == 3
    again = memo.refusals(needs("300"), templates, 2)
    assert again is not first and again == first and templates.reads == 4


def test_the_least_recently_used_shape_is_forgotten_past_the_size() -> None:
    """Size 2: a, b, a again (now the most recent), c: b is forgotten, a and c are remembered."""
    memo = RefusalMemo(size=2)
    templates = Templates(TEMPLATES)
    a, b, c = needs("100m"), needs("200m"), needs("300m")
    for shape in (a, b, a, c):
        memo.refusals(shape, templates, 1)
    assert templates.reads == 3
    memo.refusals(a, templates, 1)
    memo.refusals(c, templates, 1)
    assert templates.reads == 3
    memo.refusals(b, templates, 1)
    assert templates.reads == 4


def test_a_verdict_computed_while_the_generation_changed_is_not_kept() -> None:
    """A verdict computed for generation 1 while another request moved the memo to generation 2
    is answered but not remembered: asking again in generation 2 computes it afresh."""
    memo = RefusalMemo()
    other = Templates(TEMPLATES)
    templates = Templates(TEMPLATES, during=lambda: memo.refusals(needs("1"), other, 2))
    memo.refusals(needs("300"), templates, 1)
    assert (templates.reads, other.reads) == (1, 1)
    plain = Templates(TEMPLATES)
    memo.refusals(needs("300"), plain, 2)
    memo.refusals(needs("1"), plain, 2)
    assert plain.reads == 1


def test_the_default_memo_holds_4096_shapes_and_forgets_the_oldest_past_them() -> None:
    """With the default size: 4,096 shapes asked once each are all remembered (asking the first
    again computes nothing); a 4,097th shape then pushes out the least recently used one (the
    second), which is computed again when asked, while the first stays remembered."""
    memo = RefusalMemo()
    templates = Templates([])
    shapes = [needs(f"{i + 1}m") for i in range(4097)]
    for shape in shapes[:4096]:
        memo.refusals(shape, templates, 1)
    assert templates.reads == 4096
    memo.refusals(shapes[0], templates, 1)
    assert templates.reads == 4096
    memo.refusals(shapes[4096], templates, 1)
    assert templates.reads == 4097
    memo.refusals(shapes[0], templates, 1)
    assert templates.reads == 4097
    memo.refusals(shapes[1], templates, 1)
    assert templates.reads == 4098


def test_the_memory_question_keeps_the_generation_it_was_asked_in() -> None:
    """Asking the memory question in the same generation does not empty the memo: the refusals
    remembered before it are still answered without computing."""
    memo = RefusalMemo()
    templates = Templates(TEMPLATES)
    memo.refusals(needs("300"), templates, 7)
    memo.memory_reliance(needs("300"), templates, 7)
    assert templates.reads == 2
    memo.refusals(needs("300"), templates, 7)
    memo.memory_reliance(needs("300"), templates, 7)
    assert templates.reads == 2
