"""A write-ahead journal of learn events: appended, fsynced in groups, replayed after a crash.

Each record is one line, ``CRC32 JSON``: the CRC (8 hex digits) of the JSON text guards against a
torn write. Records are appended by :meth:`Journal.append`, which returns when the record is on
disk; records that arrive while a write is under way are written and fsynced together with the
next one (group commit), so many concurrent learns pay for one fsync. A crash can leave only the
last line incomplete: :func:`read` stops there (that record was never acknowledged). A bad line
before the last is damage, a :class:`~streamnb.exceptions.StateError`.

:meth:`Journal.truncate` empties the journal once a snapshot covers every record in it; it runs in
order with the appends, so a record appended after the snapshot was taken is never dropped. It
puts a new empty file in the old one's place (an atomic rename) rather than cutting the old one,
so a :class:`Tail` (a check worker following the journal from another process) reads the old
file to its end before it moves on to the new one.

>>> import asyncio, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "journal"
>>> async def main():
...     journal = Journal(path)
...     await asyncio.gather(*(journal.append({"seq": i}) for i in range(3)))
...     await journal.close()
>>> asyncio.run(main())
>>> [r["seq"] for r in read(path)]
[0, 1, 2]
"""

from __future__ import annotations

import asyncio
import json
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from streamnb.exceptions import StateError

__all__ = ["Journal", "Tail", "read", "parse_line"]


class _Replace:
    """A mark in the write queue: put a new file in the journal's place, starting after ``start``."""

    def __init__(self, start: int) -> None:
        self.start = start


def _line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    return b"%08x %s\n" % (zlib.crc32(text), text)


def parse_line(line: bytes) -> dict[str, Any] | None:
    """The record of one complete line (without its newline), or None if its CRC or JSON is bad."""
    crc, _, text = line.partition(b" ")
    try:
        if int(crc, 16) != zlib.crc32(text):
            return None
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def read(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The records of the journal at ``path`` (none if there is no file), up to a torn last
    line."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1  # no newline after it: a write cut short
        if not line:
            continue
        record = parse_line(line)
        if record is None:
            if last:
                return
            raise StateError(f"journal {path} is damaged at line {i + 1}")
        if last:
            return  # complete JSON but no newline: never acknowledged either
        if "seq" in record:  # not the {"start": ...} line a new file begins with
            yield record


class Journal:
    """Appends records to ``path`` durably (see the module).

    A record whose ``"seq"`` is None is numbered when it is written: one more than the last
    record written (``seq``, the number the journal starts after). A write that fails (disk
    full, an I/O error, a failed fsync) fails every record of its batch, takes the file back to
    its length before the batch and gives their numbers back, so the journal never holds a
    record that was not acknowledged nor skips a number; the next append tries again. If even
    that cannot be done, every append fails until it can. ``fsync`` is the call that makes a
    file durable (``os.fsync``; a test may pass one that fails)."""

    def __init__(self, path: str | os.PathLike, seq: int = -1,
                 fsync: Callable[[int], None] = os.fsync) -> None:  # fmt: skip
        self.path = Path(path)
        self.seq = seq
        self._fsync = fsync
        self._file = open(self.path, "ab", buffering=0)  # unbuffered: nothing of a failed write lingers
        self._cut_torn_tail()
        self._good = os.fstat(self._file.fileno()).st_size  # the length of what is acknowledged
        self._damaged = False
        self._queue: list[tuple[Any, Callable[[dict], None] | None, asyncio.Future]] = []
        self._writing = False
        self.records = 0  # records in the file since it was last emptied
        self.fsyncs = 0

    async def append(self, record: dict[str, Any], written: Callable[[dict], None] | None = None) -> None:
        """Return once ``record`` is on disk (raises ``OSError`` if it could not be written).
        ``written(record)`` is called once it is, in the order of the records in the journal,
        before any later record is written (with its number, if the journal gave it one)."""
        await self._submit(record, written)

    async def truncate(self, start: int = -1) -> None:
        """Empty the journal, after every record appended before this call is written; the new
        file's first line says that a snapshot holds every record up to ``start``."""
        await self._submit(_Replace(start), None)

    async def _submit(self, item: Any, written: Callable[[dict], None] | None) -> None:
        future = asyncio.get_running_loop().create_future()
        self._queue.append((item, written, future))
        if not self._writing:
            self._writing = True
            asyncio.get_running_loop().create_task(self._drain())
        await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                first = self.seq
                units: list[Any] = []  # lines and marks, in order
                for item, _, _ in batch:
                    if isinstance(item, _Replace):
                        units.append(item)
                        continue
                    if item.get("seq") is None:
                        self.seq += 1
                        item["seq"] = self.seq
                    else:
                        self.seq = max(self.seq, int(item["seq"]))
                    units.append(_line(item))
                try:
                    await asyncio.to_thread(self._write, units)
                except OSError as exc:
                    self.seq = first  # the numbers of records never written are given back
                    for item, _, future in batch:
                        if not isinstance(item, _Replace) and item.get("seq") is not None and item["seq"] > first:
                            item["seq"] = None
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for item, written, future in batch:
                    if future.done():
                        continue
                    try:
                        if written is not None:
                            written(item)
                    except Exception as exc:  # noqa: BLE001  (the caller sees it)
                        future.set_exception(exc)
                    else:
                        future.set_result(None)
        finally:
            self._writing = False

    def _write(self, units: list[Any]) -> None:
        """Write a batch in order, all or nothing; a truncation mark drops the file and the
        records before it (a snapshot on disk holds them)."""
        self._repair()
        last = max((i for i, unit in enumerate(units) if isinstance(unit, _Replace)), default=-1)
        try:
            if last >= 0:
                self._write_all(b"".join(u for u in units[:last] if not isinstance(u, _Replace)))
                self._replace(units[last].start)  # a tail reads the old file to its end; the snapshot holds these
                self.records = 0
            lines = [unit for unit in units[last + 1:] if not isinstance(unit, _Replace)]
            self._write_all(b"".join(lines))
            self._fsync(self._file.fileno())
        except OSError:
            self._damaged = True
            self._repair()
            raise
        self._good = os.fstat(self._file.fileno()).st_size
        self.records += len(lines)
        self.fsyncs += 1

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[self._file.write(view):]

    def _repair(self) -> None:
        """After a failed write: the file back to its acknowledged length, durably (raises
        ``OSError`` while that cannot be done)."""
        if not self._damaged:
            return
        fd = self._file.fileno()
        os.ftruncate(fd, self._good)
        self._fsync(fd)
        self._damaged = False

    def _cut_torn_tail(self) -> None:
        """Drop a last line a crash cut short (never acknowledged), so the next record starts
        on a line of its own."""
        size = os.fstat(self._file.fileno()).st_size
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(max(0, size - (1 << 16)))
            tail = f.read()
        if tail.endswith(b"\n"):
            return
        cut = tail.rfind(b"\n")
        if cut < 0 and size > len(tail):  # a last line over 64 KiB: find its start the long way
            cut = self.path.read_bytes().rfind(b"\n") - (size - len(tail))
        os.ftruncate(self._file.fileno(), size - len(tail) + cut + 1)
        self._fsync(self._file.fileno())

    def _replace(self, start: int) -> None:
        """A new file in the journal's place, durably (the old one's records are in a snapshot),
        holding only the line ``{"start": start}``."""
        fresh = self.path.with_name(self.path.name + ".new")
        with open(fresh, "wb") as f:
            f.write(_line({"start": start}))
            f.flush()
            self._fsync(f.fileno())
        os.replace(fresh, self.path)
        self._file.close()  # from here on, whatever fails, appends go to the file in place
        self._file = open(self.path, "ab", buffering=0)
        self._good = os.fstat(self._file.fileno()).st_size
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            self._fsync(directory)
        finally:
            os.close(directory)

    async def close(self) -> None:
        while self._writing or self._queue:
            await asyncio.sleep(0.001)
        self._file.close()


class Tail:
    """Follows the journal at ``path`` from another process: :meth:`poll` returns the records
    appended since the last call, in order, complete lines only, each new file's
    ``{"start": N}`` line included. When the writer puts a new file in the journal's place
    (:meth:`Journal.truncate`), the old file is read to its end first; if two files were put in
    place between two polls, the middle one is never seen, which its successor's ``start`` line
    shows. A missing file is waited for (no records)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._file: Any = None
        self._inode = -1
        self._partial = b""
        self._open()

    def _open(self) -> None:
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return
        self._file, self._inode, self._partial = f, os.fstat(f.fileno()).st_ino, b""

    def _drain(self) -> list[dict[str, Any]]:
        data = self._partial + self._file.read()
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" after a newline, else a line still being written
        out = []
        for line in lines:
            if not line:
                continue
            record = parse_line(line)
            if record is None:
                raise StateError(f"journal {self.path} has a damaged line")
            out.append(record)
        return out

    def poll(self) -> list[dict[str, Any]]:
        """New records since the last call (two system calls when there are none)."""
        if self._file is None:
            self._open()
            if self._file is None:
                return []
        out = self._drain()
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            return out
        if inode != self._inode:  # replaced: the old file is complete once the new one is there
            out += self._drain()
            self._partial = b""  # a line a crash cut short: never acknowledged
            self._file.close()
            self._file = None
            self._open()
            if self._file is not None:
                out += self._drain()
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
