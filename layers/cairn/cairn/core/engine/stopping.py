"""Pausing and cancelling a job: an operator's stop, fenced like every other write."""

from __future__ import annotations

from ..ids import validate_job_id
from ..models import Job
from ..storage_port import Storage


def pause_job(job_id: str, *, storage: Storage, by: str | None = None) -> Job:
    """Pause a running job: the phase in flight finishes; nothing after it starts. The log names ``by``."""
    return storage.pause(validate_job_id(job_id), by=by)


def cancel_job(job_id: str, *, storage: Storage, by: str | None = None) -> Job:
    """Cancel a job. A worker mid-phase can no longer commit; the checkpoint stays until it expires.

    The log names ``by``, who asked, when given.
    """
    return storage.cancel(validate_job_id(job_id), by=by)
