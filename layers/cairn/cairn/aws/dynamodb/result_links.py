"""A link to a job's result kept in S3: what the API hands over when the result is too large for its reply."""

from __future__ import annotations

from dataclasses import asdict

from ...core.errors import CorruptJobError
from ...core.storage_port import ResultLink
from .attributes import from_item, location
from .table import Table


def result_link(table: Table, job_id: str, *, expires_in: int) -> ResultLink | None:
    """A presigned GET of the S3 object holding the job's result, with the job's ``sequence`` it was read at.

    None when the job is unknown or past its TTL, has no result, or keeps it in its item. One read of the job
    item, none of S3.
    """
    response = table.call(table.client.get_item, TableName=table.name, Key=table.key(job_id), ConsistentRead=True)
    item = response.get("Item")
    if not item or table.expired(item, table.clock()):
        return None
    where = location(item)
    values = from_item(item)
    payloads = table.codec.payloads
    reference = payloads.s3_reference(values.get("result"))
    if reference is None:
        return None
    sequence = values.get("sequence")
    if not isinstance(sequence, int) or isinstance(sequence, bool):
        raise CorruptJobError(where, "its sequence is not a number")
    link = payloads.link(reference, where=where, expires_in=expires_in, now_ms=table.clock())
    return ResultLink(**asdict(link), sequence=sequence)
