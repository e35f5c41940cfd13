"""Where :class:`~streamnb.perkey.PerKey` keeps the learners of the keys it evicts from memory.

:func:`open_key_store` opens the store a URL names (:mod:`streamnb.stores.url`; a bare path is a
directory). Each key's learner is one blob, a safe archive (:mod:`streamnb.persistence`) with the
key and the position of the last event it learned, named by :func:`key_digest`:

=========  ===========================  =====================================================
backend    a key's blob                 durable
=========  ===========================  =====================================================
``dir:``   ``ab/abcd....snb``           at :meth:`DirectoryStore.save`, or at the next
                                        :meth:`~DirectoryStore.sync` after a
                                        :meth:`~DirectoryStore.stage`
``s3://``  ``PREFIX/ab/abcd....snb``    when the PUT returns
``kafka``  ``PREFIX/abcd...`` (one      when acknowledged by every in-sync replica; the topic
           record, at most 1 MiB)       is read once, at first use, for an index of offsets
=========  ===========================  =====================================================

Whoever writes a store must be its only writer (the Kafka service gives each member its own,
guarded by the member's lease); a ``read_only`` store (of one another process writes) only reads.
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
from streamnb.stores.blobs import Blobs
from streamnb.stores.dir import DirBlobs
from streamnb.stores.url import parse_url

__all__ = ["PENDING", "BlobKeyStore", "DirectoryStore", "KeyStore", "key_digest", "open_key_store"]

#: The suffix of a learner written by :meth:`DirectoryStore.stage`, not yet synced.
PENDING = ".pending"

log = logging.getLogger(__name__)


def key_digest(key: Hashable) -> str:
    """The name a key's learner is stored under (a hash of the key)."""
    return hashlib.sha256(repr(encode_key(key)).encode()).hexdigest()


class KeyStore(Protocol):
    """Where :class:`~streamnb.perkey.PerKey` writes evicted keys' learners (:func:`open_key_store`)."""

    def save(self, key: Hashable, model: Any, position: int) -> None: ...
    def stage(self, key: Hashable, model: Any, position: int) -> None: ...
    def sync(self) -> None: ...
    def load(self, key: Hashable) -> tuple[Any, int] | None: ...
    def __len__(self) -> int: ...


def open_key_store(where: str | os.PathLike, read_only: bool = False) -> KeyStore:
    """The key store ``where`` names: ``dir:PATH`` or a bare path (a directory),
    ``s3://BUCKET/PREFIX`` (object storage, needs boto3) or ``kafka://BOOTSTRAP/TOPIC/PREFIX``
    (a compacted topic)."""
    if not isinstance(where, str) or not where.startswith(("dir:", "s3://", "kafka:")):
        return DirectoryStore(where, read_only=read_only)
    url = parse_url(where, what="key store")
    if url.kind == "dir":
        return DirectoryStore(url.where, read_only=read_only)
    if url.kind == "s3":
        from streamnb.stores.s3 import S3Blobs

        return BlobKeyStore(S3Blobs(url.where, url.prefix), read_only)
    if not url.bootstrap or not url.prefix:
        raise StateError(f"key store {where!r}: use kafka://BOOTSTRAP/TOPIC/PREFIX")
    from streamnb.stores.kafka import KafkaBlobs

    blobs = KafkaBlobs(url.bootstrap, url.where, url.prefix)
    blobs.mine("")  # one writer: the topic is read once
    return BlobKeyStore(blobs, read_only)


class BlobKeyStore:
    """Learners of evicted keys, one blob per key (see the module)."""

    def __init__(self, blobs: Blobs, read_only: bool = False) -> None:
        self.blobs, self.read_only = blobs, read_only
        self.url = blobs.url

    def name(self, key: Hashable) -> str:
        """The blob of ``key``'s learner."""
        digest = key_digest(key)
        return digest if self.blobs.kind == "kafka" else f"{digest[:2]}/{digest}.snb"

    def _archive(self, key: Hashable, model: Any, position: int) -> bytes:
        if self.read_only:
            raise StateError(f"{self.url} is read only here: another process writes it")
        return persistence.dumps(model, extra={"key": [encode_key(key)], "position": position})

    def save(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner durably."""
        self.blobs.put(self.name(key), self._archive(key, model, position))

    def stage(self, key: Hashable, model: Any, position: int) -> None:
        """:meth:`save` (a write here is durable when it returns)."""
        self.save(key, model, position)

    def sync(self) -> None:
        """Nothing to do: every learner written is durable."""

    def learner(self, data: bytes, key: Hashable, where: str) -> tuple[Any, int]:
        """The learner and position in a key's archive, checked to be that key's."""
        model, extra = persistence.loads(data, with_extra=True)
        if extra.get("key") != [encode_key(key)]:
            raise StateError(f"{where} holds another key's model")
        position = extra.get("position", -1)
        if type(position) is not int:
            raise StateError(f"{where}: the position is not an integer")
        return model, position

    def load(self, key: Hashable) -> tuple[Any, int] | None:
        """The learner saved for ``key`` and its position, or None."""
        name = self.name(key)
        data = self.blobs.get(name)
        return None if data is None else self.learner(data, key, self.blobs.where(name))

    def __len__(self) -> int:
        suffix = "" if self.blobs.kind == "kafka" else ".snb"
        return sum(1 for name in self.blobs.list() if name.endswith(suffix))

    def close(self) -> None:
        self.blobs.close()


@functools.cache
def _syncfs() -> Any:
    """Linux's ``syncfs(2)`` (every file of one filesystem to disk in one call), or None."""
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError, TypeError):
        return None
    syncfs.argtypes, syncfs.restype = [ctypes.c_int], ctypes.c_int
    return syncfs


class DirectoryStore(BlobKeyStore):
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

    blobs: DirBlobs

    def __init__(self, path: str | os.PathLike, read_only: bool = False) -> None:
        super().__init__(DirBlobs(path, read_only=read_only), read_only)
        self.path = self.blobs.path
        self._staged: set[Path] = set()
        if read_only:
            return
        for pending in self.path.glob(f"*/*{PENDING}"):  # staged by an earlier process, not synced
            try:
                persistence.loads(pending.read_bytes())
            except StateError as exc:
                log.warning("%s: dropping a torn staged learner (%s)", pending, exc)
                pending.unlink()
                continue
            self._staged.add(pending)

    @staticmethod
    def _pending(path: Path) -> Path:
        return path.with_suffix(PENDING)

    def save(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner durably (fsynced before this returns)."""
        super().save(key, model, position)
        pending = self._pending(self.blobs.file(self.name(key)))
        if pending in self._staged:  # older than what was just saved
            self._staged.discard(pending)
            pending.unlink(missing_ok=True)

    def stage(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner without waiting for the disk (see the class); durable at the
        next :meth:`sync`."""
        data = self._archive(key, model, position)
        name = self.name(key).removesuffix(".snb") + PENDING
        self.blobs.put(name, data, durable=False)
        self._staged.add(self.blobs.file(name))

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

    def load(self, key: Hashable) -> tuple[Any, int] | None:
        """The learner saved for ``key`` and its position, or None."""
        name = self.name(key)
        durable = super().load(key)
        pending_name = name.removesuffix(".snb") + PENDING
        try:
            data = self.blobs.get(pending_name)
            staged = None if data is None else self.learner(data, key, self.blobs.where(pending_name))
        except StateError as exc:  # only a machine crash before sync() tears one
            if not self.read_only:
                log.warning("%s: dropping a torn staged learner (%s)", self.blobs.where(pending_name), exc)
                self._staged.discard(self.blobs.file(pending_name))
                self.blobs.delete(pending_name)
            return durable
        if staged is None or (durable is not None and durable[1] > staged[1]):
            return durable
        return staged

    def __len__(self) -> int:
        if not self.path.is_dir():
            return 0
        return len({p.stem for p in self.path.glob("*/*.snb")} | {p.stem for p in self.path.glob(f"*/*{PENDING}")})
