"""Where fitguard runs unless told otherwise, defined once: the namespace manifests/ installs it in,
the controller's Lease, and the addresses its processes listen on.

Every command's flags, every options object and the webhook's own-namespace exemption take their
default from here (capacity/ is the bottom layer, so webhook/, controller/, certs/ and kube/ can all
import it; it is plain data, cheap enough for `fitguard --help`). manifests/ writes the same
values in YAML, where tests/install/test_manifests.py checks them; tests/capacity/test_names.py
keeps any other module from spelling them again.
"""

from __future__ import annotations

# The namespace manifests/ installs fitguard in (a pod reads its own from POD_NAMESPACE).
NAMESPACE = "fitguard-system"
# The coordination.k8s.io Lease the controller's replicas elect a leader on; manifests/'s RBAC grants
# the controller this Lease only.
LEASE_NAME = "fitguard-controller"
# The webhook's admission port (TLS) and every process's plain-HTTP status and metrics port.
WEBHOOK_BIND = "0.0.0.0:8443"
METRICS_BIND = "0.0.0.0:8080"
