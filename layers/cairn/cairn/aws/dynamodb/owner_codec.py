"""What every codec of one owner's items starts from: the owner, its payload codec and the job's keys."""

from __future__ import annotations

from ..payloads import EncodedPayload, PayloadCodec
from . import schema

#: Room an encoded payload's wrapping takes in an item: the map, its names, an S3 reference.
PAYLOAD_OVERHEAD = 512


def key_of(encoded: EncodedPayload) -> set[str]:
    """The S3 key an encoded payload was written under, if it went to S3."""
    return {encoded.s3_key} if encoded.s3_key else set()


class OwnerCodec:
    """The items of one owner: their keys, and the payload codec that puts large values in S3."""

    def __init__(self, owner: str, payloads: PayloadCodec) -> None:
        self.owner = owner
        self.payloads = payloads

    def pk(self, job_id: str) -> str:
        """The partition key of ``job_id`` for this owner."""
        return schema.job_pk(self.owner, job_id)

    def owner_key(self, job_id: str) -> str:
        """The ``Listing`` key of ``job_id`` (the job's own shard)."""
        return schema.owner_key(self.owner, schema.list_shard(self.owner, job_id))
