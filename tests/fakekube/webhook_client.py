"""One webhook call: the AdmissionReview v1 the apiserver sends, HTTPS with the caBundle, the checks
on what comes back.

Modelled on k8s.io/apiserver pkg/admission/plugin/webhook/request/admissionreview.go
(CreateV1AdmissionReview, VerifyAdmissionResponse), mutating/dispatcher.go callAttrMutatingHook and
validating/dispatcher.go callHook (timeout, error wording), and pkg/util/webhook (service URLs
https://NAME.NAMESPACE.svc:PORT/PATH, verified against the caBundle for that host name).
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .webhooks import Attributes

DEFAULT_TIMEOUT_SECONDS = 10  # admissionregistration/v1 defaults timeoutSeconds to 10
# (namespace, name, port) of a Service -> the (host, port) that actually serves it.
ServiceResolver = Callable[[str, str, int], tuple[str, int]]


class CallError(Exception):
    """ErrCallingWebhook: the webhook could not be asked or answered nonsense; failurePolicy decides."""


def admission_request(uid: str, attrs: Attributes) -> dict[str, Any]:
    """The AdmissionRequest of CreateV1AdmissionReview (resource and kind as requested: the fake
    serves one version of each resource, so no conversion happens)."""
    rt = attrs.rt
    kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    resource = {"group": rt.group, "version": rt.version, "resource": rt.plural}
    request: dict[str, Any] = {"uid": uid, "kind": kind, "resource": resource}
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = dict(kind)
    request["requestResource"] = dict(resource)
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request.update(
        operation=attrs.operation,
        userInfo=attrs.user_info,
        object=attrs.obj,
        oldObject=attrs.old_obj,
        dryRun=attrs.dry_run,
        options=attrs.options,
    )
    return request


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to `address` while verifying the certificate for `server_name` (the Service's DNS name)."""

    def __init__(
        self, server_name: str, port: int, address: tuple[str, int], timeout: float, context: ssl.SSLContext
    ) -> None:
        super().__init__(server_name, port, timeout=timeout, context=context)
        self._address = address
        self._tls = context

    def connect(self) -> None:
        raw = socket.create_connection(self._address, self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def _ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if ca_bundle:
        try:
            pem = base64.b64decode(ca_bundle, validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError) as error:
            raise CallError(f"could not get REST client: invalid caBundle: {error}") from None
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=pem)
    return context


def _target(client_config: Mapping[str, Any], resolve: ServiceResolver) -> tuple[str, str, tuple[str, int]]:
    """(URL as upstream names it, host name to verify, address to connect to)."""
    service = client_config.get("service")
    if service:
        port = int(service.get("port") or 443)
        host = f"{service['name']}.{service['namespace']}.svc"
        url = f"https://{host}:{port}{service.get('path') or ''}"
        return url, host, resolve(service["namespace"], service["name"], port)
    url = str(client_config.get("url") or "")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise CallError(f"could not get REST client: webhook URL {url!r} is not https")
    return url, parts.hostname, (parts.hostname, parts.port or 443)


def _describe(error: OSError, address: tuple[str, int]) -> str:
    # Go's net/http wording, which is what a user reads in kubectl's error.
    if isinstance(error, ConnectionRefusedError):
        return f"dial tcp {address[0]}:{address[1]}: connect: connection refused"
    if isinstance(error, TimeoutError | socket.timeout):
        return "context deadline exceeded"
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"tls: failed to verify certificate: {error.verify_message}"
    return str(error)


def call(
    hook: Mapping[str, Any], request: dict[str, Any], resolve: ServiceResolver, *, mutating: bool
) -> dict[str, Any]:
    """POST the review and answer its verified response; CallError on any failure to get one."""
    client_config = hook.get("clientConfig") or {}
    timeout = int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
    url, host, address = _target(client_config, resolve)
    full_url = f"{url}?timeout={timeout}s"  # client-go adds the request timeout to the URL
    parts = urlsplit(full_url)
    connection = _PinnedHTTPSConnection(
        host, parts.port or 443, address, timeout, _ssl_context(client_config.get("caBundle"))
    )
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    try:
        connection.request(
            "POST",
            f"{parts.path}?{parts.query}",
            body=body,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        answer = connection.getresponse()
        raw = answer.read()
    except OSError as error:
        raise CallError(f'failed to call webhook: Post "{full_url}": {_describe(error, address)}') from None
    finally:
        connection.close()
    if not 200 <= answer.status < 300:
        raise CallError(f"failed to call webhook: the server responded with the status code {answer.status}")
    try:
        review = json.loads(raw)
    except ValueError as error:
        raise CallError(f"failed to call webhook: {error}") from None
    return _verified(review, request["uid"], mutating=mutating)


def _verified(review: Any, uid: str, *, mutating: bool) -> dict[str, Any]:
    """VerifyAdmissionResponse for admission.k8s.io/v1."""
    invalid = "received invalid webhook response: "
    if not isinstance(review, dict) or not isinstance(review.get("response"), dict):
        raise CallError(invalid + "webhook response was absent")
    response = review["response"]
    if response.get("uid") != uid:
        raise CallError(invalid + f'expected response.uid="{uid}", got "{response.get("uid")}"')
    if (review.get("apiVersion"), review.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
        raise CallError(
            invalid + "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got "
            f"{review.get('apiVersion')}, Kind={review.get('kind')}"
        )
    patch, patch_type = response.get("patch"), response.get("patchType")
    if mutating:
        if patch and patch_type is None:
            raise CallError(invalid + "webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise CallError(invalid + "webhook returned response.patchType but not response.patch")
    elif patch or patch_type is not None:
        raise CallError(invalid + "validating webhook may not return response.patch")
    return response
