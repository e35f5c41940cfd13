"""A write-ahead journal of learn events: appended, fsynced in groups, replayed after a crash.

Each record is one line, ``CRC32 JSON``: the CRC (8 hex digits) of the JSON text guards against a
torn write. Records are appended by :meth:`Journal.append`, which returns when the record is on
disk; records that arrive while a write is under way are written and fsynced together with the
next one (group commit), so many concurrent learns pay for one fsync. A crash can leave only the
last line incomplete: :func:`read` stops there (that record was never acknowledged). A bad line
before the last is damage, a :class:`~streamnb.exceptions.StateError`.

:meth:`Journal.truncate` empties the file once a snapshot covers every record in it; it runs in
order with the appends, so a record appended after the snapshot was taken is never dropped.

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from streamnb.exceptions import StateError

__all__ = ["Journal", "read"]

_TRUNCATE = object()


def _line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    return b"%08x %s\n" % (zlib.crc32(text), text)


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
        crc, _, text = line.partition(b" ")
        try:
            ok = int(crc, 16) == zlib.crc32(text)
            record = json.loads(text) if ok else None
        except ValueError:
            ok, record = False, None
        if not ok or not isinstance(record, dict):
            if last:
                return
            raise StateError(f"journal {path} is damaged at line {i + 1}")
        if last:
            return  # complete JSON but no newline: never acknowledged either
        yield record


class Journal:
    """Appends records to ``path`` durably (see the module)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._file = open(self.path, "ab")
        self._queue: list[tuple[Any, asyncio.Future]] = []
        self._writing = False
        self.records = 0  # records in the file since it was last emptied
        self.fsyncs = 0

    async def append(self, record: dict[str, Any]) -> None:
        """Return once ``record`` is on disk (raises ``OSError`` if it could not be written)."""
        await self._submit(_line(record))

    async def truncate(self) -> None:
        """Empty the file, after every record appended before this call is written."""
        await self._submit(_TRUNCATE)

    async def _submit(self, item: Any) -> None:
        future = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if not self._writing:
            self._writing = True
            asyncio.get_running_loop().create_task(self._drain())
        await future

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    await asyncio.to_thread(self._write, [item for item, _ in batch])
                except OSError as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for _, future in batch:
                    if not future.done():
                        future.set_result(None)
        finally:
            self._writing = False

    def _write(self, items: list[Any]) -> None:
        """Write a batch in order; a truncation mark drops the file and the records before it
        (a snapshot on disk holds them)."""
        last = max((i for i, item in enumerate(items) if item is _TRUNCATE), default=-1)
        if last >= 0:
            self._file.truncate(0)
            self.records = 0
        lines = [item for item in items[last + 1:] if item is not _TRUNCATE]
        self._file.write(b"".join(lines))
        self._file.flush()
        os.fsync(self._file.fileno())
        self.records += len(lines)
        self.fsyncs += 1

    async def close(self) -> None:
        while self._writing or self._queue:
            await asyncio.sleep(0.001)
        self._file.close()
