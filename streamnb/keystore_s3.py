"""Evicted keys' learners in object storage (``s3://bucket/prefix``): the store
:class:`~streamnb.perkey.PerKey` uses for a ``store`` URL of that scheme.

One object per key, ``<prefix>/<hash[:2]>/<hash>.snb`` (the hash of the key, as
:class:`~streamnb.perkey.DirectoryStore` names its files), holding the learner, the key and the
learner's position (:mod:`streamnb.persistence`, the safe format). An S3 PUT is atomic and durable
when it returns, so :meth:`S3KeyStore.stage` writes at once and :meth:`S3KeyStore.sync` has
nothing left to do. The client is boto3, configured the usual way (``AWS_ENDPOINT_URL``,
credentials, region), as the ``s3://`` state store's.

Whoever writes a prefix must be its only writer (the Kafka service gives each member its own,
``<state prefix>/keys/<member>``, guarded by the member's lease).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from streamnb import persistence
from streamnb.exceptions import StateError
from streamnb.keystore import key_digest
from streamnb.s3_access import S3Access
from streamnb.stats.index import encode_key

__all__ = ["S3KeyStore"]

#: a key's object larger than this is refused (a damaged store, another bucket's object)
MAX_OBJECT_BYTES = persistence.MAX_BYTES


class S3KeyStore(S3Access):
    """Learners of evicted keys under ``url`` (``s3://bucket/prefix``; see the module).

    Parameters
    ----------
    url
        Where the objects go (the bucket must exist).
    read_only
        Only read (a store another process writes).
    client
        A boto3 S3 client (default: ``boto3.client("s3")`` from the environment).
    """

    def __init__(self, url: str, read_only: bool = False, client: Any = None) -> None:
        if not url.startswith("s3://") or not url[5:].partition("/")[0]:
            raise ValueError(f"key store {url!r}: use s3://bucket/prefix")
        bucket, _, prefix = url[5:].partition("/")
        self.url, self.read_only = url, read_only
        self.connect_s3(bucket, prefix, client, "an s3:// key store")

    def _object(self, key: Hashable) -> str:
        digest = key_digest(key)
        return f"{self.prefix}{digest[:2]}/{digest}.snb"

    def save(self, key: Hashable, model: Any, position: int) -> None:
        """Write the key's learner (durable when this returns)."""
        if self.read_only:
            raise StateError(f"{self.url} is read only here: another process writes it")
        data = persistence.dumps(model, extra={"key": [encode_key(key)], "position": position})
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._object(key), Body=data)
        except self.s3_errors as exc:
            raise StateError(f"s3://{self.bucket}/{self._object(key)}: write failed: {exc}") from exc

    def stage(self, key: Hashable, model: Any, position: int) -> None:
        """:meth:`save`: a PUT is durable when it returns."""
        self.save(key, model, position)

    def sync(self) -> None:
        """Nothing to do: every learner written is durable."""

    def load(self, key: Hashable) -> tuple[Any, int] | None:
        """The learner saved for ``key`` and its position, or None."""
        name = f"s3://{self.bucket}/{self._object(key)}"
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self._object(key))
            if got.get("ContentLength", 0) > MAX_OBJECT_BYTES:
                raise StateError(f"{name}: {got['ContentLength']} bytes is too large")
            data = bytes(got["Body"].read())
        except self.s3_errors as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None
            raise StateError(f"{name}: {exc}") from exc
        model, extra = persistence.loads(data, with_extra=True)
        if extra.get("key") != [encode_key(key)]:
            raise StateError(f"{name} holds another key's model")
        position = extra.get("position", -1)
        if type(position) is not int:
            raise StateError(f"{name}: the position is not an integer")
        return model, position

    def __len__(self) -> int:
        n = 0
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
                n += sum(1 for obj in page.get("Contents", []) if obj["Key"].endswith(".snb"))
        except self.s3_errors as exc:
            raise StateError(f"{self.url}: listing failed: {exc}") from exc
        return n


def _code(exc: Exception) -> str:
    """The S3 error code of a botocore error ('' if none)."""
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
