"""The ``dir:PATH`` backend: each blob a file under a directory, written atomically.

A blob named ``a/b.snb`` is the file ``PATH/a/b.snb``. :meth:`DirBlobs.put` writes a temporary
file, fsyncs it, renames it into place and fsyncs the folder, so a crash leaves the old file or
the new one. :meth:`DirBlobs.swap` compares and writes under an exclusive ``flock`` of the
directory, so it is atomic among the processes of one machine. :meth:`DirBlobs.hold` locks a name
for as long as this object lives (one live instance per member name).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from streamnb.exceptions import StateError
from streamnb.persistence import write_atomic
from streamnb.stores.blobs import Blobs, check_name

__all__ = ["DirBlobs"]

#: the lock file of :meth:`DirBlobs.swap` (a name no blob can take: blob names have no leading dot)
_SWAP_LOCK = ".swap.lock"


class DirBlobs(Blobs):
    """Blobs as files under ``path`` (created unless ``read_only``; see the module)."""

    kind = "dir"

    def __init__(self, path: str | os.PathLike, read_only: bool = False) -> None:
        self.path = Path(path)
        self.url = f"dir:{self.path}"
        self.read_only = read_only
        self._held: dict[str, int] = {}
        if not read_only:
            self.path.mkdir(parents=True, exist_ok=True)

    def file(self, name: str) -> Path:
        """The file of blob ``name``."""
        return self.path / check_name(name)

    def where(self, name: str) -> str:
        return str(self.file(name))

    def get(self, name: str) -> bytes | None:
        try:
            return self.file(name).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, name: str, data: bytes, only_new: bool = False, durable: bool = True) -> None:
        """Write the blob atomically; with ``durable=False`` without fsync (whole or absent for
        other processes and after this one is killed; a machine crash may tear it)."""
        path = self.file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not only_new:
            write_atomic(path, data, durable=durable)
        elif not self.swap(name, data, None):
            raise StateError(f"{path}: write failed: it exists")

    def delete(self, name: str) -> None:
        self.file(name).unlink(missing_ok=True)

    def list(self, prefix: str = "", recursive: bool = True) -> list[str]:
        folder, _, start = prefix.rpartition("/")
        top = self.path / folder if folder else self.path
        if not top.is_dir():
            return []
        out: list[str] = []
        if recursive:
            for root, dirs, files in os.walk(top):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                rel = Path(root).relative_to(self.path).as_posix()
                base = "" if rel == "." else rel + "/"
                out.extend(base + f for f in files if not f.startswith("."))
        else:
            base = folder + "/" if folder else ""
            out = [base + e.name for e in top.iterdir() if not e.name.startswith(".") and e.is_file()]
        return sorted(n for n in out if n.startswith(prefix) and (recursive or "/" not in n[len(prefix):]))

    def swap(self, name: str, new: bytes, expected: bytes | None) -> bool:
        fd = os.open(self.path / _SWAP_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if self.get(name) != expected:
                return False
            self.file(name).parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.file(name), new)
            return True
        finally:
            os.close(fd)

    def hold(self, name: str) -> bool:
        """Lock ``name`` (an ``flock`` of the file ``name.lock``) until :meth:`release` or
        :meth:`close`; False if another open object holds it."""
        if name in self._held:
            return True
        fd = os.open(self.path / f"{check_name(name)}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._held[name] = fd
        return True

    def release(self, name: str) -> None:
        """Unlock a name :meth:`hold` locked."""
        fd = self._held.pop(name, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for name in list(self._held):
            self.release(name)
