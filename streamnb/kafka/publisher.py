"""Publishing predictions and dead letters: an outbox that survives producer failures.

Every message is kept until the broker acknowledges it. :meth:`Publisher.flush` resends what
failed, recreating the producer when it hit an error (kafka-python's producer does not recover
from some fatal errors, e.g. an idempotent producer after a broker restart; librdkafka reports
fatal errors and gives up on messages after ``message.timeout.ms``). The service checkpoints
only after a successful flush, so outputs are at-least-once: after a crash, events after the
checkpoint are processed and published again.

Two producer backends sit behind the same outbox:

``confluent``
    confluent-kafka (librdkafka), the default when it is installed: faster per message in the
    calling thread than kafka-python's ``send``, which mostly waits for locks shared with its
    sender thread (docs/benchmarks.md). librdkafka reports only failed deliveries; a flush
    that leaves nothing in flight and reported no failure acknowledges the whole outbox. After
    a failure the whole outbox since the last successful flush is sent again, in order.
``kafka-python``
    kafka-python's ``KafkaProducer`` (always available); a future per message, so after a
    failure only the messages not acknowledged are sent again.

Each backend is a module: :mod:`streamnb.kafka.outbox_confluent`,
:mod:`streamnb.kafka.outbox_kafka_python`.

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
from collections.abc import Callable
from typing import Any

from streamnb.kafka.outbox_confluent import ConfluentOutbox
from streamnb.kafka.outbox_kafka_python import KafkaPythonOutbox

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
            self._impl: Any = ConfluentOutbox(bootstrap, idempotent, dict(config or {}), self.recreate,
                                              stall_timeout)
        else:
            self._impl = KafkaPythonOutbox(bootstrap, idempotent, dict(config or {}), self.recreate)
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
