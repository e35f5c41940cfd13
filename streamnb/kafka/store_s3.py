"""The object-storage store (``s3://bucket/prefix``): one object per checkpoint, no disk.

Each checkpoint blob (see :mod:`streamnb.kafka.statestore`) is one object,
``<prefix>/<member>/<id>.ckpt``. An S3 PUT is atomic (readers see the whole object or none) and
S3 lists and reads are strongly consistent, so no manifest is needed; a new object is written
with ``If-None-Match: *``, so two live instances that share a member name cannot overwrite one
another's checkpoint (the second write fails and is counted as a failed checkpoint).

A member name is guarded by a lease (:mod:`streamnb.kafka.lease`), the object
``<prefix>/leases/<member>.json``, written by conditional PUTs (``If-Match`` the ETag read,
``If-None-Match: *`` for the first): a second live instance with one ``--member`` is refused at
start, and an instance that finds its lease taken over writes no more checkpoints and stops.

The client is boto3, configured the usual way (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_DEFAULT_REGION``, profiles, instance roles; ``AWS_ENDPOINT_URL`` for MinIO, Ceph, moto or
another S3-compatible server).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from streamnb.exceptions import StateError
from streamnb.kafka.lease import Lease, LeaseKeeper, MAX_LEASE_BYTES
from streamnb.kafka.statestore import StateStore
from streamnb.s3_access import S3Access

__all__ = ["S3Store"]

log = logging.getLogger(__name__)

_KEY = re.compile(r"([A-Za-z0-9_-]{1,100})/(\d{12})\.ckpt$")
#: a checkpoint object larger than this is refused (damaged listing, wrong bucket)
MAX_OBJECT_BYTES = 4 * 1024**3


class S3Store(StateStore, S3Access):
    """Checkpoints of every member under one prefix of a bucket (see the module docstring).

    Parameters
    ----------
    bucket, prefix
        Where the objects go (the bucket must exist).
    member, keep
        See :class:`~streamnb.kafka.statestore.StateStore`.
    client
        A boto3 S3 client (default: ``boto3.client("s3")`` from the environment).
    lease
        Seconds the member's lease holds without renewal (see :mod:`streamnb.kafka.lease`).
    """

    def __init__(self, bucket: str, prefix: str = "", member: str = "main", keep: int = 2,
                 client: Any = None, lease: float = 15.0) -> None:
        super().__init__(member, keep)
        self.lease_ttl = lease
        self._lease_etag: str | None = None
        self.connect_s3(bucket, prefix, client, "the s3:// state store")
        self.url = f"s3://{bucket}/{self.prefix}"

    # -- the member's lease -------------------------------------------------------------------------
    def acquire(self) -> None:
        """Take this member's lease (:class:`~streamnb.kafka.lease.MemberInUseError` if another
        live instance holds it)."""
        self.lease = LeaseKeeper(self.member, self.url, self.lease_ttl, self._read_lease, self._swap_lease)
        self.lease.acquire()

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()

    def _lease_key(self, member: str | None = None) -> str:
        return f"{self.prefix}leases/{member or self.member}.json"

    def lease_of(self, member: str) -> Lease | None:
        """``member``'s lease (None: none)."""
        return self._lease_and_etag(member)[0]

    def _read_lease(self) -> Lease | None:
        lease, self._lease_etag = self._lease_and_etag(self.member)
        return lease

    def _lease_and_etag(self, member: str) -> tuple[Lease | None, str | None]:
        name = f"s3://{self.bucket}/{self._lease_key(member)}"
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self._lease_key(member))
            if got.get("ContentLength", 0) > MAX_LEASE_BYTES:
                raise StateError(f"{name}: not a lease ({got['ContentLength']} bytes)")
            body = bytes(got["Body"].read())
        except self.s3_errors as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                return None, None
            raise StateError(f"{name}: {exc}") from exc
        lease = Lease.from_bytes(body)
        if lease is None:
            raise StateError(f"{name}: not a streamnb lease; delete it if no instance of member {member!r} runs")
        return lease, got["ETag"]

    def _swap_lease(self, new: Lease, seen: Lease | None) -> bool:
        """PUT ``new`` only if the object is still the one read (its ETag), or absent."""
        condition = {"IfNoneMatch": "*"} if seen is None else {"IfMatch": self._lease_etag}
        try:
            put = self.client.put_object(Bucket=self.bucket, Key=self._lease_key(), Body=new.to_bytes(self.member),
                                         **condition)
        except self.s3_errors as exc:
            if _code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409", "NoSuchKey", "404"):
                return False
            raise StateError(f"s3://{self.bucket}/{self._lease_key()}: write failed: {exc}") from exc
        self._lease_etag = put["ETag"]
        return True

    def _key(self, member: str, ck_id: int) -> str:
        return f"{self.prefix}{member}/{ck_id:012d}.ckpt"

    def _name(self, member: str, ck_id: int) -> str:
        return f"s3://{self.bucket}/{self._key(member, ck_id)}"

    def _list(self, member: str | None = None) -> list[tuple[str, int]]:
        prefix = self.prefix + (f"{member}/" if member is not None else "")
        out = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
                for obj in page.get("Contents", []):
                    m = _KEY.fullmatch(obj["Key"][len(self.prefix):])
                    if m:
                        out.append((m.group(1), int(m.group(2))))
        except self.s3_errors as exc:
            raise StateError(f"state store {self.url}: listing failed: {exc}") from exc
        return sorted(out, key=lambda t: (t[0], -t[1]))

    def _get(self, member: str, ck_id: int) -> bytes:
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self._key(member, ck_id))
            if got.get("ContentLength", 0) > MAX_OBJECT_BYTES:
                raise StateError(f"{self._name(member, ck_id)}: {got['ContentLength']} bytes is too large")
            return bytes(got["Body"].read())
        except self.s3_errors as exc:
            raise StateError(f"{self._name(member, ck_id)}: {exc}") from exc

    def _put(self, member: str, ck_id: int, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(member, ck_id), Body=data, IfNoneMatch="*")
        except self.s3_errors as exc:
            raise StateError(f"{self._name(member, ck_id)}: write failed: {exc}") from exc

    def _delete(self, member: str, ck_id: int) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(member, ck_id))
        except self.s3_errors as exc:
            raise StateError(f"{self._name(member, ck_id)}: delete failed: {exc}") from exc


def _code(exc: Exception) -> str:
    """The S3 error code of a botocore error ('' if none)."""
    response = getattr(exc, "response", None)
    return str(response.get("Error", {}).get("Code", "")) if isinstance(response, dict) else ""
