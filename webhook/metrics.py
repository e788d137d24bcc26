"""Admission metrics, summed over every gunicorn worker.

prometheus-client's multiprocess mode keeps each worker's values in files under
$PROMETHEUS_MULTIPROC_DIR, which must be set before prometheus_client is first imported (the server
does that, and wipes the directory at start); `/metrics` then merges the files. Without the
variable (tests, one process) the ordinary in-process registry is used.

What is counted per review goes to `TALLY` (webhook/tally.py: this thread's plain counters, no
lock) and reaches the series when the tally is flushed: before each scrape this process serves and
before the in-process registry is read (so they see every review answered before them), and every
`tally.FLUSH_SECONDS` in each worker (what a scrape reads of the other workers is that fresh).
"""

from __future__ import annotations

import math
import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from capacity.placement import Abstention
from webhook.tally import FlushFirst, Tally

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Every label value comes from one of these closed sets, never from the request as sent: a value
# outside its set is counted as OTHER. A label fed from the body (a kind, an operation) would
# otherwise add a series for each distinct value a client invents, and each series costs memory in
# every worker, bytes in the metrics directory (an emptyDir with a size limit) and in every scrape.
OTHER = "other"
WEBHOOKS = frozenset({"mutate", "validate"})
# The kinds the webhooks review: Pod and those of webhook/validate.py's TEMPLATE_PATHS (not imported:
# validate imports this module; tests/webhook/test_metrics_labels.py keeps the two equal).
KINDS = frozenset(
    {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob"}
)
# admission.k8s.io/v1 AdmissionRequest.operation (k8s.io/api/admission/v1/types.go, Operation)
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
# the HTTP errors webhook/app.py counts: not a review (400), too large (413), not JSON (415)
INVALID_CODES = frozenset({"400", "413", "415"})
VERDICTS = frozenset({"allow", "deny", "warn", "audit", "error"})
BOOLEANS = frozenset({"true", "false"})
# no templates yet, a malformed spec, and every reason fitguard abstains (capacity/placement.py)
UNCHECKED_WHY = frozenset({"no templates", "malformed", *(a.value for a in Abstention)})
COMPONENTS = frozenset({"webhook"})


def bounded(value: object, allowed: frozenset[str]) -> str:
    """`value` when it is one of `allowed`, else OTHER: the one way a label value is chosen."""
    return value if isinstance(value, str) and value in allowed else OTHER


TALLY = Tally()
# registered before the metrics: the registry collects in registration order
REGISTRY.register(FlushFirst(TALLY))


def count(metric: Counter, *labels: str) -> None:
    """One more in `metric`'s series of these label values, counted in this thread's tally."""
    TALLY.mine().count((metric, *labels))


REQUESTS = Counter(
    "fitguard_admission_requests_total",
    "Admission reviews answered, by webhook, operation, verdict and dry run.",
    ["webhook", "operation", "allowed", "dry_run"],
)
# the apiserver's default webhook timeout is 10 s; our own work should stay under a millisecond
DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0)
DURATION_BOUNDS = (*DURATION_BUCKETS, math.inf)  # as the histogram has them (+Inf appended)
DURATION = Histogram(
    "fitguard_admission_duration_seconds",
    "Time to answer one admission review, from body read to response built.",
    ["webhook"],
    buckets=DURATION_BUCKETS,
)
IN_FLIGHT = Gauge(
    "fitguard_admission_requests_in_flight",
    "Admission reviews being answered now.",
    ["webhook"],
    multiprocess_mode="livesum",  # a dead worker's requests are no longer in flight
)
INVALID = Counter(
    "fitguard_admission_invalid_requests_total",
    "Requests answered with an HTTP error (not JSON, not a review, too large, wrong type).",
    ["webhook", "code"],
)
ERRORS = Counter(
    "fitguard_admission_errors_total",
    "Reviews that hit an internal error and were answered by the failure policy.",
    ["webhook"],
)

AUDITED = Counter(
    "fitguard_admission_audit_findings_total",
    "Objects allowed in warn or audit mode that no node group could serve (each also logged and an "
    "event), by the mode that allowed them.",
    ["verdict"],
)
AUDIT_DROPPED = Counter(
    "fitguard_admission_audit_events_dropped_total",
    "Audit events not written because the queue to the API server was full.",
)
UNCHECKED = Counter(
    "fitguard_admission_unchecked_total",
    "Objects allowed without a verdict, by why: no templates known yet, a malformed spec, or one of the"
    " reasons fitguard cannot know every place the object could run (other-scheduler, static-pod,"
    " unknown-node, unmodeled-nodes, karpenter-nodepools).",
    ["why"],
)

MEMORY_ADMISSIONS = Counter(
    "fitguard_admission_autoscaler_memory_total",
    "Objects allowed only because cluster-autoscaler remembers a node group's last live node (warned).",
)

# The build, the serving certificate, and every review by kind and verdict (the counters above keep
# their labels).
BUILD_INFO = Gauge(
    "fitguard_build_info",
    "Always 1: the component and the version it runs.",
    ["component", "version"],
    multiprocess_mode="max",
)
CERTIFICATE_EXPIRY = Gauge(
    "fitguard_certificate_expiry_timestamp_seconds",
    "When the serving certificate in use expires (Unix time); the soonest among live workers.",
    multiprocess_mode="livemin",
)
REVIEWS = Counter(
    "fitguard_admission_reviews_total",
    "Admission reviews answered, by webhook, resource kind, operation and verdict "
    "(allow, deny, warn, audit, error).",
    ["webhook", "kind", "operation", "verdict"],
)


def label_values() -> dict[str, frozenset[str]]:
    """Each label name of the metrics above and the values it may take (besides OTHER)."""
    from cmdline import __version__

    return {
        "webhook": WEBHOOKS,
        "kind": KINDS,
        "operation": OPERATIONS,
        "code": INVALID_CODES,
        "verdict": VERDICTS,  # AUDITED's finding modes (warn, audit) are verdicts too
        "allowed": BOOLEANS,
        "dry_run": BOOLEANS,
        "why": UNCHECKED_WHY,
        "component": COMPONENTS,
        "version": frozenset({__version__}),
    }


def set_build_info(component: str) -> None:
    from cmdline import __version__

    BUILD_INFO.labels(component, __version__).set(1)


def render() -> tuple[bytes, str]:
    """The exposition text and its content type, with every review this process answered."""
    TALLY.flush()
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def mark_worker_dead(pid: int) -> None:
    """gunicorn's child_exit: drop the dead worker's live gauges (its counters stay summed)."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(pid)
