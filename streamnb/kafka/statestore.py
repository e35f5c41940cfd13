"""Where learned state lives: the checkpoints of a consumer group's members, in any storage.

A checkpoint is the model of one *owner* (a member of the group) together with the next offset
of every partition it has learned from, written as one blob::

    STREAMNB-CHECKPOINT\\n
    {"format": ..., "version": 1, "id": ..., "member": ..., "offsets": {"topic:partition": next}, ...}\\n
    <sha256 of the header line and payload>\\n
    <payload: streamnb.persistence archive of the model, offsets and service state in ``extra``>

:class:`StateStore` is everything the service needs of a store (save, load, the other owners'
offsets, every owner's newest checkpoint); a storage only provides four blob operations (list,
get, put, delete) on ``(member, id)`` names, and must make a put all-or-nothing: a reader sees
the whole blob of an id or none of it. The stores: a directory (:class:`Checkpointer`), a
compacted Kafka topic (:class:`~streamnb.kafka.store_kafka.KafkaStore`) and S3-compatible object
storage (:class:`~streamnb.kafka.store_s3.S3Store`); :func:`~streamnb.kafka.stores.open_store`
picks one by URL.

Exactly once: a member writes its model and offsets in one blob; a member that takes over a
partition starts after the highest offset any owner has checkpointed for it (:meth:`claims`);
so each event is in exactly one owner's newest checkpoint, and the merge of every owner's newest
checkpoint (:func:`merge_state`) is the model of every event once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from streamnb import persistence
from streamnb.exceptions import StateError
from streamnb.kafka.lease import LeaseKeeper

__all__ = ["FORMAT", "MAGIC", "VERSION", "Checkpoint", "StateStore", "decode", "encode", "merge_state", "tp_key"]

log = logging.getLogger(__name__)

MAGIC = b"STREAMNB-CHECKPOINT\n"
FORMAT = "streamnb-checkpoint"
VERSION = 1


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
    """One member's view of the group's checkpoints in some storage (see the module docstring).

    Subclasses implement :meth:`_list`, :meth:`_get`, :meth:`_put` and :meth:`_delete`; they may
    also lock the member name (:meth:`acquire`) and hold connections (:meth:`release` ends them).

    Parameters
    ----------
    member
        This service instance's stable name: two live instances must not share one, and a
        restarted (or replacement) instance must reuse it to resume its state.
    keep
        How many recent checkpoints to keep (at least 2, for the fallback).
    """

    #: where the state is, for messages (``dir:PATH``, ``kafka:TOPIC``, ``s3://bucket/prefix``)
    url = "?"
    #: the lease on this member's name, for stores that guard it with one (see :mod:`streamnb.kafka.lease`)
    lease: LeaseKeeper | None = None

    def __init__(self, member: str = "main", keep: int = 2) -> None:
        self.member = member
        self.keep = max(2, keep)
        self.last_id = 0

    # -- the storage (subclasses) -----------------------------------------------------------------
    def _list(self, member: str | None = None) -> list[tuple[str, int]]:
        """``(member, id)`` of the stored checkpoints (of ``member``, or all), by member, newest first."""
        raise NotImplementedError

    def _get(self, member: str, ck_id: int) -> bytes:
        """The blob of one checkpoint (:class:`StateError` or :class:`OSError` if unreadable)."""
        raise NotImplementedError

    def _put(self, member: str, ck_id: int, data: bytes) -> None:
        """Store a blob, all or nothing (:class:`StateError` or :class:`OSError` on failure)."""
        raise NotImplementedError

    def _delete(self, member: str, ck_id: int) -> None:
        raise NotImplementedError

    def _name(self, member: str, ck_id: int) -> str:
        """How one checkpoint is named in messages."""
        return f"{member}.{ck_id:012d}"

    # -- exclusive use and connections ------------------------------------------------------------
    def acquire(self) -> None:
        """Claim this member's name (stores that can lock it fail fast on a second live instance)."""

    def release(self) -> None:
        """Release the name and close connections."""

    def keep_alive(self) -> None:
        """Called on every pass of the service loop: renew the member's lease when due
        (:class:`~streamnb.kafka.lease.MemberInUseError` if another instance has taken it)."""
        if self.lease is not None:
            self.lease.keep_alive()

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
        self._put(self.member, new_id, encode(header, payload))
        self.last_id = new_id
        for member, old in self._list(self.member)[self.keep:]:
            try:
                self._delete(member, old)
            except (OSError, StateError) as exc:  # pruning is best effort: the new one is written
                log.warning("could not delete old checkpoint %s: %s", self._name(member, old), exc)
        return new_id

    def newest(self, member: str) -> Checkpoint | None:
        """``member``'s newest intact checkpoint (falling back past damaged ones), None if it has none.

        Raises :class:`StateError` if checkpoints exist but none is intact.
        """
        listed = self._list(member)
        errors = []
        for m, ck_id in listed:
            name = self._name(m, ck_id)
            try:
                ck = read_blob(self._get(m, ck_id), name)
            except (StateError, OSError) as exc:
                log.warning("checkpoint %s is unusable (%s); trying the previous one", name, exc)
                errors.append(f"{name}: {exc}")
                continue
            if errors:
                log.warning("using previous good checkpoint %s", name)
            return ck
        if listed:
            raise StateError(f"no usable checkpoint for member {member!r} in {self.url}: " + "; ".join(errors))
        return None

    def newest_id(self, member: str) -> int | None:
        """The id of ``member``'s newest stored checkpoint (not verified), None if it has none."""
        listed = self._list(member)
        return listed[0][1] if listed else None

    def newest_offsets(self, member: str) -> dict[str, int] | None:
        """Offsets of ``member``'s newest intact checkpoint (headers only), None if it has none."""
        listed = self._list(member)
        errors = []
        for m, ck_id in listed:
            name = self._name(m, ck_id)
            try:
                return header_offsets(self._get(m, ck_id), name)
            except (StateError, OSError) as exc:
                errors.append(f"{name}: {exc}")
        if listed:
            raise StateError(f"no usable checkpoint for member {member!r} in {self.url}: " + "; ".join(errors))
        return None

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


def merge_state(store: StateStore) -> tuple[Any, dict[str, int]]:
    """Merge the newest checkpoint of every owner in ``store``: the model of the group.

    Returns the merged model and, per partition, the highest checkpointed next offset. Keyed
    models (:class:`~streamnb.perkey.PerKey`) merge with :func:`~streamnb.kafka.keyed.merge_keyed`.
    """
    models: list = []
    offsets: dict = {}
    for member in store.members():
        got = store.newest(member)
        if got is None:
            continue
        models.append(got.model)
        for tp, off in got.offsets.items():
            offsets[tp] = max(offsets.get(tp, 0), off)
    if not models:
        raise StateError(f"no checkpoint in {store.url}")
    from streamnb.perkey import PerKey

    if isinstance(models[0], PerKey):  # keys move with their partitions: their newest copies
        from streamnb.kafka.keyed import merge_keyed

        return merge_keyed(models), offsets
    model = models[0]
    for other in models[1:]:
        model = model.merge(other)
    return model, offsets
