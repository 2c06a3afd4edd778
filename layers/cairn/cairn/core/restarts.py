"""What a caller's retry of an existing job may do: one rule for the front door, the API, the CLI and the dashboard.

The seed's rule stands where the seed speaks: ``run_pipeline(retry_mode="resume")`` on a job with no
checkpoint starts it fresh. But a caller who asks to *retry* a job that is already complete has nothing
to resume: running it again would repeat every side effect and replace its result, so the request is
refused and nothing is written. Starting over (mode ``full``) or a rerun from a phase (mode ``from``)
runs a complete job again, on purpose.
"""

from __future__ import annotations

from .errors import TransitionRefusedError
from .models import Job, JobStatus, RetryMode

COMPLETE_REFUSAL = "already complete; Start over (mode full) runs it again"
"""Why a resume of a complete job is refused (the API's 409 says it too)."""


def check_retry(job: Job, mode: RetryMode) -> None:
    """Refuse (TransitionRefusedError) a retry of ``job`` in ``mode`` that would silently run a finished job again."""
    if mode == RetryMode.RESUME and job.status == JobStatus.COMPLETE:
        raise TransitionRefusedError(f'Job "{job.job_id}" is {COMPLETE_REFUSAL}')
