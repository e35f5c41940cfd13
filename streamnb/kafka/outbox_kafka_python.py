"""The kafka-python outbox of :class:`~streamnb.kafka.publisher.Publisher`: kafka-python's
``KafkaProducer`` (always available), a future per message, so after a failure only the messages
not acknowledged are sent again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaError

from streamnb.kafka.flush_rounds import flush_rounds

__all__ = ["KafkaPythonOutbox"]

log = logging.getLogger(__name__)


class _Entry:
    """One message of the kafka-python outbox; ``handle`` (its future) is None while not in flight."""

    __slots__ = ("topic", "key", "value", "headers", "handle")

    def __init__(self, topic: str, key: bytes | None, value: bytes, headers: list) -> None:
        self.topic, self.key, self.value, self.headers = topic, key, value, headers
        self.handle: Any = None


class KafkaPythonOutbox:
    """Per-message futures: resends exactly the messages not acknowledged."""

    name = "kafka-python"

    def __init__(self, bootstrap: str, idempotent: bool, config: dict, on_failure: Callable[[], None]) -> None:
        from kafka import KafkaProducer

        self._cls = KafkaProducer
        self.config = {
            "bootstrap_servers": bootstrap,
            "enable_idempotence": idempotent,
            "acks": "all",  # see the module docstring: an acknowledged output is on every in-sync replica
            "linger_ms": 1,
            "batch_size": 64 * 1024,
            "max_request_size": 2 << 20,
            "max_block_ms": 2000,
            # creating a producer while no broker answers blocks this long (kafka-python: 30 s)
            "bootstrap_timeout_ms": 2000,
            "reconnect_backoff_max_ms": 1000,
            "retries": 3 if not idempotent else 5,
            **config,
        }
        self._on_failure = on_failure
        self._producer: Any = None
        self._outbox: list[_Entry] = []

    def _ensure(self) -> Any:
        if self._producer is None:
            self._producer = self._cls(**self.config)
        return self._producer

    def _send(self, e: _Entry) -> None:
        try:
            e.handle = self._ensure().send(e.topic, value=e.value, key=e.key, headers=e.headers)
        except KafkaError as exc:  # metadata timeout while the broker is down, ...
            log.debug("send failed (%s); will retry at flush", exc)
            e.handle = None

    def send(self, topic: str, value: bytes, key: bytes | None = None, headers: list | None = None) -> None:
        entry = _Entry(topic, key, value, headers or [])
        outbox = self._outbox
        outbox.append(entry)
        if len(outbox) == 1 or outbox[-2].handle is not None:  # keep order while failing
            self._send(entry)

    def send_many(self, topic: str, values: list, keys: list) -> None:
        for value, key in zip(values, keys):
            self.send(topic, value, key)

    def poll(self) -> None:
        pass

    @property
    def pending(self) -> int:
        return len(self._outbox)

    def discard(self) -> bool:
        if self._producer is None:
            return False
        try:
            self._producer.close(timeout=0)
        except Exception:
            log.debug("closing a broken producer failed", exc_info=True)
        self._producer = None
        return True

    def flush(self, timeout: float) -> bool:
        return flush_rounds(timeout, lambda: self.pending, self._flush_round)

    def _flush_round(self, remaining: float, deadline: float) -> bool:
        """Send what is not in flight, flush, drop what was acknowledged; True: pause before the
        next round (a failure, or nothing in flight)."""
        if any(e.handle is None for e in self._outbox):
            # in order; a send that fails (the broker is away: it blocks up to max_block_ms)
            # ends the round, so a flush is bounded by its timeout, not by the outbox size
            for e in self._outbox:
                if e.handle is None:
                    self._send(e)
                    if e.handle is None or time.monotonic() >= deadline:
                        break
        if self._producer is not None:
            try:
                self._producer.flush(timeout=max(0.05, min(remaining, 5.0)))
            except KafkaError:
                pass
        failed = False
        keep = []
        for e in self._outbox:
            fut = e.handle
            if fut is None or not fut.is_done:
                keep.append(e)
            elif fut.failed():
                log.warning("publish to %s failed: %r", e.topic, fut.exception)
                e.handle = None
                keep.append(e)
                failed = True
        self._outbox = keep
        if failed:
            for e in self._outbox:  # in flight on the old producer: send again
                e.handle = None
            self._on_failure()
            return True
        return bool(self._outbox) and all(e.handle is None for e in self._outbox)

    def close(self, timeout: float) -> None:
        if self._producer is not None:
            try:
                self._producer.close(timeout=timeout)
            except Exception:
                log.debug("producer close failed", exc_info=True)
            self._producer = None

