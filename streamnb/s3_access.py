"""One place in a bucket: what the ``s3://`` state store and the ``s3://`` key store share.

The client is boto3 (``pip install 'streamnb[s3]'``), made on first use and configured the usual
way (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, profiles,
instance roles; ``AWS_ENDPOINT_URL`` for MinIO, Ceph, moto or another S3-compatible server).
"""

from __future__ import annotations

from typing import Any

from streamnb.exceptions import MissingExtraError

__all__ = ["S3Access"]


class S3Access:
    """A bucket, a prefix under it (``""`` or ending in ``/``), the boto3 client that reaches
    them and the errors that client raises (``s3_errors``, to catch)."""

    def connect_s3(self, bucket: str, prefix: str, client: Any, what: str) -> None:
        """Set the place; ``what`` names the store in the error when boto3 is missing."""
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._client = client
        try:
            from botocore.exceptions import BotoCoreError, ClientError
        except ImportError as exc:
            raise MissingExtraError(f"{what} needs boto3: pip install 'streamnb[s3]'") from exc
        self.s3_errors: tuple[type[Exception], ...] = (BotoCoreError, ClientError)

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("s3")
        return self._client
