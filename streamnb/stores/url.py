"""The one grammar of store URLs, for checkpoints, per-key archives and anything else kept in blobs.

====================================  ========================================================
``dir:PATH``                          files under a directory
``s3://BUCKET[/PREFIX]``              objects in S3-compatible storage (``streamnb[s3]``)
``kafka://BOOTSTRAP/TOPIC[/PREFIX]``  records of a compacted one-partition Kafka topic
``kafka:TOPIC``                       the same, the bootstrap servers given apart
                                      (``--bootstrap``)
====================================  ========================================================

``kafka:TOPIC`` (the ``--state`` spelling) and ``kafka://BOOTSTRAP/TOPIC/PREFIX`` (the key
stores' spelling) are both this grammar: the first is the second with the bootstrap servers
taken from elsewhere and no prefix.

>>> parse_url("dir:/var/lib/streamnb")
StoreUrl(kind='dir', where='/var/lib/streamnb', prefix='', bootstrap=None)
>>> parse_url("s3://models/prod/streamnb/")
StoreUrl(kind='s3', where='models', prefix='prod/streamnb', bootstrap=None)
>>> parse_url("kafka:streamnb-state", bootstrap="127.0.0.1:9092")
StoreUrl(kind='kafka', where='streamnb-state', prefix='', bootstrap='127.0.0.1:9092')
>>> parse_url("kafka://127.0.0.1:9092,127.0.0.1:9093/state-keys/main")
StoreUrl(kind='kafka', where='state-keys', prefix='main', bootstrap='127.0.0.1:9092,127.0.0.1:9093')
>>> parse_url("ftp://x")
Traceback (most recent call last):
...
streamnb.stores.url.StoreUrlError: store URL 'ftp://x': use dir:PATH, s3://BUCKET/PREFIX, kafka://BOOTSTRAP/TOPIC/PREFIX or kafka:TOPIC
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from streamnb.exceptions import StreamnbError

__all__ = ["StoreUrl", "StoreUrlError", "parse_url"]

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PREFIX = re.compile(r"^[A-Za-z0-9._/-]{0,512}$")
USAGE = "use dir:PATH, s3://BUCKET/PREFIX, kafka://BOOTSTRAP/TOPIC/PREFIX or kafka:TOPIC"


class StoreUrlError(StreamnbError, ValueError):
    """A store URL outside the grammar of :mod:`streamnb.stores.url` (or a member name outside
    its own: letters, digits, ``_`` and ``-``)."""


class StoreUrl(NamedTuple):
    """A parsed store URL: ``kind`` (``dir``, ``s3``, ``kafka``), ``where`` (the path, bucket or
    topic), ``prefix`` (names under it, ``""`` for none; no leading or trailing ``/``) and, for
    ``kafka``, the bootstrap servers (None if the URL did not name them and none were given)."""

    kind: str
    where: str
    prefix: str
    bootstrap: str | None

    def __str__(self) -> str:
        if self.kind == "dir":
            return f"dir:{self.where}"
        if self.kind == "s3":
            return f"s3://{self.where}/{self.prefix}"
        if self.bootstrap is None:
            return f"kafka:{self.where}" + (f"/{self.prefix}" if self.prefix else "")
        return f"kafka://{self.bootstrap}/{self.where}" + (f"/{self.prefix}" if self.prefix else "")


def parse_url(url: str, bootstrap: str | None = None, what: str = "store") -> StoreUrl:
    """The parts of a store URL; :class:`StoreUrlError` (a ``ValueError``) if it is not one.

    ``bootstrap`` serves ``kafka:TOPIC`` (a ``kafka://`` URL names its own); ``what`` names the
    URL in messages (``"state"`` for ``--state``).
    """

    def bad(reason: str) -> StoreUrlError:
        return StoreUrlError(f"{what} URL {url!r}: {reason}")

    if not isinstance(url, str):
        raise bad(USAGE)
    if url.startswith("dir:"):
        if len(url) == 4:
            raise bad("dir: needs a path")
        return StoreUrl("dir", url[4:], "", None)
    if url.startswith("s3://"):
        bucket, _, prefix = url[5:].partition("/")
        if not _BUCKET.match(bucket):
            raise bad(f"{bucket!r} is not a valid bucket name")
        return StoreUrl("s3", bucket, _prefix(prefix, bad), None)
    if url.startswith("kafka://"):
        servers, _, rest = url[8:].partition("/")
        topic, _, prefix = rest.partition("/")
        if not servers or any(c.isspace() for c in servers):
            raise bad("kafka:// needs the bootstrap servers: kafka://HOST:PORT/TOPIC/PREFIX")
        return StoreUrl("kafka", _topic(topic, bad), _prefix(prefix, bad), servers)
    if url.startswith("kafka:"):
        return StoreUrl("kafka", _topic(url[6:], bad), "", bootstrap)
    raise bad(USAGE)


def _topic(topic: str, bad: Callable[[str], StoreUrlError]) -> str:
    if not _TOPIC.match(topic) or topic in (".", ".."):
        raise bad(f"{topic!r} is not a valid topic name")
    return topic


def _prefix(prefix: str, bad: Callable[[str], StoreUrlError]) -> str:
    prefix = prefix.strip("/")
    if not _PREFIX.match(prefix) or any(part in (".", "..", "") for part in prefix.split("/") if prefix):
        raise bad(f"{prefix!r} is not a valid prefix (letters, digits, '.', '_', '-', '/')")
    return prefix
