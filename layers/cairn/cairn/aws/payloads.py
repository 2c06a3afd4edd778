"""Large values (checkpoint state, results, inputs) for item stores: JSON inline, gzipped, or in S3.

A value is serialized once and compressed once, at a fast level, when that
makes it smaller. With a bucket, a value above the break-even size
(``offload_from``: where one S3 PUT and GET cost less than the write units the
value adds to every write of the item), or whose JSON is above
:data:`OFFLOAD_RAW_FROM` however small gzip makes it, goes to S3 under a key
derived from the job and its write, with a SHA-256 checked on read. Without a bucket a value
stays inline up to ``inline_limit`` and a larger one is refused before anything
is written.

A value also goes to S3 (or, without a bucket, is refused) when it does not fit
in the room its item has left (``budget``): DynamoDB limits the whole item,
attribute names and values, to 400 KB (:data:`DYNAMODB_ITEM_LIMIT`), and the
item stores keep every write under :data:`ITEM_BUDGET`.

Reading never trusts what is stored: garbage, a truncated or hostile value, a
nesting too deep to parse or an S3 object that does not match its hash is a
:class:`~cairn.core.errors.CorruptJobError` naming where it lives.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ..core.errors import CorruptJobError, StateTooLargeError, StorageError
from ..core.settings import DEFAULT_OFFLOAD_STATE_FROM
from ..core.storage_port import ObjectLink

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

GZIP_FROM_BYTES = 256
GZIP_LEVEL = 1

#: DynamoDB's limit on one item: 400 KB of attribute names and values (UTF-8 / binary lengths).
DYNAMODB_ITEM_LIMIT = 400 * 1024
#: What a write may bring an item to, counting the values it replaces as well as the new ones (the
#: local emulator counts both): the rest of the limit is left for what grows without a size check
#: (an error text of up to 16 KB, usage counters, a status change).
ITEM_BUDGET = 380_000
#: The largest input (the initial state, as compact JSON) the API accepts: with a state bucket the
#: input and the first checkpoint go to S3, and the request must stay under Lambda's 6 MB payload
#: limit with its envelope. Without a bucket the input must also fit in its item (``ITEM_BUDGET``).
MAX_INPUT_BYTES = 5 * 1024 * 1024
#: With a bucket, a value whose JSON is larger than this goes to S3 however well it compresses: the API hands
#: such a value over as a link to its object, as one reply could not hold it once escaped (a character can
#: take seven bytes there; :mod:`cairn.aws.api_limits`).
OFFLOAD_RAW_FROM = 512 * 1024
#: Errors that reading a stored value can raise when the bytes are not what was written.
_UNREADABLE = (ValueError, TypeError, KeyError, AttributeError, RecursionError, EOFError, OSError, zlib.error)


class MissingPartError(CorruptJobError):
    """A part of a stored job that the read named is not there: the item or S3 object holding a value.

    A write that replaces a part removes the old one once the job item names the new (a save's, one save
    later): a reader that read the job item before those writes finds the old part gone. ``part`` says
    which one; only a read made afterwards that still names it finds the job corrupt
    (:mod:`cairn.aws.dynamodb.rereads`).
    """

    def __init__(self, location: str, reason: str, *, part: str) -> None:
        super().__init__(location, reason)
        self.part = part


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
        self.inline_limit = min(inline_limit, ITEM_BUDGET)
        self.offload_from = min(offload_from, self.inline_limit)
        self.bucket = bucket
        self._s3 = s3_client

    def _client(self) -> S3Client:
        if self._s3 is None:
            from .clients import default_s3_client

            self._s3 = default_s3_client()
        return self._s3

    def encode(self, value: Any, *, key: str, budget: int | None = None, text: str | None = None) -> EncodedPayload:
        """The attribute map for ``value``; ``key`` is the S3 key used if it must go to S3.

        ``budget`` is the room (bytes) the value has in its item: a larger value
        goes to S3, or without a bucket is refused with its size and the limit.
        ``text`` is the value's compact JSON when the caller has it (it is not serialised again).
        """
        raw = (text if text is not None else json.dumps(value, separators=(",", ":"), allow_nan=False)).encode()
        room = self.inline_limit if budget is None else max(0, min(budget, self.inline_limit))
        if len(raw) <= min(self.offload_from, room) and len(raw) < GZIP_FROM_BYTES:
            return EncodedPayload({"json": raw.decode()})
        packed = gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0)
        body, encoding = (packed, "gzip") if len(packed) < len(raw) else (raw, "json")
        limit = min(self.offload_from, room) if self.bucket is not None else room
        if len(body) <= limit and (self.bucket is None or len(raw) <= OFFLOAD_RAW_FROM):
            return EncodedPayload({"gzip": body} if encoding == "gzip" else {"json": raw.decode()})
        if self.bucket is None:
            raise StateTooLargeError(len(body), room)
        digest = hashlib.sha256(body).hexdigest()
        try:
            self._client().put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")
        except (ClientError, BotoCoreError) as exc:
            message = f"Cannot store {len(body)} bytes in s3://{self.bucket}/{key}: {exc}"
            raise StorageError(message, retryable=True) from exc
        reference = {"bucket": self.bucket, "key": key, "sha256": digest, "size": len(body), "encoding": encoding}
        return EncodedPayload({"s3": reference}, s3_key=key)

    def decode(self, attribute: Any, *, where: str, fetch: bool = True) -> Any:
        """The value stored in ``attribute``; anything unreadable is a CorruptJobError naming ``where``.

        With ``fetch`` False a value kept in S3 is not read (None is returned).
        """
        if not isinstance(attribute, dict) or len(attribute) != 1:
            raise CorruptJobError(where, f"a stored value is not one encoded payload ({type(attribute).__name__})")
        try:
            if "json" in attribute:
                return json.loads(attribute["json"])
            if "gzip" in attribute:
                return json.loads(gzip.decompress(bytes(attribute["gzip"])))
        except _UNREADABLE as exc:
            raise CorruptJobError(where, f"its stored value cannot be read ({_describe(exc)})") from exc
        if "s3" in attribute:
            return self._fetch(attribute["s3"], where=where) if fetch else None
        raise CorruptJobError(where, f"unknown payload encoding {sorted(map(str, attribute))}")

    def _fetch(self, reference: Any, *, where: str) -> Any:
        try:
            bucket, key, expected = str(reference["bucket"]), str(reference["key"]), str(reference["sha256"])
        except _UNREADABLE as exc:
            raise CorruptJobError(where, f"its S3 reference is malformed ({_describe(exc)})") from exc
        try:
            body = self._client().get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                missing = f"s3://{bucket}/{key}"
                raise MissingPartError(where, f"its state object {missing} is missing", part=missing) from exc
            raise StorageError(f"Cannot read s3://{bucket}/{key}: {exc}", retryable=True) from exc
        except BotoCoreError as exc:
            raise StorageError(f"Cannot read s3://{bucket}/{key}: {exc}", retryable=True) from exc
        if hashlib.sha256(body).hexdigest() != expected:
            raise CorruptJobError(where, f"s3://{bucket}/{key} does not match its recorded SHA-256")
        try:
            raw = gzip.decompress(body) if reference.get("encoding") == "gzip" else body
            return json.loads(raw)
        except _UNREADABLE as exc:
            raise CorruptJobError(where, f"s3://{bucket}/{key} cannot be read ({_describe(exc)})") from exc

    def delete(self, key: str) -> None:
        """Remove an S3 object that is no longer referenced (best effort: the bucket's lifecycle backs it up)."""
        if self.bucket is None:
            return
        try:
            self._client().delete_object(Bucket=self.bucket, Key=key)
        except (ClientError, BotoCoreError):
            return

    def renew(self, key: str) -> None:
        """Restart an object's age (copy it onto itself): the bucket's lifecycle counts from the last write.

        A missing object is left to the read that finds it; any other failure is a retryable StorageError.
        """
        if self.bucket is None:
            return
        try:
            self._client().copy_object(
                Bucket=self.bucket,
                Key=key,
                CopySource={"Bucket": self.bucket, "Key": key},
                MetadataDirective="REPLACE",
                ContentType="application/json",
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return
            raise StorageError(f"Cannot renew s3://{self.bucket}/{key}: {exc}", retryable=True) from exc
        except BotoCoreError as exc:
            raise StorageError(f"Cannot renew s3://{self.bucket}/{key}: {exc}", retryable=True) from exc

    def link(self, reference: dict[str, Any], *, where: str, expires_in: int, now_ms: int) -> ObjectLink:
        """A presigned GET of the S3 object ``reference`` names, valid ``expires_in`` seconds from ``now_ms``.

        A gzipped object is served with ``Content-Encoding: gzip`` (a browser inflates it; the bytes are gzip).
        """
        try:
            bucket, key, size = str(reference["bucket"]), str(reference["key"]), int(reference["size"])
        except _UNREADABLE as exc:
            raise CorruptJobError(where, f"its S3 reference is malformed ({_describe(exc)})") from exc
        encoding = "gzip" if reference.get("encoding") == "gzip" else "json"
        params = {"Bucket": bucket, "Key": key, "ResponseContentType": "application/json"}
        if encoding == "gzip":
            params["ResponseContentEncoding"] = "gzip"
        try:
            url = self._client().generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
        except (ClientError, BotoCoreError) as exc:
            raise StorageError(f"Cannot sign a link to s3://{bucket}/{key}: {exc}", retryable=True) from exc
        return ObjectLink(url=url, size=size, encoding=encoding, expires_at=now_ms + expires_in * 1000)

    @staticmethod
    def s3_reference(attribute: Any) -> dict[str, Any] | None:
        """The S3 reference an attribute map holds (None: the value is kept in the item itself)."""
        if isinstance(attribute, dict) and isinstance(attribute.get("s3"), dict):
            reference: dict[str, Any] = attribute["s3"]
            return reference
        return None

    @staticmethod
    def s3_key_of(attribute: Any) -> str | None:
        """The S3 key an attribute map points to, if it points to one (None for anything else)."""
        if isinstance(attribute, dict) and isinstance(attribute.get("s3"), dict):
            key = attribute["s3"].get("key")
            return key if isinstance(key, str) else None
        return None


def _describe(exc: BaseException) -> str:
    """A short reason: the error's type and the start of its message."""
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
