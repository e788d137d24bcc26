"""Validation of list and watch parameters, as the apiserver's handlers run it before any storage.

Models apimachinery pkg/apis/meta/internalversion/validation/validation.go: ValidateListOptions and
validateWatchOptions (Kubernetes 1.27+, with the WatchList feature), and the same function before
sendInitialEvents existed (1.19 to 1.26), where resourceVersionMatch was forbidden on every watch.
Each failure is a 422 Invalid of kind ListOptions (apiserver pkg/endpoints/handlers/get.go).
"""

from __future__ import annotations

from typing import Literal

from . import errors

NOT_OLDER_THAN = "NotOlderThan"
EXACT = "Exact"

# How the server treats a WatchList request (sendInitialEvents=true):
#   "supported": Kubernetes 1.27+ with the WatchList feature on;
#   "old": a server before 1.27, which refuses resourceVersionMatch on a watch (422);
#   "ignored": a server (or a proxy) that drops both parameters and answers a plain watch.
WatchListSupport = Literal["supported", "old", "ignored"]

_Error = tuple[str, str, str]  # (field, cause reason, detail)


def _forbidden(detail: str, field: str = "resourceVersionMatch") -> _Error:
    return (field, "FieldValueForbidden", f"Forbidden: {detail}")


def _not_supported(field: str, value: str, allowed: list[str]) -> _Error:
    quoted = ", ".join(f'"{a}"' for a in allowed)
    return (field, "FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {quoted}')


def validate_list(
    resource_version: str | None,
    match: str | None,
    continue_token: str | None,
    send_initial_events: str | None,
) -> None:
    """A list (not a watch): ValidateListOptions' branch for lists."""
    errs: list[_Error] = []
    if match:
        if not resource_version:
            errs.append(_forbidden("resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if continue_token:
            errs.append(_forbidden("resourceVersionMatch is forbidden when continue is provided"))
        if match not in (EXACT, NOT_OLDER_THAN):
            errs.append(_not_supported("resourceVersionMatch", match, [EXACT, NOT_OLDER_THAN, ""]))
        if match == EXACT and resource_version == "0":
            errs.append(_forbidden('resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if send_initial_events is not None:
        errs.append(_forbidden("sendInitialEvents is forbidden for list", "sendInitialEvents"))
    if errs:
        raise errors.invalid_list_options(errs)


def validate_watch(match: str | None, send_initial_events: str | None, support: WatchListSupport) -> None:
    """A watch: validateWatchOptions on a server with WatchList; on an old server, the single rule
    it had for watches (resourceVersionMatch forbidden); a server that ignores both checks nothing."""
    errs: list[_Error] = []
    if support == "old":
        if match:
            errs.append(_forbidden("resourceVersionMatch is forbidden for watch"))
    elif support == "supported":
        if send_initial_events is not None and match != NOT_OLDER_THAN:
            errs.append(
                _forbidden(f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}")
            )
        if match:
            if send_initial_events is None:
                errs.append(
                    _forbidden(
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
                    )
                )
            if match != NOT_OLDER_THAN:
                errs.append(_not_supported("resourceVersionMatch", match, [NOT_OLDER_THAN]))
    if errs:
        raise errors.invalid_list_options(errs)


def parse_bool(value: str | None) -> bool | None:
    """A boolean query parameter as the apiserver's conversion reads it (strconv.ParseBool);
    None when absent. A malformed one is a 400, as a query that does not convert is."""
    if value is None:
        return None
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise errors.bad_request(f'invalid boolean value: "{value}"')
