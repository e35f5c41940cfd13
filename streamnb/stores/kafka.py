"""The ``kafka://BOOTSTRAP/TOPIC/PREFIX`` (or ``kafka:TOPIC``) backend: blobs as records of a
compacted one-partition topic, no disk.

Blob ``NAME`` is written under the record key ``PREFIX/NAME`` (``NAME`` without a prefix), one
of two ways:

- **one record** (``chunk_bytes=None``): key ``PREFIX/NAME``, value the blob; at most
  ``max_record_bytes``;
- **chunked** (``chunk_bytes=N``): records of at most N bytes, keys ``chunk/PREFIX/NAME/000000``,
  ``.../000001``, ..., acknowledged first, then a manifest, key ``manifest/PREFIX/NAME``, with the
  number of chunks, the blob's size and its SHA-256. A blob is read only through its manifest
  and only if every chunk is there and the hash matches, so a write torn anywhere (a crash
  between chunks, before the manifest) is never read: the blob keeps its previous bytes.

A delete is a tombstone (the manifest's first, then the chunks'), which compaction turns into
nothing. Both forms are read whatever the writer's setting. The topic has one partition (so a
manifest always follows its chunks) and ``cleanup.policy=compact``; it is created if missing.

Kafka has no reads by key: the backend reads the topic from its beginning to its end (once, then
only what was appended since; a name declared :meth:`~KafkaBlobs.mine` is not read again) and
keeps an index of offsets, not blobs (small values of a single record, such as leases, are kept
whole); :meth:`KafkaBlobs.get` fetches a blob's records at their offsets. "The end" is at least
the broker's end offset asked fresh on each read (on Tansu, the base offset of the last record
batch + 1: each manifest is sent and acknowledged alone, so it is always before that point) and
the high-water mark of the last fetch.

:meth:`KafkaBlobs.swap` appends one record carrying the SHA-256 of the value it expects (record
header ``streamnb-expect``) and reads the log to its end: every reader replays the log in order
and takes such a record only if the blob then holds the expected value, so of two racing swaps
the first in the log wins, and every reader agrees.

A :class:`Fence` guards a writer's blobs: records carry the writer's token (record header
``streamnb-instance``), and a reader ignores the chunks, manifests and tombstones of a name
whose guard (a lease, :mod:`streamnb.stores.lease`) names another holder at that point of the
log, so a writer that lost its lease cannot overwrite or delete its successor's blobs.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from streamnb.exceptions import StateError
from streamnb.kafka.errors import BrokerUnavailableError
from streamnb.kafka.topics import ensure_topics
from streamnb.stores.blobs import Blobs, check_name, json_record

__all__ = ["EXPECT_HEADER", "INSTANCE_HEADER", "Fence", "KafkaBlobs"]

log = logging.getLogger(__name__)

MANIFEST_FORMAT = "streamnb-state-manifest"
#: the record header naming the writer (its lease's instance) of a guarded record
INSTANCE_HEADER = "streamnb-instance"
#: the record header of a swap: the SHA-256 of the value the writer read ("-": none)
EXPECT_HEADER = "streamnb-expect"
#: at most this many chunks per blob (with 512 KiB chunks: 500 GiB)
MAX_CHUNKS = 999_999
#: the largest one-record blob (keep below the topic's ``max.message.bytes``, ~1 MB by default)
MAX_RECORD_BYTES = 1024 * 1024
#: one-record values up to this size are kept in memory (leases), larger ones are fetched
SMALL = 4096
_CHUNK = re.compile(r"^chunk/(.+)/(\d{6})$")


@dataclass
class Fence:
    """Whose records count: ``guard(name)`` is the name of the lease guarding blob ``name``
    (None: unguarded), ``holder(value)`` the holder a lease value names, and ``token`` this
    writer's own (None: it writes unmarked records)."""

    guard: Callable[[str], str | None]
    holder: Callable[[bytes], str | None]
    token: str | None = None


class KafkaBlobs(Blobs):
    """Blobs in one compacted topic (see the module).

    Parameters
    ----------
    bootstrap, topic, prefix
        Where the records are (prefix: ``""`` for the whole topic).
    chunk_bytes
        Write each blob as chunks of this size and a manifest; None: as one record.
    timeout
        Seconds to reach the broker, to read the topic to its end, and for one read or write.
    fence
        Guards writers' blobs with their leases (see :class:`Fence`).
    """

    kind = "kafka"

    def __init__(self, bootstrap: str, topic: str, prefix: str = "", chunk_bytes: int | None = None,
                 timeout: float = 30.0, fence: Fence | None = None,
                 max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        if chunk_bytes is not None and chunk_bytes < 1:
            raise ValueError("chunk_bytes must be >= 1")
        self.bootstrap, self.topic, self.prefix = bootstrap, topic, prefix.strip("/")
        self.url = f"kafka:{topic}" + (f"/{self.prefix}" if self.prefix else "")
        self.chunk_bytes, self.timeout, self.fence = chunk_bytes, timeout, fence
        self.max_record_bytes = max_record_bytes
        self._tp = TopicPartition(topic, 0)
        self._consumer: KafkaConsumer | None = None
        self._producer: KafkaProducer | None = None
        self._next = 0  # the next offset to replay
        self._moved = False  # the consumer fetched elsewhere: seek back to _next before replaying
        self._read_once = False
        self._mine: list[str] = []
        #: name -> (offset, value if at most SMALL bytes else None) of its newest one-record blob
        self._plain: dict[str, tuple[int, bytes | None]] = {}
        #: name -> manifest (chunks, bytes, sha256) and name -> chunk index -> offset
        self._manifests: dict[str, dict] = {}
        self._chunks: dict[str, dict[int, int]] = {}
        self.records_read = 0

    # -- names and keys ---------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        check_name(name)
        if not self.prefix and name.split("/", 1)[0] in ("chunk", "manifest"):
            raise StateError(f"{name!r}: names under chunk/ and manifest/ are the chunked blobs' own")
        return f"{self.prefix}/{name}" if self.prefix else name

    def _name(self, key: str) -> str | None:
        """The blob name of a record key under this prefix (None: another prefix's)."""
        if not self.prefix:
            return key
        return key[len(self.prefix) + 1:] if key.startswith(self.prefix + "/") else None

    def where(self, name: str) -> str:
        return f"{self.url} {name}"

    def mine(self, prefix: str) -> None:
        """Only this object writes the names under ``prefix``: after the first read of the
        topic, listing them reads nothing more from the broker."""
        self._mine.append(prefix)

    # -- connections ------------------------------------------------------------------------------
    def _reader(self) -> KafkaConsumer:
        if self._consumer is None:
            try:
                ensure_topics(self.bootstrap, {self.topic: 1}, timeout=self.timeout,
                              configs={self.topic: {"cleanup.policy": "compact"}})
                consumer = KafkaConsumer(
                    bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                    auto_offset_reset="earliest", fetch_max_wait_ms=20, reconnect_backoff_max_ms=1000,
                    max_partition_fetch_bytes=max(1 << 20, 2 * self._largest()),
                    request_timeout_ms=15_000)
                consumer.assign([self._tp])
            except KafkaError as exc:
                raise BrokerUnavailableError(f"{self.url}: cannot reach {self.bootstrap}: {exc}") from exc
            consumer.seek(self._tp, self._next)
            self._consumer = consumer
        return self._consumer

    def _writer(self) -> KafkaProducer:
        if self._producer is None:
            biggest = self._largest() + 64 * 1024
            try:
                self._producer = KafkaProducer(
                    bootstrap_servers=self.bootstrap, acks="all", linger_ms=0, enable_idempotence=False,
                    retries=5, max_request_size=max(1 << 20, biggest), request_timeout_ms=15_000,
                    reconnect_backoff_max_ms=1000)
            except KafkaError as exc:
                raise StateError(f"{self.url}: cannot reach {self.bootstrap}: {exc}") from exc
        return self._producer

    def _largest(self) -> int:
        """The largest record value this object writes."""
        return max(self.max_record_bytes, self.chunk_bytes or 0)

    def close(self) -> None:
        for client in (self._consumer, self._producer):
            if client is not None:
                try:
                    client.close()
                except Exception as exc:  # noqa: BLE001 - closing is best effort
                    log.debug("closing a client of %s: %s", self.url, exc)
        self._consumer = self._producer = None

    # -- reading the log ----------------------------------------------------------------------------
    def catch_up(self) -> None:
        """Read the topic to its end (see the module)."""
        consumer = self._reader()
        if self._moved:
            consumer.seek(self._tp, self._next)
            self._moved = False
        deadline = time.monotonic() + self.timeout
        try:
            end = consumer.end_offsets([self._tp]).get(self._tp) or 0
            while True:
                for records in consumer.poll(timeout_ms=100, max_records=10_000).values():
                    for rec in records:
                        self._replay(rec)
                        self._next = rec.offset + 1
                hw = consumer.highwater(self._tp)
                pos = consumer.position(self._tp)
                if pos >= end and hw is not None and pos >= hw:
                    self._read_once = True
                    return
                if time.monotonic() > deadline:
                    raise StateError(f"{self.url}: could not read to the end of the topic in "
                                     f"{self.timeout:g} s (at {pos}, end {max(end, hw or 0)})")
        except KafkaError as exc:
            raise StateError(f"{self.url}: reading failed: {exc}") from exc

    def _fresh(self, prefix: str) -> None:
        if not self._read_once or not any(prefix.startswith(p) for p in self._mine):
            self.catch_up()

    def _replay(self, rec: Any) -> None:
        self.records_read += 1
        try:
            key = rec.key.decode("ascii") if rec.key is not None else ""
        except UnicodeDecodeError:
            key = ""
        if key.startswith("manifest/") or key.startswith("chunk/"):
            chunk = _CHUNK.match(key) if key.startswith("chunk/") else None
            if key.startswith("chunk/") and chunk is None:
                log.warning("%s: ignoring a record with key %r at offset %d", self.url, key[:100], rec.offset)
                return
            name = self._name(chunk.group(1) if chunk else key[len("manifest/"):])
            if name is None or self._fenced(name, rec):
                return
            if chunk:
                if rec.value is None:
                    self._chunks.get(name, {}).pop(int(chunk.group(2)), None)
                else:
                    self._chunks.setdefault(name, {})[int(chunk.group(2))] = rec.offset
            elif rec.value is None:
                self._manifests.pop(name, None)
                self._chunks.pop(name, None)
            else:
                manifest = _parse_manifest(rec.value)
                if manifest is None:
                    log.error("%s: ignoring an unreadable manifest %s at offset %d", self.url, key[:100],
                              rec.offset)
                else:
                    self._manifests[name] = manifest
            return
        name = self._name(key)
        if name is None:
            return
        if not key:
            log.warning("%s: ignoring a record without a key at offset %d", self.url, rec.offset)
            return
        expect = _header(rec, EXPECT_HEADER)
        if expect is not None and expect != self._digest(name):
            log.debug("%s: swap of %s at offset %d lost to an earlier write", self.url, name, rec.offset)
            return
        if rec.value is None:
            self._plain.pop(name, None)
        else:
            self._plain[name] = (rec.offset, bytes(rec.value) if len(rec.value) <= SMALL else None)

    def _digest(self, name: str) -> str:
        """What a swap of ``name`` expecting its current value names (see the module)."""
        held = self._plain.get(name)
        if held is None:
            return "-"
        return hashlib.sha256(held[1]).hexdigest() if held[1] is not None else "?"

    def _fenced(self, name: str, rec: Any) -> bool:
        """A guarded record written by another than the guard's holder at this point of the log."""
        if self.fence is None:
            return False
        guard = self.fence.guard(name)
        held = self._plain.get(guard) if guard is not None else None
        holder = self.fence.holder(held[1]) if held is not None and held[1] is not None else None
        if holder is None:
            return False
        writer = _header(rec, INSTANCE_HEADER)
        if writer is None or writer == holder:
            return False
        log.warning("%s: ignoring %s at offset %d, written by %s while %s held %s", self.url,
                    rec.key[:100], rec.offset, writer[:200], holder, guard)
        return True

    def _fetch(self, name: str, offsets: builtins.list[int]) -> builtins.list[bytes]:
        """The values at ``offsets`` (records of blob ``name``), in that order."""
        consumer = self._reader()
        wanted = set(offsets)
        want, got = sorted(wanted), dict[int, bytes]()
        self._moved = True
        deadline = time.monotonic() + self.timeout
        try:
            consumer.seek(self._tp, want[0])
            while len(got) < len(want):
                for records in consumer.poll(timeout_ms=100, max_records=1000).values():
                    for rec in records:
                        if rec.offset in wanted and rec.value is not None:
                            got[rec.offset] = bytes(rec.value)
                missing = [o for o in want if o not in got]
                if not missing:
                    break
                pos = consumer.position(self._tp)
                if pos > missing[0]:
                    raise StateError(f"{self.where(name)}: offset {missing[0]} no longer holds it")
                if missing[0] > pos + 1000:
                    consumer.seek(self._tp, missing[0])
                if time.monotonic() > deadline:
                    raise StateError(f"{self.where(name)}: could not read offset {missing[0]} in "
                                     f"{self.timeout:g} s")
        except KafkaError as exc:
            raise StateError(f"{self.where(name)}: reading failed: {exc}") from exc
        return [got[o] for o in offsets]

    # -- the blobs ----------------------------------------------------------------------------------
    def list(self, prefix: str = "", recursive: bool = True) -> list[str]:
        self._fresh(prefix)
        names = set(self._manifests) | set(self._plain)
        return sorted(n for n in names if n.startswith(prefix) and (recursive or "/" not in n[len(prefix):]))

    def get(self, name: str) -> bytes | None:
        self._key(name)
        self._fresh(name)
        manifest = self._manifests.get(name)
        if manifest is not None:
            chunks = self._chunks.get(name, {})
            missing = [i for i in range(manifest["chunks"]) if i not in chunks]
            if missing:
                raise StateError(f"{self.where(name)}: {len(missing)} of {manifest['chunks']} chunks missing "
                                 f"(first: {missing[0]})")
            data = b"".join(self._fetch(name, [chunks[i] for i in range(manifest["chunks"])]))
            if len(data) != manifest["bytes"] or hashlib.sha256(data).hexdigest() != manifest["sha256"]:
                raise StateError(f"{self.where(name)}: chunks do not match the manifest (size or SHA-256)")
            return data
        held = self._plain.get(name)
        if held is None:
            return None
        return held[1] if held[1] is not None else self._fetch(name, [held[0]])[0]

    def _send(self, items: builtins.list[tuple[str, bytes | None]],
              expect: str | None = None) -> builtins.list[int]:
        """Send records and wait until every one is acknowledged; their offsets."""
        producer = self._writer()
        headers = []
        if self.fence is not None and self.fence.token is not None:
            headers.append((INSTANCE_HEADER, self.fence.token.encode()))
        if expect is not None:
            headers.append((EXPECT_HEADER, expect.encode()))
        try:
            futures = [producer.send(self.topic, key=k.encode(), value=v, partition=0, headers=headers or None)
                       for k, v in items]
            producer.flush(timeout=self.timeout)
            return [f.get(timeout=self.timeout).offset for f in futures]
        except KafkaError as exc:
            try:
                producer.close(timeout=0)
            finally:
                self._producer = None  # a fresh producer next time (kafka-python's may not recover)
            raise StateError(f"{self.url}: write failed: {exc}") from exc

    def put(self, name: str, data: bytes, only_new: bool = False) -> None:
        key = self._key(name)
        if self.chunk_bytes is None:
            if len(data) > self.max_record_bytes:
                raise StateError(f"{self.where(name)}: {len(data)} bytes, more than one record holds "
                                 f"({self.max_record_bytes}); larger blobs go to dir: or s3:// stores")
            (offset,) = self._send([(key, data)])
            self._manifests.pop(name, None)
            self._plain[name] = (offset, data if len(data) <= SMALL else None)
            return
        size = self.chunk_bytes
        n = max(1, -(-len(data) // size))
        if n > MAX_CHUNKS:
            raise StateError(f"{self.where(name)}: {len(data)} bytes need more than {MAX_CHUNKS} chunks")
        offsets = self._send([(f"chunk/{key}/{i:06d}", data[i * size:(i + 1) * size]) for i in range(n)])
        manifest = {"format": MANIFEST_FORMAT, "version": 1, "name": key, "chunks": n, "bytes": len(data),
                    "sha256": hashlib.sha256(data).hexdigest()}
        self._send([(f"manifest/{key}", json.dumps(manifest, sort_keys=True).encode())])
        self._chunks[name] = dict(enumerate(offsets))
        self._manifests[name] = {k: manifest[k] for k in ("chunks", "bytes", "sha256")}

    def delete(self, name: str) -> None:
        key = self._key(name)
        manifest = self._manifests.get(name)
        if manifest is not None:  # the manifest goes first: a reader never sees one whose chunks went
            self._send([(f"manifest/{key}", None)])
            self._send([(f"chunk/{key}/{i:06d}", None) for i in range(manifest["chunks"])])
        if name in self._plain:
            self._send([(key, None)])
        self._manifests.pop(name, None)
        self._chunks.pop(name, None)
        self._plain.pop(name, None)

    def swap(self, name: str, new: bytes, expected: bytes | None) -> bool:
        if len(new) > SMALL:
            raise StateError(f"{self.where(name)}: a swapped blob holds at most {SMALL} bytes")
        digest = "-" if expected is None else hashlib.sha256(expected).hexdigest()
        self._send([(self._key(name), new)], expect=digest)
        self.catch_up()
        held = self._plain.get(name)
        return held is not None and held[1] == new


def _header(rec: Any, name: str) -> str | None:
    value = next((v for k, v in (rec.headers or ()) if k == name), None)
    return bytes(value).decode("utf-8", "replace") if value is not None else None


def _parse_manifest(value: bytes) -> dict | None:
    """A manifest's fields if it is well formed, else None."""
    m = json_record(value, MANIFEST_FORMAT, 4096)
    if m is None:
        return None
    chunks, size, sha = m.get("chunks"), m.get("bytes"), m.get("sha256")
    if (type(chunks) is not int or not 1 <= chunks <= MAX_CHUNKS or type(size) is not int or size < 0
            or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha)):
        return None
    return {"chunks": chunks, "bytes": size, "sha256": sha}
