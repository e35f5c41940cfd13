"""The consuming side: a KafkaConsumer with reconnection, rebalance hooks, lag and safe commits."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from streamnb.kafka.errors import BrokerUnavailableError, ServiceError

__all__ = ["Backoff", "Ownership", "Source", "consumer_defaults"]

log = logging.getLogger(__name__)


def consumer_defaults(group_id: str | None, batch_size: int) -> dict:
    """Consumer settings that work on Kafka and Tansu (the embedded broker) alike: commits are
    explicit (no auto-commit), a new group starts at the earliest offset (``"latest"`` is
    wrong on Tansu, which takes the log end from the base offset of the last record batch), and
    the session timeout is 6 s (Tansu answers a second JoinGroup after about half the session
    timeout: Kafka's default 45 s makes a join take ~23 s)."""
    return {
        "group_id": group_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
        "max_poll_interval_ms": 300_000,
        "fetch_max_wait_ms": 10,  # how long an idle fetch waits: bounds the wait for a new event
        "reconnect_backoff_max_ms": 1000,
        "max_poll_records": batch_size,
        "request_timeout_ms": 15_000,
    }


class Backoff:
    """Exponential backoff delays: 0.25 s doubling up to ``cap``.

    >>> b = Backoff(cap=1.0); [b.next() for _ in range(4)]
    [0.25, 0.5, 1.0, 1.0]
    """

    def __init__(self, first: float = 0.25, cap: float = 8.0) -> None:
        self.first, self.cap, self._next = first, cap, first

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.first


class _Listener(ConsumerRebalanceListener):
    def __init__(self, source: Source) -> None:
        self.source = source

    def on_partitions_revoked(self, revoked):
        self.source.partitions_revoked(set(revoked), lost=False)

    def on_partitions_lost(self, lost):
        self.source.partitions_revoked(set(lost), lost=True)

    def on_partitions_assigned(self, assigned):
        self.source.partitions_assigned(set(assigned))


class Ownership:
    """What both consumer backends keep alike: what to consume and the ownership hooks, the
    partitions owned (``_owned``, kept by the rebalance hooks) and the lag behind the log end,
    from each one's :meth:`highwater`."""

    def __init__(self, bootstrap: str, topics: list[str], group_id: str | None, partitions: list[int] | None,
                 on_assigned: Callable[[set], None] | None, on_revoked: Callable[[set, bool], None] | None) -> None:
        self.bootstrap = bootstrap
        self.topics = list(topics)
        self.group_id = group_id
        self.partitions = partitions
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self._owned: set[TopicPartition] = set()

    @property
    def owned(self) -> set[TopicPartition]:
        return set(self._owned)

    def highwater(self, tp: TopicPartition) -> int | None:
        raise NotImplementedError

    def lag(self, next_offsets: dict[TopicPartition, int]) -> int | None:
        """Messages between the next offsets and the log end (highwater of the last fetch)."""
        total = 0
        for tp in self._owned:
            hw = self.highwater(tp)
            if hw is None:
                return None
            total += max(0, hw - next_offsets.get(tp, 0))
        return total


class Source(Ownership):
    """Consume ``topics`` as a group member (or statically assigned ``partitions``).

    ``on_assigned(tps)`` and ``on_revoked(tps, lost)`` run when ownership changes; they may
    ``seek``. kafka-python runs them on its IO thread while :meth:`poll` waits, so they must not
    make blocking client calls (commits happen in the poll loop, never in the hooks).
    """

    def __init__(self, bootstrap: str, topics: list[str], group_id: str | None,
                 partitions: list[int] | None = None, batch_size: int = 1000, config: dict | None = None,
                 on_assigned: Callable[[set], None] | None = None,
                 on_revoked: Callable[[set, bool], None] | None = None) -> None:
        super().__init__(bootstrap, topics, group_id, partitions, on_assigned, on_revoked)
        self.config = {**consumer_defaults(group_id, batch_size), **(config or {})}
        self.consumer: KafkaConsumer | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def connect(self, stop: threading.Event, timeout: float | None = None) -> None:
        """Create the consumer, retrying with backoff while no broker answers."""
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = Backoff()
        while True:
            try:
                consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, **self.config)
                break
            except KafkaError as exc:  # KafkaTimeoutError("Unable to bootstrap ...") in 3.x
                if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                    raise BrokerUnavailableError(f"cannot reach a broker at {self.bootstrap}: {exc}") from exc
                delay = backoff.next()
                log.warning("broker at %s unavailable (%s); retrying in %.2f s", self.bootstrap, exc, delay)
                stop.wait(delay)
        self.consumer = consumer
        if self.partitions is None:
            consumer.subscribe(self.topics, listener=_Listener(self))
        else:
            tps = self._static_partitions(stop, deadline)
            consumer.assign(tps)
            self.partitions_assigned(set(tps))

    def _static_partitions(self, stop: threading.Event, deadline: float | None) -> list[TopicPartition]:
        assert self.consumer is not None and self.partitions is not None
        backoff = Backoff()
        while True:
            missing = []
            for topic in self.topics:
                known = self.consumer.partitions_for_topic(topic)
                if not known:
                    missing.append(topic)
                    continue
                bad = [p for p in self.partitions if p not in known]
                if bad:
                    raise ServiceError(f"topic {topic!r} has no partition(s) {bad}; it has {sorted(known)}")
            if not missing:
                return [TopicPartition(t, p) for t in self.topics for p in self.partitions]
            if stop.is_set() or (deadline is not None and time.monotonic() > deadline):
                raise ServiceError(f"input topic(s) {missing} not found")
            log.warning("waiting for input topic(s) %s", missing)
            stop.wait(backoff.next())

    def close(self) -> None:
        """Leave the group (revoking partitions through the hooks) and close."""
        if self.consumer is not None:
            try:
                self.consumer.close(autocommit=False)
            except Exception:
                log.debug("consumer close failed", exc_info=True)
            self.consumer = None
        self._owned = set()

    # -- hooks -----------------------------------------------------------------------------------
    def partitions_assigned(self, tps: set) -> None:
        """The consumer now owns ``tps`` (from the rebalance listener, or the static
        assignment): kept, then ``on_assigned``."""
        self._owned |= tps
        log.info("assigned partitions %s", sorted(map(tuple, tps)))
        if self.on_assigned:
            self.on_assigned(tps)

    def partitions_revoked(self, tps: set, lost: bool) -> None:
        """The consumer no longer owns ``tps`` (``lost``: without a rebalance, e.g. after a
        session timeout): ``on_revoked``, then forgotten."""
        log.info("%s partitions %s", "lost" if lost else "revoked", sorted(map(tuple, tps)))
        if self.on_revoked:
            self.on_revoked(tps, lost)
        self._owned -= tps

    # -- data ------------------------------------------------------------------------------------
    def poll(self, timeout_ms: int, max_records: int) -> dict:
        assert self.consumer is not None
        return self.consumer.poll(timeout_ms=timeout_ms, max_records=max_records)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        assert self.consumer is not None
        self.consumer.seek(tp, offset)

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        assert self.consumer is not None
        self.consumer.seek_to_beginning(tp)

    def highwater(self, tp: TopicPartition) -> int | None:
        assert self.consumer is not None
        return self.consumer.highwater(tp)

    def commit(self, offsets: dict[TopicPartition, int]) -> bool:
        """Commit next offsets of *owned* partitions (for lag monitoring); False on failure."""
        assert self.consumer is not None
        if self.group_id is None:
            return True
        owned = {tp: OffsetAndMetadata(off, "", -1) for tp, off in offsets.items() if tp in self._owned}
        if not owned:
            return True
        try:
            self.consumer.commit(owned, timeout_ms=5000) if _commit_takes_timeout() else self.consumer.commit(owned)
            return True
        except (KafkaError, RuntimeError) as exc:
            log.warning("offset commit failed (%s); the checkpoint holds the offsets", exc)
            return False

    def commit_async(self, offsets: dict[TopicPartition, int], tps: Iterable[TopicPartition]) -> None:
        """Best-effort commit usable from a rebalance hook (never blocks)."""
        if self.consumer is None or self.group_id is None:
            return
        todo = {tp: OffsetAndMetadata(offsets[tp], "", -1) for tp in tps if tp in offsets}
        if todo:
            try:
                self.consumer.commit_async(todo)
            except (KafkaError, RuntimeError) as exc:
                log.debug("async commit failed: %s", exc)


def _commit_takes_timeout() -> bool:
    import inspect

    return "timeout_ms" in inspect.signature(KafkaConsumer.commit).parameters

