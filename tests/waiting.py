"""Waiting in tests on an event, not on a clock: poll until it happened, within a generous bound.

The one polling helper of the suite (``kafkatest.wait_until`` is this one under the Kafka tests'
older argument order). A bound is there to end a test that hangs, never
to measure: it stretches with the machine's load (:func:`patience`), and with ``progress`` it
counts from the last sign that the awaited work still moves, so a busy machine that is still
getting there is never taken for a stuck one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def patience() -> float:
    """How many times an idle machine's time a wait may take now: the last minute's load average
    per core, at least 1 (at a load of 16 on 2 cores, work waiting for a core takes about 8 times
    as long)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def until(happened: Callable[[], T], what: str, seconds: float = 60.0, every: float = 0.05,
          progress: Callable[[], Any] | None = None) -> T:  # fmt: skip
    """Call ``happened`` until it returns something true and return that; fail naming ``what``
    once ``seconds`` times :func:`patience` passed (with ``progress``, a callable whose value
    changes while the awaited work goes on: since its value last changed)."""
    start = time.monotonic()
    seen = progress() if progress is not None else None
    while True:
        result = happened()
        if result:
            return result
        if progress is not None:
            now = progress()
            if now != seen:
                seen, start = now, time.monotonic()
        if time.monotonic() - start > seconds * patience():
            raise AssertionError(f"timed out after {seconds:g} s (times the load) waiting for {what}"
                                 + (f" (no progress from {seen!r})" if progress is not None else ""))
        time.sleep(every)
