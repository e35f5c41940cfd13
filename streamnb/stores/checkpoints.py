"""Service checkpoints: the model of each member of a consumer group and its offsets, in any store.

A checkpoint is the model of one *owner* (a member of the group) together with the next offset
of every partition it has learned from, written as one blob::

    STREAMNB-CHECKPOINT\\n
    {"format": ..., "version": 1, "id": ..., "member": ..., "offsets": {"topic:partition": next}, ...}\\n
    <sha256 of the header line and payload>\\n
    <payload: streamnb.persistence archive of the model, offsets and service state in ``extra``>

:class:`StateStore` is everything the service needs of a store (save, load, the other owners'
offsets, every owner's newest checkpoint), written once over the blobs of any backend
(:mod:`streamnb.stores.blobs`). :func:`open_store` opens one by URL (:mod:`streamnb.stores.url`).
The blobs' names, by backend:

=========  ===============================  ==========================
backend    a checkpoint                     the member's lease
=========  ===============================  ==========================
``dir:``   ``MEMBER.000000000001.ckpt``     (an ``flock`` of ``MEMBER.lock``)
``s3://``  ``MEMBER/000000000001.ckpt``     ``leases/MEMBER.json``
``kafka``  ``MEMBER/000000000001`` chunked  ``lease/MEMBER``
=========  ===============================  ==========================

Exactly once: a member writes its model and offsets in one blob; a member that takes over a
partition starts after the highest offset any owner has checkpointed for it (:meth:`claims`);
so each event is in exactly one owner's newest checkpoint, and the merge of every owner's newest
checkpoint is the model of every event once.

>>> import tempfile, streamnb
>>> d = tempfile.mkdtemp()
>>> ck = Checkpointer(d, member="a")
>>> model = streamnb.CategoricalNB(); model.learn_one({"sky": "sunny"}, "play")
>>> ck.save(model, {"events:0": 1}, extra={"n_events": 1})
1
>>> got = ck.load()
>>> got.offsets, got.id, got.model.n_seen
({'events:0': 1}, 1, 1.0)
>>> Checkpointer(d, member="b").claims()
{'events:0': 1}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamnb import persistence
from streamnb.exceptions import StateError
from streamnb.stores.blobs import Blobs
from streamnb.stores.dir import DirBlobs
from streamnb.stores.lease import Lease, LeaseBlob, LeaseKeeper, MemberInUseError, holder
from streamnb.stores.url import StoreUrlError, parse_url

__all__ = ["FORMAT", "MAGIC", "VERSION", "Checkpoint", "Checkpointer", "KafkaStore", "S3Store", "StateStore",
           "decode", "encode", "open_store", "tp_key"]

log = logging.getLogger(__name__)

MAGIC = b"STREAMNB-CHECKPOINT\n"
FORMAT = "streamnb-checkpoint"
VERSION = 1

_MEMBER = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
#: per backend: a checkpoint's name, the pattern of names (member, id), the lease's name
LAYOUT: dict[str, tuple[str, re.Pattern, str | None]] = {
    "dir": ("{member}.{id:012d}.ckpt", re.compile(r"^([A-Za-z0-9_-]{1,100})\.(\d{12})\.ckpt$"), None),
    "s3": ("{member}/{id:012d}.ckpt", re.compile(r"^([A-Za-z0-9_-]{1,100})/(\d{12})\.ckpt$"),
           "leases/{member}.json"),
    "kafka": ("{member}/{id:012d}", re.compile(r"^([A-Za-z0-9_-]{1,100})/(\d{12})$"), "lease/{member}"),
}


@dataclass
class Checkpoint:
    """A loaded checkpoint: the model and the next offset of each partition it has learned."""

    model: Any
    offsets: dict[str, int]
    id: int
    member: str
    extra: dict = field(default_factory=dict)
    created: float = 0.0


def tp_key(topic: str, partition: int) -> str:
    """``"topic:partition"``, the key of a partition in checkpoint offsets."""
    return f"{topic}:{partition}"


def encode(header: dict, payload: bytes) -> bytes:
    """One checkpoint blob: magic line, header line, SHA-256 of both, payload."""
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(head + b"\n" + payload).hexdigest().encode()
    return MAGIC + head + b"\n" + digest + b"\n" + payload


def decode(data: bytes, what: str) -> tuple[dict, bytes]:
    """Header and payload of a checkpoint blob, checksum verified; :class:`StateError` if not intact."""
    if not data.startswith(MAGIC):
        raise StateError(f"{what}: not a streamnb checkpoint")
    rest = data[len(MAGIC):]
    try:
        head, digest, payload = rest.split(b"\n", 2)
    except ValueError as exc:
        raise StateError(f"{what}: truncated checkpoint") from exc
    if hashlib.sha256(head + b"\n" + payload).hexdigest().encode() != digest:
        raise StateError(f"{what}: checksum mismatch (damaged or truncated)")
    try:
        header = json.loads(head)
    except ValueError as exc:
        raise StateError(f"{what}: unreadable header") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise StateError(f"{what}: not a streamnb checkpoint")
    if header.get("version") != VERSION:
        raise StateError(f"{what}: checkpoint format version {header.get('version')} is not supported "
                         f"(this streamnb reads version {VERSION}); run the streamnb release that wrote "
                         f"it, or move the state aside to start from scratch")
    return header, payload


def header_offsets(data: bytes, what: str) -> dict[str, int]:
    """The offsets of a checkpoint blob from its header (checksum verified, model not loaded)."""
    header, _payload = decode(data, what)
    offsets = header.get("offsets")
    if not isinstance(offsets, dict) or not all(
            isinstance(k, str) and type(v) is int for k, v in offsets.items()):
        raise StateError(f"{what}: header offsets are not a map of partition to offset")
    return dict(offsets)


def read_blob(data: bytes, what: str) -> Checkpoint:
    """A checkpoint from its blob, fully verified (checksum, payload offsets = header offsets)."""
    header, payload = decode(data, what)
    model, extra = persistence.loads(payload, with_extra=True)
    if extra.get("offsets") != header.get("offsets"):
        raise StateError(f"{what}: header and payload offsets differ")
    return Checkpoint(model, dict(header["offsets"]), int(header["id"]), header["member"],
                      extra.get("service", {}), float(header.get("created", 0.0)))


class StateStore:
    """One member's view of the group's checkpoints in ``blobs`` (see the module docstring).

    Parameters
    ----------
    blobs
        The store's blobs (:func:`streamnb.stores.open_blobs`).
    member
        This service instance's stable name (letters, digits, ``_``, ``-``): two live instances
        must not share one, and a restarted (or replacement) instance must reuse it to resume.
    keep
        How many recent checkpoints to keep (at least 2, for the fallback).
    lease
        Seconds the member name's lease holds without renewal (``s3://`` and ``kafka``; a
        directory locks the name with ``flock`` instead), see :mod:`streamnb.stores.lease`.
    """

    #: the lease on this member's name, once :meth:`acquire` took it (``s3://`` and ``kafka``)
    lease: LeaseKeeper | None = None

    def __init__(self, blobs: Blobs, member: str = "main", keep: int = 2, lease: float = 15.0) -> None:
        if not _MEMBER.match(member):
            raise StoreUrlError(f"member name {member!r}: use 1-100 letters, digits, '_' or '-'")
        self.blobs, self.member, self.keep = blobs, member, max(2, keep)
        self.url = blobs.url
        self.last_id = 0
        self.lease_ttl = lease
        self._name_format, self._pattern, self._lease_format = LAYOUT[blobs.kind]
        self._own_lease = self._lease_blob(member) if self._lease_format is not None else None

    # -- names ------------------------------------------------------------------------------------
    def _blob(self, member: str, ck_id: int) -> str:
        return self._name_format.format(member=member, id=ck_id)

    def _name(self, member: str, ck_id: int) -> str:
        """How one checkpoint is named in messages."""
        return self.blobs.where(self._blob(member, ck_id))

    def _guard(self, name: str) -> str | None:
        m = self._pattern.match(name)
        return self._lease_format.format(member=m.group(1)) if m and self._lease_format else None

    def _list(self, member: str | None = None) -> list[tuple[str, int]]:
        """``(member, id)`` of the stored checkpoints (of ``member``, or all), by member, newest first."""
        prefix = "" if member is None else self._name_format.format(member=member, id=0)[:len(member) + 1]
        out = []
        for name in self.blobs.list(prefix, recursive=self.blobs.kind != "dir"):
            m = self._pattern.match(name)
            if m and (member is None or m.group(1) == member):
                out.append((m.group(1), int(m.group(2))))
        return sorted(out, key=lambda t: (t[0], -t[1]))

    def _get(self, member: str, ck_id: int) -> bytes:
        data = self.blobs.get(self._blob(member, ck_id))
        if data is None:
            raise StateError(f"{self._name(member, ck_id)}: no such checkpoint")
        return data

    # -- exclusive use and connections ------------------------------------------------------------
    def acquire(self) -> None:
        """Claim this member's name: a second live instance fails fast (:class:`MemberInUseError`)."""
        if isinstance(self.blobs, DirBlobs):
            if not self.blobs.hold(self.member):
                raise MemberInUseError(f"another running instance uses member name {self.member!r} in "
                                       f"{self.blobs.path}; give each instance its own --member")
            return
        self.lease = LeaseKeeper(self.member, self.url, self.lease_ttl, self._read_lease, self._swap_lease)
        self.lease.acquire()

    def release(self) -> None:
        """Release the name and close connections."""
        if self.lease is not None:
            self.lease.release()
        self.blobs.close()

    def keep_alive(self) -> None:
        """Called on every pass of the service loop: renew the member's lease when due
        (:class:`MemberInUseError` if another instance has taken it)."""
        if self.lease is not None:
            self.lease.keep_alive()

    def _lease_blob(self, member: str) -> LeaseBlob:
        if self._lease_format is None:
            raise StateError(f"{self.url} locks member names, it keeps no leases")
        return LeaseBlob(self.blobs, self._lease_format.format(member=member), member)

    def lease_of(self, member: str) -> Lease | None:
        """``member``'s lease (None: none), read fresh."""
        if member == self.member and self._own_lease is not None:
            return self._own_lease.read()
        return self._lease_blob(member).read()

    def _read_lease(self) -> Lease | None:
        return self.lease_of(self.member)

    def _swap_lease(self, new: Lease, seen: Lease | None) -> bool:
        """Write this member's lease ``new`` if it still is ``seen`` (what the last read returned)."""
        return self._lease_blob(self.member).swap(new, seen) if self._own_lease is None \
            else self._own_lease.swap(new, seen)

    # -- checkpoints ------------------------------------------------------------------------------
    def save(self, model: Any, offsets: dict[str, int], extra: dict | None = None) -> int:
        """Write a new checkpoint atomically and return its id; prune old ones."""
        ids = [i for _, i in self._list(self.member)]
        new_id = max([self.last_id, *ids]) + 1
        payload = persistence.dumps(model, extra={"offsets": dict(offsets), "service": extra or {}})
        header = {
            "format": FORMAT,
            "version": VERSION,
            "id": new_id,
            "member": self.member,
            "created": time.time(),
            "offsets": dict(offsets),
            "n_seen": float(model.n_seen),
        }
        if self.lease is not None:  # never write over a member name another instance has taken
            self.lease.renew()
        self.blobs.put(self._blob(self.member, new_id), encode(header, payload), only_new=True)
        self.last_id = new_id
        for member, old in self._list(self.member)[self.keep:]:
            try:
                self.blobs.delete(self._blob(member, old))
            except (OSError, StateError) as exc:  # pruning is best effort: the new one is written
                log.warning("could not delete old checkpoint %s: %s", self._name(member, old), exc)
        return new_id

    def newest(self, member: str) -> Checkpoint | None:
        """``member``'s newest intact checkpoint (falling back past damaged ones), None if it has none.

        Raises :class:`StateError` if checkpoints exist but none is intact.
        """
        return self._newest(member, lambda data, name: read_blob(data, name))

    def newest_offsets(self, member: str) -> dict[str, int] | None:
        """Offsets of ``member``'s newest intact checkpoint (headers only), None if it has none."""
        return self._newest(member, header_offsets)

    def _newest(self, member: str, read: Any) -> Any:
        listed = self._list(member)
        errors = []
        for m, ck_id in listed:
            name = self._name(m, ck_id)
            try:
                got = read(self._get(m, ck_id), name)
            except (StateError, OSError) as exc:
                log.warning("checkpoint %s is unusable (%s); trying the previous one", name, exc)
                errors.append(f"{name}: {exc}")
                continue
            if errors:
                log.warning("using previous good checkpoint %s", name)
            return got
        if listed:
            raise StateError(f"no usable checkpoint for member {member!r} in {self.url}: " + "; ".join(errors))
        return None

    def newest_id(self, member: str) -> int | None:
        """The id of ``member``'s newest stored checkpoint (not verified), None if it has none."""
        listed = self._list(member)
        return listed[0][1] if listed else None

    def load(self) -> Checkpoint | None:
        """This member's newest intact checkpoint, None if it has none.

        Raises :class:`StateError` if checkpoints exist but none is intact (starting afresh
        would silently learn events twice or lose some).
        """
        ck = self.newest(self.member)
        if ck is not None:
            self.last_id = max(self.last_id, ck.id)
        return ck

    def members(self) -> list[str]:
        """Every owner with a stored checkpoint."""
        return sorted({m for m, _ in self._list()})

    def claims(self) -> dict[str, int]:
        """The highest next offset per partition in the other members' newest checkpoints.

        Read from the checkpoint headers only (checksum verified, models not loaded): the
        service calls this on every partition assignment.
        """
        out: dict[str, int] = {}
        for member in self.members():
            if member == self.member:
                continue
            try:
                offsets = self.newest_offsets(member)
            except StateError as exc:
                log.error("ignoring member %s: %s", member, exc)
                continue
            for tp, off in (offsets or {}).items():
                out[tp] = max(out.get(tp, 0), off)
        return out


class Checkpointer(StateStore):
    """Checkpoints in a (possibly shared) directory (``dir:PATH``), created if needed."""

    def __init__(self, directory: str | os.PathLike, member: str = "main", keep: int = 2) -> None:
        super().__init__(DirBlobs(directory), member, keep)
        self.directory = Path(directory)

    @staticmethod
    def read(path: str | os.PathLike) -> Checkpoint:
        """Read and fully verify one checkpoint file; :class:`StateError` if it is not intact."""
        return read_blob(Path(path).read_bytes(), str(path))

    @staticmethod
    def read_offsets(path: str | os.PathLike) -> dict[str, int]:
        """The offsets of one checkpoint file from its header (checksum verified), the model not
        loaded: the check that the payload's offsets equal the header's is left to :meth:`read`."""
        return header_offsets(Path(path).read_bytes(), str(path))


class KafkaStore(StateStore):
    """Checkpoints in a compacted topic (``kafka:TOPIC``), chunks of at most ``chunk_bytes``
    (keep it below the topic's ``max.message.bytes``), see :mod:`streamnb.stores.kafka`."""

    def __init__(self, bootstrap: str, topic: str, member: str = "main", keep: int = 2,
                 chunk_bytes: int = 512 * 1024, timeout: float = 30.0, lease: float = 15.0) -> None:
        from streamnb.stores.kafka import Fence, KafkaBlobs

        self.fence = Fence(self._guard, holder)  # the member's lease guards its checkpoints
        blobs = KafkaBlobs(bootstrap, topic, chunk_bytes=chunk_bytes, timeout=timeout, fence=self.fence)
        super().__init__(blobs, member, keep, lease)
        blobs.mine(f"{member}/")  # this member's own checkpoints are known here once read

    def acquire(self) -> None:
        super().acquire()
        assert self.lease is not None
        self.fence.token = self.lease.instance  # its records carry its instance from now on


class S3Store(StateStore):
    """Checkpoints under a prefix of a bucket (``s3://BUCKET/PREFIX``), see :mod:`streamnb.stores.s3`."""

    def __init__(self, bucket: str, prefix: str = "", member: str = "main", keep: int = 2,
                 client: Any = None, lease: float = 15.0) -> None:
        from streamnb.stores.s3 import S3Blobs

        super().__init__(S3Blobs(bucket, prefix, client), member, keep, lease)


def open_store(url: str, member: str = "main", bootstrap: str | None = None, keep: int = 2,
               lease: float = 15.0) -> StateStore:
    """The checkpoints at ``url`` (``dir:PATH``, ``kafka:TOPIC`` with ``bootstrap``,
    ``kafka://BOOTSTRAP/TOPIC``, ``s3://BUCKET/PREFIX``), as seen by ``member``; ``lease``:
    seconds the member name's lease holds in ``kafka`` and ``s3://`` (:mod:`streamnb.stores.lease`).

    Nothing is contacted until the store is first used.
    """
    where = parse_url(url, bootstrap, what="state")
    if where.kind == "dir":
        return Checkpointer(where.where, member, keep)
    if where.kind == "s3":
        return S3Store(where.where, where.prefix, member, keep, lease=lease)
    if not where.bootstrap:
        raise StoreUrlError(f"state URL {url!r} needs the Kafka bootstrap servers (--bootstrap)")
    if where.prefix:
        raise StoreUrlError(f"state URL {url!r}: checkpoints take a whole topic (kafka://BOOTSTRAP/TOPIC)")
    return KafkaStore(where.bootstrap, where.where, member, keep, lease=lease)
