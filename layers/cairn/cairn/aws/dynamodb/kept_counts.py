"""A count of an owner's jobs from the counts the table's stream keeps (:mod:`.status_counts`).

One eventually consistent read of the counts item (half a read unit), plus, until every job created before the
counts began is gone, a count of those jobs' ``Listing`` entries (a key condition: no newer entry is read, and
nothing at all once TTL has removed them).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ...core.models import JobCounts, JobStatus
from .status_counts import UNREADABLE, note_old_done, read_kept
from .table import ConditionFailed, Table

if TYPE_CHECKING:
    from .listings import Listings


def kept_job_counts(table: Table, listings: Listings) -> JobCounts | None:
    """The owner's counts from its counts item and its older jobs' entries (None: no counts item yet)."""
    kept = read_kept(table)
    if kept is None:
        return None
    statuses = {status: kept.counts.get(status.value, 0) for status in JobStatus}
    unreadable = kept.counts.get(UNREADABLE, 0)
    exact = True
    if not kept.old_done:
        older = listings.count_jobs(created_before=kept.since)
        for status, n in older.counts.items():
            statuses[status] += n
        unreadable += older.unreadable
        exact = older.exact
        if older.total == 0 and older.exact:
            with contextlib.suppress(ConditionFailed):  # the counts item went: the next count reads the entries
                note_old_done(table)
    counts = JobCounts.of(statuses, exact=exact, unreadable=unreadable)
    return counts.model_copy(update={"maintained": True})
