"""The Kafka store (``kafka:TOPIC``): checkpoints in a compacted changelog topic, no disk.

The topic has one partition (so a manifest always follows its chunks) and
``cleanup.policy=compact``. A checkpoint blob (see :mod:`streamnb.kafka.statestore`: the model
and the next offset of every input partition it covers) is written as

- chunks of at most ``chunk_bytes``, key ``chunk/<member>/<id>/<index>``, acknowledged first;
- then one manifest, key ``manifest/<member>/<id>``: the number of chunks, the blob's size and its
  SHA-256.

A reader takes a checkpoint only through its manifest and only if every chunk is there and the
hash matches, so a write torn anywhere (a crash between chunks, before the manifest) is never
read: the owner's previous checkpoint stays its newest. Keys name the checkpoint id, so
compaction never mixes the chunks of two checkpoints; pruning sends tombstones for the
checkpoints past ``keep``.

Restoring reads the topic from its beginning to its end. "The end" is at least the broker's end
offset asked fresh on each read (on Tansu, the base offset of the last record batch + 1: each
manifest is sent and acknowledged alone, so it is always before that point) and the high-water
mark of the last fetch. After the first read the store only reads what was appended since.

A member name is guarded by a lease (:mod:`streamnb.kafka.lease`), key ``lease/<member>``: a
second live instance with one ``--member`` is refused at start (:class:`MemberInUseError`), and an
instance that finds its lease taken over writes no more checkpoints and stops. Every reader
replays the log in order and accepts a takeover record only if it names the holder it replaces,
so of two instances racing for an expired lease the first in the log wins. The chunks, manifests
and tombstones of a holder carry its instance id (record header ``streamnb-instance``), and a
reader ignores those whose instance is not the member's holder at that point of the log (the
fencing token): an instance that stalled past its lease and wakes after being replaced, between
its last check and its write, cannot overwrite or delete its successor's checkpoints.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from streamnb.exceptions import StateError
from streamnb.kafka.errors import BrokerUnavailableError
from streamnb.kafka.lease import Lease, LeaseKeeper
from streamnb.kafka.statestore import StateStore
from streamnb.kafka.compacted import open_reader, open_writer

__all__ = ["KafkaStore"]

log = logging.getLogger(__name__)

MANIFEST_FORMAT = "streamnb-state-manifest"
_MANIFEST = re.compile(r"^manifest/([A-Za-z0-9_-]{1,100})/(\d{12})$")
_CHUNK = re.compile(r"^chunk/([A-Za-z0-9_-]{1,100})/(\d{12})/(\d{6})$")
_LEASE = re.compile(r"^lease/([A-Za-z0-9_-]{1,100})$")
#: the record header naming the instance that wrote a checkpoint record under its lease
INSTANCE_HEADER = "streamnb-instance"
#: at most this many chunks per checkpoint (with 512 KiB chunks: 500 GiB)
MAX_CHUNKS = 999_999


def _manifest_key(member: str, ck_id: int) -> bytes:
    return f"manifest/{member}/{ck_id:012d}".encode()


def _chunk_key(member: str, ck_id: int, index: int) -> bytes:
    return f"chunk/{member}/{ck_id:012d}/{index:06d}".encode()


class KafkaStore(StateStore):
    """Checkpoints of every member in one compacted topic (see the module docstring).

    Parameters
    ----------
    bootstrap, topic
        Where the changelog is; the topic is created (1 partition, compacted) if missing.
    member, keep
        See :class:`~streamnb.kafka.statestore.StateStore`.
    chunk_bytes
        Largest record value; keep it below the topic's ``max.message.bytes`` (Kafka's default
        is ~1 MB).
    timeout
        Seconds to reach the broker and to read the topic to its end before giving up.
    lease
        Seconds the member's lease holds without renewal (see :mod:`streamnb.kafka.lease`).
    """

    def __init__(self, bootstrap: str, topic: str, member: str = "main", keep: int = 2,
                 chunk_bytes: int = 512 * 1024, timeout: float = 30.0, lease: float = 15.0) -> None:
        if chunk_bytes < 1:
            raise ValueError("chunk_bytes must be >= 1")
        super().__init__(member, keep)
        self.bootstrap, self.topic = bootstrap, topic
        self.url = f"kafka:{topic}"
        self.chunk_bytes, self.timeout = chunk_bytes, timeout
        self._tp = TopicPartition(topic, 0)
        self._consumer: KafkaConsumer | None = None
        self._producer: KafkaProducer | None = None
        #: member -> id -> manifest (``chunks``, ``bytes``, ``sha256``)
        self._manifests: dict[str, dict[int, dict]] = {}
        #: (member, id) -> index -> chunk bytes
        self._chunks: dict[tuple[str, int], dict[int, bytes]] = {}
        self.records_read = 0
        self._read_once = False
        #: member -> its lease in force at the point of the log read so far
        self._leases: dict[str, Lease] = {}
        self.lease_ttl = lease

    # -- connections ----------------------------------------------------------------------------
    def _connect(self) -> KafkaConsumer:
        if self._consumer is None:
            try:
                consumer = open_reader(self.bootstrap, self.topic, self.timeout, fetch_max_wait_ms=50)
            except KafkaError as exc:
                raise BrokerUnavailableError(f"state store {self.url}: cannot reach {self.bootstrap}: {exc}") from exc
            consumer.seek_to_beginning(self._tp)
            self._consumer = consumer
        return self._consumer

    def _producer_(self) -> KafkaProducer:
        if self._producer is None:
            try:
                self._producer = open_writer(self.bootstrap, max(1024 * 1024, self.chunk_bytes + 64 * 1024))
            except KafkaError as exc:
                raise StateError(f"state store {self.url}: cannot reach {self.bootstrap}: {exc}") from exc
        return self._producer

    # -- the member's lease -------------------------------------------------------------------------
    def acquire(self) -> None:
        """Take this member's lease (:class:`~streamnb.kafka.lease.MemberInUseError` if another
        live instance holds it)."""
        self.lease = LeaseKeeper(self.member, self.url, self.lease_ttl, self._read_lease, self._swap_lease)
        self.lease.acquire()

    def lease_of(self, member: str) -> Lease | None:
        """``member``'s lease in force (None: none), read to the end of the topic."""
        self._catch_up()
        return self._leases.get(member)

    def _read_lease(self) -> Lease | None:
        return self.lease_of(self.member)

    def _swap_lease(self, new: Lease, seen: Lease | None) -> bool:
        """Append ``new`` and read the log to its end: the replay decides whether it took."""
        self._send([(f"lease/{self.member}".encode(), new.to_bytes(self.member))])
        self._catch_up()
        return self._leases.get(self.member) == new

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()
        for client in (self._consumer, self._producer):
            if client is not None:
                try:
                    client.close()
                except Exception as exc:  # noqa: BLE001 - closing is best effort
                    log.debug("closing a state store client: %s", exc)
        self._consumer = self._producer = None

    # -- reading ----------------------------------------------------------------------------------
    def _catch_up(self) -> None:
        """Read the topic to its end (see the module docstring)."""
        consumer = self._connect()
        deadline = time.monotonic() + self.timeout
        try:
            end = consumer.end_offsets([self._tp]).get(self._tp) or 0
            while True:
                for records in consumer.poll(timeout_ms=100, max_records=10_000).values():
                    for rec in records:
                        self._take(rec)
                hw = consumer.highwater(self._tp)
                pos = consumer.position(self._tp)
                if pos >= end and hw is not None and pos >= hw:
                    return
                if time.monotonic() > deadline:
                    raise StateError(f"state store {self.url}: could not read to the end of the topic in "
                                     f"{self.timeout:g} s (at {pos}, end {max(end, hw or 0)})")
        except KafkaError as exc:
            raise StateError(f"state store {self.url}: reading failed: {exc}") from exc

    def _take(self, rec: Any) -> None:
        self.records_read += 1
        try:
            key = rec.key.decode("ascii") if rec.key is not None else ""
        except UnicodeDecodeError:
            key = ""
        m = _MANIFEST.match(key)
        c = None if m else _CHUNK.match(key)
        owner = m or c
        if owner is not None and self._fenced(owner.group(1), rec):
            return
        if m:
            member, ck_id = m.group(1), int(m.group(2))
            if rec.value is None:
                self._forget(member, ck_id)
                return
            manifest = _parse_manifest(rec.value)
            if manifest is None:
                log.error("state store %s: ignoring an unreadable manifest %s at offset %d", self.url, key, rec.offset)
                return
            self._manifests.setdefault(member, {})[ck_id] = manifest
            self._trim(member)
            return
        if c:
            member, ck_id, index = c.group(1), int(c.group(2)), int(c.group(3))
            if rec.value is None:
                self._chunks.get((member, ck_id), {}).pop(index, None)
                return
            newest = max(self._manifests.get(member, {0: {}}), default=0)
            if ck_id > newest - self.keep:  # older chunks can never be read again
                self._chunks.setdefault((member, ck_id), {})[index] = rec.value
            return
        le = _LEASE.match(key)
        if le:
            self._take_lease(le.group(1), rec)
            return
        log.warning("state store %s: ignoring a record with key %r at offset %d", self.url, key[:100], rec.offset)

    def _fenced(self, member: str, rec: Any) -> bool:
        """A checkpoint record (chunk, manifest or tombstone) written by an instance that is not
        ``member``'s lease holder at this point of the log: ignored (the fencing token)."""
        holder = self._leases.get(member)
        if holder is None:
            return False
        writer = next((bytes(v) for k, v in (rec.headers or ()) if k == INSTANCE_HEADER), None)
        if writer is None or writer == holder.instance.encode():
            return False
        log.warning("state store %s: ignoring %s at offset %d, written by instance %s after member %s was "
                    "leased to %s", self.url, rec.key[:100], rec.offset, writer[:200], member, holder.instance)
        return True

    def _take_lease(self, member: str, rec: Any) -> None:
        """Replay one lease record: a renewal or release by the holder, or a takeover naming the
        holder it replaces (or the first lease seen) is in force; any other is ignored."""
        if rec.value is None:
            self._leases.pop(member, None)
            return
        lease = Lease.from_bytes(rec.value)
        if lease is None:
            log.error("state store %s: ignoring an unreadable lease of %s at offset %d", self.url, member, rec.offset)
            return
        holder = self._leases.get(member)
        if holder is None or lease.instance == holder.instance or lease.prev == holder.instance:
            self._leases[member] = lease
        else:
            log.debug("state store %s: lease of %s by %s at offset %d lost to %s", self.url, member,
                      lease.instance, rec.offset, holder.instance)

    def _forget(self, member: str, ck_id: int) -> None:
        self._manifests.get(member, {}).pop(ck_id, None)
        self._chunks.pop((member, ck_id), None)

    def _trim(self, member: str) -> None:
        """Keep the newest ``keep + 1`` manifests of ``member`` and only the chunks they (or a
        checkpoint still being written) can use: memory stays bounded however long the log."""
        ids = sorted(self._manifests[member], reverse=True)
        for old in ids[self.keep + 1:]:
            self._forget(member, old)
        floor = ids[min(len(ids), self.keep + 1) - 1]
        for key in [k for k in self._chunks if k[0] == member and k[1] < floor]:
            del self._chunks[key]

    def _list(self, member: str | None = None) -> list[tuple[str, int]]:
        if member != self.member or not self._read_once:  # this member's own writes are known here
            self._catch_up()
            self._read_once = True
        out = [(m, i) for m, ids in self._manifests.items() if member is None or m == member for i in ids]
        return sorted(out, key=lambda t: (t[0], -t[1]))

    def _get(self, member: str, ck_id: int) -> bytes:
        name = self._name(member, ck_id)
        manifest = self._manifests.get(member, {}).get(ck_id)
        if manifest is None:
            raise StateError(f"{name}: no manifest")
        chunks = self._chunks.get((member, ck_id), {})
        missing = [i for i in range(manifest["chunks"]) if i not in chunks]
        if missing:
            raise StateError(f"{name}: {len(missing)} of {manifest['chunks']} chunks missing (first: {missing[0]})")
        data = b"".join(chunks[i] for i in range(manifest["chunks"]))
        if len(data) != manifest["bytes"] or hashlib.sha256(data).hexdigest() != manifest["sha256"]:
            raise StateError(f"{name}: chunks do not match the manifest (size or SHA-256)")
        return data

    def _name(self, member: str, ck_id: int) -> str:
        return f"{self.url} {member}/{ck_id:012d}"

    # -- writing ----------------------------------------------------------------------------------
    def _send(self, items: list[tuple[bytes, bytes | None]]) -> None:
        """Send records and wait until every one is acknowledged (or raise :class:`StateError`)."""
        producer = self._producer_()
        headers = [(INSTANCE_HEADER, self.lease.instance.encode())] if self.lease is not None and self.lease.held else None
        try:
            futures = [producer.send(self.topic, key=k, value=v, partition=0, headers=headers) for k, v in items]
            producer.flush(timeout=self.timeout)
            for f in futures:
                f.get(timeout=self.timeout)
        except KafkaError as exc:
            try:
                producer.close(timeout=0)
            finally:
                self._producer = None  # a fresh producer next time (kafka-python's may not recover)
            raise StateError(f"state store {self.url}: write failed: {exc}") from exc

    def _put(self, member: str, ck_id: int, data: bytes) -> None:
        n = max(1, -(-len(data) // self.chunk_bytes))
        if n > MAX_CHUNKS:
            raise StateError(f"checkpoint of {len(data)} bytes needs more than {MAX_CHUNKS} chunks")
        self._send([(_chunk_key(member, ck_id, i), data[i * self.chunk_bytes:(i + 1) * self.chunk_bytes])
                    for i in range(n)])
        manifest = {"format": MANIFEST_FORMAT, "version": 1, "member": member, "id": ck_id, "chunks": n,
                    "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        self._send([(_manifest_key(member, ck_id), json.dumps(manifest, sort_keys=True).encode())])
        # what this member wrote is known without reading it back (the reader keeps no chunks of it)
        self._manifests.setdefault(member, {})[ck_id] = _parse_manifest(json.dumps(manifest).encode()) or {}
        self._chunks[(member, ck_id)] = {i: data[i * self.chunk_bytes:(i + 1) * self.chunk_bytes]
                                         for i in range(n)}
        self._trim(member)

    def _delete(self, member: str, ck_id: int) -> None:
        manifest = self._manifests.get(member, {}).get(ck_id)
        n = manifest["chunks"] if manifest else 0
        # the manifest goes first: a reader never sees a manifest whose chunks were deleted
        self._send([(_manifest_key(member, ck_id), None)])
        self._send([(_chunk_key(member, ck_id, i), None) for i in range(n)])
        self._forget(member, ck_id)


def _parse_manifest(value: bytes) -> dict | None:
    """A manifest's fields if it is well formed, else None."""
    if len(value) > 4096:
        return None
    try:
        m = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(m, dict) or m.get("format") != MANIFEST_FORMAT or m.get("version") != 1:
        return None
    chunks, size, sha = m.get("chunks"), m.get("bytes"), m.get("sha256")
    if (type(chunks) is not int or not 1 <= chunks <= MAX_CHUNKS or type(size) is not int or size < 0
            or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha)):
        return None
    return {"chunks": chunks, "bytes": size, "sha256": sha}
