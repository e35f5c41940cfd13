"""Checkpoints: model state and the next offset of every partition, written atomically together.

A checkpoint file is ``<member>.<id>.ckpt`` in the checkpoint directory::

    STREAMNB-CHECKPOINT\\n
    {"format": ..., "version": 1, "id": ..., "member": ..., "offsets": {"topic:partition": next}, ...}\\n
    <sha256 of the header line and payload>\\n
    <payload: streamnb.persistence archive of the model, offsets and service state in ``extra``>

It is written to a temporary file, fsynced, renamed into place and the directory fsynced, so a
crash leaves either the old or the new checkpoint. The newest ``keep`` checkpoints are kept: if
the newest is damaged (checksum, truncation) the previous good one is used, whose offsets match
its model, so exactly-once state still holds. Members of one consumer group share the directory:
a member taking over a partition starts after every offset any member has checkpointed for it.

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

import fcntl
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
from streamnb.persistence import write_atomic
from streamnb.exceptions import StateError
from streamnb.kafka.errors import ServiceError

__all__ = ["FORMAT", "VERSION", "Checkpoint", "Checkpointer", "merge_checkpoints"]

log = logging.getLogger(__name__)

MAGIC = b"STREAMNB-CHECKPOINT\n"
FORMAT = "streamnb-checkpoint"
VERSION = 1
_MEMBER = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_NAME = re.compile(r"^([A-Za-z0-9_-]+)\.(\d{12})\.ckpt$")


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


def _encode(header: dict, payload: bytes) -> bytes:
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    digest = hashlib.sha256(head + b"\n" + payload).hexdigest().encode()
    return MAGIC + head + b"\n" + digest + b"\n" + payload


def _decode(data: bytes, what: str) -> tuple[dict, bytes]:
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
    if header.get("format") != FORMAT:
        raise StateError(f"{what}: not a streamnb checkpoint")
    if header.get("version") != VERSION:
        raise StateError(f"{what}: checkpoint format version {header.get('version')} is not supported "
                         f"(this streamnb reads version {VERSION}); run the streamnb release that wrote "
                         f"it, or move the checkpoint directory aside to start from scratch")
    return header, payload


class Checkpointer:
    """Writes and reads one member's checkpoints in a (possibly shared) directory.

    Parameters
    ----------
    directory
        Created if needed.
    member
        This service instance's stable name (letters, digits, ``_``, ``-``): two live
        instances must not share one, and a restarted instance must reuse its own.
    keep
        How many recent checkpoints to keep (at least 2, for the fallback).
    """

    def __init__(self, directory: str | os.PathLike, member: str = "main", keep: int = 2) -> None:
        if not _MEMBER.match(member):
            raise ValueError(f"member name {member!r}: use 1-100 letters, digits, '_' or '-'")
        self.directory = Path(directory)
        self.member = member
        self.keep = max(2, keep)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = None
        self.last_id = 0

    # -- exclusive use -------------------------------------------------------------------------
    def acquire(self) -> None:
        """Lock this member's name in the directory (a second live instance fails fast)."""
        fd = os.open(self.directory / f"{self.member}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise ServiceError(
                f"another running instance uses member name {self.member!r} in {self.directory}; "
                "give each instance its own --member"
            ) from exc
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- files ---------------------------------------------------------------------------------
    def _files(self, member: str | None = None) -> list[tuple[str, int, Path]]:
        """``(member, id, path)`` of checkpoint files, newest first."""
        out = []
        for path in self.directory.iterdir():
            m = _NAME.match(path.name)
            if m and (member is None or m.group(1) == member):
                out.append((m.group(1), int(m.group(2)), path))
        return sorted(out, key=lambda t: (t[0], -t[1]))

    def save(self, model: Any, offsets: dict[str, int], extra: dict | None = None) -> int:
        """Write a new checkpoint atomically and return its id; prune old ones."""
        ids = [i for _, i, _ in self._files(self.member)]
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
        write_atomic(self.directory / f"{self.member}.{new_id:012d}.ckpt", _encode(header, payload))
        self.last_id = new_id
        for _, _, old in self._files(self.member)[self.keep:]:
            old.unlink(missing_ok=True)
        return new_id

    @staticmethod
    def read(path: str | os.PathLike) -> Checkpoint:
        """Read and fully verify one checkpoint file; :class:`StateError` if it is not intact."""
        path = Path(path)
        header, payload = _decode(path.read_bytes(), str(path))
        model, extra = persistence.loads(payload, with_extra=True)
        if extra.get("offsets") != header.get("offsets"):
            raise StateError(f"{path}: header and payload offsets differ")
        return Checkpoint(model, dict(header["offsets"]), int(header["id"]), header["member"],
                          extra.get("service", {}), float(header.get("created", 0.0)))

    @staticmethod
    def read_offsets(path: str | os.PathLike) -> dict[str, int]:
        """The offsets of one checkpoint file from its header, without loading the model.

        The checksum over header and payload is verified (a damaged file raises
        :class:`StateError`); the payload is not deserialized, so the check that its offsets
        equal the header's is left to :meth:`read` (the owner's own load).
        """
        path = Path(path)
        header, _payload = _decode(path.read_bytes(), str(path))
        offsets = header.get("offsets")
        if not isinstance(offsets, dict) or not all(
                isinstance(k, str) and type(v) is int for k, v in offsets.items()):
            raise StateError(f"{path}: header offsets are not a map of partition to offset")
        return dict(offsets)

    def _newest_offsets(self, member: str) -> dict[str, int] | None:
        """Offsets of ``member``'s newest intact checkpoint (headers only), None if it has none."""
        files = self._files(member)
        errors = []
        for _, _, path in files:
            try:
                return self.read_offsets(path)
            except (StateError, OSError) as exc:
                errors.append(f"{path.name}: {exc}")
        if files:
            raise StateError(f"no usable checkpoint for member {member!r} in {self.directory}: "
                             + "; ".join(errors))
        return None

    def _newest(self, member: str) -> Checkpoint | None:
        files = self._files(member)
        errors = []
        for _, _, path in files:
            try:
                ck = self.read(path)
            except (StateError, OSError) as exc:
                log.warning("checkpoint %s is unusable (%s); trying the previous one", path, exc)
                errors.append(f"{path.name}: {exc}")
                continue
            if errors:
                log.warning("using previous good checkpoint %s", path.name)
            return ck
        if files:
            raise StateError(f"no usable checkpoint for member {member!r} in {self.directory}: "
                             + "; ".join(errors))
        return None

    def load(self) -> Checkpoint | None:
        """This member's newest intact checkpoint, None if it has none.

        Raises :class:`StateError` if checkpoints exist but none is intact (starting afresh
        would silently learn events twice or lose some).
        """
        ck = self._newest(self.member)
        if ck is not None:
            self.last_id = max(self.last_id, ck.id)
        return ck

    def members(self) -> list[str]:
        return sorted({m for m, _, _ in self._files()})

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
                offsets = self._newest_offsets(member)
            except StateError as exc:
                log.error("ignoring member %s: %s", member, exc)
                continue
            for tp, off in (offsets or {}).items():
                out[tp] = max(out.get(tp, 0), off)
        return out


def merge_checkpoints(directory: str | os.PathLike) -> tuple[Any, dict[str, int]]:
    """Merge the newest checkpoint of every member in ``directory``: the model of the group.

    Returns the merged model and, per partition, the highest checkpointed next offset.
    """
    ck = Checkpointer(directory, member="merge-reader")
    model: Any = None
    offsets: dict = {}
    for member in ck.members():
        got = ck._newest(member)
        if got is None:
            continue
        model = got.model if model is None else model.merge(got.model)
        for tp, off in got.offsets.items():
            offsets[tp] = max(offsets.get(tp, 0), off)
    if model is None:
        raise StateError(f"no checkpoint in {directory}")
    return model, offsets
