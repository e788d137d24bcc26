"""Capped exponential backoff with jitter, as the reflector waits between failed requests."""

from __future__ import annotations

import random

_MAX_RETRY_AFTER = 300.0  # a server asking for more than this is not waited on blindly


class Backoff:
    """Capped exponential backoff with jitter, honouring a server's Retry-After."""

    def __init__(self, base: float = 0.8, cap: float = 30.0, rng: random.Random | None = None) -> None:
        self.base = base
        self.cap = cap
        self.attempt = 0
        self._rng = rng or random.Random()

    def next_delay(self, retry_after: float | None = None) -> float:
        delay = min(self.cap, self.base * (2**self.attempt))
        self.attempt += 1
        delay = delay / 2 + self._rng.random() * delay / 2  # jitter keeps replicas from retrying in step
        if retry_after is not None:
            delay = max(delay, min(retry_after, _MAX_RETRY_AFTER))
        return delay

    def reset(self) -> None:
        self.attempt = 0
