"""The consuming side on confluent-kafka (librdkafka): the interface of :class:`~streamnb.kafka.source.Source`.

librdkafka decodes record batches in C, where kafka-python decodes them in Python: most of what
the service spends per event outside the model (``benchmarks/bench_kafka.py`` compares them). The rest of the service is unchanged: it sees kafka-python's ``TopicPartition`` keys and
records with ``topic``, ``partition``, ``offset``, ``key``, ``value`` attributes.

Differences handled here:

- rebalance callbacks run inside :meth:`poll` on the calling thread (kafka-python runs them on
  its IO thread); during ``on_assign`` the partitions are not assigned yet, so the seeks the
  service asks for there are collected and the assignment is made with those start offsets;
- the consumer is created even when no broker answers: :meth:`connect` asks for metadata until
  a broker answers (or the timeout passes, :class:`~streamnb.kafka.errors.BrokerUnavailableError`);
- the high watermark is the one of the last fetch (``get_watermark_offsets(cached=True)``);
- without a group id (static partitions only) a private group id is used and nothing is committed.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import confluent_kafka as ck
from kafka import TopicPartition

from streamnb.kafka.errors import BrokerUnavailableError, ServiceError
from streamnb.kafka.source import Backoff, Ownership

__all__ = ["ConfluentSource", "Record", "confluent_consumer_defaults"]

log = logging.getLogger(__name__)


def confluent_consumer_defaults(bootstrap: str, group_id: str | None) -> dict:
    """librdkafka settings matching :func:`~streamnb.kafka.source.consumer_defaults`."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group_id if group_id is not None else f"streamnb-private-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 300_000,
        "fetch.wait.max.ms": 10,  # how long an idle fetch waits: bounds the wait for a new event
        "socket.nagle.disable": True,
        "reconnect.backoff.max.ms": 1000,
        "enable.partition.eof": False,
        "socket.timeout.ms": 15_000,
    }


class Record:
    """A consumed message, as the service reads it."""

    __slots__ = ("topic", "partition", "offset", "key", "value", "_msg")

    def __init__(self, msg: Any, topic: str, partition: int) -> None:
        self.topic, self.partition, self._msg = topic, partition, msg
        self.offset = msg.offset()
        self.key = msg.key()
        self.value = msg.value()

    @property
    def headers(self) -> list | None:
        """The message's headers (read when asked: the service does not use them)."""
        return self._msg.headers()


class ConfluentSource(Ownership):
    """Consume ``topics`` as a group member (or statically assigned ``partitions``) with
    confluent-kafka; the same methods and hooks as :class:`~streamnb.kafka.source.Source`.

    ``config`` is in librdkafka's names and overrides :func:`confluent_consumer_defaults`.
    """

    def __init__(self, bootstrap: str, topics: list[str], group_id: str | None,
                 partitions: list[int] | None = None, batch_size: int = 1000, config: dict | None = None,
                 on_assigned: Callable[[set], None] | None = None,
                 on_revoked: Callable[[set, bool], None] | None = None) -> None:
        super().__init__(bootstrap, topics, group_id, partitions, on_assigned, on_revoked)
        self.batch_size = batch_size
        self.config = {**confluent_consumer_defaults(bootstrap, group_id), **(config or {})}
        self.consumer: Any = None
        self._seeks: dict[TopicPartition, int] | None = None  # collected while assigning

    # -- lifecycle -----------------------------------------------------------------------------
    def connect(self, stop: threading.Event, timeout: float | None = None) -> None:
        """Create the consumer once a broker answers (retrying with backoff), then subscribe
        or assign."""
        deadline = None if timeout is None else time.monotonic() + timeout
        consumer = ck.Consumer(self.config)
        backoff = Backoff()
        while True:
            try:
                metadata = consumer.list_topics(timeout=2.0)
                break
            except ck.KafkaException as exc:
                if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                    consumer.close()
                    raise BrokerUnavailableError(f"cannot reach a broker at {self.bootstrap}: {exc}") from exc
                delay = backoff.next()
                log.warning("broker at %s unavailable (%s); retrying in %.2f s", self.bootstrap, exc, delay)
                stop.wait(delay)
        self.consumer = consumer
        if self.partitions is None:
            consumer.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke,
                               on_lost=self._on_lost)
        else:
            tps = self._static_partitions(metadata, stop, deadline)
            self._assign(set(tps))

    def _static_partitions(self, metadata: Any, stop: threading.Event, deadline: float | None) -> list[TopicPartition]:
        backoff = Backoff()
        while True:
            missing = []
            for topic in self.topics:
                known = metadata.topics.get(topic)
                if known is None or known.error is not None or not known.partitions:
                    missing.append(topic)
                    continue
                bad = [p for p in self.partitions or [] if p not in known.partitions]
                if bad:
                    raise ServiceError(f"topic {topic!r} has no partition(s) {bad}; it has {sorted(known.partitions)}")
            if not missing:
                return [TopicPartition(t, p) for t in self.topics for p in self.partitions or []]
            if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                raise ServiceError(f"input topic(s) {missing} not found")
            log.warning("waiting for input topic(s) %s", missing)
            stop.wait(backoff.next())
            metadata = self.consumer.list_topics(timeout=2.0)

    def close(self) -> None:
        """Leave the group (revoking partitions through the hooks) and close."""
        if self.consumer is not None:
            try:
                self.consumer.close()
            except Exception:
                log.debug("consumer close failed", exc_info=True)
            self.consumer = None
        self._owned = set()

    # -- hooks (inside poll, on this thread) ----------------------------------------------------
    def _assign(self, tps: set) -> None:
        """Own ``tps``: the service's hook says where to start (its seeks are collected),
        then the partitions are assigned at those offsets."""
        self._seeks = {}
        try:
            self._owned |= tps
            log.info("assigned partitions %s", sorted(map(tuple, tps)))
            if self.on_assigned:
                self.on_assigned(tps)
            starts = self._seeks
        finally:
            self._seeks = None
        at = self._offsets({tp: starts.get(tp, ck.OFFSET_STORED) for tp in sorted(self._owned)})
        self.consumer.assign([ck.TopicPartition(tp.topic, tp.partition, offset) for tp, offset in at.items()])

    #: Seconds one lookup of :meth:`_offsets` may take before the start is left to librdkafka.
    LOOKUP_TIMEOUT = 2.0

    def _offsets(self, starts: dict) -> dict:
        """``starts`` with the logical offsets (the group's committed offset, the log's
        beginning or end) looked up: librdkafka resolves them itself, but only after a retry
        timer on some brokers (0.1 s for a committed offset, 0.5 s for the beginning, before
        the first event), a stall at every assignment. One round trip each here; a start whose
        lookup fails stays logical (librdkafka resolves it as before)."""
        out = dict(starts)
        consumer = self.consumer
        stored = [tp for tp, o in out.items() if o == ck.OFFSET_STORED]
        if stored and self.group_id is not None:  # a private group has committed nothing
            try:
                got = consumer.committed([ck.TopicPartition(tp.topic, tp.partition) for tp in stored],
                                         timeout=self.LOOKUP_TIMEOUT)
            except ck.KafkaException as exc:
                log.debug("committed offsets lookup failed: %s", exc)
                stored = []
            else:
                for p in got:
                    if p.error is None and p.offset >= 0:
                        out[TopicPartition(p.topic, p.partition)] = p.offset
        reset = str(self.config.get("auto.offset.reset", "largest")).lower()
        end = {"earliest": False, "smallest": False, "beginning": False, "latest": True, "largest": True,
               "end": True}.get(reset)
        for tp, o in out.items():
            if o == ck.OFFSET_BEGINNING or (o == ck.OFFSET_STORED and end is not None and tp in stored):
                try:
                    marks = consumer.get_watermark_offsets(ck.TopicPartition(tp.topic, tp.partition),
                                                           timeout=self.LOOKUP_TIMEOUT)
                except ck.KafkaException as exc:
                    log.debug("watermarks lookup of %s failed: %s", tp, exc)
                    continue
                if marks is not None and min(marks) >= 0:  # None: timed out
                    out[tp] = marks[1] if (o == ck.OFFSET_STORED and end) else marks[0]
        return out

    def _on_assign(self, consumer: Any, partitions: list) -> None:
        self._assign({TopicPartition(p.topic, p.partition) for p in partitions})

    def _revoke(self, partitions: list, lost: bool) -> None:
        tps = {TopicPartition(p.topic, p.partition) for p in partitions}
        log.info("%s partitions %s", "lost" if lost else "revoked", sorted(map(tuple, tps)))
        if self.on_revoked:
            self.on_revoked(tps, lost)
        self._owned -= tps
        try:
            self.consumer.unassign()
        except ck.KafkaException as exc:
            log.debug("unassign failed: %s", exc)

    def _on_revoke(self, consumer: Any, partitions: list) -> None:
        self._revoke(partitions, lost=False)

    def _on_lost(self, consumer: Any, partitions: list) -> None:
        self._revoke(partitions, lost=True)

    # -- data ------------------------------------------------------------------------------------
    def poll(self, timeout_ms: int, max_records: int) -> dict:
        """Up to ``max_records`` records, ``{TopicPartition: [Record, ...]}`` in offset order:
        what is already fetched, else the first message to arrive within ``timeout_ms`` and what
        came with it (``consume`` alone would wait for ``max_records`` or the timeout: a poll
        would hold an event for up to ``timeout_ms``)."""
        consumer = self.consumer
        messages = consumer.consume(num_messages=max_records, timeout=0)
        if not messages:
            first = consumer.poll(timeout_ms / 1000.0)
            if first is None:
                return {}
            messages = [first, *consumer.consume(num_messages=max_records - 1, timeout=0)] if max_records > 1 \
                else [first]
        out: dict[TopicPartition, list] = {}
        last: tuple | None = None
        batch: list = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() != ck.KafkaError._PARTITION_EOF:
                    log.warning("consumer error: %s", err)
                continue
            where = (msg.topic(), msg.partition())
            if where != last:
                tp = TopicPartition(*where)
                batch = out.setdefault(tp, [])
                last = where
            batch.append(Record(msg, tp.topic, tp.partition))
        return out

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if self._seeks is not None:  # inside the assignment: where to start
            self._seeks[tp] = offset
            return
        try:
            self.consumer.seek(ck.TopicPartition(tp.topic, tp.partition, offset))
        except ck.KafkaException:  # not fetching yet: assign again from there
            self._reassign({tp: offset})

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.seek(tp, ck.OFFSET_BEGINNING)

    def _reassign(self, starts: dict[TopicPartition, int]) -> None:
        owned = sorted(self._owned)
        positions = self.consumer.position([ck.TopicPartition(t.topic, t.partition) for t in owned])
        at = {TopicPartition(p.topic, p.partition): p.offset for p in positions}
        self.consumer.assign([ck.TopicPartition(t.topic, t.partition, starts.get(t, at.get(t, ck.OFFSET_STORED)))
                              for t in owned])

    def highwater(self, tp: TopicPartition) -> int | None:
        try:
            _, high = self.consumer.get_watermark_offsets(ck.TopicPartition(tp.topic, tp.partition), cached=True)
        except ck.KafkaException:
            return None
        return high if high >= 0 else None

    def commit(self, offsets: dict[TopicPartition, int]) -> bool:
        """Commit next offsets of *owned* partitions (for lag monitoring); False on failure."""
        if self.group_id is None:
            return True
        owned = [ck.TopicPartition(tp.topic, tp.partition, off) for tp, off in offsets.items() if tp in self._owned]
        if not owned:
            return True
        try:
            self.consumer.commit(offsets=owned, asynchronous=False)
            return True
        except ck.KafkaException as exc:
            log.warning("offset commit failed (%s); the checkpoint holds the offsets", exc)
            return False

    def commit_async(self, offsets: dict[TopicPartition, int], tps: Iterable[TopicPartition]) -> None:
        """Best-effort commit usable from a rebalance hook (never blocks)."""
        if self.consumer is None or self.group_id is None:
            return
        todo = [ck.TopicPartition(tp.topic, tp.partition, offsets[tp]) for tp in tps if tp in offsets]
        if todo:
            try:
                self.consumer.commit(offsets=todo, asynchronous=True)
            except ck.KafkaException as exc:
                log.debug("async commit failed: %s", exc)
