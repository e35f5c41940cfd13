"""The clients of a store kept in a compacted one-partition topic, read from its start and
written with ``acks=all``: the ``kafka:`` state store's and the ``kafka://`` key store's."""

from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from streamnb.kafka.topics import ensure_topics

__all__ = ["open_reader", "open_writer"]


def open_reader(bootstrap: str, topic: str, timeout: float, fetch_max_wait_ms: int,
                max_partition_fetch_bytes: int = 1 << 20) -> KafkaConsumer:  # fmt: skip
    """A consumer of ``topic``'s partition 0 (no group, no commits), the topic created compacted
    if it is missing. Raises kafka-python's ``KafkaError`` when the broker cannot be reached."""
    ensure_topics(bootstrap, {topic: 1}, timeout=timeout, configs={topic: {"cleanup.policy": "compact"}})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", fetch_max_wait_ms=fetch_max_wait_ms,
                             reconnect_backoff_max_ms=1000, max_partition_fetch_bytes=max_partition_fetch_bytes,
                             request_timeout_ms=15_000)  # fmt: skip
    consumer.assign([TopicPartition(topic, 0)])
    return consumer


def open_writer(bootstrap: str, max_request_size: int) -> KafkaProducer:
    """A producer whose sends are acknowledged by every in-sync replica, one at a time."""
    return KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, enable_idempotence=False,
                         retries=5, max_request_size=max_request_size, request_timeout_ms=15_000,
                         reconnect_backoff_max_ms=1000)  # fmt: skip
