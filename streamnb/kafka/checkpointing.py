"""When to checkpoint, and how: outputs acknowledged first, then model + offsets atomically.

>>> due = Due(every=3, interval=60.0, now=0.0)
>>> due.add(2); due.is_due(1.0)
False
>>> due.add(1); due.is_due(1.0)
True
>>> due.failed(1.0); due.is_due(1.5), due.is_due(2.0)
(False, True)
>>> due.done(2.0); due.is_due(3.0), due.is_due(62.0)
(False, False)
"""

from __future__ import annotations

import logging
import time
from typing import Any

from streamnb.exceptions import StateError
from streamnb.kafka.metrics import Metrics
from streamnb.kafka.publisher import Publisher
from streamnb.stores.checkpoints import StateStore

__all__ = ["Due", "Checkpointing"]

log = logging.getLogger(__name__)


class Due:
    """A checkpoint is due after ``every`` events or ``interval`` seconds since the last one,
    whichever comes first, and only if there are events since; after a failure, not before
    ``retry_after`` seconds."""

    def __init__(self, every: int, interval: float, retry_after: float = 1.0, now: float | None = None) -> None:
        self.every, self.interval, self.retry_after = every, interval, retry_after
        self.events = 0
        self._last = time.monotonic() if now is None else now
        self._not_before = 0.0

    def add(self, n: int) -> None:
        """``n`` more events since the last checkpoint."""
        self.events += n

    def is_due(self, now: float) -> bool:
        return (self.events > 0 and now >= self._not_before
                and (self.events >= self.every or now - self._last >= self.interval))

    def done(self, now: float | None = None) -> None:
        self.events, self._not_before = 0, 0.0
        self._last = time.monotonic() if now is None else now

    def failed(self, now: float) -> None:
        self._not_before = now + self.retry_after

    def forget(self) -> None:
        """The events since the last checkpoint were rolled back."""
        self.events = 0


class Checkpointing:
    """Writes a checkpoint only after every output so far is acknowledged by the broker
    (:meth:`Publisher.flush`), so outputs are at-least-once and model state exactly-once."""

    def __init__(self, checkpointer: StateStore, publisher: Publisher, metrics: Metrics,
                 flush_timeout: float) -> None:
        self.checkpointer, self.publisher = checkpointer, publisher
        self.metrics, self.flush_timeout = metrics, flush_timeout

    def write(self, model: Any, offsets: dict[str, int], extra: dict, reason: str) -> int | None:
        """The new checkpoint's id, or None if it was postponed (outputs not acknowledged) or
        failed (disk full, ...): the previous checkpoint stays the newest."""
        start = time.monotonic()
        if not self.publisher.flush(timeout=self.flush_timeout):
            self.metrics.checkpoint_failures.inc()
            log.warning("checkpoint (%s) postponed: outputs not acknowledged by the broker", reason)
            return None
        try:
            ck_id = self.checkpointer.save(model, offsets, extra)
        except (OSError, StateError) as exc:
            self.metrics.checkpoint_failures.inc()
            log.error("checkpoint (%s) failed: %s", reason, exc)
            return None
        self.metrics.checkpoints.inc()
        self.metrics.checkpoint_seconds.observe(time.monotonic() - start)
        log.debug("checkpoint %d (%s): offsets %s", ck_id, reason, offsets,
                  extra={"event": "checkpoint", "checkpoint": ck_id})
        return ck_id
