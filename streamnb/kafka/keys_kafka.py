"""Evicted keys' learners in a compacted Kafka topic: the store
:class:`~streamnb.perkey.PerKey` uses for a ``store`` URL ``kafka://BOOTSTRAP/TOPIC/PREFIX``.

One record per eviction, key ``<prefix>/<hash of the key>`` (compaction keeps the newest per
key), value the learner with its key and position (:mod:`streamnb.persistence`, the safe
format), written with ``acks=all`` and waited for: durable when :meth:`KafkaKeyStore.save`
returns. The topic has one partition and is created compacted if missing.

Kafka has no reads by key: on first use the store reads the topic from its beginning to its end
once and keeps, for each key under its prefix, the offset of its newest record (an index of
offsets, not learners: tens of bytes a key); a key read back is one fetch at its offset. The
start therefore reads every record of the topic once (each key's newest, after compaction).

Whoever writes a prefix must be its only writer (the Kafka service gives each member its own,
the member name, guarded by the member's lease in the ``kafka:`` state store).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from streamnb import persistence
from streamnb.exceptions import StateError
from streamnb.kafka.compacted import open_reader, open_writer
from streamnb.keystore import key_digest
from streamnb.stats.index import encode_key

__all__ = ["KafkaKeyStore", "keys_url"]

log = logging.getLogger(__name__)

#: the largest learner written as one record (keep below the topic's ``max.message.bytes``)
MAX_RECORD_BYTES = 1024 * 1024


def keys_url(bootstrap: str, topic: str, prefix: str) -> str:
    """The ``store`` URL of the keys under ``prefix`` in ``topic``."""
    return f"kafka://{bootstrap}/{topic}/{prefix}"


class KafkaKeyStore:
    """Learners of evicted keys in a Kafka topic (see the module).

    Parameters
    ----------
    url
        ``kafka://BOOTSTRAP/TOPIC/PREFIX`` (:func:`keys_url`).
    read_only
        Only read (a store another process writes).
    timeout
        Seconds to reach the broker, to read the topic to its end, and for one read or write.
    """

    def __init__(self, url: str, read_only: bool = False, timeout: float = 30.0) -> None:
        parts = url[len("kafka://"):].split("/") if url.startswith("kafka://") else []
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"key store {url!r}: use kafka://BOOTSTRAP/TOPIC/PREFIX")
        self.url, self.read_only, self.timeout = url, read_only, timeout
        self.bootstrap, self.topic, self.prefix = parts
        self._tp = TopicPartition(self.topic, 0)
        self._consumer: KafkaConsumer | None = None
        self._producer: KafkaProducer | None = None
        #: key digest -> offset of its newest record (None until the topic was read once)
        self._offsets: dict[str, int] | None = None

    def _record_key(self, key: Hashable) -> bytes:
        return f"{self.prefix}/{key_digest(key)}".encode()

    # -- connections ------------------------------------------------------------------------------
    def _consumer_(self) -> KafkaConsumer:
        if self._consumer is None:
            try:
                self._consumer = open_reader(self.bootstrap, self.topic, self.timeout, fetch_max_wait_ms=20,
                                             max_partition_fetch_bytes=2 * MAX_RECORD_BYTES)  # fmt: skip
            except KafkaError as exc:
                raise StateError(f"key store {self.url}: cannot reach {self.bootstrap}: {exc}") from exc
        return self._consumer

    def _producer_(self) -> KafkaProducer:
        if self._producer is None:
            try:
                self._producer = open_writer(self.bootstrap, MAX_RECORD_BYTES + 64 * 1024)
            except KafkaError as exc:
                raise StateError(f"key store {self.url}: cannot reach {self.bootstrap}: {exc}") from exc
        return self._producer

    def close(self) -> None:
        for client in (self._consumer, self._producer):
            if client is not None:
                try:
                    client.close()
                except Exception as exc:  # noqa: BLE001 - closing is best effort
                    log.debug("closing a key store client: %s", exc)
        self._consumer = self._producer = None

    # -- the index ----------------------------------------------------------------------------------
    def _index(self) -> dict[str, int]:
        """Each key's newest offset, the topic read to its end on first use."""
        if self._offsets is not None:
            return self._offsets
        consumer = self._consumer_()
        offsets: dict[str, int] = {}
        mine = f"{self.prefix}/".encode()
        deadline = time.monotonic() + self.timeout
        try:
            consumer.seek_to_beginning(self._tp)
            end = consumer.end_offsets([self._tp]).get(self._tp) or 0
            while consumer.position(self._tp) < end:
                if time.monotonic() > deadline:
                    raise StateError(f"key store {self.url}: could not read the topic to its end ({end}) in "
                                     f"{self.timeout:g} s")
                for records in consumer.poll(timeout_ms=100, max_records=10_000).values():
                    for rec in records:
                        if rec.key is None or not rec.key.startswith(mine):
                            continue
                        digest = rec.key[len(mine):].decode("ascii", "replace")
                        if rec.value is None:
                            offsets.pop(digest, None)
                        else:
                            offsets[digest] = rec.offset
        except KafkaError as exc:
            raise StateError(f"key store {self.url}: reading failed: {exc}") from exc
        self._offsets = offsets
        return offsets

    # -- the store ------------------------------------------------------------------------------------
    def save(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner (acknowledged by every in-sync replica when this returns)."""
        if self.read_only:
            raise StateError(f"{self.url} is read only here: another process writes it")
        index = self._index()
        data = persistence.dumps(model, extra={"key": [encode_key(key)], "position": position})
        if len(data) > MAX_RECORD_BYTES:
            raise StateError(f"key store {self.url}: the learner of key {key!r} is {len(data)} bytes, more than "
                             f"one record holds ({MAX_RECORD_BYTES}): keep more keys resident, or use dir: "
                             "or s3:// state")
        producer = self._producer_()
        try:
            meta = producer.send(self.topic, key=self._record_key(key), value=data, partition=0).get(
                timeout=self.timeout)
        except KafkaError as exc:
            try:
                producer.close(timeout=0)
            finally:
                self._producer = None
            raise StateError(f"key store {self.url}: write failed: {exc}") from exc
        index[key_digest(key)] = meta.offset

    def stage(self, key: Hashable, model: Any, position: int) -> None:
        """:meth:`save` (acknowledged writes only)."""
        self.save(key, model, position)

    def sync(self) -> None:
        """Nothing to do: every learner written is acknowledged."""

    def load(self, key: Hashable) -> tuple[Any, int] | None:
        """The learner saved for ``key`` and its position, or None."""
        offset = self._index().get(key_digest(key))
        if offset is None:
            return None
        consumer = self._consumer_()
        want = self._record_key(key)
        deadline = time.monotonic() + self.timeout
        try:
            consumer.seek(self._tp, offset)
            while True:
                for records in consumer.poll(timeout_ms=100, max_records=1).values():
                    for rec in records:
                        if rec.offset == offset and rec.key == want and rec.value is not None:
                            return self._learner(rec.value, key, offset)
                        raise StateError(f"key store {self.url}: offset {offset} does not hold key {key!r}")
                if time.monotonic() > deadline:
                    raise StateError(f"key store {self.url}: could not read offset {offset} in {self.timeout:g} s")
        except KafkaError as exc:
            raise StateError(f"key store {self.url}: reading failed: {exc}") from exc

    def _learner(self, value: bytes, key: Hashable, offset: int) -> tuple[Any, int]:
        model, extra = persistence.loads(value, with_extra=True)
        if extra.get("key") != [encode_key(key)]:
            raise StateError(f"key store {self.url}: offset {offset} holds another key's model")
        position = extra.get("position", -1)
        if type(position) is not int:
            raise StateError(f"key store {self.url}: offset {offset}: the position is not an integer")
        return model, position

    def __len__(self) -> int:
        return len(self._index())
