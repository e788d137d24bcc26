"""API errors as the real apiserver reports them: metav1.Status objects with a code and a reason."""

from __future__ import annotations

from typing import Any

from .registry import ResourceType


def status_object(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A failure Status, the body of every error answer and of watch ERROR events."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    return status


def success_status(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The Status a DELETE answers for registries that do not return the deleted object."""
    meta = obj.get("metadata", {})
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": meta.get("name"), "group": rt.group, "kind": rt.plural, "uid": meta.get("uid")},
    }


class ApiError(Exception):
    """Raised anywhere in the fake; the HTTP layer turns it into a Status answer."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        return status_object(self.code, self.reason, self.message, self.details)


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    return {"name": name, "group": rt.group, "kind": rt.plural}


def _qualified(rt: ResourceType) -> str:
    # Messages name the resource as "pods" or "leases.coordination.k8s.io", as the apiserver does.
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_qualified(rt)} "{name}" not found', _details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{_qualified(rt)} "{name}" already exists', _details(rt, name))


def conflict(rt: ResourceType, name: str, why: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {_qualified(rt)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(rt, name))


def invalid(rt: ResourceType, name: str, why: str) -> ApiError:
    message = f'{rt.kind} "{name}" is invalid: {why}'
    return ApiError(422, "Invalid", message, _details(rt, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource: {method}"
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    message = (
        f"the body of the request was in an unknown format ({content_type}) - accepted media types include: "
        + ", ".join(accepted)
    )
    return ApiError(415, "UnsupportedMediaType", message)


def invalid_list_options(errs: list[tuple[str, str, str]]) -> ApiError:
    """422 for bad list/watch parameters, as the handlers answer ValidateListOptions' errors
    (apiserver pkg/endpoints/handlers/get.go ListResource: errors.NewInvalid of kind ListOptions).
    Each error is (field, cause reason, detail), e.g. ("resourceVersionMatch", "FieldValueForbidden",
    "Forbidden: resourceVersionMatch is forbidden for watch")."""
    texts = [f"{field}: {detail}" for field, _, detail in errs]
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    # the Status cause's key is "reason" on the wire (metav1.StatusCause.Type is tagged json:"reason")
    causes = [{"reason": reason, "message": detail, "field": field} for field, reason, detail in errs]
    details = {"group": "meta.k8s.io", "kind": "ListOptions", "causes": causes}
    return ApiError(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {joined}', details)


def too_large_resource_version(minimum: int, current: int) -> ApiError:
    """504 Timeout with the ResourceVersionTooLarge cause: a list or watch asked for a resourceVersion
    the store has not reached (apiserver pkg/storage/errors.go NewTooLargeResourceVersionError)."""
    details = {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]}
    message = f"Timeout: Too large resource version: {minimum}, current: {current}"
    return ApiError(504, "Timeout", message, details)
