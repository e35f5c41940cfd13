"""The directory store: checkpoints as files, ``<member>.<id>.ckpt`` in a directory.

The file holds the checkpoint blob of :mod:`streamnb.kafka.statestore` (magic line, header,
SHA-256, payload). It is written to a temporary file, fsynced, renamed into place and the
directory fsynced, so a crash leaves either the old or the new checkpoint. The newest ``keep``
checkpoints are kept: if the newest is damaged (checksum, truncation) the previous good one is
used, whose offsets match its model, so exactly-once state still holds. Members of one consumer
group either share the directory (a member taking over a partition starts after every offset any
member has checkpointed for it) or use a store that needs no shared disk (``kafka:``, ``s3://``,
see :mod:`streamnb.kafka.stores`).

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
import os
import re
from pathlib import Path
from typing import Any

from streamnb.kafka.errors import ServiceError
from streamnb.kafka.statestore import (
    FORMAT,
    MAGIC,
    VERSION,
    Checkpoint,
    StateStore,
    header_offsets,
    merge_state,
    read_blob,
    tp_key,
)
from streamnb.persistence import write_atomic

__all__ = ["FORMAT", "MAGIC", "VERSION", "Checkpoint", "Checkpointer", "merge_checkpoints", "tp_key"]

_MEMBER = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
_NAME = re.compile(r"^([A-Za-z0-9_-]+)\.(\d{12})\.ckpt$")


class Checkpointer(StateStore):
    """Writes and reads one member's checkpoints in a (possibly shared) directory (``dir:PATH``).

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
        super().__init__(member, keep)
        self.directory = Path(directory)
        self.url = f"dir:{self.directory}"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = None

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
    def _path(self, member: str, ck_id: int) -> Path:
        return self.directory / f"{member}.{ck_id:012d}.ckpt"

    def _name(self, member: str, ck_id: int) -> str:
        return self._path(member, ck_id).name

    def _list(self, member: str | None = None) -> list[tuple[str, int]]:
        out = []
        for path in self.directory.iterdir():
            m = _NAME.match(path.name)
            if m and (member is None or m.group(1) == member):
                out.append((m.group(1), int(m.group(2))))
        return sorted(out, key=lambda t: (t[0], -t[1]))

    def _get(self, member: str, ck_id: int) -> bytes:
        return self._path(member, ck_id).read_bytes()

    def _put(self, member: str, ck_id: int, data: bytes) -> None:
        write_atomic(self._path(member, ck_id), data)

    def _delete(self, member: str, ck_id: int) -> None:
        self._path(member, ck_id).unlink(missing_ok=True)

    @staticmethod
    def read(path: str | os.PathLike) -> Checkpoint:
        """Read and fully verify one checkpoint file; :class:`StateError` if it is not intact."""
        path = Path(path)
        return read_blob(path.read_bytes(), str(path))

    @staticmethod
    def read_offsets(path: str | os.PathLike) -> dict[str, int]:
        """The offsets of one checkpoint file from its header, without loading the model.

        The checksum over header and payload is verified (a damaged file raises
        :class:`StateError`); the payload is not deserialized, so the check that its offsets
        equal the header's is left to :meth:`read` (the owner's own load).
        """
        path = Path(path)
        return header_offsets(path.read_bytes(), str(path))


def merge_checkpoints(directory: str | os.PathLike) -> tuple[Any, dict[str, int]]:
    """Merge the newest checkpoint of every member in ``directory``: the model of the group.

    Returns the merged model and, per partition, the highest checkpointed next offset.
    """
    return merge_state(Checkpointer(directory, member="merge-reader"))
