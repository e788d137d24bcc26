"""What a user sees, written once: the texts the tests assert whole (tests/e2e/test_kubectl.py
against the real kubectl, tests/fitguard/test_report.py against `fitguard report`), and the console blocks
of the README's "What a user sees" section rendered from them.

Each generated block in README.md follows a marker line `<!-- user-sees: NAME -->`; `BLOCKS[NAME]`
renders it, with the few values a run varies (the manifest's path, the webhook's address, the
template's age) set to what a reader would see. tests/install/test_readme_user_sees.py fails when the
README differs; `python -m tests.user_sees` rewrites the blocks.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKER = re.compile(r"^<!-- user-sees: ([a-z0-9-]+) -->\n```console\n.*?^```\n", re.M | re.S)

STORAGE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
JUDGED = (
    "judged every place it could run: 3 node groups (ng-batch, ng-burst, ng-general), 4 live nodes, 1 "
    "Karpenter NodePool\n"
)
CACHE_NOTE = (
    "note: cluster-autoscaler may still scale it while it remembers an earlier node of the group, until it "
    "restarts\n"
)
DENIED = 'admission webhook "validate.fitguard.io" denied the request: '


def _storage_lines(request: str) -> str:
    """The two groups with live nodes, refusing an ephemeral-storage request: each names what its
    node offers and the root volume field that sizes it."""
    return (
        f"ng-burst: Insufficient ephemeral-storage: requests {request}; a t3.large node offers 17.8Gi: "
        "request less, or raise the root volume in the ASG's launch template "
        "(BlockDeviceMappings[].Ebs.VolumeSize)\n"
        f"ng-general: Insufficient ephemeral-storage: requests {request}; an m5.xlarge node offers 17.8Gi: "
        "request less, or raise the managed node group's diskSize (BlockDeviceMappings[].Ebs.VolumeSize if "
        "it has a launch template)\n"
    )


def _nodepool_storage(request: str) -> str:
    """The demo's Karpenter NodePool refusing an ephemeral-storage request: AL2023's 20Gi root
    volume gives 17Gi, and the EC2NodeClass field that sizes it."""
    return (
        "NodePool default: no allowed instance type offers enough ephemeral-storage (ephemeral-storage: "
        f"needs {request} with the DaemonSets, the allowed types offer at most 17Gi): change EC2NodeClass "
        "spec.blockDeviceMappings[rootVolume].ebs.volumeSize"
    )


# The templates of examples/cluster.yaml (three node groups and a NodePool), as the validating
# webhook explains a 30Gi pod.
SCRATCH_BUILD_REASONS = (
    "ng-batch: Insufficient ephemeral-storage: requests 30Gi; an m5.large node would offer 44Gi, but "
    f"cluster-autoscaler sees none while the group has 0 nodes: tag the ASG {STORAGE_TAG}, or let fitguard "
    "sync the tags\n" + _storage_lines("30Gi") + _nodepool_storage("30Gi") + "\n" + JUDGED + CACHE_NOTE
)
SCRATCH_BUILD_DENIAL = f"{DENIED}pod does not fit any node group\n{SCRATCH_BUILD_REASONS}"

# The same for the Deployment of examples/workloads.yaml (40Gi), naming the field to edit.
VIDEO_TRANSCODE_DENIAL = (
    f"{DENIED}Deployment video-transcode does not fit any node group\n"
    + SCRATCH_BUILD_REASONS.replace("30Gi", "40Gi").replace(
        "judged every",
        "fields to edit: spec.template.spec.containers[0].resources.limits.ephemeral-storage\njudged every",
    )
)

# 500Gi: more than a real node of any group offers. ng-batch's launch template gives a node 44Gi
# and its tags none: both are said, never "offers 0", and the fix is the root volume (then the tag).
BIG_BUILD_DENIAL = (
    f"{DENIED}pod does not fit any node group\n"
    "ng-batch: Insufficient ephemeral-storage: requests 500Gi; an m5.large node would offer 44Gi, and "
    "cluster-autoscaler sees none while the group has 0 nodes: request less, or raise the root volume in "
    f"the ASG's launch template (BlockDeviceMappings[].Ebs.VolumeSize), then tag the ASG {STORAGE_TAG} (or "
    "let fitguard sync the tags)\n" + _storage_lines("500Gi") + _nodepool_storage("500Gi") + "\n" + JUDGED
)

# A Deployment whose pods match SecurityGroupPolicy payments-db-access, pinned to t3.large (no
# branch ENIs): the policy is named, not the pod-eni field /mutate injects; ng-batch, which its own
# node selector excludes, gets no tag advice.
PAYMENTS_WORKER_DENIAL = (
    f"{DENIED}Deployment payments-worker does not fit any node group\n"
    "ng-burst: Insufficient vpc.amazonaws.com/pod-eni: requests 1; t3.large supports no branch ENIs (not "
    "trunking-compatible): run pods with security groups on a Nitro type such as m5\n"
    "ng-general: node(s) didn't match Pod's node affinity/selector: its nodes have "
    "node.kubernetes.io/instance-type=m5.xlarge\n"
    "ng-batch: node(s) didn't match Pod's node affinity/selector: its nodes have "
    "node.kubernetes.io/instance-type=m5.large; Insufficient vpc.amazonaws.com/pod-eni: requests 1; an "
    "m5.large node would offer 9, but cluster-autoscaler sees none while the group has 0 nodes\n"
    "NodePool default: node selector or affinity incompatible with the NodePool "
    "(node.kubernetes.io/instance-type: no value meets both): change pod spec.nodeSelector / spec.affinity\n"
    "fields to edit: spec.template.spec.nodeSelector, SecurityGroupPolicy payments/payments-db-access (it "
    "injects vpc.amazonaws.com/pod-eni)\n" + JUDGED
)

WARN_FIELD = "spec.containers[0].resources.requests.ephemeral-storage: fits no node group: "
WARN_WARNINGS = (
    WARN_FIELD + "ng-batch (tags)",
    WARN_FIELD + "ng-burst (ephemeral-storage)",
    WARN_FIELD + "ng-general (ephemeral-storage)",
    _nodepool_storage("30Gi"),
)

FAIL_CLOSED_ERROR = (
    'Error from server (InternalError): error when creating "{path}": Internal error occurred: failed '
    'calling webhook "mutate.fitguard.io": failed to call webhook: Post '
    '"https://fitguard-webhook.fitguard-system.svc:443/mutate?timeout=3s": dial tcp {address}: connect: '
    "connection refused\n"
)

NGT_HEADER = (
    "NAME",
    "GROUP",
    "SOURCE",
    "INSTANCE TYPES",
    "EPHEMERAL STORAGE",
    "POD ENI",
    "NODES",
    "CA REMEMBERS",
    "CA FROM ZERO",
    "AGE",
)
# Every group's autoscaler view lacks ephemeral-storage (no tag): none scales from zero. AWS is
# unreachable in the test, so GROUP and CA REMEMBERS are empty; ng-burst has no pod-eni. The
# Karpenter NodePool `default` shows the most any of its types offers (AL2023's 17Gi, m5.xlarge's 18
# branch ENIs) and no CA FROM ZERO: cluster-autoscaler never scales it.
NGT_ROWS = (
    ("default", "", "", '["c5.large","m5.large","m5.xlarge"]', "17Gi", "18", "0", "", ""),
    ("ng-batch", "", "launch-template", '["m5.large"]', "44Gi", "9", "0", "", "false"),
    ("ng-burst", "", "live-node", '["t3.large"]', "17.8Gi", "", "2", "", "false"),
    ("ng-general", "", "live-node", '["m5.xlarge"]', "17.8Gi", "18", "2", "", "false"),
)

REPORT_CLASSIC = (
    "NODE                       GROUP     INSTANCE TYPE  CAPACITY  IN USE  HELD  SCHEDULER FREE  TRUE FREE  "
    "WAITING\n"
    "ip-10-0-1-23.ec2.internal  ng-batch  m5.large       9         6       3     3               0          "
    "0\n"
    "ip-10-0-2-45.ec2.internal  ng-batch  m5.large       9         7       3     2               0          "
    "1\n"
    "\n"
    "ip-10-0-1-23.ec2.internal: 3 of 9 branch ENIs are held by finished pods job-a-m3z8, job-a-p9q1, "
    "job-a-x7k2; the scheduler sees 3 free, but those 3 are held: none is free\n"
    "ip-10-0-2-45.ec2.internal: 3 of 9 branch ENIs are held by finished pods job-b-k2w4, job-b-r5t8, "
    "job-b-z7n1; the scheduler sees 2 free, but those 2 are held: none is free, and the pods placed here "
    "wait for 1 more\n"
    "batch/job-b-d4s6: bound to ip-10-0-2-45.ec2.internal 35 s ago, still without a branch ENI: 3 of 9 are "
    "held by finished or deleted pods (job-b-k2w4, job-b-r5t8, job-b-z7n1); the next is released within "
    "about 50 s\n"
)


def forbidden(path: str, denial: str) -> str:
    """What kubectl prints for a create the webhook denies."""
    return f'Error from server (Forbidden): error when creating "{path}": {denial}'


def kubectl_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's table layout (its tabwriter: each column as wide as its widest cell, 3 spaces
    apart, no padding after the last)."""
    lines = [tuple(header), *(tuple(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() + "\n"
        for line in lines
    )


def _apply(path: str, note: str = "") -> str:
    return f"$ kubectl apply -f {path}{note}\n"


BLOCKS: dict[str, Callable[[], str]] = {
    "scratch-build": lambda: (
        _apply("scratch-build.yaml") + forbidden("scratch-build.yaml", SCRATCH_BUILD_DENIAL)
    ),
    "video-transcode": lambda: (
        _apply("video-transcode.yaml") + forbidden("video-transcode.yaml", VIDEO_TRANSCODE_DENIAL)
    ),
    "big-build": lambda: _apply("big-build.yaml") + forbidden("big-build.yaml", BIG_BUILD_DENIAL),
    "payments-worker": lambda: (
        _apply("payments-worker.yaml") + forbidden("payments-worker.yaml", PAYMENTS_WORKER_DENIAL)
    ),
    "warn": lambda: (
        _apply("scratch-build.yaml", "     # metadata.namespace: team-warn")
        + "".join(f"Warning: {w}\n" for w in WARN_WARNINGS)
        + "pod/scratch-build created\n"
    ),
    "fail-closed": lambda: (
        _apply("web-0.yaml") + FAIL_CLOSED_ERROR.format(path="web-0.yaml", address="10.0.1.15:8443")
    ),
    "get-ngt": lambda: "$ kubectl get ngt\n" + kubectl_table(NGT_HEADER, [(*row, "5m") for row in NGT_ROWS]),
    "report": lambda: "$ fitguard report --snapshot examples/snapshot-classic.json\n" + REPORT_CLASSIC,
}


def render(readme: str) -> str:
    """The README with every marked block rendered from the texts above. Raises KeyError for a
    marker naming no block."""

    def block(match: re.Match[str]) -> str:
        name = match.group(1)
        return f"<!-- user-sees: {name} -->\n```console\n{BLOCKS[name]()}```\n"

    return MARKER.sub(block, readme)


def marked(readme: str) -> list[str]:
    """The names of the marked blocks, in order."""
    return [m.group(1) for m in MARKER.finditer(readme)]


def main() -> int:
    text = README.read_text(encoding="utf-8")
    rendered = render(text)
    if rendered != text:
        README.write_text(rendered, encoding="utf-8")
        print(f"rewrote {README.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
