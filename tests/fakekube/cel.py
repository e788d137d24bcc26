"""CEL for webhook matchConditions, evaluated with cel-python (celpy) over JSON values.

Upstream compiles every expression when the configuration is written and rejects a bad one
(k8s.io/apiserver pkg/admission/plugin/cel compile.go); the fake compiles on first use and reports
a compile error as an evaluation error, which the failure policy then decides, as upstream does for
errors at evaluation time (pkg/admission/plugin/webhook/matchconditions/matcher.go, Match).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import celpy
from celpy import celtypes

_LOCK = threading.Lock()  # celpy's environment and programs are not documented as thread-safe


class CelError(Exception):
    """An expression that does not compile, fails at evaluation, or does not yield a bool."""


@functools.cache
def _program(expression: str) -> Any:
    environment = celpy.Environment()
    try:
        return environment.program(environment.compile(expression))
    except celpy.CELParseError as error:
        raise CelError(f"compilation failed: {error}") from None


def evaluate_bool(expression: str, variables: dict[str, Any]) -> bool:
    """The value of a boolean expression over JSON-shaped variables (object, oldObject, request)."""
    with _LOCK:
        program = _program(expression)
        activation = {name: celpy.json_to_cel(value) for name, value in variables.items()}
        try:
            result = program.evaluate(activation)
        except celpy.CELEvalError as error:
            raise CelError(f"evaluation failed: {error.args[0] if error.args else error}") from None
    if isinstance(result, celpy.CELEvalError):  # celpy may hand an error back as the value
        raise CelError(f"evaluation failed: {result.args[0] if result.args else result}")
    if not isinstance(result, celtypes.BoolType):
        raise CelError(f"expression must evaluate to bool, not {type(result).__name__}")
    return bool(result)
