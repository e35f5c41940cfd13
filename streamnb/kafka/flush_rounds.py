"""The flush of both outboxes (:mod:`streamnb.kafka.outbox_confluent`,
:mod:`streamnb.kafka.outbox_kafka_python`): rounds until nothing is pending or time is up."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["flush_rounds"]


def flush_rounds(timeout: float, pending: Callable[[], int], one_round: Callable[[float, float], bool]) -> bool:
    """Call ``one_round(remaining, deadline)`` while ``pending()``; True once nothing is pending,
    False when ``timeout`` seconds passed first.

    A round that returns True (a failure, or nothing could be sent) is followed by a pause of
    at most 0.2 s, never past the deadline, before the next.
    """
    deadline = time.monotonic() + timeout
    while pending():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if one_round(remaining, deadline):
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    return True
