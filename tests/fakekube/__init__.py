"""An in-process fake Kubernetes API server for tests: real REST/JSON over HTTP on 127.0.0.1.

Modules: registry (served resource types), store (objects, one global resourceVersion, bounded
per-type watch history), verbs (what list/create/update/patch/delete mean), patch, selectors, watch
(which events one watch sees), routing (URLs and discovery), handler (HTTP), faults (fault
injection and the request log), server (FakeKubeServer), fixtures (the `fake_kube` fixture);
admission, webhooks, webhook_client and cel (the webhook admission chain), crds (CRD short names and
Table output from manifests/crds/).

Semantics kept from the real apiserver, and where the fake simplifies:
- list: metadata.resourceVersion is the current global RV; limit/continue pages are a consistent
  snapshot (rebuilt from the history), and a token older than the retained history is 410 Expired.
  resourceVersion with resourceVersionMatch=Exact lists that snapshot (410 if too old); any other
  resourceVersion (NotOlderThan, "0") answers the current state.
- watch: absent or "0" RV starts with synthetic ADDED events; an explicit RV replays the retained
  history after it, or sends one ERROR event with a 410 Expired Status if it is older. Changes that
  move an object into or out of a selector are ADDED/DELETED for that watcher. sendInitialEvents is
  not supported.
- writes: the mutating and validating webhooks of the stored configurations run first (admission.py;
  `admission.services` maps a Service to a local address), no other admission plugin; no validation
  of spec fields (pod spec immutability included); DELETE
  ignores grace periods (immediate unless finalizers remain, then deletionTimestamp and 202); core
  v1 and events.k8s.io/v1 Events are separate stores; managedFields are not kept.
"""

from .errors import ApiError
from .faults import Fault, Faults, RequestLog, RequestRecord
from .registry import REGISTRY, ResourceType, by_kind
from .server import FakeKubeServer
from .store import Store

__all__ = [
    "REGISTRY",
    "ApiError",
    "FakeKubeServer",
    "Fault",
    "Faults",
    "RequestLog",
    "RequestRecord",
    "ResourceType",
    "Store",
    "by_kind",
]
