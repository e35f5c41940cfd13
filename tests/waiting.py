"""Waiting in tests on an event, not on a clock: poll until it happened, within a generous bound."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(happened: Callable[[], T], what: str, seconds: float = 60.0, every: float = 0.05) -> T:
    """Call ``happened`` until it returns something true and return that; fail naming ``what``
    after ``seconds`` (a bound a busy machine never reaches, not a measure)."""
    deadline = time.monotonic() + seconds
    while True:
        result = happened()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:g} s waiting for {what}")
        time.sleep(every)
