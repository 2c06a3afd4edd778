"""Stalled jobs in the list and the counts: each running job of a page read once (its small item, and its map's
record when it is in a map) and judged by :mod:`cairn.scheduling.recovery`'s rule.

- ``GET /jobs`` marks each running job of the page ``stalled`` true or false.
- ``GET /jobs?stalled=true`` lists only stalled jobs: a page of the running-status index, filtered (a page may
  hold fewer than ``limit``; its cursor goes on).
- ``GET /jobs/counts`` counts stalled jobs among the newest :data:`COUNT_BOUND` running jobs; past that the
  count is a lower bound and ``exact`` is false.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.models import JobCounts, JobPage, JobStatus
from ..core.settings import Settings
from ..core.storage_port import Storage
from ..scheduling import recovery
from .listing import JobFilter
from .stall_view import is_stalled_now

if TYPE_CHECKING:
    from .dynamodb import DynamoDBStorage

COUNT_BOUND = 100
"""The most running jobs ``GET /jobs/counts`` reads to count the stalled ones (one listing page, one small read
each)."""


def marked(page: JobPage, storage: Storage, settings: Settings, *, only_stalled: bool = False) -> JobPage:
    """``page`` with each running job marked stalled or not; ``only_stalled``: the stalled ones alone.

    A job whose listed ``updated_at`` (its last status change, at the latest its last write) is within the idle
    time is not stalled, and is not read: only a job idle by its entry costs the read of its item.
    """
    cutoff = recovery.idle_cutoff(storage.clock(), settings.sweep_idle_seconds)
    jobs = []
    for summary in page.jobs:
        if summary.status != JobStatus.RUNNING or summary.corrupt:
            if not only_stalled:
                jobs.append(summary)
            continue
        stalled = summary.updated_at < cutoff and is_stalled_now(storage, summary.job_id, settings)
        if stalled or not only_stalled:
            jobs.append(summary.model_copy(update={"stalled": stalled}))
    return page.model_copy(update={"jobs": jobs})


def with_stalled(counts: JobCounts, storage: DynamoDBStorage, settings: Settings) -> JobCounts:
    """``counts`` with how many running jobs are stalled (every running job read up to :data:`COUNT_BOUND`)."""
    running = counts.counts.get(JobStatus.RUNNING, 0)
    if running == 0:
        return counts.model_copy(update={"stalled": 0})
    page = storage.list_page(limit=COUNT_BOUND, where=JobFilter(status=JobStatus.RUNNING))
    stalled = sum(1 for summary in marked(page, storage, settings, only_stalled=True).jobs)
    exact = counts.exact and page.cursor is None
    return counts.model_copy(update={"stalled": stalled, "exact": exact})
