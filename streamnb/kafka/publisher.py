"""Publishing predictions and dead letters: an outbox that survives producer failures.

Every message is kept until the broker acknowledges it. :meth:`Publisher.flush` resends what
failed, recreating the producer when it hit an error (kafka-python's producer does not recover
from some fatal errors, e.g. an idempotent producer after a broker restart). The service
checkpoints only after a successful flush, so outputs are at-least-once: after a crash, events
after the checkpoint are processed and published again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kafka import KafkaProducer
from kafka.errors import KafkaError

__all__ = ["DeadLetter", "Publisher"]

log = logging.getLogger(__name__)

Record = tuple[str, bytes | None, bytes, list]


class Publisher:
    """Sends messages; keeps them until acknowledged; recreates the producer after errors.

    Parameters
    ----------
    bootstrap
        ``host:port[,host:port]``.
    idempotent
        kafka-python's idempotent producer; off by default because it never recovers after a
        broker restart (UnknownProducerId, then InitProducerId errors).
    config
        Extra ``KafkaProducer`` settings.
    on_recreate
        Called after the producer was recreated (for metrics).
    """

    def __init__(self, bootstrap: str, idempotent: bool = False, config: dict | None = None,
                 on_recreate: Callable[[], None] | None = None) -> None:
        self.bootstrap = bootstrap
        self.config = {
            "bootstrap_servers": bootstrap,
            "enable_idempotence": idempotent,
            "acks": "all" if idempotent else 1,
            "linger_ms": 5,
            "batch_size": 64 * 1024,
            "max_request_size": 2 << 20,
            "max_block_ms": 2000,
            "reconnect_backoff_max_ms": 1000,
            "retries": 3 if not idempotent else 5,
            **(config or {}),
        }
        self.on_recreate = on_recreate
        self._producer: KafkaProducer | None = None
        self._outbox: list[list[Any]] = []  # [record, future or None]

    def _ensure(self) -> KafkaProducer:
        if self._producer is None:
            self._producer = KafkaProducer(**self.config)
        return self._producer

    def recreate(self) -> None:
        """Close the producer (without waiting) and make a new one on next use."""
        if self._producer is not None:
            try:
                self._producer.close(timeout=0)
            except Exception:
                log.debug("closing a broken producer failed", exc_info=True)
            self._producer = None
            log.warning("producer recreated after an error")
            if self.on_recreate:
                self.on_recreate()

    def _send(self, entry: list) -> None:
        topic, key, value, headers = entry[0]
        try:
            entry[1] = self._ensure().send(topic, value=value, key=key, headers=headers)
        except KafkaError as exc:  # metadata timeout while the broker is down, ...
            log.debug("send failed (%s); will retry at flush", exc)
            entry[1] = None

    def send(self, topic: str, value: bytes, key: bytes | None = None, headers: list | None = None) -> None:
        entry: list = [(topic, key, value, headers or []), None]
        self._outbox.append(entry)
        if len(self._outbox) == 1 or self._outbox[-2][1] is not None:  # keep order while failing
            self._send(entry)

    @property
    def pending(self) -> int:
        return len(self._outbox)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every message is acknowledged (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while self._outbox:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if any(e[1] is None for e in self._outbox):
                for e in self._outbox:
                    if e[1] is None:
                        self._send(e)
            producer = self._producer
            if producer is not None:
                try:
                    producer.flush(timeout=max(0.05, min(remaining, 5.0)))
                except KafkaError:
                    pass
            failed = False
            keep = []
            for e in self._outbox:
                fut = e[1]
                if fut is None or not fut.is_done:
                    keep.append(e)
                elif fut.failed():
                    log.warning("publish to %s failed: %r", e[0][0], fut.exception)
                    e[1] = None
                    keep.append(e)
                    failed = True
            self._outbox = keep
            if failed:
                for e in self._outbox:  # in flight on the old producer: send again
                    e[1] = None
                self.recreate()
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            elif self._outbox and all(e[1] is None for e in self._outbox):
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        return True

    def close(self, timeout: float = 5.0) -> None:
        if self._producer is not None:
            try:
                self._producer.close(timeout=timeout)
            except Exception:
                log.debug("producer close failed", exc_info=True)
            self._producer = None


class DeadLetter:
    """Sends rejected messages, unchanged, to a dead-letter topic with why and where from.

    The value is the original bytes (cut to ``max_bytes``, with header ``streamnb.truncated``);
    the key is the original key; headers ``streamnb.reason`` (a code), ``streamnb.detail``,
    ``streamnb.source.topic``, ``streamnb.source.partition``, ``streamnb.source.offset``.
    """

    def __init__(self, publisher: Publisher, topic: str, max_bytes: int = 900 * 1024) -> None:
        self.publisher = publisher
        self.topic = topic
        self.max_bytes = max_bytes
        self.counts: dict[str, int] = {}

    def send(self, record: Any, reason: str, detail: str = "") -> None:
        value = record.value if record.value is not None else b""
        headers = [
            ("streamnb.reason", reason.encode()),
            ("streamnb.detail", detail[:2000].encode("utf-8", "replace")),
            ("streamnb.source.topic", record.topic.encode()),
            ("streamnb.source.partition", str(record.partition).encode()),
            ("streamnb.source.offset", str(record.offset).encode()),
        ]
        if len(value) > self.max_bytes:
            headers.append(("streamnb.truncated", str(len(value)).encode()))
            value = value[: self.max_bytes]
        self.publisher.send(self.topic, value=value, key=record.key, headers=headers)
        self.counts[reason] = self.counts.get(reason, 0) + 1
