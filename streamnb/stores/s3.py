"""The ``s3://BUCKET/PREFIX`` backend: each blob an object, ``PREFIX/NAME``.

An S3 PUT is atomic (readers see the whole object or none) and S3 lists and reads are strongly
consistent. :meth:`S3Blobs.swap` is a conditional PUT: ``If-Match`` the ETag of the object read
(``If-None-Match: *`` when it must not exist yet).

The client is boto3 (``pip install 'streamnb[s3]'``), made on first use and configured the usual
way (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, profiles,
instance roles; ``AWS_ENDPOINT_URL`` for MinIO, Ceph, moto or another S3-compatible server).
"""

from __future__ import annotations

import hashlib
from typing import Any

from streamnb.exceptions import MissingExtraError, StateError
from streamnb.persistence import MAX_BYTES
from streamnb.stores.blobs import Blobs, check_name

__all__ = ["S3Blobs"]

_ABSENT = ("NoSuchKey", "404", "NotFound")
_CONFLICT = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409", *_ABSENT)


class S3Blobs(Blobs):
    """Blobs as objects under ``prefix`` in ``bucket`` (which must exist; see the module).

    Parameters
    ----------
    bucket, prefix
        Where the objects are.
    client
        A boto3 S3 client (default: ``boto3.client("s3")`` from the environment).
    max_bytes
        A larger object is refused on read (a damaged store, another program's object).
    """

    kind = "s3"

    def __init__(self, bucket: str, prefix: str = "", client: Any = None, max_bytes: int = MAX_BYTES) -> None:
        try:
            from botocore.exceptions import BotoCoreError, ClientError
        except ImportError as exc:
            raise MissingExtraError("an s3:// store needs boto3: pip install 'streamnb[s3]'") from exc
        self._errors: tuple[type[Exception], ...] = (BotoCoreError, ClientError)
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}"
        self.max_bytes = max_bytes
        self._client = client
        #: name -> (SHA-256 of the bytes last read or written, their ETag): what swap compares
        self._etags: dict[str, tuple[str, str]] = {}

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("s3")
        return self._client

    def key(self, name: str) -> str:
        """The object key of blob ``name``."""
        return self.prefix + check_name(name)

    def where(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"

    def get(self, name: str) -> bytes | None:
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self.key(name))
            if got.get("ContentLength", 0) > self.max_bytes:
                raise StateError(f"{self.where(name)}: {got['ContentLength']} bytes is too large")
            data = bytes(got["Body"].read())
        except self._errors as exc:
            if _code(exc) in _ABSENT:
                self._etags.pop(name, None)
                return None
            raise StateError(f"{self.where(name)}: {exc}") from exc
        self._etags[name] = (hashlib.sha256(data).hexdigest(), got["ETag"])
        return data

    def put(self, name: str, data: bytes, only_new: bool = False) -> None:
        try:
            self._put(name, data, {"IfNoneMatch": "*"} if only_new else {})
        except _Conflict as exc:
            raise StateError(f"{self.where(name)}: write failed: it exists") from exc

    def _put(self, name: str, data: bytes, condition: dict) -> None:
        try:
            put = self.client.put_object(Bucket=self.bucket, Key=self.key(name), Body=data, **condition)
        except self._errors as exc:
            self._etags.pop(name, None)
            if condition and _code(exc) in _CONFLICT:
                raise _Conflict from exc
            raise StateError(f"{self.where(name)}: write failed: {exc}") from exc
        self._etags[name] = (hashlib.sha256(data).hexdigest(), put["ETag"])

    def delete(self, name: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.key(name))
        except self._errors as exc:
            raise StateError(f"{self.where(name)}: delete failed: {exc}") from exc
        self._etags.pop(name, None)

    def list(self, prefix: str = "", recursive: bool = True) -> list[str]:
        out: list[str] = []
        args = {"Bucket": self.bucket, "Prefix": self.prefix + prefix}
        if not recursive:
            args["Delimiter"] = "/"
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(**args):
                out.extend(obj["Key"][len(self.prefix):] for obj in page.get("Contents", []))
        except self._errors as exc:
            raise StateError(f"{self.url}: listing failed: {exc}") from exc
        return sorted(out)

    def swap(self, name: str, new: bytes, expected: bytes | None) -> bool:
        if expected is None:
            condition = {"IfNoneMatch": "*"}
        else:
            digest = hashlib.sha256(expected).hexdigest()
            known = self._etags.get(name)
            if known is None or known[0] != digest:  # not what this object last saw: read it
                if self.get(name) != expected:
                    return False
                known = self._etags[name]
            condition = {"IfMatch": known[1]}
        try:
            self._put(name, new, condition)
        except _Conflict:
            return False
        return True


class _Conflict(Exception):
    """A conditional PUT found the object changed (or present, or absent)."""


def _code(exc: Exception) -> str:
    """The S3 error code of a botocore error ('' if none)."""
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
