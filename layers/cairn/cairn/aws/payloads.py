"""Large values (checkpoint state, results, inputs) for item stores: JSON inline, gzipped, or in S3.

A value is serialized once and compressed once, at a fast level, when that
makes it smaller. With a bucket, a value above the break-even size
(``offload_from``: where one S3 PUT and GET cost less than the write units the
value adds to every write of the item) goes to S3 under a key derived from the
job and its write, with a SHA-256 checked on read. Without a bucket a value
stays inline up to ``inline_limit`` and a larger one is refused before anything
is written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ..errors import CorruptJobError, StateTooLargeError, StorageError
from ..settings import DEFAULT_OFFLOAD_STATE_FROM

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

GZIP_FROM_BYTES = 256
GZIP_LEVEL = 1


@dataclass(frozen=True)
class EncodedPayload:
    """A value ready for an item: the attribute map, and the S3 key it was put under, if any."""

    attribute: dict[str, Any]
    s3_key: str | None = None


class PayloadCodec:
    """Encodes values for an item store and decodes them again."""

    def __init__(
        self,
        *,
        inline_limit: int,
        bucket: str | None = None,
        s3_client: S3Client | None = None,
        offload_from: int = DEFAULT_OFFLOAD_STATE_FROM,
    ) -> None:
        self.inline_limit = inline_limit
        self.offload_from = min(offload_from, inline_limit)
        self.bucket = bucket
        self._s3 = s3_client

    def _client(self) -> S3Client:
        if self._s3 is None:
            from .clients import default_s3_client

            self._s3 = default_s3_client()
        return self._s3

    def encode(self, value: Any, *, key: str) -> EncodedPayload:
        """The attribute map for ``value``; ``key`` is the S3 key used if it must go to S3."""
        raw = json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
        if len(raw) <= self.offload_from and len(raw) < GZIP_FROM_BYTES:
            return EncodedPayload({"json": raw.decode()})
        packed = gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0)
        body, encoding = (packed, "gzip") if len(packed) < len(raw) else (raw, "json")
        limit = self.offload_from if self.bucket is not None else self.inline_limit
        if len(body) <= limit:
            return EncodedPayload({"gzip": body} if encoding == "gzip" else {"json": raw.decode()})
        if self.bucket is None:
            raise StateTooLargeError(len(body), self.inline_limit)
        digest = hashlib.sha256(body).hexdigest()
        try:
            self._client().put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        except (ClientError, BotoCoreError) as exc:
            message = f"Cannot store {len(body)} bytes in s3://{self.bucket}/{key}: {exc}"
            raise StorageError(message, retryable=True) from exc
        reference = {"bucket": self.bucket, "key": key, "sha256": digest, "size": len(body), "encoding": encoding}
        return EncodedPayload({"s3": reference}, s3_key=key)

    def decode(self, attribute: dict[str, Any], *, where: str, fetch: bool = True) -> Any:
        """The value stored in ``attribute``; a missing object or a hash mismatch is a clear error.

        With ``fetch`` False a value kept in S3 is not read (None is returned).
        """
        if "json" in attribute:
            return json.loads(attribute["json"])
        if "gzip" in attribute:
            return json.loads(gzip.decompress(bytes(attribute["gzip"])))
        if "s3" in attribute:
            return self._fetch(attribute["s3"], where=where) if fetch else None
        raise CorruptJobError(where, f"unknown payload encoding {sorted(attribute)}")

    def _fetch(self, reference: dict[str, Any], *, where: str) -> Any:
        bucket, key = str(reference["bucket"]), str(reference["key"])
        try:
            body = self._client().get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise CorruptJobError(where, f"its state object s3://{bucket}/{key} is missing") from exc
            raise StorageError(f"Cannot read s3://{bucket}/{key}: {exc}", retryable=True) from exc
        except BotoCoreError as exc:
            raise StorageError(f"Cannot read s3://{bucket}/{key}: {exc}", retryable=True) from exc
        if hashlib.sha256(body).hexdigest() != reference["sha256"]:
            raise CorruptJobError(where, f"s3://{bucket}/{key} does not match its recorded SHA-256")
        raw = gzip.decompress(body) if reference.get("encoding") == "gzip" else body
        return json.loads(raw)

    def delete(self, key: str) -> None:
        """Remove an S3 object that is no longer referenced (best effort: the bucket's lifecycle backs it up)."""
        if self.bucket is None:
            return
        try:
            self._client().delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError):
            return

    @staticmethod
    def s3_key_of(attribute: dict[str, Any] | None) -> str | None:
        """The S3 key an attribute map points to, if it points to one."""
        if attribute and "s3" in attribute:
            return str(attribute["s3"]["key"])
        return None
