"""The confluent outbox of :class:`~streamnb.kafka.publisher.Publisher`: confluent-kafka
(librdkafka), imported only when this backend is used."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from streamnb.kafka.flush_rounds import flush_rounds

__all__ = ["ConfluentOutbox"]

log = logging.getLogger(__name__)


class _Reports:
    """Error reports of one confluent producer (those of a discarded producer are ignored)."""

    __slots__ = ("failed", "last_error", "fatal")

    def __init__(self) -> None:
        self.failed = 0
        self.last_error: Any = None
        self.fatal = False

    def delivered(self, err: Any, msg: Any) -> None:  # only errors: delivery.report.only.error
        if err is not None:
            self.failed += 1
            self.last_error = (msg.topic(), err)

    def error(self, err: Any) -> None:
        if err.fatal():
            log.warning("producer fatal error: %s", err)
            self.fatal = True
        else:
            log.debug("producer error: %s", err)


class ConfluentOutbox:
    """confluent-kafka (librdkafka) without per-message callbacks.

    A per-message delivery callback costs more than the produce call itself (an object per
    message, kept alive until acknowledged). librdkafka reports failed deliveries only
    (``delivery.report.only.error``), and ``flush`` returning 0 with no failure reported means
    every message sent since the last successful flush is acknowledged. After a failure (or a
    fatal error, or a stall) the producer is recreated and *every* message since the last
    successful flush is sent again, in order: more duplicates than strictly needed after a
    failure, never a gap.
    """

    name = "confluent"

    def __init__(self, bootstrap: str, idempotent: bool, config: dict, on_failure: Callable[[], None],
                 stall_timeout: float = 5.0) -> None:
        import confluent_kafka

        self._ck = confluent_kafka
        self.config = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": idempotent,
            "acks": "all",
            "linger.ms": 1,
            "socket.nagle.disable": True,  # small requests go out at once (no Nagle delay)
            "message.max.bytes": 2 << 20,
            # without idempotence, retries may reorder messages when several requests are in flight
            "max.in.flight.requests.per.connection": 5 if idempotent else 1,
            "message.timeout.ms": 30_000,
            "reconnect.backoff.max.ms": 1000,
            "queue.buffering.max.messages": 1_000_000,
            "partitioner": "murmur2_random",  # the Java client's and kafka-python's key -> partition
            "logger": logging.getLogger("streamnb.kafka.librdkafka"),
            **config,
            "delivery.report.only.error": True,
        }
        self._on_failure = on_failure
        self.stall_timeout = stall_timeout
        self._outbox: list[tuple] = []
        self._unsent = 0  # outbox[_unsent:] not handed to the current producer (order kept)
        self._producer: Any = None
        self._reports = _Reports()
        self._produced = 0
        self._progress = (0, time.monotonic())  # (acknowledged or failed, when that last grew)
        self._ensure()  # bad settings fail here, at start

    def _ensure(self) -> Any:
        if self._producer is None:
            reports = _Reports()
            self._producer = self._ck.Producer({**self.config, "on_delivery": reports.delivered,
                                                "error_cb": reports.error})
            self._reports, self._produced = reports, 0
            self._progress = (0, time.monotonic())
        return self._producer

    def _produce(self, msg: tuple) -> bool:
        producer = self._producer
        topic, value, key, headers = msg
        for attempt in range(100):
            try:
                if headers:
                    producer.produce(topic, value, key, headers=headers)
                else:
                    producer.produce(topic, value, key)
                break
            except BufferError:  # local queue full: serve reports, let librdkafka drain it
                producer.poll(0.1 if attempt else 0)
            except self._ck.KafkaException as exc:
                log.debug("produce failed (%s); will retry at flush", exc)
                return False
        else:
            return False
        self._produced += 1
        if not self._produced & 0xFFF:
            producer.poll(0)
        return True

    def send(self, topic: str, value: bytes, key: bytes | None = None, headers: list | None = None) -> None:
        outbox = self._outbox
        if not outbox:
            self._progress = (self._produced - len(self._producer), time.monotonic()) if self._producer \
                else self._progress
        msg = (topic, value, key, headers)
        outbox.append(msg)
        if self._unsent == len(outbox) - 1 and self._producer is not None and self._produce(msg):
            self._unsent += 1

    def send_many(self, topic: str, values: list, keys: list) -> None:
        """``send(topic, values[i], keys[i])`` for each i, in order (one call per poll)."""
        outbox = self._outbox
        start = len(outbox)
        if not outbox:
            self.send(topic, values[0], keys[0])
            values, keys, start = values[1:], keys[1:], 1
        outbox.extend([(topic, v, k, None) for v, k in zip(values, keys)])
        producer = self._producer
        if self._unsent != start or producer is None:
            return  # failing: flush sends them, in order
        produce, done = producer.produce, 0
        try:
            for value, key in zip(values, keys):
                produce(topic, value, key)
                done += 1
        except (BufferError, self._ck.KafkaException):
            pass  # the rest one at a time (polling while the queue is full)
        self._unsent += done
        self._produced += done
        while self._unsent < len(outbox) and self._produce(outbox[self._unsent]):
            self._unsent += 1
        producer.poll(0)

    def poll(self) -> None:
        if self._producer is not None:
            self._producer.poll(0)

    @property
    def pending(self) -> int:
        return len(self._outbox)

    def _stalled(self, left: int) -> bool:
        """Messages in flight, none acknowledged for ``stall_timeout`` s, yet the broker answers.

        librdkafka's idempotent producer retries forever (bumping its epoch) against a broker that
        lost its producer state, until ``message.timeout.ms``; a fresh producer recovers at once.
        While the broker is down nothing is stalled: librdkafka delivers when it is back.
        """
        done, since = self._progress
        now = time.monotonic()
        if self._produced - left > done:
            self._progress = (self._produced - left, now)
            return False
        if left == 0 or now - since < self.stall_timeout:
            return False
        try:
            self._producer.list_topics(timeout=1.0)
        except self._ck.KafkaException:
            return False
        log.warning("producer stalled for %.0f s with %d messages in flight while the broker answers",
                    now - since, left)
        return True

    def discard(self) -> bool:
        """Drop the producer without waiting (what it still holds is sent again)."""
        if self._producer is None:
            return False
        try:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
        except Exception:
            log.debug("purging a broken producer failed", exc_info=True)
        self._producer = None
        self._unsent = 0
        return True

    def flush(self, timeout: float) -> bool:
        return flush_rounds(timeout, lambda: self.pending, self._flush_round)

    def _flush_round(self, remaining: float, deadline: float) -> bool:
        """Send what the producer lacks, flush, check the reports; True: pause before the next round."""
        producer = self._ensure()
        outbox = self._outbox
        while self._unsent < len(outbox) and self._produce(outbox[self._unsent]):
            self._unsent += 1
        left = producer.flush(max(0.05, min(remaining, 5.0)))
        reports = self._reports
        if reports.failed or reports.fatal or self._stalled(left):
            if reports.failed:
                topic, err = reports.last_error
                log.warning("publish to %s failed (%d messages): %s", topic, reports.failed, err)
            self._on_failure()  # discard(): the whole outbox is sent again, in order
            return True
        if left == 0 and self._unsent == len(outbox):
            self._outbox, self._unsent = [], 0
            return False
        return self._unsent < len(outbox)

    def close(self, timeout: float) -> None:
        if self._producer is not None:
            try:
                self._producer.flush(timeout)
                self._producer.purge(in_queue=True, in_flight=True, blocking=False)
                self._producer.poll(0)
            except Exception:
                log.debug("producer close failed", exc_info=True)
            self._producer = None

