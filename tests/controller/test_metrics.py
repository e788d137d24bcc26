"""The controller's error counters: discovery and tag-sync errors by node group from a cycle's
report, AWS errors by operation and code where they are described, and failed cycles."""

from __future__ import annotations

from botocore.exceptions import ClientError
from prometheus_client import REGISTRY

from controller.aws.clients import describe_error
from controller.cache import ClusterCache
from controller.discovery import GroupOutcome
from controller.metrics import ControllerMetrics
from controller.report import CycleReport, TagSyncLine, TagWrite
from controller.tagsync import TagChange


def change(group: str) -> TagChange:
    return TagChange(group, "asg", f"asg-{group}", "k", "v", None)


def values(metrics: ControllerMetrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    found = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name:
                found[tuple(sorted(sample.labels.items()))] = sample.value
    return found


class AlwaysLeader:
    def is_leader(self) -> bool:
        return True


def test_cycle_reports_count_discovery_and_tag_sync_errors_by_group() -> None:
    """A report's per-group reasons (and "" for the whole discovery) and its failed tag writes are
    counted by node group; tags written without error are not; a failed cycle counts as failed."""
    metrics = ControllerMetrics(AlwaysLeader(), ClusterCache(), last_cycle=lambda: None)
    report = CycleReport(
        (GroupOutcome("ng-a", None, "DescribeLaunchTemplateVersions: AccessDenied"),),
        tag_sync=(
            TagSyncLine(change("ng-a"), TagWrite.FAILED, "TagResource: denied"),
            TagSyncLine(change("ng-b"), TagWrite.APPLIED),
        ),
        discovery_error="whole discovery failed",
    )
    metrics.cycle_done(report, now=1_800_000_000.0)
    metrics.cycle_done(CycleReport((GroupOutcome("ng-a", None, "again"),)), now=1_800_000_060.0)
    metrics.cycle_failed()
    assert values(metrics, "fitguard_discovery_errors_total") == {
        (("node_group", "ng-a"),): 2.0,
        (("node_group", ""),): 1.0,
    }
    assert values(metrics, "fitguard_tag_sync_errors_total") == {(("node_group", "ng-a"),): 1.0}
    assert values(metrics, "fitguard_controller_cycles_total") == {
        (("result", "ok"),): 2.0,
        (("result", "failed"),): 1.0,
    }
    assert values(metrics, "fitguard_controller_last_cycle_timestamp_seconds") == {(): 1_800_000_060.0}


def test_aws_errors_are_counted_by_operation_and_code_where_described() -> None:
    """describe_error counts each AWS error it describes under its operation and error code."""
    labels = {"operation": "SetDesiredCapacity", "code": "ValidationError"}
    before = REGISTRY.get_sample_value("fitguard_aws_errors_total", labels) or 0.0
    err = ClientError(
        {"Error": {"Code": "ValidationError", "Message": "no such group"}}, "SetDesiredCapacity"
    )
    assert describe_error("SetDesiredCapacity", err) == "SetDesiredCapacity: ValidationError: no such group"
    assert REGISTRY.get_sample_value("fitguard_aws_errors_total", labels) == before + 1
