"""The admission chain: mutating webhooks, then validating webhooks, around every write.

Modelled on k8s.io/apiserver pkg/admission/plugin/webhook: mutating/dispatcher.go Dispatch
(webhooks in order, JSON patches applied, reinvocation bookkeeping of reinvocationcontext.go),
the admission chain's single reinvocation round (pkg/admission/reinvocation.go), validating/
dispatcher.go Dispatch (every matching webhook called, the first error answered; upstream calls
them in parallel, the fake in order), errors/statuserror.go ToStatusErr (the denial message),
and configuration/*_manager.go (configurations sorted by name). The webhook configuration kinds
themselves are never reviewed (rules.go IsExemptAdmissionConfigurationResource).

`AdmittingStore` is the hook: the handler gives the verbs this store instead of the plain one,
so create, update, patch and delete all pass through the chain before anything is written.
"""

from __future__ import annotations

import base64
import binascii
import copy
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from . import errors
from .registry import ResourceType, by_kind
from .store import Store
from .webhook_client import CallError, admission_request, call
from .webhooks import Attributes, should_call

_MUTATING = by_kind("MutatingWebhookConfiguration")
_VALIDATING = by_kind("ValidatingWebhookConfiguration")
_NAMESPACES = by_kind("Namespace")
_EXEMPT_KINDS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
_UPDATE_ATTEMPTS = 5  # GuaranteedUpdate retries a write that raced another one


@dataclass(frozen=True)
class WebhookCall:
    """One review sent (for tests to see which webhook was asked about what)."""

    webhook: str
    request: dict[str, Any]


@dataclass
class RequestContext:
    """What the HTTP request adds to the admission attributes, and the warnings it collects."""

    subresource: str = ""
    dry_run: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # the query's fieldManager, dryRun, ...
    warnings: list[str] = field(default_factory=list)

    def warn(self, text: str) -> None:
        if text not in self.warnings:  # the apiserver's warning recorder drops duplicates
            self.warnings.append(text)


def _unresolved(namespace: str, name: str, port: int) -> tuple[str, int]:
    raise CallError(f'failed to call webhook: service "{namespace}/{name}" has no endpoints (port {port})')


class AdmissionChain:
    """Calls the stored webhook configurations on each write; `services` maps a Service to a socket."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.services: dict[tuple[str, str, int], tuple[str, int]] = {}
        self._calls: list[WebhookCall] = []
        self._lock = threading.Lock()

    # --- what tests read ----------------------------------------------------------------------

    def calls(self) -> list[WebhookCall]:
        with self._lock:
            return list(self._calls)

    def clear_calls(self) -> None:
        with self._lock:
            self._calls.clear()

    def _resolve(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        address = self.services.get((namespace, name, port))
        return address if address is not None else _unresolved(namespace, name, port)

    # --- the chain ----------------------------------------------------------------------------

    def active(self) -> bool:
        """Whether any webhook configuration exists (without one, writes go straight to the store)."""
        return bool(self.store.list(_MUTATING)[0] or self.store.list(_VALIDATING)[0])

    def _hooks(self, rt: ResourceType) -> list[dict[str, Any]]:
        configurations, _ = self.store.list(rt)
        configurations.sort(key=lambda configuration: configuration["metadata"]["name"])
        return [hook for configuration in configurations for hook in configuration.get("webhooks") or []]

    def _namespace(self, name: str) -> dict[str, Any]:
        return self.store.get(_NAMESPACES, None, name)

    def admit(self, attrs: Attributes, context: RequestContext) -> dict[str, Any] | None:
        """The object to store after every webhook had its say; an ApiError if one refuses it."""
        if attrs.rt.kind in _EXEMPT_KINDS:
            return attrs.obj
        mutating = self._hooks(_MUTATING)
        reinvoke = _Reinvocation()
        changed = self._mutate(mutating, attrs, context, reinvoke, first_round=True)
        if changed and reinvoke.pending:
            self._mutate(mutating, attrs, context, reinvoke, first_round=False)
        self._validate(self._hooks(_VALIDATING), attrs, context)
        return attrs.obj

    def _invoke(
        self, hook: dict[str, Any], attrs: Attributes, context: RequestContext, *, mutating: bool
    ) -> dict[str, Any] | None:
        """The webhook's response, or None when it is not called; errors as the dispatchers raise them."""
        request = admission_request(str(uuid.uuid4()), attrs)
        if not should_call(hook, attrs, self._namespace, request):
            return None
        name = hook["name"]
        try:
            if attrs.dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
                raise errors.bad_request(f'admission webhook "{name}" does not support dry run')
            with self._lock:
                self._calls.append(WebhookCall(name, copy.deepcopy(request)))
            response = call(hook, request, self._resolve, mutating=mutating)
        except CallError as error:
            if (hook.get("failurePolicy") or "Fail") == "Ignore":
                return None  # failing open: as if the webhook had not been configured
            message = f'Internal error occurred: failed calling webhook "{name}": {error}'
            raise errors.ApiError(500, "InternalError", message) from None
        for warning in response.get("warnings") or []:
            context.warn(str(warning))
        if not response.get("allowed"):
            raise denial(name, response.get("status"))
        return response

    def _mutate(
        self,
        hooks: list[dict[str, Any]],
        attrs: Attributes,
        context: RequestContext,
        reinvoke: _Reinvocation,
        *,
        first_round: bool,
    ) -> bool:
        changed_any = False
        for hook in hooks:
            if not first_round and hook["name"] not in reinvoke.pending:
                continue
            response = self._invoke(hook, attrs, context, mutating=True)
            if response is None:
                continue
            changed = self._apply_patch(hook["name"], attrs, response)
            changed_any |= changed
            if changed:
                reinvoke.require_previous()
            if hook.get("reinvocationPolicy") == "IfNeeded":
                reinvoke.invoked.add(hook["name"])
        return changed_any

    @staticmethod
    def _apply_patch(name: str, attrs: Attributes, response: dict[str, Any]) -> bool:
        encoded = response.get("patch")
        if not encoded:
            return False
        if response.get("patchType") != "JSONPatch":
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: failed calling webhook "{name}": '
                f'unsupported patch type "{response.get("patchType")}"',
            )
        try:
            patch = jsonpatch.JsonPatch.from_string(_decode(encoded))
        except (ValueError, jsonpatch.InvalidJsonPatch) as error:
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: failed calling webhook "{name}": '
                f"received undecodable patch in webhook response: {error}",
            ) from None
        if not patch.patch:
            return False
        if attrs.obj is None:
            raise errors.ApiError(
                500,
                "InternalError",
                f'Internal error occurred: admission webhook "{name}" attempted to modify the object, '
                "which is not supported for this operation",
            )
        try:
            patched = patch.apply(attrs.obj)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as error:
            raise errors.ApiError(500, "InternalError", f"Internal error occurred: {error}") from None
        changed = patched != attrs.obj
        attrs.obj = patched
        return changed

    def _validate(self, hooks: list[dict[str, Any]], attrs: Attributes, context: RequestContext) -> None:
        first: errors.ApiError | None = None
        for hook in hooks:
            try:
                self._invoke(hook, attrs, context, mutating=False)
            except errors.ApiError as error:
                first = first or error  # every webhook is still asked, as the parallel calls are
        if first is not None:
            raise first


def _decode(encoded: str) -> str:
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as error:
        raise ValueError(f"the patch is not base64 of UTF-8 text: {error}") from None


@dataclass
class _Reinvocation:
    """reinvocationcontext.go: IfNeeded webhooks called so far, and those a later change reinvokes."""

    invoked: set[str] = field(default_factory=set)
    pending: set[str] = field(default_factory=set)

    def require_previous(self) -> None:
        self.pending |= self.invoked
        self.invoked = set()


def denial(name: str, result: dict[str, Any] | None) -> errors.ApiError:
    """ToStatusErr: the webhook's Status, at least 400, with the message saying who denied it."""
    result = dict(result or {})
    code = int(result.get("code") or 0)
    code = code if code >= 400 else 400
    denied_by = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        message = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        message = f"{denied_by}: {result['reason']}"
    else:
        message = f"{denied_by} without explanation"
    return errors.ApiError(code, str(result.get("reason") or ""), message, result.get("details"))


class AdmittingStore:
    """A Store whose writes pass through the admission chain first (one per HTTP request)."""

    def __init__(self, chain: AdmissionChain, context: RequestContext) -> None:
        self._chain = chain
        self._store = chain.store
        self._context = context

    def __getattr__(self, name: str) -> Any:  # reads (get, list, exists, ...) go straight through
        return getattr(self._store, name)

    def _attrs(
        self, operation: str, rt: ResourceType, obj: Any, old: Any, key: tuple[str, str]
    ) -> Attributes:
        # The options object of the verb (an update's for a patch, as the apiserver converts it).
        kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[operation]
        context = self._context
        options = {"kind": kind, "apiVersion": "meta.k8s.io/v1", **context.options}
        namespace, name = key
        if rt.group == "" and rt.plural == "namespaces":
            namespace = name  # a Namespace's own requests carry its name as their namespace, upstream too
        return Attributes(
            operation, rt, context.subresource, namespace, name, obj, old, context.dry_run, options
        )

    def create(self, rt: ResourceType, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        attrs = self._attrs("CREATE", rt, copy.deepcopy(obj), None, key)
        admitted = self._chain.admit(attrs, self._context)
        return self._store.create(rt, admitted or obj, dry_run=dry_run)

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """The change is computed without writing, admitted outside the store's lock, then written
        if nobody wrote in between (else computed again, as GuaranteedUpdate retries)."""
        for _ in range(_UPDATE_ATTEMPTS):
            try:
                return self._update_once(rt, namespace, name, change, dry_run=dry_run)
            except _Raced:
                continue
        raise errors.conflict(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )

    def _update_once(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        change: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        dry_run: bool,
    ) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        def proposed_change(current: dict[str, Any]) -> dict[str, Any]:
            seen["old"] = copy.deepcopy(current)
            return change(current)

        proposed = self._store.update(rt, namespace, name, proposed_change, dry_run=True)
        old = seen["old"]
        if proposed == old:
            return proposed  # a no-op write reaches no admission upstream either
        attrs = self._attrs("UPDATE", rt, proposed, old, (namespace or "", name))
        admitted = self._chain.admit(attrs, self._context) or proposed

        def admitted_change(current: dict[str, Any]) -> dict[str, Any]:
            if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
                raise _Raced
            return copy.deepcopy(admitted)

        return self._store.update(rt, namespace, name, admitted_change, dry_run=dry_run)

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        check: Callable[[dict[str, Any]], None] | None = None,
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        current = self._store.get(rt, namespace, name)
        if check is not None:
            check(copy.deepcopy(current))
        attrs = self._attrs("DELETE", rt, None, current, (namespace or "", name))
        self._chain.admit(attrs, self._context)
        return self._store.delete(rt, namespace, name, check=check, dry_run=dry_run)


class _Raced(Exception):
    """Another write landed between the admission of a change and its write."""


def request_options(query: dict[str, str]) -> dict[str, Any]:
    """The fields of Create/Update/DeleteOptions that a request sets in its query."""
    options: dict[str, Any] = {}
    if query.get("dryRun"):
        options["dryRun"] = [query["dryRun"]]
    for key in ("fieldManager", "fieldValidation"):
        if query.get(key):
            options[key] = query[key]
    return options


def warning_headers(warnings: list[str]) -> list[str]:
    """RFC 7234 Warning header values as the apiserver writes them: code 299, agent "-", the text
    quoted with backslash escapes (k8s.io/apimachinery pkg/util/net/http.go NewWarningHeader)."""
    quoted = (text.replace("\\", "\\\\").replace('"', '\\"') for text in warnings)
    return [f'299 - "{text}"' for text in quoted]
