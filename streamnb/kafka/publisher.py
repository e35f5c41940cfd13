"""Publishing predictions and dead letters: an outbox that survives producer failures.

Every message is kept until the broker acknowledges it. :meth:`Publisher.flush` resends what
failed, recreating the producer when it hit an error (kafka-python's producer does not recover
from some fatal errors, e.g. an idempotent producer after a broker restart; librdkafka reports
fatal errors and gives up on messages after ``message.timeout.ms``). The service checkpoints
only after a successful flush, so outputs are at-least-once: after a crash, events after the
checkpoint are processed and published again.

Two producer backends sit behind the same outbox:

``confluent``
    confluent-kafka (librdkafka), the default when it is installed: about 2 µs per message in
    the calling thread, against ~35 µs for kafka-python's ``send`` (which mostly waits for
    locks shared with its sender thread). librdkafka reports only failed deliveries; a flush
    that leaves nothing in flight and reported no failure acknowledges the whole outbox. After
    a failure the whole outbox since the last successful flush is sent again, in order.
``kafka-python``
    kafka-python's ``KafkaProducer`` (always available); a future per message, so after a
    failure only the messages not acknowledged are sent again.

Outputs are at-least-once across broker crashes: both backends use ``acks=all``, so the broker
acknowledges a message only once every in-sync replica has it (with ``acks=1`` a leader that
dies right after acknowledging can take the message with it, on a replicated cluster), and the
service writes a checkpoint only after :meth:`Publisher.flush` found every message up to that
point acknowledged. Set ``min.insync.replicas`` >= 2 on replicated output topics for this to
survive the loss of a broker. Idempotence (no duplicates from retries) is opt-in: see
:class:`Publisher`.

Both keep the messages of a partition in order: librdkafka's idempotent producer orders
retries itself; without idempotence one request is in flight per connection (confluent), and
the outbox never sends a message before an earlier one that failed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaError

__all__ = ["BACKENDS", "DeadLetter", "MAX_KEY_BYTES", "Publisher", "default_backend"]

log = logging.getLogger(__name__)

#: Producer backends by name (``auto``: confluent when importable, else kafka-python).
BACKENDS = ("auto", "confluent", "kafka-python")


def _confluent_available() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


def default_backend() -> str:
    """``"confluent"`` if confluent-kafka is importable, else ``"kafka-python"``."""
    return "confluent" if _confluent_available() else "kafka-python"


class _Entry:
    """One message of the kafka-python outbox; ``handle`` (its future) is None while not in flight."""

    __slots__ = ("topic", "key", "value", "headers", "handle")

    def __init__(self, topic: str, key: bytes | None, value: bytes, headers: list) -> None:
        self.topic, self.key, self.value, self.headers = topic, key, value, headers
        self.handle: Any = None


class _KafkaPythonOutbox:
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
        deadline = time.monotonic() + timeout
        while self._outbox:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
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
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
            elif self._outbox and all(e.handle is None for e in self._outbox):
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        return True

    def close(self, timeout: float) -> None:
        if self._producer is not None:
            try:
                self._producer.close(timeout=timeout)
            except Exception:
                log.debug("producer close failed", exc_info=True)
            self._producer = None


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


class _ConfluentOutbox:
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
        deadline = time.monotonic() + timeout
        while self._outbox:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
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
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
                continue
            if left == 0 and self._unsent == len(outbox):
                self._outbox, self._unsent = [], 0
                return True
            if self._unsent < len(outbox):
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        return True

    def close(self, timeout: float) -> None:
        if self._producer is not None:
            try:
                self._producer.flush(timeout)
                self._producer.purge(in_queue=True, in_flight=True, blocking=False)
                self._producer.poll(0)
            except Exception:
                log.debug("producer close failed", exc_info=True)
            self._producer = None


class Publisher:
    """Sends messages; keeps them until acknowledged; recreates the producer after errors.

    Parameters
    ----------
    bootstrap
        ``host:port[,host:port]``.
    idempotent
        The idempotent producer; off by default because kafka-python's never recovers after a
        broker restart (UnknownProducerId, then InitProducerId errors).
    config
        Extra producer settings, in the backend's own names (``KafkaProducer`` keywords for
        kafka-python, librdkafka properties for confluent).
    on_recreate
        Called after the producer was recreated (for metrics).
    backend
        ``"confluent"``, ``"kafka-python"`` or ``"auto"`` (confluent when importable).
    stall_timeout
        confluent: recreate the producer when nothing was acknowledged for this many seconds
        while the broker answers metadata requests.
    """

    def __init__(self, bootstrap: str, idempotent: bool = False, config: dict | None = None,
                 on_recreate: Callable[[], None] | None = None, backend: str = "auto",
                 stall_timeout: float = 5.0) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"producer backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "auto":
            backend = default_backend()
        self.bootstrap = bootstrap
        self.on_recreate = on_recreate
        if backend == "confluent":
            self._impl: Any = _ConfluentOutbox(bootstrap, idempotent, dict(config or {}), self.recreate,
                                               stall_timeout)
        else:
            self._impl = _KafkaPythonOutbox(bootstrap, idempotent, dict(config or {}), self.recreate)
        self.backend = self._impl.name
        self.config = self._impl.config
        #: ``send(topic, value, key=None, headers=None)``: queue one message (never blocks long)
        self.send = self._impl.send
        #: ``send_many(topic, values, keys)``: ``send`` each, in order
        self.send_many = self._impl.send_many
        #: ``poll()``: serve the producer's reports (the service calls it after each input poll)
        self.poll = self._impl.poll

    def recreate(self) -> None:
        """Drop the producer (without waiting) and make a new one on next use."""
        if self._impl.discard():
            log.warning("producer recreated after an error")
            if self.on_recreate:
                self.on_recreate()

    @property
    def pending(self) -> int:
        """Messages not acknowledged yet."""
        return self._impl.pending

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every message is acknowledged (True) or ``timeout`` passes (False)."""
        return self._impl.flush(timeout)

    def close(self, timeout: float = 5.0) -> None:
        self._impl.close(timeout)


#: Keys longer than this are rejected by the service (outputs reuse the input key) and cut in
#: dead letters, so that one message can never exceed the producer's request size.
MAX_KEY_BYTES = 16 * 1024


class DeadLetter:
    """Sends rejected messages, unchanged, to a dead-letter topic with why and where from.

    The value is the original bytes (cut to ``max_bytes``, with header ``streamnb.truncated``);
    the key is the original key (cut to :data:`MAX_KEY_BYTES`, with header
    ``streamnb.key_truncated`` giving its length); headers ``streamnb.reason`` (a code),
    ``streamnb.detail``, ``streamnb.source.topic``, ``streamnb.source.partition``,
    ``streamnb.source.offset``.
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
        key = record.key
        if key is not None and len(key) > MAX_KEY_BYTES:
            headers.append(("streamnb.key_truncated", str(len(key)).encode()))
            key = key[:MAX_KEY_BYTES]
        self.publisher.send(self.topic, value=value, key=key, headers=headers)
        self.counts[reason] = self.counts.get(reason, 0) + 1
