"""Waiting for background work in tests: with a generous limit, never timed as a speed."""

from __future__ import annotations

import time
from collections.abc import Callable

LIMIT_S = 30.0


def until(condition: Callable[[], bool], limit_s: float = LIMIT_S) -> bool:
    """Whether ``condition()`` came true within ``limit_s`` (polled every 10 ms)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()
