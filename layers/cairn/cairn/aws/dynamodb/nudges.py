"""A nudge's audit entry: an operator action added to a stalled job's log, once per sequence, nothing else changed.

The write leaves the job's ``sequence`` and ``updatedAt`` alone (the advance a nudge schedules is fenced by that
sequence, and the job stays stalled until a worker claims it); ``nudgedSequence`` remembers the sequence it was
written at, so a nudge sent again adds no second entry.
"""

from __future__ import annotations

from ...core.models import JobStatus, LogEntry
from .expressions import Expression
from .job_controls import append_action
from .table import ConditionFailed, Table


def note_nudge(table: Table, job_id: str, entry: LogEntry, *, sequence: int) -> bool:
    """Add ``entry`` to the running job's pending log at ``sequence`` with no live claim; False when one was
    added at that sequence already, or the job has moved on (another status, sequence or a claim)."""
    now = table.clock()
    expression = Expression()
    expression.require(
        "attribute_exists(#pk) AND #expiresAt > :nowSeconds AND #status = :running AND #sequence = :sequence "
        "AND (attribute_not_exists(#leaseExpiresAt) OR #leaseExpiresAt <= :now) "
        "AND (attribute_not_exists(#nudgedSequence) OR #nudgedSequence <> :sequence)"
    )
    for attribute in ("pk", "expiresAt", "status", "sequence", "leaseExpiresAt"):
        expression.name(attribute)
    expression.value("running", JobStatus.RUNNING.value)
    expression.value("now", now)
    expression.value("nowSeconds", now // 1000)
    expression.set("nudgedSequence", sequence)
    expression.value("sequence", sequence)
    append_action(expression, entry)
    try:
        table.call(
            table.client.update_item,
            TableName=table.name,
            Key=table.key(job_id),
            **expression.update_kwargs(),
        )
    except ConditionFailed:
        return False
    return True
