"""How the API's retry route and the scheduler function's retry event retry a job: one rule for both.

A retry goes through the front door (:meth:`cairn.Cairn.retry`), which
refuses a ``state`` that a resume would ignore (InvalidInputError, a 400),
with one exception the API has documented since 1.0: a complete job has no
checkpoint, so resuming it starts it fresh from its input (or the ``state``
given) and keeps its log, where the front door refuses it.
"""

from __future__ import annotations

from typing import Any

from ..app import Cairn
from ..engine import parse_retry_mode, run_pipeline
from ..models import Job, JobStatus, RetryMode


def retry_job(jobs: Cairn, job: Job, *, mode: RetryMode | str = RetryMode.RESUME, state: Any = None) -> Job:
    """Retry ``job`` (as read through ``jobs``) in ``mode``; a resume of a complete job starts it fresh."""
    if parse_retry_mode(mode) == RetryMode.RESUME and job.status == JobStatus.COMPLETE:
        return run_pipeline(
            job.job_id,
            jobs.pipeline(job.pipeline),
            storage=jobs.storage,
            scheduler=jobs.scheduler,
            initial_state=state,  # None: the job's stored input
            retry_mode=RetryMode.RESUME,
        )
    return jobs.retry(job.job_id, mode=mode, state=state)
