"""Decoding an AdmissionReview body into what an answer reads, and no more.

A review of a pod is 4 to 20 KB of JSON, most of it the containers' env, probes and volume mounts,
the request's userInfo and options, and managedFields; the answer reads the request's frame, the
object's metadata, its pod spec and, of each container, its resources. `json.loads` builds every
one of those objects and drops them. Here msgspec decodes against a schema of nested TypedDicts in
one pass: the request's frame, `oldObject` kept as raw JSON, and `object` against the union of the
schemas of the kinds the webhooks judge (a Pod's every pod spec field, a workload's pod template,
a CronJob's job template: no field of one is a field of another with another type); of each
container only what is read, everything else skipped while parsing. What is kept is plain dicts
with the keys and values `json.loads` gives, so the handlers run unchanged on it.

Correctness rests on one rule (as for kube/podwire.py): the schema decode is trusted only where it
gives what `load_json` would. Whenever msgspec refuses (a field of another type than the schema
says, NaN, a lone surrogate, a byte-order mark, nesting too deep), that part is decoded by
`load_json`, which then accepts, refuses or decodes it exactly as before. msgspec does not check
the UTF-8 of a string it skips, so a body that is not ASCII is checked first and one that is not
UTF-8 goes to `load_json` whole. A review that is not the CREATE of a kind in `SLIM_KINDS` is
decoded whole as well (a second pass): an update is judged by comparing the old and new pod
templates whole (webhook/validate.py `_template_changed`). tests/webhook/test_review_wire.py
compares both paths.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

import msgspec
import orjson

# Every digit as "0": a run of 19 zeros in the translated body marks a number of 19 digits or more.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def load_json(body: bytes) -> Any:
    """`json.loads(body)`, decoded by orjson (in half the time) whenever that gives the same value.
    orjson reads an integer beyond 64 bits as a float, where json.loads keeps it whole: such an
    integer has 19 digits or more, so a body with a run of 19 digits anywhere (rare: a 64-bit
    integer or a long digit string) goes to json.loads, as does one orjson refuses (NaN, lone
    surrogates, UTF-16 or UTF-32, nesting past 1,024 levels): json.loads then accepts, refuses
    and decodes it exactly as before."""
    if body.translate(_DIGITS_AS_ZERO).find(_LONG_NUMBER) >= 0:
        return json.loads(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:  # json.loads decides: it takes some of what orjson refuses
        return json.loads(body)


# -- the schema (total=False: an absent key stays absent, so `.get()` answers as on the whole
# object). What reads each field: webhook/review.py (exemption), webhook/answer.py, webhook/app.py
# (metrics labels, findings), webhook/audit.py (the event's object reference), webhook/mutate.py,
# webhook/validate.py and the capacity/ functions they call on the pod spec. ---------------------


class _Container(TypedDict, total=False):
    name: Any
    resources: Any  # capacity/requests.py, /mutate's injection, pod_has_eni_request
    restartPolicy: Any  # a sidecar init container counts differently (capacity/requests.py)


class _PodSpec(TypedDict, total=False):
    """Every field of core/v1 PodSpec (k8s.io/api/core/v1/types.go), the containers' with only
    what is read of them, the rest whole: a pod spec field the fit reads tomorrow is here today."""

    containers: list[_Container] | None
    initContainers: list[_Container] | None
    activeDeadlineSeconds: Any
    affinity: Any
    automountServiceAccountToken: Any
    dnsConfig: Any
    dnsPolicy: Any
    enableServiceLinks: Any
    ephemeralContainers: Any
    hostAliases: Any
    hostIPC: Any
    hostNetwork: Any
    hostPID: Any
    hostUsers: Any
    hostname: Any
    imagePullSecrets: Any
    nodeName: Any
    nodeSelector: Any
    os: Any
    overhead: Any
    preemptionPolicy: Any
    priority: Any
    priorityClassName: Any
    readinessGates: Any
    resourceClaims: Any
    resources: Any
    restartPolicy: Any
    runtimeClassName: Any
    schedulerName: Any
    schedulingGates: Any
    securityContext: Any
    serviceAccount: Any
    serviceAccountName: Any
    setHostnameAsFQDN: Any
    shareProcessNamespace: Any
    subdomain: Any
    terminationGracePeriodSeconds: Any
    tolerations: Any
    topologySpreadConstraints: Any
    volumes: Any


class _Meta(TypedDict, total=False):
    name: Any
    generateName: Any
    namespace: Any
    uid: Any
    labels: Any
    annotations: Any


class _Template(TypedDict, total=False):
    metadata: _Meta | None
    spec: _PodSpec | None


class _WithTemplate(TypedDict, total=False):
    template: _Template | None


class _JobTemplate(TypedDict, total=False):
    spec: _WithTemplate | None


class _Spec(_PodSpec, total=False):
    """A Pod's spec, a workload's (Deployment, StatefulSet, DaemonSet, ReplicaSet,
    ReplicationController, Job: its `template`) or a CronJob's (`jobTemplate.spec.template`)."""

    template: _Template | None
    jobTemplate: _JobTemplate | None


class _Object(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    metadata: _Meta | None
    spec: _Spec | None


class _Request(TypedDict, total=False):
    uid: Any
    kind: Any
    operation: Any
    namespace: Any
    subResource: Any
    dryRun: Any
    object: _Object | None
    oldObject: msgspec.Raw


class _Review(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    request: _Request | None


_REVIEW = msgspec.json.Decoder(_Review)
# The kinds whose object is kept slim: those webhook/validate.py TEMPLATE_PATHS judges
# (tests/webhook/test_review_wire.py keeps the two equal).
SLIM_KINDS = frozenset(
    {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job", "CronJob"}
)
_REFUSED = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def decode_review(body: bytes) -> Any:
    """The review as `load_json(body)` gives it, where the answer reads it: the same value, or the
    same error. Raises ValueError (or RecursionError) on a body that is not JSON, as `load_json`."""
    if not body.isascii():
        try:
            body.decode()
        except UnicodeDecodeError:
            return load_json(body)
    try:
        review: Any = _REVIEW.decode(body)
    except _REFUSED:
        return load_json(body)
    request: dict[str, Any] | None = review.get("request")
    if request is None:
        return review
    kind = request.get("kind")
    name = kind.get("kind") if isinstance(kind, dict) else None
    if request.get("operation") != "CREATE" or not isinstance(name, str) or name not in SLIM_KINDS:
        return load_json(body)  # the objects whole: the slim one is not what this answer reads
    old = request.get("oldObject")
    if old is not None:
        request["oldObject"] = load_json(bytes(old))
    return review
