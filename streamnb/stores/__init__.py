"""Stores: named blobs in a directory, S3-compatible object storage or a compacted Kafka topic,
and what streamnb keeps in them.

- :func:`open_blobs` opens the blobs a URL names (one grammar, :mod:`streamnb.stores.url`:
  ``dir:PATH``, ``s3://BUCKET/PREFIX``, ``kafka://BOOTSTRAP/TOPIC/PREFIX``, ``kafka:TOPIC``);
  every backend offers the five operations of :class:`~streamnb.stores.blobs.Blobs` (get, put,
  delete, list, swap);
- built on them, once for every backend: the Kafka service's checkpoints
  (:mod:`streamnb.stores.checkpoints`, :func:`open_store`), the learners
  :class:`~streamnb.perkey.PerKey` evicts (:mod:`streamnb.stores.keys`, :func:`open_key_store`)
  and the leases that keep one live instance per member name (:mod:`streamnb.stores.lease`).

>>> import tempfile
>>> blobs = open_blobs(f"dir:{tempfile.mkdtemp()}")
>>> blobs.put("a/b.txt", b"one")
>>> blobs.get("a/b.txt"), blobs.list(), blobs.get("nothing")
(b'one', ['a/b.txt'], None)
>>> blobs.swap("a/b.txt", b"two", expected=b"one"), blobs.swap("a/b.txt", b"three", expected=b"one")
(True, False)
>>> blobs.get("a/b.txt")
b'two'
"""

from __future__ import annotations

from typing import Any

from streamnb.stores.blobs import Blobs
from streamnb.stores.checkpoints import Checkpoint, StateStore, open_store
from streamnb.stores.keys import KeyStore, key_digest, open_key_store
from streamnb.stores.url import StoreUrl, StoreUrlError, parse_url

__all__ = ["Blobs", "Checkpoint", "KeyStore", "StateStore", "StoreUrl", "StoreUrlError", "key_digest",
           "open_blobs", "open_key_store", "open_store", "parse_url"]


def open_blobs(url: str, bootstrap: str | None = None, **options: Any) -> Blobs:
    """The blobs at ``url`` (see :mod:`streamnb.stores.url`; ``bootstrap`` serves
    ``kafka:TOPIC``). ``options`` go to the backend: ``read_only`` to
    :class:`~streamnb.stores.dir.DirBlobs`; ``client``, ``max_bytes`` to
    :class:`~streamnb.stores.s3.S3Blobs`; ``chunk_bytes``, ``timeout``, ``fence`` to
    :class:`~streamnb.stores.kafka.KafkaBlobs`. Nothing is contacted until first use."""
    where = parse_url(url, bootstrap)
    if where.kind == "dir":
        from streamnb.stores.dir import DirBlobs

        return DirBlobs(where.where, **options)
    if where.kind == "s3":
        from streamnb.stores.s3 import S3Blobs

        return S3Blobs(where.where, where.prefix, **options)
    if not where.bootstrap:
        raise StoreUrlError(f"store URL {url!r} needs the Kafka bootstrap servers (kafka://BOOTSTRAP/TOPIC)")
    from streamnb.stores.kafka import KafkaBlobs

    return KafkaBlobs(where.bootstrap, where.where, where.prefix, **options)
