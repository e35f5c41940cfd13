"""A state store by URL: ``dir:PATH``, ``kafka:TOPIC`` or ``s3://bucket/prefix``.

>>> parse_state_url("dir:/var/lib/streamnb")
('dir', '/var/lib/streamnb', '')
>>> parse_state_url("kafka:streamnb-state")
('kafka', 'streamnb-state', '')
>>> parse_state_url("s3://models/prod/streamnb")
('s3', 'models', 'prod/streamnb')
>>> parse_state_url("ftp://x")
Traceback (most recent call last):
...
ValueError: state URL 'ftp://x': use dir:PATH, kafka:TOPIC or s3://bucket/prefix
"""

from __future__ import annotations

import re

from streamnb.kafka.statestore import StateStore

__all__ = ["open_store", "parse_state_url"]

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_USAGE = "use dir:PATH, kafka:TOPIC or s3://bucket/prefix"


def parse_state_url(url: str) -> tuple[str, str, str]:
    """``(kind, where, prefix)`` of a state URL; :class:`ValueError` if it is not one."""
    if url.startswith("dir:") and len(url) > 4:
        return "dir", url[4:], ""
    if url.startswith("kafka:"):
        topic = url[6:]
        if not _TOPIC.match(topic) or topic in (".", ".."):
            raise ValueError(f"state URL {url!r}: {topic!r} is not a valid topic name")
        return "kafka", topic, ""
    if url.startswith("s3://"):
        bucket, _, prefix = url[5:].partition("/")
        if not _BUCKET.match(bucket):
            raise ValueError(f"state URL {url!r}: {bucket!r} is not a valid bucket name")
        return "s3", bucket, prefix.strip("/")
    raise ValueError(f"state URL {url!r}: {_USAGE}")


def open_store(url: str, member: str = "main", bootstrap: str | None = None, keep: int = 2,
               lease: float = 15.0) -> StateStore:
    """The store ``url`` names, as seen by ``member`` (``kafka:`` needs ``bootstrap``); ``lease``:
    seconds the member name's lease holds in ``kafka:`` and ``s3://`` (:mod:`streamnb.kafka.lease`).

    Nothing is contacted until the store is first used.
    """
    kind, where, prefix = parse_state_url(url)
    if kind == "dir":
        from streamnb.kafka.checkpoint import Checkpointer

        return Checkpointer(where, member, keep)
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,100}", member):
        raise ValueError(f"member name {member!r}: use 1-100 letters, digits, '_' or '-'")
    if kind == "kafka":
        if not bootstrap:
            raise ValueError(f"state URL {url!r} needs the Kafka bootstrap servers (--bootstrap)")
        from streamnb.kafka.store_kafka import KafkaStore

        return KafkaStore(bootstrap, where, member, keep, lease=lease)
    from streamnb.kafka.store_s3 import S3Store

    return S3Store(where, prefix, member, keep, lease=lease)
