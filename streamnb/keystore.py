"""Where :class:`~streamnb.perkey.PerKey` keeps the learners of the keys it evicts from memory.

:func:`open_key_store` opens the store a URL names: a directory (:class:`DirectoryStore`, here),
``s3://bucket/prefix`` (:class:`~streamnb.keystore_s3.S3KeyStore`) or
``kafka://BOOTSTRAP/TOPIC/PREFIX`` (:class:`~streamnb.kafka.keys_kafka.KafkaKeyStore`); each
keeps one safe archive per key (:mod:`streamnb.persistence`), named by :func:`key_digest`, with
the key and the position of the last event its learner learned.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
from collections.abc import Hashable
from pathlib import Path
from typing import Any, Protocol

from streamnb import persistence
from streamnb.exceptions import StateError
from streamnb.stats.index import encode_key

__all__ = ["PENDING", "DirectoryStore", "KeyStore", "key_digest", "open_key_store"]

#: The suffix of a learner written by :meth:`DirectoryStore.stage`, not yet synced.
PENDING = ".pending"

log = logging.getLogger(__name__)


@functools.cache
def _syncfs() -> Any:
    """Linux's ``syncfs(2)`` (every file of one filesystem to disk in one call), or None."""
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError, TypeError):
        return None
    syncfs.argtypes, syncfs.restype = [ctypes.c_int], ctypes.c_int
    return syncfs


def key_digest(key: Hashable) -> str:
    """The name a key's learner is stored under (a hash of the key)."""
    return hashlib.sha256(repr(encode_key(key)).encode()).hexdigest()


class KeyStore(Protocol):
    """Where :class:`~streamnb.perkey.PerKey` writes evicted keys' learners (:class:`DirectoryStore`,
    :class:`~streamnb.keystore_s3.S3KeyStore` or :class:`~streamnb.kafka.keys_kafka.KafkaKeyStore`)."""

    def save(self, key: Hashable, model: Any, position: int) -> None: ...
    def stage(self, key: Hashable, model: Any, position: int) -> None: ...
    def sync(self) -> None: ...
    def load(self, key: Hashable) -> tuple[Any, int] | None: ...
    def __len__(self) -> int: ...


def open_key_store(where: str | os.PathLike, read_only: bool = False) -> KeyStore:
    """The key store ``where`` names: ``s3://bucket/prefix`` (object storage, needs boto3),
    ``kafka://BOOTSTRAP/TOPIC/PREFIX`` (a compacted topic), else a directory."""
    if isinstance(where, str) and where.startswith("s3://"):
        from streamnb.keystore_s3 import S3KeyStore

        return S3KeyStore(where, read_only=read_only)
    if isinstance(where, str) and where.startswith("kafka://"):
        from streamnb.kafka.keys_kafka import KafkaKeyStore

        return KafkaKeyStore(where, read_only=read_only)
    return DirectoryStore(where, read_only=read_only)


class DirectoryStore:
    """Learners of evicted keys, one archive per key in ``path`` (named by a hash of the key),
    each with the key and the learner's position, written atomically.

    :meth:`save` makes the file durable at once (fsync). :meth:`stage` only writes it (a
    ``.pending`` file beside the durable one, no fsync): it survives the process being killed,
    not the machine stopping, until :meth:`sync` makes every staged file durable at once (one
    ``syncfs`` of the store's filesystem on Linux, else an fsync per file) and puts each in place
    of its durable file. A key is read from whichever of its two files holds the later position;
    a staged file that a machine crash left torn is dropped (what it held must be recoverable
    from elsewhere, e.g. a journal not yet emptied: see ``sync_evictions`` of
    :class:`~streamnb.perkey.PerKey`).
    A ``read_only`` store (of a directory another process writes) only reads.
    """

    def __init__(self, path: str | os.PathLike, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only  # another process writes: never change a file here
        self._staged: set[Path] = set()
        if read_only:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        for pending in self.path.glob(f"*/*{PENDING}"):  # staged by an earlier process, not synced
            try:
                persistence.loads(pending.read_bytes())
            except StateError as exc:
                log.warning("%s: dropping a torn staged learner (%s)", pending, exc)
                pending.unlink()
                continue
            self._staged.add(pending)

    def _writable(self) -> None:
        if self.read_only:
            raise StateError(f"{self.path} is read only here: another process writes it")

    def _file(self, key: Hashable) -> Path:
        digest = key_digest(key)
        return self.path / digest[:2] / f"{digest}.snb"

    @staticmethod
    def _pending(path: Path) -> Path:
        return path.with_suffix(PENDING)

    def _data(self, key: Hashable, model: Any, position: int) -> tuple[Path, bytes]:
        path = self._file(key)
        path.parent.mkdir(exist_ok=True)
        return path, persistence.dumps(model, extra={"key": [encode_key(key)], "position": position})

    def save(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner durably (fsynced before this returns)."""
        self._writable()
        path, data = self._data(key, model, position)
        persistence.write_atomic(path, data)
        pending = self._pending(path)
        if pending in self._staged:  # older than what was just saved
            self._staged.discard(pending)
            pending.unlink(missing_ok=True)

    def stage(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner without waiting for the disk (see the class); durable at the
        next :meth:`sync`."""
        self._writable()
        path, data = self._data(key, model, position)
        pending = self._pending(path)
        persistence.write_atomic(pending, data, durable=False)
        self._staged.add(pending)

    def sync(self) -> None:
        """Make every staged learner durable and put it in place of the key's durable file."""
        if not self._staged:
            return
        staged = sorted(self._staged)
        self._to_disk(staged)
        for pending in staged:
            os.replace(pending, pending.with_suffix(".snb"))
        self._to_disk(staged)  # the renames, before anything relies on them
        self._staged.clear()

    def _to_disk(self, files: list[Path]) -> None:
        syncfs = _syncfs()
        if syncfs is not None:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                if syncfs(fd) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"syncfs {self.path}: {os.strerror(err)}")
            finally:
                os.close(fd)
            return
        for path in files:  # without syncfs: each file (if still there) and each folder
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        for folder in {path.parent for path in files}:
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _read(self, path: Path, key: Hashable) -> tuple[Any, int] | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        model, extra = persistence.loads(data, with_extra=True)
        if extra.get("key") != [encode_key(key)]:
            raise StateError(f"{path} holds another key's model")
        return model, int(extra.get("position", -1))

    def load(self, key: Hashable) -> tuple[Any, int] | None:
        """The learner saved for ``key`` and its position, or None."""
        path = self._file(key)
        durable = self._read(path, key)
        pending = self._pending(path)
        try:
            staged = self._read(pending, key)
        except StateError as exc:  # only a machine crash before sync() tears one
            if not self.read_only:
                log.warning("%s: dropping a torn staged learner (%s)", pending, exc)
                self._staged.discard(pending)
                pending.unlink()
            return durable
        if staged is None or (durable is not None and durable[1] > staged[1]):
            return durable
        return staged

    def __len__(self) -> int:
        return len({p.stem for p in self.path.glob("*/*.snb")} | {p.stem for p in self.path.glob(f"*/*{PENDING}")})
