"""The sweep's read: every owner's running jobs with no live claim and no recent write, from the ``Stalled`` index.

The index holds running jobs only (:mod:`cairn.aws.dynamodb.schema`); the few fields a verdict needs
are read from the job items (:func:`~.summaries.summary_items`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ...core.errors import CorruptJobError
from ...core.models import JobStatus
from ...scheduling import recovery
from . import schema
from .attributes import UNREADABLE, Item, from_item, to_item
from .summaries import summary_items
from .table import Table

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StalledJob:
    """A running job with no live claim that has not been written for a while."""

    owner: str
    job_id: str
    pipeline: str
    next_phase: str | None
    updated_at: int
    sequence: int = 0


def stalled_jobs(table: Table, *, idle_seconds: float, limit: int = 100) -> list[StalledJob]:
    """Running jobs of every owner with no live claim and no write for ``idle_seconds``.

    A job item that cannot be read is skipped and logged with its key; the sweep goes on.
    """
    now = table.clock()
    cutoff = now - int(idle_seconds * 1000)
    found: list[StalledJob] = []
    for shard in schema.sweep_keys():
        kwargs: dict[str, Any] = {
            "TableName": table.name,
            "IndexName": schema.STALLED_INDEX,
            "KeyConditionExpression": "sweepKey = :shard",
            "ExpressionAttributeValues": to_item({":shard": shard}),
        }
        while len(found) < limit:
            page = table.call(table.client.query, **kwargs)
            for item in summary_items(table, [key["pk"] for key in page.get("Items", [])]):
                try:
                    stalled = _stalled(table, item, now, cutoff)
                except (CorruptJobError, *UNREADABLE) as exc:
                    pk = item.get("pk", {}).get("S")
                    logger.warning("The sweep skipped an unreadable job %s: %s", pk, exc, extra={"key": pk})
                    continue
                if stalled is not None:
                    found.append(stalled)
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return found[:limit]


def _stalled(table: Table, item: Item, now: int, cutoff: int) -> StalledJob | None:
    """The stalled job an item holds, or None when it is not stalled (not running, claimed, waiting, recent)."""
    values = from_item(item)
    if values.get("status") != JobStatus.RUNNING.value or table.expired(item, now):
        return None
    if not recovery.is_stalled(
        str(values["status"]),
        updated_at=int(values["updatedAt"]),
        lease_expires_at=int(values.get("leaseExpiresAt", 0)),
        not_before=int(values.get("notBefore", 0)),
        now_ms=now,
        cutoff_ms=cutoff,
    ):
        return None
    _, owner, job_id = str(values["pk"]).split("#", 2)
    next_phase = values.get("nextPhase")
    return StalledJob(
        owner,
        job_id,
        str(values["pipeline"]),
        next_phase if isinstance(next_phase, str) else None,
        int(values["updatedAt"]),
        int(values.get("sequence", 0)),
    )
