"""Why jobs are failing: failed jobs grouped by exception type, failed phase and pipeline.

A store hands over the failed jobs of a range (:meth:`cairn.core.storage_port.Storage.failed_jobs`, at most a
bound of them: :class:`FailedJobs`); :func:`grouped` counts them per group, biggest first, each group with its
newest failure and one sample message. ``GET /failures`` and ``cairn jobs failures`` show them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import Field

from .models import Job, JobSummary, WireModel, clip_text

#: The outcomes of a phase record that put its job in error.
FAILED_OUTCOMES = ("error", "unknown-phase")

#: The longest sample message a group shows (its first line, cut to this).
SAMPLE_CHARS = 200


@dataclass(frozen=True)
class FailedJobs:
    """The failed jobs a store read for a range, newest first; ``exact`` False: more matched than it read."""

    jobs: list[JobSummary]
    exact: bool


class FailureGroup(WireModel):
    """The failed jobs of one exception type, failed phase and pipeline."""

    type: str | None = Field(description="The exception's type (null: the phase raised none, e.g. it returned Fail)")
    phase: str | None = Field(description="The phase that failed (null: not recorded, a job failed before this)")
    pipeline: str
    count: int = Field(description="How many of the jobs read are in this group")
    newest_at: int = Field(description="Unix ms: when the newest of them failed (its last status change)")
    sample: str = Field(description="One of their error messages, the newest: its first line, shortened")
    sample_job_id: str = Field(description="The job the sample is from")


def failed_summary(job: Job) -> JobSummary:
    """The listing's summary of a job in error, with its exception type and failed phase: as stored, else (a job
    stored by an earlier release) from its newest failed phase record."""
    summary = JobSummary.of(job)
    if job.error_type is not None or job.error_phase is not None:
        return summary
    record = next((record for record in reversed(job.phases) if record.outcome in FAILED_OUTCOMES), None)
    if record is None:
        return summary
    kind = record.failure.type if record.failure is not None else None
    return summary.model_copy(update={"error_type": kind, "error_phase": record.phase})


def sample_of(message: str | None) -> str:
    """A group's sample: the first line of ``message``, at most :data:`SAMPLE_CHARS` characters."""
    first = (message or "").strip().splitlines()
    return clip_text(first[0], SAMPLE_CHARS) if first else ""


def grouped(jobs: Iterable[JobSummary]) -> list[FailureGroup]:
    """``jobs`` grouped by (exception type, failed phase, pipeline): biggest first, then newest first."""
    groups: dict[tuple[str | None, str | None, str], FailureGroup] = {}
    for job in jobs:
        key = (job.error_type, job.error_phase, job.pipeline)
        found = groups.get(key)
        if found is None:
            groups[key] = FailureGroup(
                type=job.error_type,
                phase=job.error_phase,
                pipeline=job.pipeline,
                count=1,
                newest_at=job.updated_at,
                sample=sample_of(job.error),
                sample_job_id=job.job_id,
            )
            continue
        update: dict[str, object] = {"count": found.count + 1}
        if job.updated_at > found.newest_at:
            update |= {"newest_at": job.updated_at, "sample": sample_of(job.error), "sample_job_id": job.job_id}
        groups[key] = found.model_copy(update=update)
    return sorted(groups.values(), key=lambda group: (-group.count, -group.newest_at, group.pipeline))
