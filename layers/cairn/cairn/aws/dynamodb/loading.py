"""Loading a whole job into the table (:meth:`DynamoDBStorage.put_job`): its history items, input item, job item.

Each history item is written as the write that made it would have: keyed by the job's run and the
sequence after that write, with the checkpoint it entered as its ``entry``. The job item is put last,
conditioned on there being no live job with the id (unless ``replace``, which first deletes the old
job's items). Its checkpoint refers to the newest history item, which holds its state.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core import ttl
from ...core.errors import JobExistsError
from ...core.models import HistoryItem, Job
from ...core.transitions.changes import changed
from ...storage.job_loading import checked_whole_job
from .expressions import Expression
from .table import ConditionFailed, Table


def put_job(table: Table, job: Job, history: Sequence[HistoryItem], *, replace: bool) -> None:
    """Write ``job`` and its ``history`` (oldest first); JobExistsError for a live job unless ``replace``."""
    checked_whole_job(job, history)
    now = table.clock()
    if replace:
        keys = [{"pk": item["pk"], "sk": item["sk"]} for item in table.query_partition(job.job_id)]
        for key in keys:
            table.call(table.client.delete_item, TableName=table.name, Key=key)
    side_expires = ttl.side_expires_at(now, job.ttl_seconds)
    items = []
    for sequence, item in enumerate(history, start=1):
        written = changed(job, sequence=sequence)
        items.append(table.codec.history_item(written, item, expires_at=side_expires, checkpoint=item.entry)[0])
    input_item = table.codec.input_item(job)
    if input_item is not None:
        items.append(input_item[0])
    table.put_items(items)
    assert job.write_token is not None
    encoded = table.codec.encode_job(job, token=job.write_token)
    expression = Expression()
    expression.value("nowSeconds", now // 1000)
    expression.require(f"attribute_not_exists({expression.name('pk')}) OR #expiresAt <= :nowSeconds")
    expression.name("expiresAt")
    try:
        table.call(table.client.put_item, TableName=table.name, Item=encoded.item, **expression.condition_kwargs())
    except ConditionFailed:
        raise JobExistsError(job.job_id, None) from None
