"""The blob interface every store backend provides: named byte strings, five operations.

A *name* is a relative path (``member/000000000001.ckpt``, ``ab/abcd....snb``): letters,
digits, ``.``, ``_``, ``-`` and ``/``. Every backend makes :meth:`Blobs.put` all or nothing (a
reader sees a blob's old bytes or its new ones, never a mix) and durable when it returns, and
:meth:`Blobs.swap` a compare-and-set: the new bytes are written only if the blob still holds
what the caller read. What is built on it (checkpoints, per-key archives, leases) is written
once, for every backend.
"""

from __future__ import annotations

import json
import re

from streamnb.exceptions import StateError

__all__ = ["Blobs", "check_name", "json_record"]

_NAME = re.compile(r"^(?!/)(?!.*//)[A-Za-z0-9._/-]{1,1024}(?<!/)$")


def check_name(name: str) -> str:
    """``name`` if it is a blob name (see the module), else :class:`StateError`."""
    if not _NAME.match(name) or any(part in (".", "..") for part in name.split("/")):
        raise StateError(f"{name!r} is not a blob name (letters, digits, '.', '_', '-', '/')")
    return name


def json_record(value: bytes, form: str, max_bytes: int) -> dict | None:
    """The fields of a small JSON record of format ``form``, version 1 (a lease, a manifest), or
    None if ``value`` is not one (too large, not JSON, another format or version)."""
    if len(value) > max_bytes:
        return None
    try:
        fields = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(fields, dict) or fields.get("format") != form or fields.get("version") != 1:
        return None
    return fields


class Blobs:
    """Named blobs in one place (a directory, a bucket prefix, a compacted topic).

    Errors of the storage (unreachable, refused, damaged) are :class:`StateError`; a backend
    may also let :class:`OSError` through (a directory's).
    """

    #: the store URL (``dir:PATH``, ``s3://BUCKET/PREFIX``, ``kafka:TOPIC``), for messages
    url = "?"
    #: ``dir``, ``s3`` or ``kafka``
    kind = "?"

    def get(self, name: str) -> bytes | None:
        """The blob's bytes, None if there is no such blob."""
        raise NotImplementedError

    def put(self, name: str, data: bytes, only_new: bool = False) -> None:
        """Write the blob, all or nothing, durable when this returns. ``only_new``: fail
        (:class:`StateError`) if the blob exists, where the storage checks it atomically (a
        directory under its lock, S3 with ``If-None-Match``; a topic cannot, and writes)."""
        raise NotImplementedError

    def delete(self, name: str) -> None:
        """Remove the blob (nothing happens if there is none)."""
        raise NotImplementedError

    def list(self, prefix: str = "", recursive: bool = True) -> list[str]:
        """The names that start with ``prefix``, sorted; with ``recursive=False`` only those
        with no ``/`` after the prefix."""
        raise NotImplementedError

    def swap(self, name: str, new: bytes, expected: bytes | None) -> bool:
        """Write ``new`` only if the blob holds ``expected`` (None: only if there is no such
        blob); True if it did, False if the blob holds something else."""
        raise NotImplementedError

    def where(self, name: str) -> str:
        """How one blob is named in messages."""
        return f"{self.url} {name}"

    def close(self) -> None:
        """Release connections and locks (the object may be used again: it reconnects)."""

    def __enter__(self) -> Blobs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
