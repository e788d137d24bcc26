"""Waiting in tests for something another thread or process does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def eventually(condition: Callable[[], Any], what: str = "condition", timeout: float = 15.0) -> Any:
    """Polls until `condition()` is truthy and returns its value. The deadline only bounds a hung
    test: no test asserts how long anything took."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"never happened within {timeout} s: {what}")
        time.sleep(0.02)
