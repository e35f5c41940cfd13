"""Raw messages from the places mail lives: mbox files, maildir folders, folders of files.

- an **mbox** file (messages separated by ``From `` lines; Python's :mod:`mailbox` reads it,
  ``>From`` quoting as written);
- a **maildir** (a folder with ``cur/``, ``new/``, ``tmp/``): the messages in ``new/`` and
  ``cur/``, in file-name order (maildir names start with the delivery time);
- any other **folder**: every regular file below it (hidden files and folders skipped), in
  path order, one message per file (MH folders, the SpamAssassin and Enron corpora), with
  maildirs and mbox files met inside read as such;
- a single **file** that does not start with ``From ``: one message.

A folder per class is given as ``spam=[...]``, ``ham=[...]``; :func:`labelled` puts them in
one stream, by default shuffled with a fixed seed (so runs repeat), since folders are per
class and not in arrival order, or ordered by the messages' ``Date`` headers (the order a
mailbox received them in).

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "box").write_bytes(b"From a@b  Mon Jan  1 00:00:00 2024\\nSubject: one\\n\\nhi\\n\\n"
...                             b"From c@d  Mon Jan  1 00:00:01 2024\\nSubject: two\\n\\nho\\n")
>>> [m.split(b"\\n")[0] for m in messages(d / "box")]
[b'Subject: one', b'Subject: two']
"""

from __future__ import annotations

import datetime
import email.parser
import email.policy
import email.utils
import mailbox
import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["ORDERS", "date", "is_maildir", "labelled", "messages"]

#: Messages larger than this are read up to it (the tokenizer reads less anyway).
MAX_MESSAGE_BYTES = 10 << 20
#: Only this much of a message is read for its ``Date`` header.
MAX_HEADER_BYTES = 256 << 10
#: The orders :func:`labelled` can put a stream in.
ORDERS = ("shuffle", "given", "date")
_HEADERS = email.parser.BytesParser(policy=email.policy.compat32)


def is_maildir(path: Path) -> bool:
    return path.is_dir() and (path / "cur").is_dir() and (path / "new").is_dir()


def _is_mbox(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(5) == b"From "


def _read(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(MAX_MESSAGE_BYTES)


def messages(path: str | os.PathLike) -> Iterator[bytes]:
    """The raw bytes of every message at ``path`` (see the module), without mbox ``From ``
    lines. Raises ``FileNotFoundError`` if ``path`` does not exist."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such mailbox, folder or file: {path}")
    if is_maildir(path):
        for sub in ("new", "cur"):
            for f in sorted(p for p in (path / sub).iterdir() if p.is_file() and not p.name.startswith(".")):
                yield _read(f)
    elif path.is_dir():
        for entry in sorted(path.iterdir()):
            if entry.name.startswith("."):
                continue
            if entry.is_dir() or (entry.is_file() and _is_mbox(entry)):
                yield from messages(entry)
            elif entry.is_file():
                yield _read(entry)
    elif _is_mbox(path):
        box = mailbox.mbox(path, create=False)
        try:
            for key in box.iterkeys():
                yield box.get_bytes(key)
        finally:
            box.close()
    else:
        yield _read(path)


def date(raw: bytes) -> datetime.datetime | None:
    """The moment of a message's ``Date`` header (naive dates read as UTC), or None when it has
    none or it does not parse.

    >>> date(b"Date: Mon, 1 Jan 2024 10:00:00 +0100\\nSubject: x\\n\\nhi").isoformat()
    '2024-01-01T10:00:00+01:00'
    >>> date(b"Date: yesterday\\n\\nhi") is None
    True
    """
    value = _HEADERS.parsebytes(raw[:MAX_HEADER_BYTES], headersonly=True).get("Date")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def _by_date(out: list[tuple[bytes, str]]) -> list[tuple[bytes, str]]:
    dated: list[tuple[datetime.datetime, int]] = []
    undated: list[int] = []
    for i, (raw, _) in enumerate(out):
        when = date(raw)
        if when is None:
            undated.append(i)
        else:
            dated.append((when, i))
    dated.sort()  # ties keep their source order (the index breaks them)
    return [out[i] for _, i in dated] + [out[i] for i in undated]


def labelled(
    spam: Iterable[str | os.PathLike] = (),
    ham: Iterable[str | os.PathLike] = (),
    order: str = "shuffle",
    seed: int = 0,
    spam_label: str = "spam",
    ham_label: str = "ham",
) -> list[tuple[bytes, str]]:
    """``(raw message, label)`` for every message of the ``spam`` and ``ham`` places.

    ``order="shuffle"``: a random order fixed by ``seed``; ``"given"``: each place in turn, in
    the order given (spam places first); ``"date"``: by the moment of each message's ``Date``
    header (see :func:`date`), as a mailbox receives them, spam and ham interleaved; messages
    with the same moment keep the given order, and messages without a ``Date`` that parses
    come last, in the given order (a file's time is no guide: copying a corpus resets it).
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    out = [(m, spam_label) for p in spam for m in messages(p)]
    out += [(m, ham_label) for p in ham for m in messages(p)]
    if order == "shuffle":
        random.Random(seed).shuffle(out)
    elif order == "date":
        out = _by_date(out)
    return out
